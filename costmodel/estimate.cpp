#include "costmodel/estimate.h"

#include <algorithm>
#include <cmath>

#include "costmodel/compute.h"
#include "costmodel/flops.h"
#include "costmodel/kernels.h"
#include "costmodel/memory.h"
#include "costmodel/pipeline.h"

namespace trident {

namespace {

/// One micro-batch through the bottleneck (last) stage: its layers plus the output layer.
struct StageTime {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double recompute_s = 0.0;
  double gemm_s = 0.0;  ///< linear GEMMs of fwd + bwd + recompute (what TP overlap can hide)
  LayerTime layer;      ///< one layer, one micro-batch (per-GEMM times for the TP overlap)
  double layers = 0.0;  ///< layers on the stage
  [[nodiscard]] double total_s() const { return forward_s + backward_s + recompute_s; }
};

StageTime stage_time(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                     const EstimateOptions& options, const Calibration* calibration) {
  const double layers = std::ceil(static_cast<double>(model.layers) / config.pp);
  const LayerTime layer =
      layer_time(cluster.gpu, model, config, {options.fused_attention}, calibration);
  const LayerTime logits = logits_time(cluster.gpu, model, config, calibration);
  const double recomputed_gemm = config.recompute == Recompute::full ? 1.0 : 0.0;
  StageTime time;
  time.forward_s = layers * layer.forward_s + logits.forward_s;
  time.backward_s = layers * layer.backward_s + logits.backward_s;
  time.recompute_s = layers * layer.recompute_s;
  time.gemm_s = layers * layer.gemm_forward_s * (3.0 + recomputed_gemm);
  time.layer = layer;
  time.layers = layers;
  return time;
}

/// TP: per layer 2 all-reduces forward and 2 backward of b*s*h activations (with sequence
/// parallelism each becomes a reduce-scatter + all-gather); full recompute repeats the
/// forward ones. Counts are for one micro-batch through the stage.
CommDetail tp_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                   const Calibration* calibration) {
  CommDetail comm;
  comm.link = link;
  if (config.tp <= 1) return comm;
  const double layers = std::ceil(static_cast<double>(model.layers) / config.pp);
  comm.bytes_per_call = static_cast<double>(config.micro_batch) * model.seq_len * model.hidden *
                        dtype_bytes(model.training.dtype);
  comm.calls_per_step = layers * (config.recompute == Recompute::full ? 6.0 : 4.0);
  if (config.sequence_parallel) {
    // Forward 2 all-gathers + 2 reduce-scatters; backward 2 all-gathers of the output
    // gradient, 2 reduce-scatters of the input gradient and 2 all-gathers of the input again
    // for the weight gradient (Megatron does not keep the gathered input: Korthikanti 2022
    // §4.2.2): 10 collectives = 5 (reduce-scatter + all-gather) calls; full recompute +2.
    comm.calls_per_step = layers * (config.recompute == Recompute::full ? 7.0 : 5.0);
    comm.collective = Collective::reduce_scatter;
    comm.time_per_call_s =
        collective_time_s(Collective::reduce_scatter, comm.bytes_per_call, link, calibration) +
        collective_time_s(Collective::all_gather, comm.bytes_per_call, link, calibration);
  } else {
    comm.time_per_call_s =
        collective_time_s(Collective::all_reduce, comm.bytes_per_call, link, calibration);
  }
  return comm;
}

/// PP: one send/recv of b*s*h/t activations per micro-batch per boundary forward and one
/// backward, v times with interleaving (scatter/gather optimisation: each TP rank sends 1/t).
CommDetail pp_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                   const Calibration* calibration) {
  CommDetail comm;
  comm.collective = Collective::send_recv;
  comm.link = link;
  if (config.pp <= 1) return comm;
  comm.bytes_per_call = static_cast<double>(config.micro_batch) * model.seq_len * model.hidden *
                        dtype_bytes(model.training.dtype) / config.tp;
  comm.calls_per_step = 2.0 * config.virtual_stages;
  comm.time_per_call_s =
      collective_time_s(Collective::send_recv, comm.bytes_per_call, link, calibration);
  return comm;
}

/// One TP collective of `comm_s` overlapped with a GEMM of `gemm_s` by Transformer Engine's
/// userbuffers: the GEMM loses `sm_share` of the SMs to the communication kernel while they
/// run together, and `fill_s` (the last chunk of a pipelined reduce-scatter) cannot overlap.
/// Returns the time beyond the GEMM alone.
double overlapped_exposed_s(double gemm_s, double comm_s, double sm_share, double fill_s) {
  const double slowed_gemm_s = gemm_s / (1.0 - sm_share);
  return std::max(slowed_gemm_s, comm_s) + fill_s - gemm_s;
}

