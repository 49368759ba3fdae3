#include "costmodel/context_parallel.h"

#include <algorithm>

#include "costmodel/compute.h"
#include "costmodel/precision.h"

namespace trident {

CpView cp_local_view(const Model& model, const ParallelConfig& config) {
  CpView view{model, config};
  if (config.cp <= 1) return view;
  view.model.seq_len = model.seq_len / config.cp;
  view.model.training.global_batch = model.training.global_batch * config.cp;
  view.config.dp = config.dp * config.cp;
  // FSDP shards over DP x CP (torchtitan's dp_shard_cp mesh): an HSDP shard group holds its
  // dp_shard DP ranks' CP ranks too.
  if (config.dp_shard > 0) view.config.dp_shard = config.dp_shard * config.cp;
  view.config.cp = 1;
  return view;
}

void add_cp_attention(LayerTime& layer, int cp, Recompute recompute, SelectiveKind selective) {
  if (cp <= 1) return;
  const double more = cp - 1.0;
  layer.forward_s += more * layer.attention_forward_s;
  layer.backward_s += more * layer.attention_backward_s;
  const bool repeats_attention =
      recompute == Recompute::full ||
      (recompute == Recompute::selective && selective == SelectiveKind::attention);
  if (repeats_attention) layer.recompute_s += more * layer.attention_forward_s;
  layer.attention_forward_s *= cp;
  layer.attention_backward_s *= cp;
}

double kv_elements_per_token(const Model& model, bool repeated_kv) {
  if (model.attention == AttentionKind::mla) {
    return static_cast<double>(model.heads) * (model.qk_head_dim() + model.v_head_dim());
  }
  if (repeated_kv) return 2.0 * static_cast<double>(model.heads) * model.head_dim();
  return 2.0 * model.kv_hidden();
}

double cp_kv_chunk_bytes(const Model& model, const ParallelConfig& config, bool repeated_kv) {
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len / config.cp;
  return tokens * kv_elements_per_token(model, repeated_kv) / config.tp *
         dtype_bytes(precision_of(model.training).attention);
}

double cp_allgather_working_bytes(const Model& model, const ParallelConfig& config,
                                  bool repeated_kv) {
  const double chunk = cp_kv_chunk_bytes(model, config, repeated_kv);
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len / config.cp;
  const double dq_fp32 =
      4.0 * tokens * static_cast<double>(model.heads) * model.qk_head_dim() / config.tp;
  return chunk * config.cp + 3.0 * 2.0 * chunk + dq_fp32;
}

bool cp_a2a_possible(const Model& model, const ParallelConfig& config) {
  const int heads = model.heads / config.tp;
  const int kv_heads =
      model.attention == AttentionKind::mla ? heads : std::max(1, model.kv_heads / config.tp);
  return heads % config.cp == 0 && kv_heads % config.cp == 0;
}

bool cp_a2a_runs(const Stack& stack, const Model& model, const ParallelConfig& config) {
  return stack.supports(CpKind::a2a) && cp_a2a_possible(model, config);
}

namespace {

/// The dK/dV the all-gather rotater passes are fp32 (accum_dtype), the K/V 16-bit.
constexpr double kFp32OverBf16 = 2.0;

/// Ring p2p: per layer (cp - 1) sends of the K/V chunk forward (again on the `again_share` of
/// the layers that full or attention recompute repeats), 2 (cp - 1) backward (K/V on, dK/dV back);
/// each step hides behind one step's attention (TE double-buffers the next chunk while computing
/// the current one).
CommDetail ring_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                     const LayerTime& layer, double layers, double again_share, bool repeated_kv,
                     const Calibration* calibration) {
  CommDetail comm;
  comm.collective = Collective::send_recv;
  comm.link = link;
  comm.bytes_per_call = cp_kv_chunk_bytes(model, config, repeated_kv);
  comm.time_per_call_s =
      collective_time_s(Collective::send_recv, comm.bytes_per_call, link, calibration);
  const double steps = config.cp - 1.0;
  const double forward_passes = 1.0 + again_share;
  comm.calls_per_step = layers * steps * (forward_passes + 2.0);
  comm.total_s = comm.calls_per_step * comm.time_per_call_s;
  const double t = comm.time_per_call_s;
  const double forward_exposed = std::max(0.0, t - layer.attention_forward_s);
  const double backward_exposed = std::max(0.0, 2.0 * t - layer.attention_backward_s);
  comm.exposed_s = layers * steps * (forward_passes * forward_exposed + backward_exposed);
  return comm;
}

/// Ulysses: per layer an all-to-all of Q, K, V before attention and of the output after,
/// forward and backward (again forward on the `recomputed_share` of the layers full recompute
/// repeats); nothing overlapped.
CommDetail a2a_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                    double layers, double recomputed_share, bool repeated_kv,
                    const Calibration* calibration) {
  CommDetail comm;
  comm.collective = Collective::all_to_all;
  comm.link = link;
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len / config.cp;
  const double bytes = dtype_bytes(precision_of(model.training).attention) * tokens / config.tp;
  const double q = static_cast<double>(model.heads) * model.qk_head_dim();
  const double out = static_cast<double>(model.heads) * model.v_head_dim();
  const double qkv_bytes = bytes * (q + kv_elements_per_token(model, repeated_kv));
  const double out_bytes = bytes * out;
  const double pair_s = collective_time_s(Collective::all_to_all, qkv_bytes, link, calibration) +
                        collective_time_s(Collective::all_to_all, out_bytes, link, calibration);
  const double passes = 2.0 + recomputed_share;
  comm.bytes_per_call = 0.5 * (qkv_bytes + out_bytes);
  comm.calls_per_step = layers * passes * 2.0;
  comm.time_per_call_s = 0.5 * pair_s;
  comm.total_s = layers * passes * pair_s;
  comm.exposed_s = comm.total_s;
  return comm;
}

