#include "costmodel/moe.h"

#include <algorithm>
#include <cmath>

#include "costmodel/pipeline.h"
#include "costmodel/precision.h"

namespace trident {

namespace {

/// Matrices of one expert that take the input: gate and up when gated, else up.
double input_matrices(const Model& model) { return is_gated(model.ffn) ? 2.0 : 1.0; }

/// MoE layers on the peak stage: its layers (multi-token prediction included) at the
/// pace-setting stage's MoE share.
double stage_moe_layers(const Model& model, const ParallelConfig& config) {
  return model_stage_layers(model, config).most() * stage_moe_fraction(model, config);
}

/// A view with the FFN hidden size set to the per-layer average `ffn_per_layer`.
Model with_ffn(const Model& model, double ffn_per_layer) {
  Model view = model;
  view.ffn_hidden = static_cast<int>(std::lround(ffn_per_layer));
  view.moe = MoeSpec{};  // a dense model from here on
  return view;
}

}  // namespace

double moe_fraction(const Model& model) {
  if (!model.is_moe() || model.layers <= 0) return 0.0;
  return static_cast<double>(model.moe_layers()) / model.layers;
}

namespace {
/// The most MoE layers any stage of `count_wanted` layers holds, over the stages
/// `visit_first` to `visit_last` in order (stage_layers' split: the middle stages share the
/// rest, the earlier ones one more).
int busiest_moe_stage(const Model& model, int pp, const StageLayers& split, int count_wanted,
                      int visit_first, int visit_last) {
  const int middles = pp - 2;
  const int middle_layers = model.layers - split.first - split.last;
  int start = 0;
  int busiest = 0;
  for (int stage = 0; stage <= visit_last; ++stage) {
    int count = split.last;
    if (stage == 0) {
      count = split.first;
    } else if (stage < pp - 1) {
      const int index = stage - 1;
      count = middle_layers / middles + (index < middle_layers % middles ? 1 : 0);
    }
    if (stage >= visit_first && count == count_wanted) {
      busiest = std::max(busiest, model.moe_layers_in(start, start + count));
      if (busiest == count_wanted) break;  // no stage holds more MoE layers than layers
    }
    start += count;
  }
  return busiest;
}
}  // namespace

double stage_moe_fraction(const Model& model, const ParallelConfig& config) {
  if (!model.is_moe() || model.layers <= 0) return 0.0;
  const int pp = config.pp;
  if (pp <= 1) return moe_fraction(model);
  const StageLayers split = stage_layers(model.layers, config);
  const int most = split.most();
  if (most <= 0) return 0.0;
  return static_cast<double>(busiest_moe_stage(model, pp, split, most, 0, pp - 1)) / most;
}

Model moe_dense_view(const Model& model, double moe_share) {
  if (!model.is_moe()) return model;
  const double shared = static_cast<double>(model.moe.shared_experts) * model.moe.expert_ffn_hidden;
  return with_ffn(model, (1.0 - moe_share) * model.ffn_hidden + moe_share * shared);
}

Model moe_active_view(const Model& model) {
  if (!model.is_moe()) return model;
  const double share = moe_fraction(model);
  const double active =
      static_cast<double>(model.moe.shared_experts + model.moe.top_k) * model.moe.expert_ffn_hidden;
  return with_ffn(model, (1.0 - share) * model.ffn_hidden + share * active);
}

double moe_tokens_per_gpu(const Model& model, const ParallelConfig& config) {
  return static_cast<double>(config.micro_batch) * model.seq_len /
         (static_cast<double>(config.cp) * config.tp);
}

double stage_recomputed_share(const Model& model, const ParallelConfig& config) {
  return config.full_recompute_share(model_stage_layers(model, config).most());
}

double moe_load_factor(const MoeSpec& moe) {
  if (moe.capacity_factor > 0.0) return std::min(moe.imbalance, moe.capacity_factor);
  return moe.imbalance;
}

ExpertGemms expert_gemms(const Model& model, const ParallelConfig& config) {
  const double tokens = moe_tokens_per_gpu(model, config);
  const double experts = model.moe.experts;
  const double local = experts / config.ep;
  const double per_expert =
      tokens * model.moe.top_k * config.ep / experts * moe_load_factor(model.moe);
  const double h = model.hidden;
  const double f = model.moe.expert_ffn_hidden;
  ExpertGemms gemms;
  gemms.up = {per_expert, input_matrices(model) * f, h, local};
  gemms.down = {per_expert, h, f, local};
  gemms.router = {tokens, experts, h, 1.0};
  return gemms;
}

double local_expert_sort_bytes(const Model& model, const ParallelConfig& config, double rows) {
  if (!model.is_moe() || model.moe.experts <= config.ep) return 0.0;
  return 2.0 * 4.0 * rows * model.hidden;
}

double permute_bytes(const Model& model, double rows) { return 4.0 * rows * model.hidden; }

namespace {

/// Zero-filling a 16-bit token tensor that the routed rows are summed into: 2 bytes per token's
/// element, rows / top_k tokens, per routed row element.
double token_zero_fill_bytes_per_row(const Model& model) {
  return 2.0 / std::max(1, model.moe.top_k);
}

}  // namespace

double permute_backward_bytes(const Model& model, double rows, bool fused) {
  if (fused) return 2.0 * permute_bytes(model, rows);
  return (6.0 + token_zero_fill_bytes_per_row(model)) * rows * model.hidden;
}

double unpermute_bytes(const Model& model, double rows, bool fused) {
  if (fused) return permute_bytes(model, rows);
  return (4.0 + 6.0 + token_zero_fill_bytes_per_row(model)) * rows * model.hidden;
}

double unpermute_backward_bytes(const Model& model, double rows, bool fused) {
  if (fused) return 2.0 * permute_bytes(model, rows);
  return 12.0 * rows * model.hidden;
}

double fp8_padding_bytes(const Model& model, double rows) { return 8.0 * rows * model.hidden; }

LayerTime routed_expert_time(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                             const Calibration* calibration, bool saves_fp8_inputs,
                             bool permute_fused, bool fp8_gpu_layout, bool fp8_padding_copies) {
  LayerTime time;
  if (!model.is_moe()) return time;
  const Precision precision = precision_of(model.training, gpu, fp8_gpu_layout);
  // The experts are Transformer Engine linears (FP8 under fp8_autocast); the router is torch's
  // F.linear (router.py), never FP8: the output layer's 16-bit dtype.
  const Dtype router = precision.output_gemm;
  const KernelProfile profile = kernel_profile(gpu);
  const ExpertGemms g = expert_gemms(model, config);
  time.gemm_forward_s = linear_gemm_time_s(gpu, precision, profile, g.up, calibration) +
                        linear_gemm_time_s(gpu, precision, profile, g.down, calibration) +
                        gemm_time_s(gpu, router, profile, g.router, calibration);
  const double backward_gemms_s =
      linear_gemm_backward_time_s(gpu, precision, profile, g.up, calibration) +
      linear_gemm_backward_time_s(gpu, precision, profile, g.down, calibration) +
      gemm_backward_time_s(gpu, router, profile, g.router, calibration);
  // Memory-bound: the expert activation over the routed rows (gated: read gate and up, write:
  // 6 bytes per element; else 4), the permutation before the experts (read and write each
  // routed row of h) and the unpermutation after them (fused or not). Backward twice the
  // activation's bytes, the permutation's and the unpermutation's own.
  const double rows = g.up.m * g.up.batch;
  const double f = model.moe.expert_ffn_hidden;
  const double activation = (is_gated(model.ffn) ? 6.0 : 4.0) * rows * f;
  const double bytes = activation + permute_bytes(model, rows);
  const double permute_backward = permute_backward_bytes(model, rows, permute_fused);
  const double unpermute = unpermute_bytes(model, rows, permute_fused);
  const double unpermute_backward = unpermute_backward_bytes(model, rows, permute_fused);
  const double sort = local_expert_sort_bytes(model, config, rows);
  // FP8: each expert GEMM's input cast (the permuted rows into fc1, the activation into fc2; no
  // norm to fuse with) and, backward, each output gradient's (fp8_input_cast_bytes,
  // fp8_gradient_cast_bytes).
  const double casts_forward = fp8_input_cast_bytes(g.up, precision, saves_fp8_inputs) +
                               fp8_input_cast_bytes(g.down, precision, saves_fp8_inputs);
  const double casts_backward = fp8_gradient_cast_bytes(g.up, precision, saves_fp8_inputs) +
                                fp8_gradient_cast_bytes(g.down, precision, saves_fp8_inputs);
  const double padding = fp8_padding_copies && precision.linear_gemm == Dtype::fp8
                             ? fp8_padding_bytes(model, rows)
                             : 0.0;
  time.forward_s =
      time.gemm_forward_s + hbm_time_s(gpu, bytes + unpermute + sort + casts_forward + padding);
  time.backward_s =
      backward_gemms_s + hbm_time_s(gpu, 2.0 * activation + permute_backward + unpermute_backward +
                                             sort + casts_backward + padding);
  if (config.recompute == Recompute::full) time.recompute_s = time.forward_s;
  return time;
}

CommDetail ep_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                   double moe_layers, const Calibration* calibration, MoeDispatcher dispatcher) {
  CommDetail comm;
  comm.collective = Collective::all_to_all;
  comm.link = link;
  if (config.ep <= 1 || !model.is_moe()) return comm;
  // The dispatcher sends the 16-bit (fp32 under tf32/fp32) norm output and gradients: FP8 casts
  // happen inside the experts, after the dispatch (docs/cost_model.md#moe).
  comm.bytes_per_call = moe_tokens_per_gpu(model, config) * model.moe.top_k * model.hidden *
                        precision_of(model.training).activation_bytes;
  comm.time_per_call_s =
      dispatcher == MoeDispatcher::hybridep
          ? hybrid_ep_exchange_s(model, config, link)
          : collective_time_s(Collective::all_to_all, comm.bytes_per_call, link, calibration);
  // Two more on each layer full recompute repeats (the pace-setting stage's share).
  const double recomputed_share = stage_recomputed_share(model, config);
  comm.calls_per_step = moe_layers * (4.0 + 2.0 * recomputed_share);
  comm.total_s = comm.calls_per_step * comm.time_per_call_s;
  comm.exposed_s = comm.total_s;
  return comm;
}

