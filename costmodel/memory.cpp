#include "costmodel/memory.h"

#include <algorithm>
#include <cmath>

#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/pipeline.h"

namespace trident {

namespace {

constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;

/// Layers on a stage: the first, the last, a middle one (neither), or all of them (both).
double layers_on_stage(const Model& model, const ParallelConfig& config, bool first, bool last) {
  const StageLayers split = model_stage_layers(model, config);
  if (first && last) return model.layers + model.mtp_layers;
  if (first) return split.first;
  if (last) return split.last;
  return split.middle;
}

/// Bytes per parameter of the three model states after ZeRO sharding over dp.
struct StateBytes {
  double weights = 0.0;
  double gradients = 0.0;
  double optimizer = 0.0;
};

/// ZeRO-3 with PP in torchtitan keeps the gathered weights and the unsharded gradients across
/// the micro-batches (reshard_after_forward False, no gradient sync until the last).
bool keeps_gathered(const ParallelConfig& config, const MemoryOptions& options) {
  return config.zero >= 3 && config.pp > 1 && options.zero3_keeps_gathered;
}

/// The model states a step allocates and frees: under keeps_gathered, FSDP2 gathers the stage's
/// weights at its first forward into storage freed when the last backward reshards them
/// (FSDPParam alloc_all_gather_outputs / free_storage), and upcasts each unit's gradient into
/// unsharded_accumulated_grad at the first backward, dropped after the last micro-batch's
/// reduce-scatter copies it in (to_accumulated_grad_if_needed; FSDPParamGroup.post_backward sets
/// it None, torch 2.6 distributed/fsdp/_fully_shard). Otherwise the states persist.
double per_step_state_bytes(const MemoryBreakdown& memory, const ParallelConfig& config,
                            const MemoryOptions& options) {
  return keeps_gathered(config, options) ? memory.weights_bytes + memory.gradients_bytes : 0.0;
}

StateBytes state_bytes_per_parameter(const Model& model, const ParallelConfig& config,
                                     const MemoryOptions& options) {
  // HSDP shards over its shard group only (config.shard_ranks()).
  const double dp = config.shard_ranks();
  const double optimizer = optimizer_state_bytes(model, config, options);
  StateBytes bytes{options.weight_bytes, options.grad_buffer_bytes, optimizer};
  const bool keeps = keeps_gathered(config, options);
  if (config.zero >= 1) bytes.optimizer /= dp;
  if (config.zero >= 2 && !keeps) bytes.gradients /= dp;
  if (config.zero >= 3 && !keeps) bytes.weights /= dp;
  if (config.zero >= 3 && !keeps && options.zero3_fp32_shard_only && bytes.optimizer > 4.0 / dp) {
    // FSDP: the sharded parameter is the fp32 master (4 of the optimizer's bytes), the 16-bit
    // weights exist only gathered (layer_units_bytes).
    bytes.weights = 4.0 / dp;
    bytes.optimizer -= 4.0 / dp;
  }
  return bytes;
}

/// Bytes per linear parameter the gathered weights differ from `weight_bytes` by when ZeRO-3
/// gathers them in FP8 and keeps them so (MemoryOptions::fp8_gathered_linear_weight_bytes).
double fp8_gather_delta_bytes(const MemoryOptions& options) {
  return options.fp8_gathered_linear_weight_bytes > 0.0
             ? options.fp8_gathered_linear_weight_bytes - options.weight_bytes
             : 0.0;
}

/// Parameters of the stage whose gradients are alive at its peak, of its `params` (all) and
/// `linear_params` (its layers' linear ones): all of them, or with one chunk's alive
/// (kept_gradient_share < 1) that share of the layers', plus on the last rank the output layer
/// and final norm (in its last chunk, backwarded first); the first rank's embedding sits in its
/// first chunk, backwarded last, so none of it.
double alive_gradient_parameters(const Model& model, const ParallelConfig& config,
                                 const MemoryOptions& options, long long micro_batches,
                                 double params, double linear_params, bool first, bool last) {
  const double share = kept_gradient_share(config, options, micro_batches);
  if (share >= 1.0) return params;
  const double layer_params = linear_params + layers_on_stage(model, config, first, last) *
                                                  count_parameters(model).norms_per_layer;
  const double beside_layers = params - layer_params;  // embedding (first), output (last)
  return layer_params * share + (last ? beside_layers : 0.0);
}

/// ZeRO-3 that gathers each unit for its use and frees it after (not kept whole under PP).
bool gathers_per_unit(const ParallelConfig& config, const MemoryOptions& options) {
  return config.zero >= 3 && config.shard_ranks() > 1 && !keeps_gathered(config, options);
}

/// One ZeRO-3 unit (a layer) on one GPU as gathered: its weights in the gather dtype (16-bit;
/// the linear layers' FP8 under an FP8 all-gather).
double unit_gathered_weight_bytes(const Model& model, const ParallelConfig& config,
                                  const MemoryOptions& options) {
  const ParameterCount count = count_parameters(model);
  const double linear = count.attention_per_layer + count.ffn_per_layer;
  return (count.per_layer * options.weight_bytes + linear * fp8_gather_delta_bytes(options)) /
         config.tp;
}

/// One ZeRO-3 unit's unsharded gradients on one GPU, in the stack's gradient dtype.
double unit_gradient_bytes(const Model& model, const ParallelConfig& config,
                           const MemoryOptions& options) {
  return count_parameters(model).per_layer / config.tp * options.grad_buffer_bytes;
}

/// ZeRO-3 units gathered while one layer computes: the unit computing and the prefetched ones,
/// gathered (16-bit weights, and the FP8 copies a recipe makes of their linear layers, which
/// live and go with them: Megatron-FSDP gathers FP8 parameters per bucket and drops their
/// transpose cache on release, megatron_fsdp.py L620-640 @d98e8a64) and unsharded (gradients
/// before their reduce-scatter); none with dp 1. When ZeRO-3 with PP keeps everything whole,
/// the unit computing's 16-bit gradients, which autograd writes before FSDP2 folds them into the
/// fp32 accumulator and frees them (FSDPParam.to_accumulated_grad_if_needed on the first
/// micro-batch, accumulate_unsharded_grad_if_needed after; torch 2.6 _fsdp_param.py).
double layer_units_bytes(const Model& model, const ParallelConfig& config,
                         const MemoryOptions& options) {
  if (keeps_gathered(config, options)) {
    return count_parameters(model).per_layer / config.tp * options.weight_bytes;
  }
  if (!gathers_per_unit(config, options)) return 0.0;
  const double units = 1.0 + options.prefetch_units;
  const ParameterCount count = count_parameters(model);
  const double linear = count.attention_per_layer + count.ffn_per_layer;
  return units * (unit_gathered_weight_bytes(model, config, options) +
                  unit_gradient_bytes(model, config, options) +
                  linear / config.tp * options.weight_copy_bytes_per_parameter);
}

/// The output layer as the unit gathered at the loss (ZeRO-3, last stage): V*h/t weights and
/// their unsharded gradients.
double output_unit_bytes(const Model& model, const ParallelConfig& config,
                         const MemoryOptions& options) {
  if (config.zero < 3 || config.shard_ranks() <= 1 || keeps_gathered(config, options)) return 0.0;
  const double token_embedding = static_cast<double>(model.vocab) * model.hidden;
  return token_embedding / config.tp * (options.weight_bytes + options.grad_buffer_bytes);
}

/// Everything one stage holds, split the way MemoryBreakdown reports it.
MemoryBreakdown stage_memory(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                             const MemoryOptions& options, bool first, bool last,
                             long long micro_batches) {
  const double tp = config.tp;
  const double sp = config.sequence_parallel ? tp : 1.0;
  const double sbh = static_cast<double>(config.micro_batch) * model.seq_len * model.hidden;
  const double params = stage_parameters(model, config, first, last);
  const StateBytes per = state_bytes_per_parameter(model, config, options);
  // Pipeline rank r keeps p - r micro-batches in flight (1F1B): the last one, the second p - 1;
  // interleaved, its warm-up's chunk passes (in_flight_micro_batches).
  const int rank = first ? 0 : (last ? config.pp - 1 : 1);
  const double stage_in_flight =
      in_flight_micro_batches(config.pp, config.virtual_stages, micro_batches, rank);
  const double linear_params = stage_linear_parameters(model, config, first, last);
  MemoryBreakdown memory;
  memory.weights_bytes = params * per.weights;
  // ZeRO-3 with PP keeping the gathered weights keeps them as gathered: FP8 for the linear
  // layers under an FP8 all-gather.
  if (keeps_gathered(config, options)) {
    memory.weights_bytes += linear_params * fp8_gather_delta_bytes(options);
  }
  memory.gradients_bytes = alive_gradient_parameters(model, config, options, micro_batches, params,
                                                     linear_params, first, last) *
                           per.gradients;
  memory.optimizer_bytes = params * per.optimizer;
  // FP8 copies exist for the Transformer Engine linear layers only: not the embedding, the
  // output layer or the norms (docs/cost_model.md#precision); under ZeRO-3 only for the
  // gathered units (layer_units_bytes).
  add_weight_copies(memory, gathers_per_unit(config, options)
                                ? 0.0
                                : linear_params * options.weight_copy_bytes_per_parameter);
  // Partial full recompute keeps only the input of the layers it repeats and everything of
  // the others (all of one kind otherwise).
  const double layers = layers_on_stage(model, config, first, last);
  const double recomputed = config.recomputed_layers(layers);
  ParallelConfig kept = config;
  if (config.recompute == Recompute::full) kept.recompute = Recompute::none;
  const auto per_layer = [&](const ParallelConfig& c) {
    return layer_activation_bytes(model, c, options.fused_attention, options.selective,
                                  options.fp8_saved_inputs, options.gathered_inputs,
                                  options.activation_bytes, options.unfused_softmax);
  };
  const double kept_layers = layers - recomputed;
  double activations = (recomputed > 0.0 ? recomputed * per_layer(config) : 0.0) +
                       (kept_layers > 0.0 ? kept_layers * per_layer(kept) : 0.0);
  // Combined 1F1B: the paired layer and, interleaved, one chunk more (combined_1f1b_extra_layers).
  const double more = options.combined_1f1b && layers > 0.0
                          ? activations / layers * combined_1f1b_extra_layers(config, layers)
                          : 0.0;
  activations = activations * stage_in_flight + more;
  // The embedding's dropout mask (1 byte) per micro-batch in flight, where there is dropout.
  if (first && model.dropout > 0.0) activations += sbh / sp * stage_in_flight;
  // The output layer's 16-bit input (the final norm's output), one micro-batch: its shard
  // (Megatron gathers again in backward) or the gathered tensor (DTensor ColwiseParallel).
  const double e = options.activation_bytes;
  if (last) activations += e * sbh / (options.gathered_inputs ? 1.0 : sp);
  memory.activations_bytes = activations;
  // What the pipeline itself holds (torch pipelining): receive buffers and kept outputs.
  if (config.pp > 1) {
    const double boundary_bytes = e * sbh / sp;
    if (options.pp_recv_buffers_per_micro_batch) {
      memory.pp_buffers_bytes = pp_recv_buffer_bytes(boundary_bytes, config.virtual_stages,
                                                     micro_batches, stage_in_flight, first, last);
    }
    memory.pp_outputs_bytes = pp_kept_output_bytes(
        options.pp_keeps_outputs, boundary_bytes, micro_batch_logit_bytes(model, config, e),
        config.virtual_stages, micro_batches, stage_in_flight, last);
  }
  // Megatron-Core's deferred output-layer weight gradients: each call keeps its input (the
  // sequence-parallel shard) and its logits' gradient (b*s*V/t) until the flush.
  if (last && config.pp > 1 && options.deferred_output_wgrad_calls > 0.0) {
    memory.deferred_wgrad_bytes = options.deferred_output_wgrad_calls *
                                  (e * sbh / sp + micro_batch_logit_bytes(model, config, e));
  }
  memory.workspace_bytes = cublas_workspace_bytes(gpu);
  // Moment 1, a layer's backward: the TP/SP-gathered input, the rebuilt layer, ZeRO-3 units.
  memory.tp_gather_bytes = config.tp > 1 ? e * sbh : 0.0;
  memory.recompute_working_bytes = recompute_working_bytes(
      model, config, options.fused_attention, options.selective, options.fp8_saved_inputs,
      options.gathered_inputs, e, options.unfused_softmax);
  memory.scores_working_bytes = unfused_scores_working_bytes(model, config, options.fused_attention,
                                                             e, options.unfused_softmax);
  memory.layer_units_bytes = layer_units_bytes(model, config, options);
  memory.cp_gather_bytes = options.cp_gathered_kv_bytes;
  // Moment 2, the last stage's loss: logits and cross-entropy, the output layer's unit.
  if (last) {
    memory.loss_bytes = loss_transient_bytes(model, config, options.loss_bytes_per_logit);
    memory.output_unit_bytes = output_unit_bytes(model, config, options);
  }
  // ZeRO-3's collective buffers outside the compute stream's reuse (FSDP2).
  memory.reduce_scatter_kept_bytes = kept_reduce_scatter_input_bytes(model, config, options);
  memory.stream_pool_bytes = side_stream_pool_bytes(model, config, options, params);
  memory.transient_bytes = memory.tp_gather_bytes +
                           std::max(memory.recompute_working_bytes + memory.scores_working_bytes +
                                        memory.layer_units_bytes + memory.cp_gather_bytes,
                                    memory.loss_bytes + memory.output_unit_bytes);
  memory.allocated_bytes = memory.weights_bytes + memory.gradients_bytes + memory.optimizer_bytes +
                           memory.weight_copies_bytes + memory.activations_bytes +
                           memory.workspace_bytes + memory.transient_bytes +
                           memory.pp_buffers_bytes + memory.pp_outputs_bytes +
                           memory.deferred_wgrad_bytes + memory.reduce_scatter_kept_bytes;
  // Fragmentation is of what is allocated and freed within a step (activations, transients,
  // kept outputs); the states, the workspace and the receive buffers are allocated once. ZeRO-3
  // keeping the gathered weights and unsharded gradients over PP's micro-batches allocates them
  // in the step and frees them at its end: they churn too.
  const double churning_states = per_step_state_bytes(memory, config, options);
  memory.states_churn = churning_states > 0.0;
  memory.fragmentation_bytes = allocator_fragmentation_bytes(
      memory.activations_bytes + memory.transient_bytes + memory.pp_outputs_bytes +
      memory.deferred_wgrad_bytes + churning_states);
  memory.reserved_bytes =
      memory.allocated_bytes + memory.fragmentation_bytes + memory.stream_pool_bytes;
  memory.cuda_context_bytes = kCudaContextBytes;
  memory.nccl_buffer_bytes = nccl_buffer_bytes(options.nccl);
  memory.total_bytes = memory.reserved_bytes + memory.cuda_context_bytes + memory.nccl_buffer_bytes;
  memory.other_bytes = memory.total_bytes - memory.weights_bytes - memory.gradients_bytes -
                       memory.optimizer_bytes - memory.activations_bytes;
  return memory;
}

}  // namespace

void add_weight_copies(MemoryBreakdown& memory, double copies_bytes) {
  memory.weights_bytes += std::min(0.0, copies_bytes);
  memory.weight_copies_bytes += std::max(0.0, copies_bytes);
}

double layer_activation_bytes(const Model& model, const ParallelConfig& config,
                              bool fused_attention, SelectiveKind selective, bool fp8_inputs,
                              bool gathered_inputs, double element_bytes, UnfusedSoftmax softmax) {
  const double e = element_bytes;  // a 16-bit (fp32: 4-byte) tensor element
  const double tp = config.tp;
  const double sp = config.sequence_parallel ? tp : 1.0;
  const double sb = static_cast<double>(config.micro_batch) * model.seq_len;
  const double h = model.hidden;
  const double h_q = model.q_hidden();  // Q and the attention context (h unless head_dim is set)
  const double h_kv = model.kv_hidden();
  const double f = model.ffn_hidden;
  if (config.recompute == Recompute::full) return e * sb * h / sp;  // the layer input only
  if (config.recompute == Recompute::selective && selective == SelectiveKind::per_op) {
    // torchtitan's per-op policy keeps the block input, every other matmul output (half of
    // Q, K, V, output projection, FFN up/gate and down: h_q + 2 h_kv + h + f (x2 gated) + h),
    // and SDPA's output (h_q) with its fp32 log-sum-exp.
    const double mm_out = h_q + 2.0 * h + 2.0 * h_kv + (is_gated(model.ffn) ? 2.0 : 1.0) * f;
    return e * sb * h / sp +
           (e / 2.0 * sb * mm_out + e * sb * h_q + 4.0 * sb * model.heads) / config.tp;
  }
  // Kept whole on every TP rank unless sequence parallel: two norm inputs (4), the QKV and
  // FFN inputs (2 + 2), two dropout masks (1 + 1) where the model has dropout. The QKV and
  // FFN inputs stay whole under sequence parallelism too where the stack keeps the gathered
  // tensor (`gathered_inputs`).
  // Under FP8 (Transformer Engine) the four linear inputs are kept as their FP8 copy: the QKV
  // and FFN inputs, the output projection input and the FFN down input, 1 byte each.
  const double linear_in = fp8_inputs ? 1.0 : e;
  const bool dropout = model.dropout > 0.0;
  const double replicated = (2.0 * e + (dropout ? 2.0 : 0.0)) * sb * h;
  const double linear_inputs = 2.0 * linear_in * sb * h;
  // Split over TP: Q and K (2(h_q + h_kv)), V (2 h_kv), the output projection input (2 h_q),
  // the FFN activation input (2f, 4f gated) and output (2f).
  // Megatron-Core's mla_up_proj recompute frees Q, K and V once the attention forward has run
  // (CheckpointWithoutOutput.discard_output_and_register_recompute, multi_latent_attention.py
  // L215-218 @core_r0.12.0) and rebuilds them before its backward.
  const bool drops_qkv = config.recompute == Recompute::selective &&
                         selective == SelectiveKind::mla_up_proj &&
                         model.attention == AttentionKind::mla;
  const double qkv = drops_qkv ? 0.0 : e * (h_q + h_kv) + e * h_kv;
  const double act_in = is_gated(model.ffn) ? 2.0 * e : e;
  const double split = sb * (qkv + linear_in * h_q + act_in * f + linear_in * f);
  // Scores: what the unfused attention keeps per b*a*s^2 element (unfused_score_bytes: under
  // the fused softmax its output (2), dropout's mask (1) and output (2); the softmax output
  // alone without dropout); fused attention keeps only the fp32 log-sum-exp per row (4 bytes
  // per b*a*s).
  const double a = model.heads;
  // Unfused scores go only where the recompute repeats the core attention: full, or
  // selective of it (core_attn, per-op); mla_up_proj repeats the up-projections alone.
  const bool repeats_core_attention =
      config.recompute == Recompute::full ||
      (config.recompute == Recompute::selective && selective != SelectiveKind::mla_up_proj);
  const bool keep_scores = !fused_attention && !repeats_core_attention;
  const double scores =
      fused_attention ? 4.0 * sb * a
      : keep_scores   ? unfused_score_bytes(softmax, model, config, e).kept * sb * model.seq_len * a
                      : 0.0;
  return replicated / sp + linear_inputs / (gathered_inputs ? 1.0 : sp) + (split + scores) / tp;
}

double recompute_working_bytes(const Model& model, const ParallelConfig& config,
                               bool fused_attention, SelectiveKind selective, bool fp8_inputs,
                               bool gathered_inputs, double element_bytes, UnfusedSoftmax softmax) {
  if (config.recompute == Recompute::none) return 0.0;
  ParallelConfig whole = config;
  whole.recompute = Recompute::none;
  return layer_activation_bytes(model, whole, fused_attention, selective, fp8_inputs,
                                gathered_inputs, element_bytes, softmax) -
         layer_activation_bytes(model, config, fused_attention, selective, fp8_inputs,
                                gathered_inputs, element_bytes, softmax);
}

double unfused_scores_working_bytes(const Model& model, const ParallelConfig& config,
                                    bool fused_attention, double element_bytes,
                                    UnfusedSoftmax softmax) {
  if (fused_attention) return 0.0;
  const UnfusedScoreBytes b = unfused_score_bytes(softmax, model, config, element_bytes);
  const double scores = static_cast<double>(config.micro_batch) * model.heads / config.tp *
                        static_cast<double>(model.seq_len) * model.seq_len;
  return (b.peak - b.kept) * scores;
}

namespace {

/// Logits of one micro-batch on one GPU: b*s*V/t (the output layer is vocab-parallel).
double micro_batch_logits(const Model& model, const ParallelConfig& config) {
  return static_cast<double>(config.micro_batch) * model.seq_len *
         static_cast<double>(model.vocab) / config.tp;
}

}  // namespace

double loss_transient_bytes(const Model& model, const ParallelConfig& config,
                            double bytes_per_logit) {
  // Each multi-token-prediction module computes its own loss in the same forward, and keeps
  // its logits for backward beside the main loss's.
  return (1.0 + model.mtp_layers) * bytes_per_logit * micro_batch_logits(model, config);
}

double micro_batch_logit_bytes(const Model& model, const ParallelConfig& config,
                               double element_bytes) {
  return element_bytes * micro_batch_logits(model, config);  // the 16-bit (fp32: 4) output
}

double optimizer_state_bytes(const Model& model, const ParallelConfig& config,
                             const MemoryOptions& options) {
  const bool adam = model.training.optimizer == Optimizer::adam;
  const double state = adam ? options.adam_state_bytes : kSgdStateBytesPerParameter;
  // fp32 weights are the master copy: the optimizer keeps its moments beside them, not another
  // fp32 copy (PyTorch's Adam state is exp_avg and exp_avg_sq in the parameter's dtype,
  // torch/optim/adam.py; Megatron without --bf16/--fp16 wraps it in FP32Optimizer, and its
  // distributed optimizer's fp32 shards are views of the fp32 parameters). Not where a copy
  // exists anyway: ZeRO 2-3 keep the gathered weights apart from the fp32 shard (FSDP's
  // SHARD_GRAD_OP, torchtitan's whole weights under PP; FSDP's resharding shard is the master
  // in state_bytes_per_parameter), and DeepSpeed's ZeRO clones its fp32 partition
  // (deepspeed/runtime/zero/stage_1_and_2.py: single_partition_of_fp32_groups ...
  // .clone().float()).
  if (!options.weights_are_master || config.zero >= 2) return state;
  if (config.zero >= 1 && options.zero_clones_fp32_partition) return state;
  // The master copy the state holds: Adam's 12 hold one of 4, SGD's 8 (master + momentum) too.
  const bool holds_master = !adam || options.adam_state_bytes >= 12.0;
  return holds_master ? state - 4.0 : state;
}

double pp_recv_buffer_bytes(double boundary_bytes, int chunks, long long micro_batches,
                            double in_flight, bool first_rank, bool last_rank) {
  const double m = static_cast<double>(micro_batches);
  const double v = chunks;
  // Input buffers: every chunk but the pipeline's first; those in flight hold kept inputs.
  const double input_chunks = v - (first_rank ? 1.0 : 0.0);
  const double idle_inputs = input_chunks * std::max(0.0, m - in_flight);
  // Gradient buffers: every chunk but the pipeline's last.
  const double gradient_chunks = v - (last_rank ? 1.0 : 0.0);
  return boundary_bytes * (idle_inputs + gradient_chunks * m);
}

double pp_kept_output_bytes(PpKeptOutputs kept, double boundary_bytes, double logit_bytes,
                            int chunks, long long micro_batches, double in_flight, bool last_rank) {
  if (kept == PpKeptOutputs::none) return 0.0;
  const double m = static_cast<double>(micro_batches);
  const double boundary_chunks = chunks - (last_rank ? 1.0 : 0.0);
  // In flight: one output per chunk pass not yet backward (in_flight is passes / chunks). The
  // last rank's warm-up passes are all of its earlier chunks (torch Interleaved1F1B's
  // forward_stage_index; Megatron's groups of p) and its last chunk runs F then B: its
  // boundaries are its passes less the one in the last chunk.
  const double passes = std::min(in_flight, m) * chunks;
  const double kept_boundaries = kept == PpKeptOutputs::all ? boundary_chunks * m
                                 : last_rank ? std::min(passes - 1.0, boundary_chunks * m)
                                             : passes;
  // The last stage's output is its logits: the one in its backward (in_flight), or every
  // micro-batch's until the step ends (last, all).
  const double kept_logits = kept == PpKeptOutputs::in_flight ? std::min(1.0, m) : m;
  const double logits_bytes = last_rank ? kept_logits * logit_bytes : 0.0;
  return std::max(0.0, kept_boundaries) * boundary_bytes + logits_bytes;
}

double kept_gradient_share(const ParallelConfig& config, const MemoryOptions& options,
                           long long micro_batches) {
  const bool one_round = micro_batches < 2LL * config.pp;
  if (!keeps_gathered(config, options) || config.virtual_stages <= 1 || !one_round) return 1.0;
  return 1.0 / config.virtual_stages;
}

double combined_1f1b_extra_layers(const ParallelConfig& config, double stage_layers) {
  const bool interleaved = config.pp > 1 && config.virtual_stages > 1;
  return 1.0 + (interleaved ? stage_layers / config.virtual_stages : 0.0);
}

double in_flight_micro_batches(int pp, int virtual_stages, long long micro_batches, int rank) {
  const double p = pp;
  const double v = virtual_stages;
  const double m = static_cast<double>(micro_batches);
  const double r = rank;
  if (virtual_stages <= 1) return std::min(p - r, m);
  // The interleaved warm-up of pipeline rank r: (p - r - 1) * 2 + (v - 1) * p chunk passes
  // (Megatron-LM@d98e8a64 megatron/core/pipeline_parallel/schedules.py L964-978; torch
  // pipelining's ScheduleInterleaved1F1B the same with p micro-batches a round), plus the one in
  // steady state, never more than the m * v the step has; each chunk pass holds 1/v of the
  // stage's layers. Rank 0: Korthikanti's p * (1 + (p - 1) / (p * v)).
  const double passes = 2.0 * (p - r - 1.0) + (v - 1.0) * p + 1.0;
  return std::min(m, passes / v);
}

namespace {

/// The linear layers' parameters of `layers` layers on one GPU of a TP group of `tp`.
double linear_parameters(const ParameterCount& count, double layers, double tp) {
  return layers * (count.attention_per_layer + count.ffn_per_layer) / tp;
}

/// The embedding on one GPU of a TP group of `tp`: the token embedding ÷ t, the learned
/// positions whole.
double embedding_on_gpu(const ParameterCount& count, const Model& model, double tp) {
  const double token_embedding = static_cast<double>(model.vocab) * model.hidden;
  return token_embedding / tp + (count.embedding - token_embedding);
}

}  // namespace

double stage_linear_parameters(const Model& model, const ParallelConfig& config, bool first_stage,
                               bool last_stage) {
  return linear_parameters(count_parameters(model),
                           layers_on_stage(model, config, first_stage, last_stage), config.tp);
}

double embedding_parameters(const Model& model, const ParallelConfig& config) {
  return embedding_on_gpu(count_parameters(model), model, config.tp);
}

double stage_parameters(const Model& model, const ParallelConfig& config, bool first_stage,
                        bool last_stage) {
  const ParameterCount count = count_parameters(model);
  const double tp = config.tp;
  const double layers = layers_on_stage(model, config, first_stage, last_stage);
  double params = linear_parameters(count, layers, tp) + layers * count.norms_per_layer;
  const double token_embedding = static_cast<double>(model.vocab) * model.hidden;
  if (first_stage) params += embedding_on_gpu(count, model, tp);
  if (last_stage) {
    params += count.final_norm;
    // Untied: the output layer; tied across stages: Megatron keeps a copy on the last stage.
    if (!model.tied_embeddings || !first_stage) params += token_embedding / tp;
    if (model.mtp_layers > 0) {
      // Each MTP module's 2h -> h projection (column-parallel) and its two norms; the MTP
      // block embeds the next tokens, so a last stage without the embedding builds one
      // (Megatron-LM@d98e8a64 megatron/core/models/gpt/gpt_model.py L173: pre_process or
      // mtp_process builds the embedding).
      const double h = model.hidden;
      params += model.mtp_layers * (2.0 * h * h / tp + 2.0 * h);
      if (!first_stage) params += token_embedding / tp;
    }
  }
  return params;
}

double side_stream_pool_bytes(const Model& model, const ParallelConfig& config,
                              const MemoryOptions& options, double stage_params) {
  if (!options.zero3_side_stream_pools || config.zero < 3 || config.shard_ranks() <= 1) {
    return 0.0;
  }
  // The flat all-gather outputs of the units gathered at once.
  const double gathered =
      (1.0 + options.prefetch_units) * unit_gathered_weight_bytes(model, config, options);
  // The sharded gradients, reduce-scattered at the step's end under PP (not kept in the
  // gradients term, which holds the unsharded ones); without PP they are that term.
  const double sharded_gradients =
      keeps_gathered(config, options)
          ? stage_params * options.grad_buffer_bytes / config.shard_ranks()
          : 0.0;
  return gathered + sharded_gradients;
}

double kept_reduce_scatter_input_bytes(const Model& model, const ParallelConfig& config,
                                       const MemoryOptions& options) {
  if (!options.pp_keeps_last_reduce_scatter_input || !keeps_gathered(config, options) ||
      config.shard_ranks() <= 1) {
    return 0.0;
  }
  return unit_gradient_bytes(model, config, options);
}

MemoryBreakdown peak_memory(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                            const MemoryOptions& options, const StageAddition* addition) {
  const long long m = config.num_micro_batches(model.training.global_batch);
  const double capacity_bytes = (gpu.memory_gib - options.reserve_gib) * kBytesPerGib;
  MemoryBreakdown peak;
  bool every_stage_fits = true;
  // The first stage; the last; the second (p - 1 in flight, a middle stage's layers).
  auto consider = [&](bool first_stage, bool last_stage) {
    const Model* own =
        addition != nullptr ? addition->stage_view(first_stage, last_stage) : nullptr;
    MemoryBreakdown stage = stage_memory(gpu, own != nullptr ? *own : model, config, options,
                                         first_stage, last_stage, m);
    stage.capacity_bytes = capacity_bytes;
    set_memory_verdict(stage);
    if (addition != nullptr) addition->add(stage, first_stage, last_stage);
    every_stage_fits = every_stage_fits && stage.fits;
    if (stage.total_bytes > peak.total_bytes) peak = stage;
  };
  consider(true, config.pp == 1);
  if (config.pp > 1) consider(false, true);
  if (config.pp > 2) consider(false, false);
  // A stage with less fragmentation may hold more allocated than the peak: each must fit.
  set_memory_verdict(peak, every_stage_fits);
  return peak;
}

}  // namespace trident
