#include "costmodel/tp_pp_comm.h"

#include <algorithm>
#include <cstddef>

namespace trident {

namespace {

/// Bytes per element of the causal mask a DeepSpeed pipe sends with each activation: the
/// [1, 1, s, s] boolean mask cast to half "because NCCL does not like to send
/// torch.BoolTensor" (deepspeed/runtime/pipe/engine.py L1053-1058 @edaa7221; the mask's batch
/// dimension is 1 without reset_attention_mask, megatron/utils.py get_ltor_masks_and_position_ids).
constexpr double kPipeMaskBytesPerElement = 2.0;

/// One TP collective of `comm_s` overlapped with a GEMM of `gemm_s` by Transformer Engine's
/// userbuffers: the GEMM loses `sm_share` of the SMs to the communication kernel while they
/// run together, and `fill_s` (the last chunk of a pipelined reduce-scatter) cannot overlap.
/// Returns the time beyond the GEMM alone.
double overlapped_exposed_s(double gemm_s, double comm_s, double sm_share, double fill_s) {
  const double slowed_gemm_s = gemm_s / (1.0 - sm_share);
  return std::max(slowed_gemm_s, comm_s) + fill_s - gemm_s;
}

}  // namespace

double tp_gather_bytes(double message_bytes, const Precision& precision) {
  return message_bytes * precision.tp_gather_bytes / precision.activation_bytes;
}

CommDetail tp_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                   double layers, bool keeps_gathered_inputs, const Calibration* calibration) {
  CommDetail comm;
  comm.link = link;
  if (config.tp <= 1) return comm;
  const Precision precision = precision_of(model.training);
  comm.bytes_per_call = static_cast<double>(config.micro_batch) * model.seq_len * model.hidden *
                        precision.activation_bytes;
  const double recomputed = config.recomputed_layers(layers);
  comm.calls_per_step = 4.0 * layers + 2.0 * recomputed;
  if (config.sequence_parallel) {
    // Forward 2 all-gathers + 2 reduce-scatters; backward 2 all-gathers of the output
    // gradient, 2 reduce-scatters of the input gradient and 2 all-gathers of the input again
    // for the weight gradient (Megatron does not keep the gathered input: Korthikanti 2022
    // §4.2.2): 10 collectives = 5 (reduce-scatter + all-gather) calls; full recompute +2. A
    // stack that keeps the gathered input (DTensor) skips the re-gather: 4, full recompute 6.
    const double regather = keeps_gathered_inputs ? 0.0 : 1.0;
    comm.calls_per_step = layers * (4.0 + regather) + 2.0 * recomputed;
    comm.collective = Collective::reduce_scatter;
    // FP8 gathers its 8-bit copy (tp_gather_bytes): the all-gather half then differs in size.
    const double gather_bytes = tp_gather_bytes(comm.bytes_per_call, precision);
    if (gather_bytes != comm.bytes_per_call) comm.gather_bytes_per_call = gather_bytes;
    comm.time_per_call_s =
        collective_time_s(Collective::reduce_scatter, comm.bytes_per_call, link, calibration) +
        collective_time_s(Collective::all_gather, gather_bytes, link, calibration);
  } else {
    comm.time_per_call_s =
        collective_time_s(Collective::all_reduce, comm.bytes_per_call, link, calibration);
  }
  return comm;
}

CommDetail pp_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                   bool sends_mask, bool scatter_gather, const Calibration* calibration) {
  CommDetail comm;
  comm.collective = Collective::send_recv;
  comm.link = link;
  if (config.pp <= 1) return comm;
  const double split = scatter_gather || config.sequence_parallel ? config.tp : 1.0;
  const double activation_bytes = static_cast<double>(config.micro_batch) * model.seq_len *
                                  model.hidden * precision_of(model.training).activation_bytes /
                                  split;
  const double mask_bytes =
      sends_mask ? kPipeMaskBytesPerElement * static_cast<double>(model.seq_len) * model.seq_len
                 : 0.0;
  comm.bytes_per_call = activation_bytes + mask_bytes / 2.0;
  comm.calls_per_step = 2.0 * config.virtual_stages;
  comm.time_per_call_s =
      (collective_time_s(Collective::send_recv, activation_bytes + mask_bytes, link, calibration) +
       collective_time_s(Collective::send_recv, activation_bytes, link, calibration)) /
      2.0;
  return comm;
}