double token_reaches_share(double experts, double top_k, double experts_in_group) {
  // C(E - g, k) / C(E, k) = prod_{i < k} (E - g - i) / (E - i): none of the k picks in the group.
  double none = 1.0;
  for (int i = 0; i < static_cast<int>(top_k); ++i) {
    none *= std::max(0.0, experts - experts_in_group - i) / (experts - i);
  }
  return 1.0 - none;
}

double hybrid_ep_network_fraction(int domains) {
  // DeepEP@94a9f8f (branch hybrid-ep) docs/README_Hybrid-EP.md, "H100 Platform": 4096 tokens,
  // hidden 7168, top-8, 8 local experts, 16 SMs, Torch API, BF16 dispatch / combine "algorithm
  // bandwidth" 54.47/53.35 GB/s (16 ranks, 2 nodes), 47.36/52.53 (32, 4), 41.24/46.57 (64, 8).
  // That bandwidth counts each token once per node it reaches, the sender's own included
  // (tests/utils.py L671 count_rdma_send_from_routing_map), so the RDMA share is (D - 1)/D of it;
  // over a 400 Gb/s (50 GB/s) CX7: mean of dispatch and combine x (D - 1)/D / 50.
  if (domains <= 2) return (54.47 + 53.35) / 2.0 * 0.5 / 50.0;  // 0.539
  if (domains < 8) return (47.36 + 52.53) / 2.0 * 0.75 / 50.0;  // 0.749
  return (41.24 + 46.57) / 2.0 * 0.875 / 50.0;                  // 0.768
}

