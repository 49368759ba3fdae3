#include "costmodel/estimate.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "costmodel/compute.h"
#include "costmodel/context_parallel.h"
#include "costmodel/data_parallel.h"
#include "costmodel/ep_overlap.h"
#include "costmodel/flops.h"
#include "costmodel/kernels.h"
#include "costmodel/memory.h"
#include "costmodel/moe.h"
#include "costmodel/pipeline.h"
#include "costmodel/plan_memory.h"
#include "costmodel/precision.h"
#include "costmodel/tp_pp_comm.h"

namespace trident {

namespace {

/// The share of the model's layers full recompute repeats (every one unless partial), stage by
/// stage: the middle stages hold `split.middle` layers or one fewer (pipeline.h stage_layers).
double model_recompute_share(const Model& model, const ParallelConfig& config) {
  const StageLayers split = model_stage_layers(model, config);
  const double layers = model.layers + model.mtp_layers;
  if (config.pp <= 1 || layers <= 0.0) return config.full_recompute_share(layers);
  double recomputed = config.recomputed_layers(split.first) + config.recomputed_layers(split.last);
  if (config.pp > 2) {
    const double middles = config.pp - 2.0;
    const double in_middles = layers - split.first - split.last;
    const double shorter = middles * split.middle - in_middles;  // stages of middle - 1 layers
    recomputed += (middles - shorter) * config.recomputed_layers(split.middle) +
                  shorter * config.recomputed_layers(split.middle - 1.0);
  }
  return recomputed / layers;
}

/// One micro-batch through the bottleneck stage (the slowest: a middle stage's layers, or
/// the last stage's layers plus the output layer).
struct StageTime {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double recompute_s = 0.0;
  LayerTime layer;          ///< one layer, one micro-batch (per-GEMM times for the TP overlap)
  LayerTime cp_step;        ///< the layer before context parallelism: one ring step's attention
  double layers = 0.0;      ///< layers on the bottleneck stage
  double fill_ratio = 1.0;  ///< the bubble's share of the bottleneck's time (fill_drain_ratio)
  /// The output layer's weight-gradient GEMM per micro-batch (on the last stage, whichever
  /// stage sets the pace) and how much longer the last stage's micro-batch is than the next
  /// slowest stage's (0 where it does not set the pace): deferred_output_wgrad's inputs.
  double output_wgrad_s = 0.0;
  double last_margin_s = 0.0;
  [[nodiscard]] double total_s() const { return forward_s + backward_s + recompute_s; }
};

/// CPU launch floor: a layer cannot run faster than the stack launches its kernels
/// (forward kernels once, backward twice as many, recompute again on the `full_share` of the
/// layers recomputed in full).
double launch_floor_s(const Stack& stack, double full_share) {
  const double passes = 3.0 + full_share;
  return stack.kernels_per_layer_forward * stack.kernel_launch_us * 1e-6 * passes;
}

/// Layers of a stage of `layers` whose recompute_s runs: the recomputed ones under (partial)
/// full recompute, every layer under selective recompute (none: recompute_s is 0).
double recompute_repeats(const ParallelConfig& config, double layers) {
  return config.recompute == Recompute::full ? config.recomputed_layers(layers) : layers;
}

/// What the per-GPU dense view (context_parallel.h, moe.h) leaves out of a layer: attention
/// against the other CP ranks' chunks and the routed experts, at `moe_share` of the layers
/// (the pace-setting stage's, stage_moe_fraction).
LayerTime with_cp_and_experts(LayerTime layer, const Model& model, const ParallelConfig& config,
                              SelectiveKind selective, double moe_share, const LayerTime& experts) {
  add_cp_attention(layer, config.cp, config.recompute, selective);
  if (!model.is_moe()) return layer;
  layer.forward_s += moe_share * experts.forward_s;
  layer.backward_s += moe_share * experts.backward_s;
  layer.recompute_s += moe_share * experts.recompute_s;
  return layer;
}

/// What a stage's time is made of that does not depend on how context parallelism runs its
/// attention (ring or Ulysses): priced once for both.
struct StageWork {
  LinearGemmTimes linear;  ///< one layer's linear GEMMs (the per-GPU dense view)
  LayerTime experts;       ///< one MoE layer's routed experts (routed_expert_time)
  LayerTime head;          ///< the output layer and loss (output_head_time)
};

StageWork stage_work(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                     const Model& real, const ParallelConfig& given, const Stack& stack,
                     const Calibration* calibration) {
  return {
      linear_gemm_times(gpu, model, config, calibration),
      routed_expert_time(
          gpu, real, given, calibration, stack.fp8_saves_fp8_inputs, stack.moe_permute_fusion,
          stack.fp8_follows_gpu_layout(),
          stack.moe_fp8_padding_copies && stack.moe_dispatcher == MoeDispatcher::alltoall),
      output_head_time(gpu, model, config, calibration,
                       {stack.loss_forward_bytes_per_logit, stack.loss_backward_bytes_per_logit})};
}

/// A stage's per-micro-batch parts before the slowest stage is picked: the mean layer (CPU
/// launch floor applied), the layer before CP and experts, the output layer and loss, the split.
struct StageParts {
  LayerTime layer;
  LayerTime dense;
  LayerTime logits;
  StageLayers split;
  int layers = 0;  ///< the model's layers, MTP included
};

/// `model` / `config`: the per-GPU dense view; `real` / `given`: the model and split as given;
/// `moe_share`: the MoE share of the pace-setting stage's layers (stage_moe_fraction).
StageParts stage_parts(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                       const Model& real, const ParallelConfig& given,
                       const EstimateOptions& options, const StageWork& work, double moe_share,
                       bool ulysses, const Calibration* calibration) {
  const Stack& stack = options.stack;
  StageParts parts;
  parts.dense =
      layer_time(cluster.gpu, model, config,
                 {stack.attention, stack.selective, stack.fp8_saves_fp8_inputs, given.cp, ulysses,
                  stack.elementwise, stack.unfused_softmax, stack.fp8_follows_gpu_layout()},
                 work.linear, calibration);
  LayerTime& layer = parts.layer;
  layer = with_cp_and_experts(parts.dense, real, given, stack.selective, moe_share, work.experts);
  parts.split = model_stage_layers(model, config);
  parts.layers = model.layers + model.mtp_layers;
  const double most = parts.split.most();
  const double repeat_share = most > 0.0 ? recompute_repeats(config, most) / most : 0.0;
  const double gpu_s = layer.forward_s + layer.backward_s + repeat_share * layer.recompute_s;
  const double floor_s = launch_floor_s(stack, config.full_recompute_share(most));
  if (floor_s > gpu_s && gpu_s > 0.0) {  // CPU-bound: every pass stretched alike
    const double stretch = floor_s / gpu_s;
    layer.forward_s *= stretch;
    layer.backward_s *= stretch;
    layer.recompute_s *= stretch;
  }
  parts.logits = work.head;
  return parts;
}

/// The slowest stage of `parts`: `layer_comm_s` is the exposed communication each layer of a
/// stage adds per micro-batch (the MoE all-to-alls, TP's calls), so the stage is chosen on
/// compute and that communication alike, and the fill and drain weigh the stages with it.
StageTime pick_stage(const StageParts& parts, const ParallelConfig& config, double layer_comm_s) {
  const StageLayers& split = parts.split;
  LayerTime layer = parts.layer;
  const LayerTime& logits = parts.logits;
  const double with_logits = split.last;
  const double without = std::max(config.pp > 1 ? split.first : 0, split.middle);
  const auto layers_s = [&](double layers) {
    return layers * (layer.forward_s + layer.backward_s + layer_comm_s) +
           recompute_repeats(config, layers) * layer.recompute_s;
  };
  const double last_s = layers_s(with_logits) + logits.forward_s + logits.backward_s;
  const bool last_is_slowest = last_s >= layers_s(without);
  StageTime time;
  const MiddleStages middles = middle_stages(parts.layers, config.pp, split);
  const double middle_s = layers_s(split.middle);
  time.fill_ratio = fill_drain_ratio(
      config.pp, layers_s(split.first), middle_s,
      middles.full * middle_s + middles.fewer * layers_s(split.middle - 1), last_s);
  time.layers = last_is_slowest ? with_logits : without;
  const double head = last_is_slowest ? 1.0 : 0.0;
  time.forward_s = time.layers * layer.forward_s + head * logits.forward_s;
  time.backward_s = time.layers * layer.backward_s + head * logits.backward_s;
  time.recompute_s = recompute_repeats(config, time.layers) * layer.recompute_s;
  // The stage's mean layer: partial recompute spreads its recomputed layers' time over all.
  if (time.layers > 0.0) layer.recompute_s = time.recompute_s / time.layers;
  time.layer = layer;
  time.cp_step = parts.dense;
  time.output_wgrad_s = logits.output_wgrad_s;
  time.last_margin_s = config.pp > 1 && last_is_slowest ? last_s - layers_s(without) : 0.0;
  return time;
}

/// One MoE layer of the pace-setting stage as the combined 1F1B splits it: the routed experts
/// (`experts`, one MoE layer's) and the rest of the stage's mean layer at `moe_share` MoE
/// layers (attention, router, dense or shared FFN), its selective recompute in its backward.
CombinedLayer combined_layer(const StageTime& stage, const LayerTime& experts, double moe_share,
                             bool delay_wgrad, double unpermute_s, double unpermute_backward_s) {
  const LayerTime& layer = stage.layer;
  CombinedLayer out;
  out.attention_forward_s = std::max(0.0, layer.forward_s - moe_share * experts.forward_s);
  out.attention_backward_s =
      std::max(0.0, layer.backward_s + layer.recompute_s -
                        moe_share * (experts.backward_s + experts.recompute_s));
  // The unpermutation runs in the combine node, on the communication stream, forward and
  // backward (routed_expert_time's bytes).
  out.combine_forward_compute_s = std::min(unpermute_s, experts.forward_s);
  out.combine_backward_compute_s = std::min(unpermute_backward_s, experts.backward_s);
  out.experts_forward_s = experts.forward_s - out.combine_forward_compute_s;
  // A linear layer's backward is its input gradient and its weight gradient, one GEMM of the
  // forward's FLOPs each: --delay-wgrad-compute takes the weight-gradient GEMMs out, the
  // forward GEMMs' time.
  const double backward_s =
      experts.backward_s + experts.recompute_s - out.combine_backward_compute_s;
  out.experts_wgrad_s = delay_wgrad ? std::min(experts.gemm_forward_s, backward_s) : 0.0;
  out.experts_dgrad_s = backward_s - out.experts_wgrad_s;
  return out;
}

/// Traffic of one micro-batch (or one layer of one) over `times` of them: calls, total and
/// exposed time scaled alike.
CommDetail per_step(CommDetail comm, double times) {
  comm.calls_per_step *= times;
  comm.total_s *= times;
  comm.exposed_s *= times;
  return comm;
}

/// The share of the GPU's SMs a group's ring channels hold while they run.
double nccl_sm_share(const Cluster& cluster, const GroupLink& link) {
  const int sms = kernel_profile(cluster.gpu).sm_count;
  if (sms <= 0 || link.ranks < 2) return 0.0;
  return std::min(1.0, nccl_ring_channels(cluster, link) / sms);
}

/// Megatron-Core overlaps p2p only in the interleaved schedule (arguments.py forces
/// overlap_p2p_comm off without virtual stages).
bool pp_overlapped(const Stack& stack, const ParallelConfig& config) {
  return stack.pp_overlap && config.virtual_stages > 1;
}

/// Shared experts run as the TP linear pair of a dense FFN (Megatron's SharedExpertMLP: TE
/// column- and row-parallel linears, their TP collectives on the compute stream), unless the
/// stack runs them beside the exchange, where Megatron drops their TP mode and moves their
/// input and output on a side stream (shared_experts.py L53-58 @core_v0.12.0).
bool shared_experts_on_tp(const Model& model, const Stack& stack) {
  return model.moe.shared_experts > 0 && !stack.moe_shared_expert_overlap;
}

/// The share of the stage's layers whose FFN is a TP linear pair: dense layers, and MoE layers
/// whose shared experts run on the TP path (the routed experts have no TP). `moe_share`: the
/// stage's MoE share.
double tp_ffn_share(const Model& model, const Stack& stack, double moe_share) {
  return shared_experts_on_tp(model, stack) ? 1.0 : 1.0 - moe_share;
}

/// The step's TP traffic: the stage's collectives over its m micro-batches, exposed as the
/// stack's overlap leaves them (userbuffers need sequence parallelism, TE initialize_ub;
/// without it Megatron-Core still overlaps the backward input-gradient all-reduce, through
/// NCCL). MoE layers with expert TP 1 have no TP collectives around the routed experts (the
/// tokens go by the EP all-to-all from their sequence-parallel shard): half of those layers'
/// calls remain, all of them where shared experts run as TP linears.
CommDetail tp_step(const Gpu& gpu, const Model& model, const Model& local,
                   const ParallelConfig& config, const ParallelConfig& split, const GroupLink& link,
                   const StageTime& stage, const Stack& stack, bool userbuffers, double md,
                   double moe_share, const Calibration* calibration) {
  CommDetail tp =
      tp_comm(local, split, link, stage.layers, stack.tp_keeps_gathered_inputs, calibration);
  tp.calls_per_step *= md;
  tp.total_s = tp.calls_per_step * tp.time_per_call_s;
  tp.exposed_s = tp.total_s;
  if (config.tp > 1 && stack.tp_overlap != TpOverlap::none) {
    const double gather_s = collective_time_s(
        Collective::all_gather, tp_gather_bytes(tp.bytes_per_call, precision_of(model.training)),
        link, calibration);
    const double scatter_s =
        collective_time_s(Collective::reduce_scatter, tp.bytes_per_call, link, calibration);
    // The exposed time of a recomputed layer and of one that is not, mixed in the stage's
    // proportion (all of one kind unless recompute is partial).
    const auto layer_s = [&](bool full) {
      return userbuffers ? tp_overlap_layer_s(stage.layer, gather_s, scatter_s,
                                              kernel_profile(gpu).sm_count, full,
                                              stack.tp_keeps_gathered_inputs)
                         : tp_backward_overlap_layer_s(stage.layer, tp, gather_s, scatter_s,
                                                       config.sequence_parallel, full,
                                                       stack.tp_keeps_gathered_inputs);
    };
    const double share = config.full_recompute_share(stage.layers);
    const double per_layer_s = share >= 1.0 ? layer_s(true)
                               : share <= 0.0
                                   ? layer_s(false)
                                   : share * layer_s(true) + (1.0 - share) * layer_s(false);
    tp.exposed_s = std::min(tp.total_s, md * stage.layers * per_layer_s);
  }
  // The attention's half of a layer's calls, and the FFN's half where it is a TP pair.
  const double tp_share = 0.5 + 0.5 * tp_ffn_share(model, stack, moe_share);
  tp.calls_per_step *= tp_share;
  tp.total_s *= tp_share;
  tp.exposed_s *= tp_share;
  add_pipe_gathers(tp, local, model.training, config,
                   stack.pp_scatter_gather ? stack.pp_tp_gathers_per_micro_batch : 0, md, link,
                   calibration);
  return tp;
}

/// The step's PP traffic. DeepSpeed (1F1B only, the stack loader's condition): each send and
/// receive blocks on its own; the simulated schedule's critical path holds
/// deepspeed_p2p_exposed_transfers of them. Overlapped only as pp_overlapped says.
CommDetail pp_step(const Model& local, const ParallelConfig& config, const ParallelConfig& split,
                   const GroupLink& link, const StageTime& stage, const Stack& stack, long long m,
                   const Calibration* calibration) {
  CommDetail pp = pp_comm(local, split, link, stack.pp_sends_attention_mask,
                          stack.pp_scatter_gather, calibration);
  pp.calls_per_step = stack.pp_separate_send_recv && config.pp > 1
                          ? deepspeed_p2p_exposed_transfers(config.pp, m)
                          : pp.calls_per_step * static_cast<double>(m);
  pp.total_s = pp.calls_per_step * pp.time_per_call_s;
  pp.exposed_s =
      pp_overlapped(stack, config)
          ? std::min(pp.total_s, interleaved_p2p_exposed_s(config.pp, config.virtual_stages, m,
                                                           pp.time_per_call_s, stage.forward_s,
                                                           stage.backward_s + stage.recompute_s))
          : pp.total_s;
  return pp;
}

/// The compute windows DP traffic overlaps with: whatever holds the compute stream, so the
/// stage's windows widen by the TP time exposed per unit and micro-batch. `first_stage_layers`:
/// the first pipeline stage's layers (StageParts::split).
DpWindow dp_window(const StageTime& stage, const Model& local, const ParallelConfig& split,
                   double tp_exposed_s, double md, int first_stage_layers) {
  // Under a pipeline the first stage runs the step's last backward (and its first forward):
  // its reduction is the one the step waits for, behind its own last backward, whichever stage
  // sets the pace (the last stage's output layer does not widen it).
  const bool piped = split.pp > 1;
  const double first = piped ? first_stage_layers : stage.layers;
  DpWindow window{
      piped ? first * stage.layer.forward_s : stage.forward_s,
      piped ? first * (stage.layer.backward_s + stage.layer.recompute_s) : stage.backward_s,
      stage.layers,
      stage.layer.forward_s,
      stage.layer.backward_s + stage.layer.recompute_s,
      embedding_parameters(local, split)};
  if (stage.layers > 0 && md > 0) {
    const double tp_unit_s = tp_exposed_s / (md * stage.layers);
    const double unit_s = stage.layer.forward_s + stage.layer.backward_s + stage.layer.recompute_s;
    const double forward_share = unit_s > 0 ? stage.layer.forward_s / unit_s : 0.5;
    window.unit_forward_s += tp_unit_s * forward_share;
    window.unit_backward_s += tp_unit_s * (1.0 - forward_share);
    window.forward_s += first * tp_unit_s * forward_share;
    window.backward_s += first * tp_unit_s * (1.0 - forward_share);
  }
  return window;
}

/// Gradient elements one GPU holds between its backward and the optimizer: its stage's and
/// experts' parameters, their shard under ZeRO-2/3.
double held_gradients(const ParallelConfig& config, const ParallelConfig& split, double params,
                      double expert_params) {
  const bool sharded_grads = config.zero >= 2;
  return params / (sharded_grads ? split.shard_ranks() : 1.0) +
         expert_params / (sharded_grads ? static_cast<double>(expert_dp(config)) : 1.0);
}

/// Gradient passes outside the GEMMs, per step: the stack's accumulation (one pass over the
/// stage's gradients, their shard under ZeRO-2/3, after every micro-batch's backward) and
/// FSDP2's reduce-scatter copy-in (each unit's unsharded gradients copied, and widened to the
/// reduce dtype, into the reduce-scatter input on the compute stream, once per reduce-scatter).
/// `held`: held_gradients' elements.
double gradient_passes_s(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                         const ParallelConfig& split, const Stack& stack, double params,
                         double held, long long m) {
  double time_s =
      static_cast<double>(m) *
      hbm_time_s(gpu, stack.grad_accumulation_bytes(model.training.dtype, config) * held);
  // The word embedding's dense gradient (and its hook add) on the stage that holds it: priced
  // on one-stage splits, where that stage sets the pace.
  if (config.pp == 1) {
    const double embedding = static_cast<double>(model.vocab) * model.hidden / config.tp;
    time_s += static_cast<double>(m) *
              hbm_time_s(gpu, stack.embedding_gradient_bytes(model.training.dtype, config,
                                                             model.tied_embeddings) *
                                  embedding);
  }
  if (split.dp > 1 && stack.shards_per_unit(config.zero)) {
    time_s += unit_scatter_passes(config, stack, m) *
              hbm_time_s(gpu, stack.reduce_scatter_copy_in_bytes(model.training.dtype) * params);
  }
  return time_s;
}

/// Passes over Megatron's main-grad buffer once a step, on the compute stream: the DDP zeroes it
/// whole (zero_grad_buffer: grad_data.zero_()), takes each bucket's norm for its NaN check and
/// scales each bucket by 1 / (DP x CP) before a sum reduction (start_grad_sync), where there is
/// more than one rank to reduce over.
GradBufferPasses grad_buffer_passes(const Stack& stack, const ParallelConfig& config) {
  return {stack.zeroes_grad_buffer, stack.grad_nan_check,
          stack.grad_prescale && config.dp * config.cp > 1};
}

/// The time of `passes` over the buffer of `parameters`' gradients.
double grad_buffer_passes_s(const Gpu& gpu, const Model& model, const Stack& stack,
                            const GradBufferPasses& passes, double parameters) {
  return hbm_time_s(gpu, passes.count() * stack.buffer_bytes(model.training.dtype) * parameters);
}

/// FP8's amax all-reduces, all exposed: delayed scaling's per model chunk over the amax
/// reduction group, current scaling's per locally quantized tensor over TP (where the stack's
/// FP8 layers reduce them; a MoE layer's FFN only through shared experts that run as TP
/// linears, not beside the exchange, whose overlap path drops their TP mode).
CommDetail amax_step(const ParallelConfig& config, const Model& model, const Stack& stack,
                     double layers, double moe_share, long long m, const Placement& placement,
                     const Calibration* calibration) {
  const Precision precision = precision_of(model.training);
  const bool current = precision.fp8 && precision.recipe == Fp8Recipe::current;
  CommDetail out;
  out.collective = Collective::all_reduce;
  out.link = current ? placement.tp : placement.amax;
  const AmaxReductions amax =
      current ? (stack.fp8_current_amax_over_tp
                     ? fp8_current_amax_reductions(config, precision, layers,
                                                   tp_ffn_share(model, stack, moe_share), m,
                                                   out.link, calibration)
                     : AmaxReductions{})
              : fp8_amax_reductions(config, precision, layers, m, out.link, calibration);
  out.bytes_per_call = amax.bytes_per_call;
  out.calls_per_step = amax.calls_per_step;
  out.time_per_call_s = amax.time_per_call_s;
  out.total_s = amax.total_s();
  out.exposed_s = amax.total_s();
  return out;
}

/// The SM time TP's hidden calls take from the compute they hide behind: overlap_contention_s's
/// TP term (none under userbuffers, which price their own SMs in tp_overlap_layer_s).
double tp_contention_s(const Cluster& cluster, const CommDetail& tp, const GroupLink& link,
                       bool userbuffers) {
  if (userbuffers) return 0.0;
  return std::max(0.0, tp.total_s - tp.exposed_s) * nccl_sm_share(cluster, link);
}

/// NCCL kernels that run hidden behind compute take their channels' SMs from it (Transformer
/// Engine userbuffers price their own SMs in tp_overlap_layer_s).
double overlap_contention_s(const Cluster& cluster, const Estimate& e, const Placement& placement,
                            bool userbuffers) {
  const auto hidden_s = [](const CommDetail& c) { return std::max(0.0, c.total_s - c.exposed_s); };
  return tp_contention_s(cluster, e.tp, placement.tp, userbuffers) +
         hidden_s(e.dp) * nccl_sm_share(cluster, e.dp.link) +
         hidden_s(e.pp) * nccl_sm_share(cluster, placement.pp) +
         hidden_s(e.cp) * nccl_sm_share(cluster, placement.cp) +
         hidden_s(e.ep) * nccl_sm_share(cluster, placement.ep) +
         hidden_s(e.edp) * nccl_sm_share(cluster, placement.edp);
}

/// FLOPs, MFU, the stack's error band and throughput of a priced step.
void set_rates(Estimate& out, const Gpu& gpu, const Model& model, const ParallelConfig& config,
               const Stack& stack) {
  const double global_batch = static_cast<double>(model.training.global_batch);
  // MoE: FLOPs on the active parameters (each token's top_k and shared experts).
  const double full_share = model_recompute_share(model, config);
  const bool fused = is_fused(stack.attention);
  const StepFlops flops =
      model.is_moe()
          ? step_flops(moe_active_view(model), global_batch, config.recompute, stack.selective,
                       full_share, fused)
          : step_flops(model, global_batch, config.recompute, stack.selective, full_share, fused);
  out.model_flops = flops.model;
  out.model_flops_causal = flops.model_causal;
  out.hardware_flops = flops.hardware;
  const double gpu_seconds = config.gpus() * out.time.step_s;
  out.model_tflops_per_gpu = flops.model / gpu_seconds / 1e12;
  out.hardware_tflops_per_gpu = flops.hardware / gpu_seconds / 1e12;
  out.mfu = out.model_tflops_per_gpu / gpu.peak_tflops(model.training.dtype);
  out.mfu_causal = out.mfu * flops.model_causal / flops.model;
  out.time.step_s = std::isfinite(out.time.step_s) ? out.time.step_s : 0.0;
  const double error = stack.error_for(model);
  out.step_s_low = out.time.step_s * (1.0 - error);
  out.step_s_high = out.time.step_s * (1.0 + error);
  out.tokens_per_s = global_batch * model.seq_len / out.time.step_s;
  out.bubble_fraction = out.time.bubble_s / out.time.step_s;
}

}  // namespace

bool prices_at_job_pace(const Cluster& cluster, const ParallelConfig& config) {
  return needs_job_pace(cluster.gpu, config.gpus());
}

Estimate estimate(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                  const Placement& placement, const Calibration* calibration,
                  const EstimateOptions& options) {
  // A stack running a kernel the GPU has no rate for is refused, never priced as another.
  check_stack_runs(options.stack, model, cluster.gpu);
  // A job runs at the pace of its slowest GPU, a job of one GPU at its own clock (gpu_for_job):
  // priced on a copy, which search() makes once for its GPUs, not in every estimate().
  if (prices_at_job_pace(cluster, config)) {
    Cluster paced = cluster;
    paced.gpu = gpu_for_job(cluster.gpu, config.gpus());
    return estimate(paced, model, config, placement, calibration, options);
  }
  // FP8 parameters the stack gathers in 16 bits on this split (torchtitan without a
  // data-parallel shard): priced as 16-bit weights, on a copy as rare as the case above.
  if (options.stack.gathers_fp8_params_in_16_bits(model.training, config.shard_ranks())) {
    Model gathered = model;
    gathered.training.fp8.params = false;
    Estimate sixteen = estimate(cluster, gathered, config, placement, calibration, options);
    sixteen.fp8_params_gathered_16bit = true;
    return sixteen;
  }
  // A cudnn stack whose cuDNN does not train the model's heads on this GPU runs what
  // Transformer Engine falls back to (attention_run): priced on a copy, once per search
  // (search() resolves it before its evaluations).
  if (const AttentionKernel run = attention_run(options.stack, model, cluster.gpu);
      run != options.stack.attention) {
    EstimateOptions fallback = options;
    fallback.stack.attention = run;
    return estimate(cluster, model, config, placement, calibration, fallback);
  }
  Estimate out;
  out.attention = options.stack.attention;
  const Gpu& gpu = cluster.gpu;
  // The dense machinery prices the per-GPU view: context parallel chunks as sequences (cp
  // folded into dp), MoE layers' routed experts taken out (context_parallel.h, moe.h).
  // Dense models without CP are their own view: no copy in the search's hot path.
  // MoE layers are priced at the pace-setting stage's share of them (stage_moe_fraction).
  const PricedView view = priced_view(model, config);
  const double moe_share = view.moe_share;
  const Model& local = view.model(model);
  const ParallelConfig& split = view.config(config);
  const long long m = config.num_micro_batches(model.training.global_batch);
  const double md = static_cast<double>(m);
  out.num_micro_batches = m;
  out.used_calibration = calibration != nullptr && !calibration->empty();

  // The MoE all-to-alls are exposed per layer: they count when choosing the slowest stage.
  const Stack& stack = options.stack;
  CommDetail ep_layer =
      ep_comm(model, config, placement.ep, moe_share, calibration, stack.moe_dispatcher);
  if (stack.moe_shared_expert_overlap && ep_layer.exposed_s > 0.0) {
    ep_layer.exposed_s -= std::min(
        ep_layer.exposed_s,
        shared_expert_overlap_s(shared_expert_time(gpu, model, config, calibration), ep_layer,
                                moe_share, stage_recomputed_share(model, config)));
  }
  // Context parallelism: the ring prices the stage; where the stack can run Ulysses instead,
  // its attention (one causal call over the whole sequence) is priced too and the faster of
  // the two, communication and compute together, is kept.
  const StageWork work = stage_work(gpu, local, split, model, config, stack, calibration);
  const StageParts ring_parts = stage_parts(cluster, local, split, model, config, options, work,
                                            moe_share, false, calibration);
  StageTime ring = pick_stage(ring_parts, config, ep_layer.exposed_s);
  // Combined 1F1B: what the other micro-batch's compute leaves of the all-to-alls, from the
  // stage's layer; the slowest stage chosen again on it.
  out.ep_overlapped = stack.runs_ep_overlap(model, config) && moe_share > 0.0;
  if (out.ep_overlapped) {
    const ExpertGemms experts = expert_gemms(model, config);
    const double rows = experts.up.m * experts.up.batch;
    const bool fused = stack.moe_permute_fusion;
    const CombinedLayer layer =
        combined_layer(ring, work.experts, moe_share, stack.ep_overlap_delay_wgrad,
                       hbm_time_s(gpu, unpermute_bytes(model, rows, fused)),
                       hbm_time_s(gpu, unpermute_backward_bytes(model, rows, fused)));
    ep_layer.exposed_s =
        std::min(ep_layer.total_s,
                 moe_share * combined_layer_exposed_s(
                                 layer, ep_layer.time_per_call_s,
                                 combined_paired_share(config.pp, config.virtual_stages, m)));
    ring = pick_stage(ring_parts, config, ep_layer.exposed_s);
  }
  std::optional<StageParts> ulysses_parts;
  std::optional<StageTime> ulysses;
  if (config.cp > 1 && cp_a2a_runs(stack, model, config)) {
    ulysses_parts = stage_parts(cluster, local, split, model, config, options, work, moe_share,
                                true, calibration);
    ulysses = pick_stage(*ulysses_parts, config, ep_layer.exposed_s);
  }
  // Userbuffers need sequence parallelism and a TP group inside one NVLink domain: they map
  // the peers' buffers with CUDA IPC / multicast handles ("comm+GEMM overlap is currently only
  // possible with single-node tensor-parallelism", NVIDIA/TransformerEngine#1071, 2024-08;
  // multi-node NVLink domains since TE 2.2, #1470). A group across domains gets NCCL's
  // backward overlap, as without them.
  const bool userbuffers = stack.tp_overlap == TpOverlap::userbuffers && config.sequence_parallel &&
                           placement.tp.domains <= 1;
  const auto tp_of = [&](const StageTime& s) {
    return tp_step(gpu, model, local, config, split, placement.tp, s, stack, userbuffers, md,
                   moe_share, calibration);
  };
  // Under a pipeline each layer's exposed TP calls (and the SMs its hidden ones hold) count in
  // the stages' times as the MoE all-to-alls do: the slowest stage and the fill and drain are
  // picked again with them (the output layer alone no longer tips the pace to a last stage of fewer
  // layers). The TP of the stage picked first is kept: the pick again changes the stage's TP only
  // where it changes its layers (a stage's mean layer follows its layer count alone). Returns
  // whether `tp` (written here) is the TP of the stage as picked.
  const auto with_tp = [&](StageTime& s, const StageParts& parts, CommDetail& tp) {
    if (config.tp < 2 || config.pp < 2 || s.layers <= 0.0) return false;
    tp = tp_of(s);
    const double layers = s.layers;
    // Each layer's exposed TP calls and the SMs its hidden ones take.
    const double tp_s = tp.exposed_s + tp_contention_s(cluster, tp, placement.tp, userbuffers);
    s = pick_stage(parts, config, ep_layer.exposed_s + tp_s / (md * layers));
    return s.layers == layers;
  };
  CommDetail ring_tp;
  CommDetail ulysses_tp;
  const bool ring_tp_kept = with_tp(ring, ring_parts, ring_tp);
  const bool ulysses_tp_kept = ulysses && with_tp(*ulysses, *ulysses_parts, ulysses_tp);
  const CpComm cp = cp_comm(model, config, placement.cp, ring.cp_step, ring.layers, stack,
                            calibration, ulysses ? ulysses->total_s() - ring.total_s() : 0.0);
  const StageTime& stage = cp.kind == CpKind::a2a && ulysses ? *ulysses : ring;
  out.time.forward_s = md * stage.forward_s;
  out.time.backward_s = md * stage.backward_s;
  out.time.recompute_s = md * stage.recompute_s;

  out.tp_userbuffers = userbuffers && config.tp > 1;
  const bool on_ring = &stage == &ring;
  if (on_ring ? ring_tp_kept : ulysses_tp_kept) {
    out.tp = on_ring ? ring_tp : ulysses_tp;
  } else {
    out.tp = tp_of(stage);
  }
  out.cp_kind = cp.kind;
  out.cp = per_step(cp.detail, md);
  out.ep = per_step(ep_layer, stage.layers * md);
  out.pp = pp_step(local, config, split, placement.pp, stage, stack, m, calibration);
  // Those two are the whole step's increase, fill and drain included; Megatron's blocking
  // batched p2p lengthens each micro-batch, so the bubble scales it too.
  out.pp_whole_step = pp_overlapped(stack, config) || stack.pp_separate_send_recv;

  const double first_params = stage_parameters(local, split, true, config.pp == 1);
  const double last_params = stage_parameters(local, split, config.pp == 1, true);
  const double params = std::max(first_params, last_params);
  // The reduction the step waits for is the first stage's, behind its own last backward
  // (dp_window): its parameters and its window, so a larger last stage (the output layer, MTP)
  // neither adds bytes nor a wider window to it.
  const DpWindow window =
      dp_window(stage, local, split, out.tp.exposed_s, md, ring_parts.split.first);
  out.dp = dp_comm(local, split, {placement.dp, placement.shard, placement.replicate}, first_params,
                   m, window, stack, calibration, model.is_moe());
  // Expert gradients reduce over the expert-data-parallel group (tp x cp x dp / ep ranks).
  const double expert_params = expert_parameters_per_gpu(model, config);
  ParallelConfig expert_split = split;
  expert_split.dp = expert_dp(config);
  expert_split.dp_shard = 0;
  if (expert_params > 0.0) {
    DpWindow expert_window = window;
    expert_window.edge_parameters = 0.0;  // the embedding is not an expert's
    // Sharded per unit, a unit is one MoE layer's routed experts on this GPU.
    expert_window.unit_parameters = expert_parameters_per_gpu(model, config, 1.0);
    expert_window.layers = expert_params / expert_window.unit_parameters;
    out.edp = dp_comm(local, expert_split, {placement.edp, placement.edp, placement.edp},
                      expert_params, m, expert_window, stack, calibration, model.is_moe());
  }
  const double held = held_gradients(config, split, params, expert_params);
  out.time.backward_s += gradient_passes_s(gpu, model, config, split, stack, params, held, m);
  const ShardedCopyBytes copies =
      sharded_copy_bytes(local, split, stack, m, window.layers, expert_params, expert_split.dp > 1);
  out.time.forward_s += hbm_time_s(gpu, copies.forward);
  out.time.backward_s += hbm_time_s(gpu, copies.backward);
  out.amax = amax_step(config, model, stack, stage.layers, moe_share, m, placement, calibration);

  // Bubble: (p-1)/(v*m) of the ideal time, which holds compute and what is exposed per
  // micro-batch (TP, PP, CP, EP communication and the amax all-reduces).
  const double ideal_s = out.time.compute_s() + out.tp.exposed_s +
                         (out.pp_whole_step ? 0.0 : out.pp.exposed_s) + out.cp.exposed_s +
                         out.ep.exposed_s + out.amax.exposed_s;
  out.bubble_fill_ratio = stage.fill_ratio;
  out.time.bubble_s =
      bubble_fraction(config.pp, config.virtual_stages, m) * ideal_s * stage.fill_ratio;
  // The output layer's deferred weight gradients leave the last stage's micro-batches and fill
  // its drain, the bubble's backward half (the last micro-batch's backward through the other
  // stages); the bubble, the other stages' fill and drain, is taken before the saving
  // (fill_drain_ratio weighs them against the undeferred last stage).
  if (stack.defer_output_wgrad) {
    const double stage_s = stage.total_s();
    const double drain_s =
        stage_s > 0.0 ? out.time.bubble_s * (stage.backward_s + stage.recompute_s) / stage_s : 0.0;
    out.output_wgrad = deferred_output_wgrad(config.pp, stack.output_wgrad_deferral_limit, m,
                                             1.0 + model.mtp_layers, stage.output_wgrad_s,
                                             stage.last_margin_s, drain_s);
    out.time.backward_s += out.output_wgrad.exposed_s - out.output_wgrad.saved_s;
  }
  const double sharded = config.zero >= 1 ? split.shard_ranks() : 1.0;
  const double expert_sharded = config.zero >= 1 ? expert_split.dp : 1.0;
  out.optimizer.update_s =
      optimizer_time_s(gpu, model.training.optimizer,
                       params / sharded + expert_params / expert_sharded, stack.adam_step_bytes);
  out.optimizer.fp8_weight_cast_s =
      fp8_weight_cast_time_s(gpu, precision_of(model.training, gpu, stack.fp8_follows_gpu_layout()),
                             stack.fp8_weight_cache ? 1.0 : double(m), params + expert_params);
  out.optimizer.grad_passes = grad_buffer_passes(stack, config);
  out.optimizer.grad_buffer_s =
      grad_buffer_passes_s(gpu, model, stack, out.optimizer.grad_passes, held);
  out.time.optimizer_s =
      out.optimizer.update_s + out.optimizer.fp8_weight_cast_s + out.optimizer.grad_buffer_s;
  out.time.tp_comm_s = out.tp.exposed_s;
  out.time.pp_comm_s = out.pp.exposed_s;
  out.embedding_grads = tied_embedding_grads(model, config, stack, placement.pp, calibration);
  out.time.dp_comm_s = out.dp.exposed_s + out.edp.exposed_s + out.embedding_grads.exposed_s;
  out.time.cp_comm_s = out.cp.exposed_s;
  out.time.ep_comm_s = out.ep.exposed_s;
  out.time.amax_comm_s = out.amax.exposed_s;
  out.time.overlap_contention_s = overlap_contention_s(cluster, out, placement, userbuffers);
  out.time.step_s = out.time.compute_s() + out.time.exposed_comm_s() + out.time.bubble_s +
                    out.time.optimizer_s + out.time.overlap_contention_s;
  set_rates(out, gpu, model, config, stack);

  out.memory = plan_memory(cluster, model, config, view, placement, options, out.cp_kind);
  return out;
}

}  // namespace trident