void add_pipe_gathers(CommDetail& tp, const Model& local, const Training& training,
                      const ParallelConfig& config, int gathers_per_micro_batch,
                      double micro_batches, const GroupLink& link, const Calibration* calibration) {
  if (config.pp <= 1 || config.tp <= 1 || config.sequence_parallel ||
      gathers_per_micro_batch <= 0) {
    return;
  }
  tp.pipe_gather_bytes = static_cast<double>(config.micro_batch) * local.seq_len * local.hidden *
                         precision_of(training).activation_bytes;
  tp.pipe_gather_s =
      collective_time_s(Collective::all_gather, tp.pipe_gather_bytes, link, calibration);
  tp.pipe_gathers_per_step = gathers_per_micro_batch * micro_batches;
  tp.total_s += tp.pipe_gathers_per_step * tp.pipe_gather_s;
  tp.exposed_s += tp.pipe_gathers_per_step * tp.pipe_gather_s;
}

double tp_overlap_layer_s(const LayerTime& layer, double gather_s, double scatter_s, int sm_count,
                          bool full_recompute, bool keeps_gathered_inputs) {
  const double sms = sm_count > 0 ? sm_count : kTpOverlapDefaultSms;
  const double ring = 1.0 / sms;
  const double wide = kTpOverlapCommSms / sms;
  const double fill = scatter_s / kTpOverlapPipelineSplits;
  double forward = 0.0;
  double backward = 0.0;
  for (const std::size_t in : {std::size_t{0}, std::size_t{2}}) {  // QKV, FFN up
    const std::size_t out = in + 1;                                // projection, FFN down
    forward += overlapped_exposed_s(layer.gemm_fprop_s[in], gather_s, ring, 0.0) +
               overlapped_exposed_s(layer.gemm_fprop_s[out], scatter_s, wide, fill);
    backward += overlapped_exposed_s(layer.gemm_dgrad_s[out], gather_s, ring, 0.0) +
                (keeps_gathered_inputs
                     ? 0.0
                     : overlapped_exposed_s(layer.gemm_dgrad_s[in], gather_s, wide, 0.0)) +
                overlapped_exposed_s(layer.gemm_wgrad_s[in], scatter_s, wide, 0.0);
  }
  return forward * (full_recompute ? 2.0 : 1.0) + backward;
}

double tp_backward_overlap_layer_s(const LayerTime& layer, const CommDetail& tp, double gather_s,
                                   double scatter_s, bool sequence_parallel, bool full_recompute,
                                   bool keeps_gathered_inputs) {
  const double regather_s = keeps_gathered_inputs ? 0.0 : gather_s;
  const double forward_calls = full_recompute ? 4.0 : 2.0;
  double exposed = forward_calls * tp.time_per_call_s;
  for (const std::size_t in : {std::size_t{0}, std::size_t{2}}) {  // QKV, FFN up
    if (sequence_parallel) {
      // Row-parallel output gradient gathered before its dgrad (exposed); the column-parallel
      // input re-gathered behind dgrad, its gradient reduce-scattered behind wgrad.
      exposed += gather_s + std::max(0.0, regather_s - layer.gemm_dgrad_s[in]) +
                 std::max(0.0, scatter_s - layer.gemm_wgrad_s[in]);
    } else {
      exposed += std::max(0.0, tp.time_per_call_s - layer.gemm_wgrad_s[in]);
    }
  }
  return exposed;
}

}  // namespace trident