HybridEpTraffic hybrid_ep_traffic(const Model& model, const ParallelConfig& config,
                                  const GroupLink& link) {
  const double token_bytes = moe_tokens_per_gpu(model, config) * model.hidden *
                             precision_of(model.training).activation_bytes;
  const double experts = model.moe.experts;
  const double per_rank = experts / config.ep;
  const double r = std::max(1, link.ranks_per_domain);
  const double domains = std::max(1, link.domains);
  const double p_rank = token_reaches_share(experts, model.moe.top_k, per_rank);
  const double p_domain = token_reaches_share(experts, model.moe.top_k, per_rank * r);
  return {token_bytes * domains * (r - 1.0) * p_rank, token_bytes * (domains - 1.0) * p_domain};
}

double hybrid_ep_exchange_s(const Model& model, const ParallelConfig& config,
                            const GroupLink& link) {
  const HybridEpTraffic traffic = hybrid_ep_traffic(model, config, link);
  return exchange_time_s(traffic.nvlink_bytes, traffic.network_bytes,
                         hybrid_ep_network_fraction(link.domains), link);
}

SharedExpertTime shared_expert_time(const Gpu& gpu, const Model& model,
                                    const ParallelConfig& config, const Calibration* calibration) {
  SharedExpertTime time;
  if (!model.is_moe() || model.moe.shared_experts <= 0) return time;
  const double tokens = moe_tokens_per_gpu(model, config) * config.tp;  // gathered over TP
  const double f =
      static_cast<double>(model.moe.expert_ffn_hidden) * model.moe.shared_experts / config.tp;
  const GemmShape up{tokens, input_matrices(model) * f, static_cast<double>(model.hidden), 1.0};
  const GemmShape down{tokens, static_cast<double>(model.hidden), f, 1.0};
  // TE linears, as the routed experts: FP8 (and MXFP8's kernels) under fp8_autocast.
  const Precision precision = precision_of(model.training);
  const KernelProfile profile = kernel_profile(gpu);
  time.up_forward_s = linear_gemm_time_s(gpu, precision, profile, up, calibration);
  time.down_forward_s = linear_gemm_time_s(gpu, precision, profile, down, calibration);
  time.up_backward_s = linear_gemm_backward_time_s(gpu, precision, profile, up, calibration);
  time.down_backward_s = linear_gemm_backward_time_s(gpu, precision, profile, down, calibration);
  return time;
}

