#include "costmodel/estimate.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "costmodel/compute.h"
#include "costmodel/context_parallel.h"
#include "costmodel/data_parallel.h"
#include "costmodel/flops.h"
#include "costmodel/kernels.h"
#include "costmodel/memory.h"
#include "costmodel/moe.h"
#include "costmodel/pipeline.h"
#include "costmodel/precision.h"

namespace trident {

namespace {

/// Bytes per element of the causal mask a DeepSpeed pipe sends with each activation: the
/// [1, 1, s, s] boolean mask cast to half "because NCCL does not like to send
/// torch.BoolTensor" (deepspeed/runtime/pipe/engine.py L1053-1058 @edaa7221; the mask's batch
/// dimension is 1 without reset_attention_mask, megatron/utils.py get_ltor_masks_and_position_ids).
constexpr double kPipeMaskBytesPerElement = 2.0;

/// The share of the model's layers full recompute repeats (every one unless partial), stage by
/// stage: the middle stages hold `split.middle` layers or one fewer (pipeline.h stage_layers).
double model_recompute_share(const Model& model, const ParallelConfig& config) {
  const StageLayers split = model_stage_layers(model, config.pp);
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
  LayerTime layer;      ///< one layer, one micro-batch (per-GEMM times for the TP overlap)
  LayerTime cp_step;    ///< the layer before context parallelism: one ring step's attention
  double layers = 0.0;  ///< layers on the bottleneck stage
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
LayerTime with_cp_and_experts(LayerTime layer, const Gpu& gpu, const Model& model,
                              const ParallelConfig& config, SelectiveKind selective,
                              double moe_share, const Calibration* calibration) {
  add_cp_attention(layer, config.cp, config.recompute, selective);
  if (!model.is_moe()) return layer;
  const LayerTime experts = routed_expert_time(gpu, model, config, calibration);
  layer.forward_s += moe_share * experts.forward_s;
  layer.backward_s += moe_share * experts.backward_s;
  layer.recompute_s += moe_share * experts.recompute_s;
  return layer;
}

/// `model` / `config`: the per-GPU dense view; `real` / `given`: the model and split as given.
/// `layer_comm_s`: exposed communication that each layer of a stage adds per micro-batch (the
/// MoE all-to-alls), so the slowest stage is chosen on compute and that communication alike;
/// `moe_share`: the MoE share of that stage's layers (stage_moe_fraction).
StageTime stage_time(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                     const Model& real, const ParallelConfig& given, const EstimateOptions& options,
                     double layer_comm_s, double moe_share, bool ulysses,
                     const Calibration* calibration) {
  const Stack& stack = options.stack;
  const LayerTime dense = layer_time(cluster.gpu, model, config,
                                     {stack.attention, stack.selective, stack.fp8_saves_fp8_inputs,
                                      given.cp, ulysses, stack.elementwise},
                                     calibration);
  LayerTime layer =
      with_cp_and_experts(dense, cluster.gpu, real, given, stack.selective, moe_share, calibration);
  const StageLayers split = model_stage_layers(model, config.pp);
  const double most = split.most();
  const double repeat_share = most > 0.0 ? recompute_repeats(config, most) / most : 0.0;
  const double gpu_s = layer.forward_s + layer.backward_s + repeat_share * layer.recompute_s;
  const double floor_s = launch_floor_s(stack, config.full_recompute_share(most));
  if (floor_s > gpu_s && gpu_s > 0.0) {  // CPU-bound: every pass stretched alike
    const double stretch = floor_s / gpu_s;
    layer.forward_s *= stretch;
    layer.backward_s *= stretch;
    layer.recompute_s *= stretch;
  }
  const LayerTime logits =
      output_head_time(cluster.gpu, model, config, calibration,
                       {stack.loss_forward_bytes_per_logit, stack.loss_backward_bytes_per_logit});
  const double with_logits = split.last;
  const double without = std::max(config.pp > 1 ? split.first : 0, split.middle);
  const auto layers_s = [&](double layers) {
    return layers * (layer.forward_s + layer.backward_s + layer_comm_s) +
           recompute_repeats(config, layers) * layer.recompute_s;
  };
  const bool last_is_slowest =
      layers_s(with_logits) + logits.forward_s + logits.backward_s >= layers_s(without);
  StageTime time;
  time.layers = last_is_slowest ? with_logits : without;
  const double head = last_is_slowest ? 1.0 : 0.0;
  time.forward_s = time.layers * layer.forward_s + head * logits.forward_s;
  time.backward_s = time.layers * layer.backward_s + head * logits.backward_s;
  time.recompute_s = recompute_repeats(config, time.layers) * layer.recompute_s;
  // The stage's mean layer: partial recompute spreads its recomputed layers' time over all.
  if (time.layers > 0.0) layer.recompute_s = time.recompute_s / time.layers;
  time.layer = layer;
  time.cp_step = dense;
  return time;
}

/// Bytes of one TP all-gather of a `message_bytes` activation message: in the gather's dtype
/// (FP8 where the run casts before it gathers, costmodel/precision.h).
double tp_gather_bytes(double message_bytes, const Precision& precision) {
  return message_bytes * precision.tp_gather_bytes / precision.activation_bytes;
}

/// TP: per layer 2 all-reduces forward and 2 backward of b*s*h activations (with sequence
/// parallelism each becomes a reduce-scatter + all-gather); full recompute repeats the
/// forward ones on the layers it recomputes. Counts are for one micro-batch through the stage.
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
    comm.time_per_call_s =
        collective_time_s(Collective::reduce_scatter, comm.bytes_per_call, link, calibration) +
        collective_time_s(Collective::all_gather, tp_gather_bytes(comm.bytes_per_call, precision),
                          link, calibration);
  } else {
    comm.time_per_call_s =
        collective_time_s(Collective::all_reduce, comm.bytes_per_call, link, calibration);
  }
  return comm;
}

/// PP: one send/recv of b*s*h/t activations per micro-batch per boundary forward and one
/// backward, v times with interleaving (scatter/gather optimisation: each TP rank sends 1/t).
/// A stack whose pipe model passes the causal mask along (DeepSpeed) adds its s*s half-precision
/// copy to every forward transfer: bytes and time are then the mean of a forward's and a
/// backward's.
CommDetail pp_comm(const Model& model, const ParallelConfig& config, const GroupLink& link,
                   bool sends_mask, const Calibration* calibration) {
  CommDetail comm;
  comm.collective = Collective::send_recv;
  comm.link = link;
  if (config.pp <= 1) return comm;
  const double activation_bytes = static_cast<double>(config.micro_batch) * model.seq_len *
                                  model.hidden * precision_of(model.training).activation_bytes /
                                  config.tp;
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
/// (16 SMs) for the qkv/fc1 input re-gather (behind dgrad; none where the stack keeps the
/// gathered input) and gradient reduce-scatter (behind wgrad). Full recompute repeats the
/// forward overlaps.
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

/// Exposed TP time of one layer and one micro-batch with Megatron's backward overlap (no
/// userbuffers): forward collectives exposed; in backward the input-gradient all-reduce of
/// the column-parallel layers (QKV, FFN up) runs behind their weight-gradient GEMM
/// (LinearWithGradAccumulationAndAsyncCommunication); with sequence parallelism the input
/// re-gather runs behind the input-gradient GEMM (none where the stack keeps the gathered
/// input) and the reduce-scatter behind wgrad.
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

/// Traffic of one micro-batch (or one layer of one) over `times` of them: calls, total and
/// exposed time scaled alike.
CommDetail per_step(CommDetail comm, double times) {
  comm.calls_per_step *= times;
  comm.total_s *= times;
  comm.exposed_s *= times;
  return comm;
}

/// Channels of a group's ring and the share of the GPU's SMs they hold while they run.
/// Channels of a group's ring: inside one NVLink domain or across the NICs; 0 for no group.
double nccl_ring_channels(const Cluster& cluster, const GroupLink& link) {
  if (link.ranks < 2) return 0.0;
  return link.domains > 1 ? kNcclChannelsPerNic * cluster.network.nics_per_server
                          : kNcclChannelsInDomain;
}

/// The share of the GPU's SMs a group's ring channels hold while they run.
double nccl_sm_share(const Cluster& cluster, const GroupLink& link) {
  const int sms = kernel_profile(cluster.gpu).sm_count;
  if (sms <= 0 || link.ranks < 2) return 0.0;
  return std::min(1.0, nccl_ring_channels(cluster, link) / sms);
}

/// The communicators the plan creates on one GPU (TP, DP rings; PP send/recv neighbours).
NcclGroups nccl_groups(const Cluster& cluster, const ParallelConfig& config,
                       const Placement& placement) {
  NcclGroups groups;
  groups.tp_channels = nccl_ring_channels(cluster, placement.tp);
  // CP, EP and expert-DP communicators hold buffers as DP's does: counted with DP's channels.
  const double dp_channels = config.hybrid_shard()
                                 ? nccl_ring_channels(cluster, placement.shard) +
                                       nccl_ring_channels(cluster, placement.replicate)
                                 : nccl_ring_channels(cluster, placement.dp);
  groups.dp_channels = dp_channels + nccl_ring_channels(cluster, placement.cp) +
                       nccl_ring_channels(cluster, placement.ep) +
                       (config.ep > 1 ? nccl_ring_channels(cluster, placement.edp) : 0.0);
  groups.pp_peers = std::min(2, config.pp - 1);
  groups.pp_over_network = placement.pp.domains > 1;
  return groups;
}

}  // namespace

Estimate estimate(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                  const Placement& placement, const Calibration* calibration,
                  const EstimateOptions& options) {
  // A stack running a kernel the GPU has no rate for is refused, never priced as another.
  check_stack_on_gpu(options.stack, cluster.gpu);
  // A job of one GPU runs at its own clock, not its board's pace (gpu_for_job): priced on a
  // copy, a case too rare to weigh on the search.
  if (config.gpus() == 1 && cluster.gpu.ensemble_clock_ratio != 1.0) {
    Cluster alone = cluster;
    alone.gpu = gpu_for_job(cluster.gpu, 1);
    return estimate(alone, model, config, placement, calibration, options);
  }
  Estimate out;
  const Gpu& gpu = cluster.gpu;
  // The dense machinery prices the per-GPU view: context parallel chunks as sequences (cp
  // folded into dp), MoE layers' routed experts taken out (context_parallel.h, moe.h).
  // Dense models without CP are their own view: no copy in the search's hot path.
  // MoE layers are priced at the pace-setting stage's share of them (stage_moe_fraction).
  const double moe_share = stage_moe_fraction(model, config.pp);
  const bool viewed = model.is_moe() || config.cp > 1;
  const std::optional<CpView> view =
      viewed ? std::optional<CpView>(cp_local_view(moe_dense_view(model, moe_share), config))
             : std::nullopt;
  const Model& local = viewed ? view->model : model;
  const ParallelConfig& split = viewed ? view->config : config;
  const long long m = config.num_micro_batches(model.training.global_batch);
  const double md = static_cast<double>(m);
  out.num_micro_batches = m;
  out.used_calibration = calibration != nullptr && !calibration->empty();

  // The MoE all-to-alls are exposed per layer: they count when choosing the slowest stage.
  const CommDetail ep_layer = ep_comm(model, config, placement.ep, moe_share, calibration);
  const Stack& stack = options.stack;
  // Context parallelism: the ring prices the stage; where the stack can run Ulysses instead,
  // its attention (one causal call over the whole sequence) is priced too and the faster of
  // the two, communication and compute together, is kept.
  const StageTime ring = stage_time(cluster, local, split, model, config, options,
                                    ep_layer.exposed_s, moe_share, false, calibration);
  std::optional<StageTime> ulysses;
  if (config.cp > 1 && cp_a2a_runs(stack, model, config)) {
    ulysses = stage_time(cluster, local, split, model, config, options, ep_layer.exposed_s,
                         moe_share, true, calibration);
  }
  const auto compute_s = [](const StageTime& s) {
    return s.forward_s + s.backward_s + s.recompute_s;
  };
  const CpComm cp = cp_comm(model, config, placement.cp, ring.cp_step, ring.layers, stack,
                            calibration, ulysses ? compute_s(*ulysses) - compute_s(ring) : 0.0);
  const StageTime& stage = cp.kind == CpKind::a2a && ulysses ? *ulysses : ring;
  out.time.forward_s = md * stage.forward_s;
  out.time.backward_s = md * stage.backward_s;
  out.time.recompute_s = md * stage.recompute_s;

  // Userbuffers need sequence parallelism (TE initialize_ub); without it Megatron-Core still
  // overlaps the backward input-gradient all-reduce, through NCCL.
  const bool userbuffers = stack.tp_overlap == TpOverlap::userbuffers && config.sequence_parallel;
  out.tp = tp_comm(local, split, placement.tp, stage.layers, stack.tp_keeps_gathered_inputs,
                   calibration);
  out.tp.calls_per_step *= md;
  out.tp.total_s = out.tp.calls_per_step * out.tp.time_per_call_s;
  out.tp.exposed_s = out.tp.total_s;
  if (config.tp > 1 && stack.tp_overlap != TpOverlap::none) {
    const double gather_s =
        collective_time_s(Collective::all_gather,
                          tp_gather_bytes(out.tp.bytes_per_call, precision_of(model.training)),
                          placement.tp, calibration);
    const double scatter_s = collective_time_s(Collective::reduce_scatter, out.tp.bytes_per_call,
                                               placement.tp, calibration);
    // The exposed time of a recomputed layer and of one that is not, mixed in the stage's
    // proportion (all of one kind unless recompute is partial).
    const auto layer_s = [&](bool full) {
      return userbuffers ? tp_overlap_layer_s(stage.layer, gather_s, scatter_s,
                                              kernel_profile(gpu).sm_count, full,
                                              stack.tp_keeps_gathered_inputs)
                         : tp_backward_overlap_layer_s(stage.layer, out.tp, gather_s, scatter_s,
                                                       config.sequence_parallel, full,
                                                       stack.tp_keeps_gathered_inputs);
    };
    const double share = config.full_recompute_share(stage.layers);
    const double per_layer_s = share >= 1.0 ? layer_s(true)
                               : share <= 0.0
                                   ? layer_s(false)
                                   : share * layer_s(true) + (1.0 - share) * layer_s(false);
    out.tp.exposed_s = std::min(out.tp.total_s, md * stage.layers * per_layer_s);
  }
  // MoE layers with expert TP 1 have no TP collectives around the MLP (the tokens go by the
  // EP all-to-all from their sequence-parallel shard): half of those layers' TP calls remain.
  const double tp_share = 1.0 - 0.5 * moe_share;
  out.tp.calls_per_step *= tp_share;
  out.tp.total_s *= tp_share;
  out.tp.exposed_s *= tp_share;

  out.cp_kind = cp.kind;
  out.cp = per_step(cp.detail, md);
  out.ep = per_step(ep_layer, stage.layers * md);

  out.pp = pp_comm(local, split, placement.pp, stack.pp_sends_attention_mask, calibration);
  // DeepSpeed (1F1B only, the stack loader's condition): each send and receive blocks on its
  // own; the simulated schedule's critical path holds deepspeed_p2p_exposed_transfers of them.
  out.pp.calls_per_step = stack.pp_separate_send_recv && config.pp > 1
                              ? deepspeed_p2p_exposed_transfers(config.pp, m)
                              : out.pp.calls_per_step * md;
  out.pp.total_s = out.pp.calls_per_step * out.pp.time_per_call_s;
  // Megatron-Core overlaps p2p only in the interleaved schedule (arguments.py forces
  // overlap_p2p_comm off without virtual stages).
  const bool p2p_overlapped = stack.pp_overlap && config.virtual_stages > 1;
  out.pp.exposed_s =
      p2p_overlapped ? std::min(out.pp.total_s,
                                interleaved_p2p_exposed_s(config.pp, config.virtual_stages, m,
                                                          out.pp.time_per_call_s, stage.forward_s,
                                                          stage.backward_s + stage.recompute_s))
                     : out.pp.total_s;
  // Those two are the whole step's increase, fill and drain included; Megatron's blocking
  // batched p2p lengthens each micro-batch, so the bubble scales it too.
  out.pp_whole_step = p2p_overlapped || stack.pp_separate_send_recv;

  const double first_params = stage_parameters(local, split, true, config.pp == 1);
  const double last_params = stage_parameters(local, split, config.pp == 1, true);
  const double params = std::max(first_params, last_params);
  // DP traffic overlaps with whatever holds the compute stream, exposed TP collectives
  // included: widen the stage's windows by the TP time exposed per unit and micro-batch.
  DpWindow window{stage.forward_s,
                  stage.backward_s,
                  stage.layers,
                  stage.layer.forward_s,
                  stage.layer.backward_s + stage.layer.recompute_s,
                  embedding_parameters(local, split)};
  if (stage.layers > 0 && md > 0) {
    const double tp_unit_s = out.tp.exposed_s / (md * stage.layers);
    const double unit_s = stage.layer.forward_s + stage.layer.backward_s + stage.layer.recompute_s;
    const double forward_share = unit_s > 0 ? stage.layer.forward_s / unit_s : 0.5;
    window.unit_forward_s += tp_unit_s * forward_share;
    window.unit_backward_s += tp_unit_s * (1.0 - forward_share);
    window.forward_s += stage.layers * tp_unit_s * forward_share;
    window.backward_s += stage.layers * tp_unit_s * (1.0 - forward_share);
  }
  out.dp = dp_comm(local, split, {placement.dp, placement.shard, placement.replicate}, params, m,
                   window, stack, calibration);
  // Expert gradients reduce over the expert-data-parallel group (tp x cp x dp / ep ranks).
  const double expert_params = expert_parameters_per_gpu(model, config);
  ParallelConfig expert_split = split;
  expert_split.dp = expert_dp(config);
  expert_split.dp_shard = 0;
  if (expert_params > 0.0) {
    DpWindow expert_window = window;
    expert_window.edge_parameters = 0.0;  // the embedding is not an expert's
    out.edp = dp_comm(local, expert_split, {placement.edp, placement.edp, placement.edp},
                      expert_params, m, expert_window, stack, calibration);
  }

  // Gradient accumulation outside the GEMMs (the stack's grad_accumulation): one pass over the
  // stage's gradients, their shard under ZeRO-2/3, after every micro-batch's backward.
  const bool sharded_grads = config.zero >= 2;
  const double accumulated =
      params / (sharded_grads ? split.shard_ranks() : 1.0) +
      expert_params / (sharded_grads ? static_cast<double>(expert_dp(config)) : 1.0);
  out.time.backward_s +=
      md * hbm_time_s(gpu, stack.grad_accumulation_bytes(model.training.dtype) * accumulated);
  // FSDP2's reduce-scatter copy-in: each unit's unsharded gradients copied (and widened to the
  // reduce dtype) into the reduce-scatter input on the compute stream, once per reduce-scatter.
  if (split.dp > 1 && stack.shards_per_unit(config.zero)) {
    out.time.backward_s +=
        unit_scatter_passes(config, stack, m) *
        hbm_time_s(gpu, stack.reduce_scatter_copy_in_bytes(model.training.dtype) * params);
  }

  const AmaxReductions amax = fp8_amax_reductions(config, precision_of(model.training),
                                                  stage.layers, m, placement.amax, calibration);
  out.amax.collective = Collective::all_reduce;
  out.amax.link = placement.amax;
  out.amax.bytes_per_call = amax.bytes_per_call;
  out.amax.calls_per_step = amax.calls_per_step;
  out.amax.time_per_call_s = amax.time_per_call_s;
  out.amax.total_s = amax.total_s();
  out.amax.exposed_s = amax.total_s();

  // Bubble: (p-1)/(v*m) of the ideal time, which holds compute and what is exposed per
  // micro-batch (TP, PP, CP, EP communication and the amax all-reduces).
  const double ideal_s = out.time.compute_s() + out.tp.exposed_s +
                         (out.pp_whole_step ? 0.0 : out.pp.exposed_s) + out.cp.exposed_s +
                         out.ep.exposed_s + out.amax.exposed_s;
  out.time.bubble_s = bubble_fraction(config.pp, config.virtual_stages, m) * ideal_s;
  const double sharded = config.zero >= 1 ? split.shard_ranks() : 1.0;
  const double expert_sharded = config.zero >= 1 ? expert_split.dp : 1.0;
  out.time.optimizer_s =
      optimizer_time_s(gpu, model.training.optimizer,
                       params / sharded + expert_params / expert_sharded, stack.adam_step_bytes) +
      fp8_weight_cast_time_s(gpu, precision_of(model.training),
                             stack.fp8_weight_cache ? 1.0 : double(m), params + expert_params);
  out.time.tp_comm_s = out.tp.exposed_s;
  out.time.pp_comm_s = out.pp.exposed_s;
  out.time.dp_comm_s = out.dp.exposed_s + out.edp.exposed_s;
  out.time.cp_comm_s = out.cp.exposed_s;
  out.time.ep_comm_s = out.ep.exposed_s;
  out.time.amax_comm_s = out.amax.exposed_s;
  // NCCL kernels that run hidden behind compute take their channels' SMs from it (Transformer
  // Engine userbuffers price their own SMs in tp_overlap_layer_s).
  const double tp_hidden_s = userbuffers ? 0.0 : out.tp.total_s - out.tp.exposed_s;
  out.time.overlap_contention_s =
      std::max(0.0, tp_hidden_s) * nccl_sm_share(cluster, placement.tp) +
      std::max(0.0, out.dp.total_s - out.dp.exposed_s) * nccl_sm_share(cluster, out.dp.link) +
      std::max(0.0, out.pp.total_s - out.pp.exposed_s) * nccl_sm_share(cluster, placement.pp) +
      std::max(0.0, out.cp.total_s - out.cp.exposed_s) * nccl_sm_share(cluster, placement.cp) +
      std::max(0.0, out.edp.total_s - out.edp.exposed_s) * nccl_sm_share(cluster, placement.edp);
  out.time.step_s = out.time.compute_s() + out.time.exposed_comm_s() + out.time.bubble_s +
                    out.time.optimizer_s + out.time.overlap_contention_s;

  const double global_batch = static_cast<double>(model.training.global_batch);
  // MoE: FLOPs on the active parameters (each token's top_k and shared experts).
  const double full_share = model_recompute_share(model, config);
  const StepFlops flops = model.is_moe() ? step_flops(moe_active_view(model), global_batch,
                                                      config.recompute, stack.selective, full_share)
                                         : step_flops(model, global_batch, config.recompute,
                                                      stack.selective, full_share);
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
  MemoryOptions memory;
  memory.reserve_gib = options.reserve_gib;
  memory.fused_attention = stack.attention != AttentionKernel::unfused;
  memory.grad_buffer_bytes = stack.buffer_bytes(model.training.dtype);
  const Precision precision = precision_of(model.training);
  memory.weight_bytes = precision.weight_bytes;
  memory.weight_copy_bytes_per_parameter =
      weight_memory_bytes_per_parameter(precision, stack.fp8_weight_cache) - precision.weight_bytes;
  memory.fp8_saved_inputs = precision.fp8 && stack.fp8_saves_fp8_inputs;
  memory.prefetch_units = stack.prefetch_units;
  memory.zero3_keeps_gathered = stack.pp_keeps_gathered_weights;
  memory.zero3_fp32_shard_only = stack.zero3_fp32_shard_only;
  memory.selective = stack.selective;
  memory.loss_bytes_per_logit = stack.loss_bytes_per_logit_at(config.tp);
  memory.gathered_inputs = stack.tp_keeps_gathered_inputs;  // no effect at TP 1 (nothing gathered)
  memory.adam_state_bytes = stack.adam_state_bytes;
  memory.nccl = nccl_groups(cluster, config, placement);
  if (config.cp > 1 && out.cp_kind == CpKind::all_gather) {
    memory.cp_gathered_kv_bytes = cp_allgather_working_bytes(model, config);
  }
  out.memory = peak_memory(gpu, local, split, memory);
  add_expert_memory(out.memory, model, config, memory);
  return out;
}

}  // namespace trident