/// Exposed TP time of one layer and one micro-batch with --tp-comm-overlap (sequence
/// parallel), Transformer Engine's default methods (module/base.py initialize_ub):
/// ring exchange over the copy engines (1 SM) for qkv/fc1 forward and proj/fc2 input
/// gradient; pipeline (16 SMs, 4 splits) for the proj/fc2 forward reduce-scatter; bulk
/// (16 SMs) for the qkv/fc1 input re-gather (behind dgrad) and gradient reduce-scatter
/// (behind wgrad). Full recompute repeats the forward overlaps.
double tp_overlap_layer_s(const LayerTime& layer, double gather_s, double scatter_s,
                          int sm_count, bool full_recompute) {
  const double sms = sm_count > 0 ? sm_count : kTpOverlapDefaultSms;
  const double ring = 1.0 / sms;
  const double wide = kTpOverlapCommSms / sms;
  const double fill = scatter_s / kTpOverlapPipelineSplits;
  double forward = 0.0;
  double backward = 0.0;
  for (const std::size_t in : {std::size_t{0}, std::size_t{2}}) {  // QKV, FFN up
    const std::size_t out = in + 1;                                 // projection, FFN down
    forward += overlapped_exposed_s(layer.gemm_fprop_s[in], gather_s, ring, 0.0) +
               overlapped_exposed_s(layer.gemm_fprop_s[out], scatter_s, wide, fill);
    backward += overlapped_exposed_s(layer.gemm_dgrad_s[out], gather_s, ring, 0.0) +
                overlapped_exposed_s(layer.gemm_dgrad_s[in], gather_s, wide, 0.0) +
                overlapped_exposed_s(layer.gemm_wgrad_s[in], scatter_s, wide, 0.0);
  }
  return forward * (full_recompute ? 2.0 : 1.0) + backward;
}

/// The part of `comm_s` that overlapping with `window_s` of compute cannot hide; at least
/// the last bucket's share `floor_s`.
double unhidden_s(double comm_s, double window_s, double floor_s) {
  return std::max(comm_s - window_s, std::min(comm_s, floor_s));
}

/// DP: the gradient all-reduce (ZeRO 0), reduce-scatter + weight all-gather (ZeRO 1/2), and
/// per micro-batch weight all-gathers forward and backward + gradient reduce-scatter (ZeRO 3).
CommDetail dp_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                   double parameters, long long m, const StageTime& stage,
                   const EstimateOptions& options, const Calibration* calibration) {
  CommDetail comm;
  comm.link = link;
  if (config.dp <= 1) return comm;
  const double grad_bytes = parameters * options.grad_reduce_bytes;
  const double weight_bytes = parameters * dtype_bytes(model.training.dtype);
  const double bucket = std::min(1.0, options.dp_bucket_parameters / parameters);
  const double grad_s =
      collective_time_s(config.zero == 0 ? Collective::all_reduce : Collective::reduce_scatter,
                        grad_bytes, link, calibration);
  const double gather_s = config.zero == 0 ? 0.0
                          : collective_time_s(Collective::all_gather, weight_bytes, link,
                                              calibration);
  comm.bytes_per_call = grad_bytes;
  if (config.zero == 0) {
    comm.calls_per_step = 1.0;
    comm.time_per_call_s = grad_s;
    comm.total_s = grad_s;
    comm.exposed_s = options.overlap_dp_comm ? unhidden_s(grad_s, stage.backward_s, grad_s * bucket)
                                             : grad_s;
    return comm;
  }
  comm.collective = Collective::reduce_scatter;
  comm.gather_bytes_per_call = weight_bytes;
  comm.time_per_call_s = grad_s + gather_s;
  if (config.zero <= 2) {
    comm.calls_per_step = 1.0;
    comm.total_s = grad_s + gather_s;
    comm.exposed_s = options.overlap_dp_comm
                         ? unhidden_s(grad_s, stage.backward_s, grad_s * bucket) +
                               unhidden_s(gather_s, stage.forward_s, gather_s * bucket)
                         : comm.total_s;
    return comm;
  }
  // ZeRO-3: per micro-batch, gather the weights for forward and again for backward, and
  // reduce-scatter the gradients; prefetching hides them behind that micro-batch's compute
  // except the first layer's gather.
  const double per_mb = 2.0 * gather_s + grad_s;
  comm.calls_per_step = static_cast<double>(m);
  comm.time_per_call_s = per_mb;
  comm.total_s = per_mb * static_cast<double>(m);
  const double layers = std::ceil(static_cast<double>(model.layers) / config.pp);
  const double unhidden_per_mb = std::max(0.0, gather_s - stage.forward_s) +
                             std::max(0.0, gather_s + grad_s - stage.backward_s - stage.recompute_s);
  comm.exposed_s = options.overlap_dp_comm
                       ? unhidden_per_mb * static_cast<double>(m) + gather_s / layers
                       : comm.total_s;
  return comm;
}

}  // namespace