double shared_expert_overlap_s(const SharedExpertTime& shared, const CommDetail& ep_layer,
                               double moe_share, double recomputed_share) {
  if (moe_share <= 0.0) return 0.0;
  const double call_s = ep_layer.time_per_call_s;  // one dispatch or one combine
  const double forward_s =
      std::min(call_s, shared.up_forward_s) + std::min(call_s, shared.down_forward_s);
  const double backward_s =
      std::min(call_s, shared.up_backward_s) + std::min(call_s, shared.down_backward_s);
  return moe_share * ((1.0 + recomputed_share) * forward_s + backward_s);
}

int expert_dp(const ParallelConfig& config) {
  return std::max(1, config.tp * config.cp * config.dp / std::max(1, config.ep));
}

double expert_parameters_per_gpu(const Model& model, const ParallelConfig& config,
                                 double moe_layers) {
  if (!model.is_moe()) return 0.0;
  return moe_layers * static_cast<double>(model.moe.experts) / config.ep *
         routed_expert_parameters(model);
}

double expert_parameters_per_gpu(const Model& model, const ParallelConfig& config) {
  return expert_parameters_per_gpu(model, config, stage_moe_layers(model, config));
}

double stage_moe_layers_on(const Model& model, const ParallelConfig& config, bool first,
                           bool last) {
  if (!model.is_moe()) return 0.0;
  const int layers = model.layers;
  // Multi-token prediction layers (on the last stage) are built as the model's last layer.
  const double mtp =
      model.mtp_layers * static_cast<double>(model.moe_layers_in(layers - 1, layers));
  if (first && last) return model.moe_layers() + mtp;
  const StageLayers split = stage_layers(layers, config);
  if (first) return model.moe_layers_in(0, split.first);
  if (last) return model.moe_layers_in(layers - split.last, layers) + mtp;
  // The busiest of the middle stages with the most layers (the one peak_memory weighs).
  return busiest_moe_stage(model, config.pp, split, split.middle, 1, config.pp - 2);
}