/// PyTorch's context_parallel with the all-gather rotater (torchtitan's default; torch 2.6
/// torch/distributed/tensor/experimental/_attention.py L301-329 _AllGatherRotater, L465-520,
/// L636-760): per layer one all-gather of every rank's K/V chunk, issued before the local
/// chunk's attention and awaited after it (again on the `again_share` of the layers recompute
/// repeats); backward the same all-gather behind the first step's attention backward, and the
/// dK/dV chunk passed round the ring in fp32 (the all-to-all rotater, accum_dtype float32): one
/// send per step, cp of them, each behind the next step's attention backward, the last awaited
/// after the loop with nothing to hide behind (L736-752).
CommDetail allgather_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                          const LayerTime& layer, double layers, double again_share,
                          bool repeated_kv, const Calibration* calibration) {
  CommDetail comm;
  comm.collective = Collective::all_gather;
  comm.link = link;
  const double chunk = cp_kv_chunk_bytes(model, config, repeated_kv);
  comm.bytes_per_call = chunk * config.cp;  // nccl-tests' S: the gathered K/V
  const double gather_s =
      collective_time_s(Collective::all_gather, comm.bytes_per_call, link, calibration);
  const double send_s =
      collective_time_s(Collective::send_recv, kFp32OverBf16 * chunk, link, calibration);
  const double sends = config.cp;
  const double gathers = 2.0 + again_share;  // forward, backward, recomputed forward
  comm.calls_per_step = layers * (gathers + sends);
  comm.total_s = layers * (gathers * gather_s + sends * send_s);
  comm.time_per_call_s = comm.calls_per_step > 0.0 ? comm.total_s / comm.calls_per_step : 0.0;
  const double forward_exposed = std::max(0.0, gather_s - layer.attention_forward_s);
  const double backward_exposed = std::max(0.0, gather_s - layer.attention_backward_s);
  const double send_exposed = std::max(0.0, send_s - layer.attention_backward_s);
  comm.exposed_s = layers * ((1.0 + again_share) * forward_exposed + backward_exposed +
                             (sends - 1.0) * send_exposed + send_s);
  return comm;
}

}  // namespace

CpComm cp_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
               const LayerTime& layer, double layers, const Stack& stack,
               const Calibration* calibration, double a2a_compute_s) {
  CpComm best;
  best.detail.link = link;
  if (config.cp <= 1) return best;
  const double full_share = config.full_recompute_share(layers);
  const bool attention_selective =
      config.recompute == Recompute::selective && stack.selective == SelectiveKind::attention;
  const double again_share = attention_selective ? 1.0 : full_share;
  const bool repeated = stack.elementwise.gqa_repeat_kv;  // K/V as the attention call sees them
  bool found = false;
  if (stack.supports(CpKind::p2p)) {
    best.detail = ring_comm(model, config, link, layer, layers, again_share, repeated, calibration);
    found = true;
  }
  if (stack.supports(CpKind::all_gather)) {
    const CommDetail gathered =
        allgather_comm(model, config, link, layer, layers, again_share, repeated, calibration);
    if (!found || gathered.exposed_s < best.detail.exposed_s) {
      best.kind = CpKind::all_gather;
      best.detail = gathered;
      found = true;
    }
  }
  if (cp_a2a_runs(stack, model, config)) {
    const CommDetail a2a = a2a_comm(model, config, link, layers, full_share, repeated, calibration);
    if (!found || a2a.exposed_s + a2a_compute_s < best.detail.exposed_s) {
      best.kind = CpKind::a2a;
      best.detail = a2a;
    }
  }
  return best;
}

}  // namespace trident