Estimate estimate(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                  const Placement& placement, const Calibration* calibration,
                  const EstimateOptions& options) {
  Estimate out;
  const Gpu& gpu = cluster.gpu;
  const long long m = config.num_micro_batches(model.training.global_batch);
  const double md = static_cast<double>(m);
  out.num_micro_batches = m;
  out.used_calibration = calibration != nullptr && !calibration->empty();

  const StageTime stage = stage_time(cluster, model, config, options, calibration);
  out.time.forward_s = md * stage.forward_s;
  out.time.backward_s = md * stage.backward_s;
  out.time.recompute_s = md * stage.recompute_s;

  out.tp = tp_comm(model, config, placement.tp, calibration);
  out.tp.calls_per_step *= md;
  out.tp.total_s = out.tp.calls_per_step * out.tp.time_per_call_s;
  out.tp.exposed_s = out.tp.total_s;
  if (options.overlap_tp_comm && config.tp > 1) {
    const double gather_s = collective_time_s(Collective::all_gather, out.tp.bytes_per_call,
                                              placement.tp, calibration);
    const double scatter_s = collective_time_s(Collective::reduce_scatter,
                                               out.tp.bytes_per_call, placement.tp, calibration);
    out.tp.exposed_s = md * stage.layers *
                       tp_overlap_layer_s(stage.layer, gather_s, scatter_s,
                                          kernel_profile(gpu).sm_count,
                                          config.recompute == Recompute::full);
  }

  out.pp = pp_comm(model, config, placement.pp, calibration);
  out.pp.calls_per_step *= md;
  out.pp.total_s = out.pp.calls_per_step * out.pp.time_per_call_s;
  out.pp.exposed_s = options.overlap_pp_comm
                         ? std::min(out.pp.total_s, 2.0 * (config.pp - 1) * out.pp.time_per_call_s)
                         : out.pp.total_s;

  const double first_params = stage_parameters(model, config, true, config.pp == 1);
  const double last_params = stage_parameters(model, config, config.pp == 1, true);
  const double params = std::max(first_params, last_params);
  out.dp = dp_comm(model, config, placement.dp, params, m, stage, options, calibration);

  // Bubble: (p-1)/(v*m) of the ideal time, which holds compute and what is exposed per
  // micro-batch (TP and PP communication).
  const double ideal_s = out.time.compute_s() + out.tp.exposed_s + out.pp.exposed_s;
  out.time.bubble_s = bubble_fraction(config.pp, config.virtual_stages, m) * ideal_s;
  const double sharded = config.zero >= 1 ? config.dp : 1.0;
  out.time.optimizer_s = optimizer_time_s(gpu, model.training.optimizer, params / sharded);
  out.time.tp_comm_s = out.tp.exposed_s;
  out.time.pp_comm_s = out.pp.exposed_s;
  out.time.dp_comm_s = out.dp.exposed_s;
  out.time.step_s = out.time.compute_s() + out.time.exposed_comm_s() + out.time.bubble_s +
                    out.time.optimizer_s;

  const double global_batch = static_cast<double>(model.training.global_batch);
  const StepFlops flops = step_flops(model, global_batch, config.recompute);
  out.model_flops = flops.model;
  out.model_flops_causal = flops.model_causal;
  out.hardware_flops = flops.hardware;
  const double gpu_seconds = config.gpus() * out.time.step_s;
  out.model_tflops_per_gpu = flops.model / gpu_seconds / 1e12;
  out.hardware_tflops_per_gpu = flops.hardware / gpu_seconds / 1e12;
  out.mfu = out.model_tflops_per_gpu / gpu.peak_tflops(model.training.dtype);
  out.tokens_per_s = global_batch * model.seq_len / out.time.step_s;
  out.bubble_fraction = out.time.bubble_s / out.time.step_s;
  out.memory = peak_memory(gpu, model, config, {options.reserve_gib, options.fused_attention});
  return out;
}

}  // namespace trident