void add_expert_memory(MemoryBreakdown& memory, const Model& model, const ParallelConfig& config,
                       const MemoryOptions& options, double moe_layers) {
  if (!model.is_moe() || moe_layers <= 0.0) return;
  const double params = expert_parameters_per_gpu(model, config, moe_layers);
  const double edp = expert_dp(config);
  const double optimizer = optimizer_state_bytes(model, config, options);
  // The 16-bit (fp32: 4-byte) weights as the dense layers' (MemoryOptions::weight_bytes: an
  // FP8 run keeps them beside its FP8 copies, counted below).
  const double weights = params * options.weight_bytes / (config.zero >= 3 ? edp : 1.0);
  const double gradients = params * options.grad_buffer_bytes / (config.zero >= 2 ? edp : 1.0);
  const double states = params * optimizer / (config.zero >= 1 ? edp : 1.0);
  // FP8: Transformer Engine's GroupedLinear caches each expert's FP8 weight (and its transpose)
  // over the micro-batches as Linear does (grouped_linear.py quantize_weight, update_workspace
  // on the first micro-batch).
  // A negative copy (FP8 parameters replacing the 16-bit weights) comes off weights that ZeRO-3
  // shards: sharded as they are.
  const double copy_per_parameter = options.weight_copy_bytes_per_parameter;
  const double copies =
      params * copy_per_parameter / (copy_per_parameter < 0.0 && config.zero >= 3 ? edp : 1.0);
  double activations = 0.0;
  const double kept_share = 1.0 - stage_recomputed_share(model, config);
  if (kept_share > 0.0) {
    // Kept per MoE layer and micro-batch: the permuted expert input (2 bytes x h per routed
    // row), the activation's input (4 f gated, 2 f) and output (2 f) per routed row; none on
    // the layers full recompute repeats. The permuted input and the activation's output are
    // the expert GEMMs' inputs: under FP8 Transformer Engine keeps its FP8 cast of each (1
    // byte) and nothing else holds the 16-bit one (the dispatch and index_select keep only
    // indices), as for the dense linears (MemoryOptions::fp8_saved_inputs).
    const ExpertGemms g = expert_gemms(model, config);
    const double rows = g.up.m * g.up.batch;
    const double f = model.moe.expert_ffn_hidden;
    const double e = options.activation_bytes;  // 2, or 4 under tf32/fp32
    const double gemm_input = options.fp8_saved_inputs ? 1.0 : e;
    const double per_layer = rows * (gemm_input * model.hidden +
                                     (is_gated(model.ffn) ? 2.0 * e : e) * f + gemm_input * f);
    const long long m = config.num_micro_batches(model.training.global_batch);
    // Combined 1F1B holds combined_1f1b_extra_layers more (MemoryOptions::combined_1f1b).
    activations = kept_share * per_layer *
                  (moe_layers * in_flight_micro_batches(config.pp, config.virtual_stages, m) +
                   (options.combined_1f1b ? combined_1f1b_extra_layers(config, moe_layers) : 0.0));
  }
  memory.weights_bytes += weights;
  add_weight_copies(memory, copies);
  memory.gradients_bytes += gradients;
  memory.optimizer_bytes += states;
  memory.activations_bytes += activations;
  // As peak_memory sums them: allocated, the allocator's fragmentation of what churns (the
  // activations), reserved, and what the GPU holds besides.
  memory.allocated_bytes += weights + gradients + states + copies + activations;
  memory.fragmentation_bytes += allocator_fragmentation_bytes(activations);
  memory.reserved_bytes =
      memory.allocated_bytes + memory.fragmentation_bytes + memory.stream_pool_bytes;
  memory.total_bytes = memory.reserved_bytes + memory.cuda_context_bytes + memory.nccl_buffer_bytes;
  memory.other_bytes = memory.total_bytes - memory.weights_bytes - memory.gradients_bytes -
                       memory.optimizer_bytes - memory.activations_bytes;
  set_memory_verdict(memory, memory.fits);  // memory.fits: peak_memory's check of each stage
}

}  // namespace trident
