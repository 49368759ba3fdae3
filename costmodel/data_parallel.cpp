// Data parallel communication: bucketed (ZeRO 0-2) and per unit (ZeRO-3/FSDP, HSDP).
#include "costmodel/data_parallel.h"

#include <algorithm>
#include <cmath>

#include "costmodel/collective.h"
#include "costmodel/memory.h"
#include "costmodel/precision.h"

namespace trident {

/// The part of `comm_s` that overlapping with `window_s` of compute cannot hide; at least
/// the last bucket's share `floor_s`.
double unhidden_s(double comm_s, double window_s, double floor_s) {
  return std::max(comm_s - window_s, std::min(comm_s, floor_s));
}

double per_chunk_unhidden_s(double comm_s, double stage_window_s, double floor_s,
                            double first_share, int pp, int vp) {
  const double chunk_s = stage_window_s / vp;
  const double first_s = comm_s * first_share;
  const double first_exposed_s = unhidden_s(first_s, chunk_s, std::min(first_s, floor_s));
  return std::max(first_exposed_s, comm_s - (((vp - 1.0) * pp) + 1.0) * chunk_s);
}

namespace {

/// Time of `total_bytes` moved in buckets of `bucket_bytes`: one collective per bucket, each
/// paying its latency.
double bucketed_time_s(Collective collective, double total_bytes, double bucket_bytes,
                       const GroupLink& link, const Calibration* calibration) {
  if (total_bytes <= 0.0) return 0.0;
  const double calls = std::ceil(total_bytes / bucket_bytes);
  return calls * collective_time_s(collective, total_bytes / calls, link, calibration);
}

/// The later stages' parameter all-gathers on the fill's path (Stack::dp_param_gather_in_fill):
/// without interleaving, each of the pp - 1 later stages gathers `stage_bytes` as one
/// collective after its first input arrives, one after another down the pipeline. Sets the
/// call's time and count in `comm` and adds them to its total and exposed time.
void add_fill_gathers(CommDetail& comm, const ParallelConfig& config, const Stack& stack,
                      double stage_bytes, const Calibration* calibration) {
  if (!stack.dp_param_gather_in_fill || !stack.dp_overlap_param_gather || config.pp < 2 ||
      config.virtual_stages > 1 || stage_bytes <= 0.0) {
    return;
  }
  comm.fill_gathers_per_step = config.pp - 1.0;
  comm.fill_gather_s =
      collective_time_s(Collective::all_gather, stage_bytes, comm.link, calibration);
  const double fill_s = comm.fill_gathers_per_step * comm.fill_gather_s;
  comm.total_s += fill_s;
  comm.exposed_s += fill_s;
}

/// ZeRO-0/1/2 as Megatron/DeepSpeed run them: gradients reduced in buckets (all-reduce, or
/// reduce-scatter with the weights all-gathered back), overlapped with the last micro-batch's
/// backward / the next forward as far as the stack does; the last bucket cannot hide.
/// Megatron-Core fills buckets in reverse parameter order and closes one only once it holds
/// `bucket` parameters, so the last (the first stage's embedding, which backward finishes last
/// and forward needs first) holds at least the embedding: max(bucket, edge_parameters).
void bucketed_dp(CommDetail& comm, const ParallelConfig& config, const Stack& stack,
                 double parameters, const Training& training, const DpWindow& stage, long long m,
                 const Calibration* calibration, bool zero1_all_reduce) {
  const double bucket = std::min(
      parameters,
      std::max(stack.dp_bucket_parameters, stack.dp_bucket_parameters_per_rank * config.dp));
  const double reduce_bytes = stack.reduce_bytes(training.dtype, config);
  const double weight_bytes = precision_of(training).weight_gather_bytes;
  const double grad_bytes = parameters * reduce_bytes;
  const double share = std::min(parameters, std::max(bucket, stage.edge_parameters)) / parameters;
  // Interleaved with a sync per chunk: the first chunk holds 1/vp of the layers and the edge.
  const int vp = config.virtual_stages;
  const bool per_chunk = stack.dp_sync_per_chunk && config.pp > 1 && vp > 1;
  const double edge = std::min(parameters, stage.edge_parameters);
  const double first_share = (edge + (parameters - edge) / std::max(1, vp)) / parameters;
  const auto exposed_s = [&](double comm_s, double window_s) {
    return per_chunk
               ? per_chunk_unhidden_s(comm_s, window_s, comm_s * share, first_share, config.pp, vp)
               : unhidden_s(comm_s, window_s, comm_s * share);
  };
  // ZeRO-2 where the stack partitions gradients as each micro-batch's backward makes them
  // (DeepSpeed: "ZeRO stage 2 communicates during non gradient accumulation boundaries as
  // well"): the reduction every micro-batch, each behind its own backward.
  const double passes =
      config.zero == 2 && stack.reduce_every_micro_batch ? static_cast<double>(m) : 1.0;
  comm.bytes_per_call = grad_bytes;
  comm.calls_per_step = passes;
  // ZeRO 0 all-reduces; ZeRO 1-2 reduce-scatter, but for a ZeRO-1 that all-reduces its buckets.
  const bool all_reduce = config.zero == 0 || (config.zero == 1 && zero1_all_reduce);
  const Collective reduce = all_reduce ? Collective::all_reduce : Collective::reduce_scatter;
  const double grad_s =
      bucketed_time_s(reduce, grad_bytes, bucket * reduce_bytes, comm.link, calibration);
  const double grad_exposed_s =
      passes * (stack.overlaps_grad_reduce(config) ? exposed_s(grad_s, stage.backward_s) : grad_s);
  if (config.zero == 0) {
    comm.time_per_call_s = grad_s;
    comm.total_s = grad_s;
    comm.exposed_s = grad_exposed_s;
    return;
  }
  const double gather_bytes = parameters * weight_bytes;
  const double gather_s = bucketed_time_s(Collective::all_gather, gather_bytes,
                                          bucket * weight_bytes, comm.link, calibration);
  comm.collective = reduce;
  comm.gather_bytes_per_call = gather_bytes;
  // A call: the reduction and the gather (what validate runs and times); reducing every
  // micro-batch, the gather still runs once a step.
  comm.time_per_call_s = grad_s + gather_s;
  comm.gather_s = gather_s;
  comm.total_s = passes * grad_s + gather_s;
  comm.exposed_s =
      grad_exposed_s +
      (stack.dp_overlap_param_gather ? exposed_s(gather_s, stage.forward_s) : gather_s);
  add_fill_gathers(comm, config, stack, (parameters - edge) * weight_bytes, calibration);
}

/// Parameters on this GPU of the ZeRO-3 unit beside the layers that nothing hides
/// (Stack::edge_unit): the embedding; the root's final norm and untied output layer too, where
/// one stage holds both ends (PP 1).
double edge_unit_parameters(const Model& model, const ParallelConfig& config, EdgeUnit edge) {
  if (edge == EdgeUnit::none) return 0.0;
  const double embedding = embedding_parameters(model, config);
  if (edge == EdgeUnit::embedding || config.pp > 1) return embedding;
  const ParameterCount count = count_parameters(model);
  return embedding + count.final_norm + count.output_layer / config.tp;
}

/// ZeRO-3 under PP where the stack keeps the gathered weights across the micro-batches
/// (torchtitan): one gather and one reduce-scatter a unit per step.
bool pp_keeps_gathered(const ParallelConfig& config, const Stack& stack) {
  return config.pp > 1 && stack.pp_keeps_gathered_weights;
}

/// Sharded data parallel (ZeRO-3 / FSDP FULL_SHARD; FSDP SHARD_GRAD_OP as ZeRO-2 keeps the
/// weights through backward): per unit (one transformer layer) an all-gather of its weights
/// before forward, again before backward when the stack reshards after forward, and a
/// reduce-scatter of its gradients after backward, on every micro-batch unless the stack
/// keeps them gathered (ZeRO-3 with PP in torchtitan: once per step). Each call pays NCCL's
/// ring latency; the stack prefetches `prefetch_units` ahead, so a unit's gather hides behind
/// the previous unit's compute and only the excess (gather slower than compute) and the first
/// gather / last reduce-scatter of each pass are exposed. The stack's edge unit (embedding,
/// or the root) is gathered before the first layer and reduce-scattered after the last: all of
/// it exposed, each pass. Under PP with a bulk reduction (Stack::pp_bulk_reduce_scatter) the
/// model chunk that finishes last exposes all its units' reduce-scatters after its last
/// backward; the other chunks' run in the cool-down's idle time.
void sharded_dp(CommDetail& comm, const Model& model, const ParallelConfig& config,
                const Stack& stack, long long m, const DpWindow& stage, const DpLinks& links,
                const Calibration* calibration) {
  const double weight_bytes = precision_of(model.training).weight_gather_bytes;
  const double grad_bytes = stack.reduce_bytes(model.training.dtype, config);
  // A unit of `params`: its weights' all-gather, its gradients' reduce-scatter and, with HSDP,
  // the reduced shard's all-reduce across the replicas, after the reduce-scatter and on the
  // same stream (FSDP1 _reduce_grad; FSDP2 foreach_reduce), so the two run back to back behind
  // the backward compute. No bytes, no time (collective_time_s).
  const auto all_gather_s = [&](double params) {
    return collective_time_s(Collective::all_gather, params * weight_bytes, comm.link, calibration);
  };
  const auto reduce_scatter_s = [&](double params) {
    return collective_time_s(Collective::reduce_scatter, params * grad_bytes, comm.link,
                             calibration);
  };
  const auto replicas_s = [&](double params) {
    return config.hybrid_shard() ? collective_time_s(Collective::all_reduce,
                                                     params * grad_bytes / config.shard_ranks(),
                                                     links.replicate, calibration)
                                 : 0.0;
  };
  // One unit's shard source, gathered: a layer's, or one MoE layer's routed experts.
  const double unit_params = stage.unit_parameters > 0.0
                                 ? stage.unit_parameters
                                 : count_parameters(model).per_layer / config.tp;
  const double units = stage.layers;
  comm.collective = Collective::reduce_scatter;
  comm.bytes_per_call = unit_params * grad_bytes;
  comm.gather_bytes_per_call = unit_params * weight_bytes;
  comm.unit_gather_s = all_gather_s(unit_params);
  comm.unit_scatter_s = reduce_scatter_s(unit_params);
  if (config.hybrid_shard()) {
    comm.replicate_link = links.replicate;
    comm.replicate_bytes_per_call = comm.bytes_per_call / config.shard_ranks();
    comm.unit_replicate_s = replicas_s(unit_params);
  }
  const double ag = comm.unit_gather_s;
  const double rs = comm.unit_scatter_s + comm.unit_replicate_s;
  const double fwd_unit = stage.unit_forward_s;
  const double bwd_unit = stage.unit_backward_s;
  const bool prefetch = stack.prefetch_units > 0;
  const bool post = stack.backward_prefetch == BackwardPrefetch::post;
  const bool backward_prefetch = prefetch && stack.backward_prefetch != BackwardPrefetch::none;
  // One pass over the units: `comm_s` per unit against `compute_s` per unit.
  const auto pass_exposed = [&](double comm_s, double compute_s, double edge_s, bool ahead) {
    if (comm_s <= 0.0) return 0.0;
    if (!ahead) return units * comm_s;
    return edge_s + std::max(0.0, (units - 1.0) * (comm_s - compute_s));
  };
  // Backward: with BACKWARD_POST the next gather waits for the current unit's gradients, so
  // every gather is exposed and only the reduce-scatters overlap.
  const auto backward_exposed = [&](double gather_s, double scatter_s) {
    if (post) return units * gather_s + pass_exposed(scatter_s, bwd_unit, scatter_s, true);
    return pass_exposed(gather_s + scatter_s, bwd_unit, gather_s + scatter_s, backward_prefetch);
  };
  const double md = static_cast<double>(m);
  const bool keeps = pp_keeps_gathered(config, stack);
  const UnitGatherPasses gathers = unit_gather_passes(config, stack, m);
  const bool reshard = gathers.backward > 0.0;
  const double gather_passes = gathers.forward + gathers.backward;
  const double scatter_passes = unit_scatter_passes(config, stack, m);
  const double forward_passes = gathers.forward;
  // The edge unit: one gather a forward pass, one reduce-scatter a scatter pass, exposed.
  const double edge_params =
      stage.unit_parameters > 0.0 ? 0.0 : edge_unit_parameters(model, config, stack.edge_unit);
  const double edge_ag = all_gather_s(edge_params);
  const double edge_rs = reduce_scatter_s(edge_params) + replicas_s(edge_params);
  comm.unit_gathers_per_step = gather_passes * units;
  comm.unit_scatters_per_step = scatter_passes * units;
  comm.calls_per_step = comm.unit_scatters_per_step;
  // A call: one unit's reduce-scatter and all-gather in the shard group (what validate runs
  // and times; the gathers per step are unit_gathers_per_step); HSDP's all-reduce apart.
  comm.time_per_call_s = comm.unit_scatter_s + comm.unit_gather_s;
  comm.gather_s = comm.unit_gather_s;
  if (edge_params > 0.0) {
    comm.edge_parameters = edge_params;
    comm.edge_gather_s = edge_ag;
    comm.edge_scatter_s = edge_rs;
    comm.edge_gathers_per_step = forward_passes;
    comm.edge_scatters_per_step = scatter_passes;
  }
  const double edge_s = forward_passes * edge_ag + scatter_passes * edge_rs;
  comm.total_s = comm.unit_gathers_per_step * ag + comm.unit_scatters_per_step * rs + edge_s;
  const double backward_gather = reshard ? ag : 0.0;
  double exposed = edge_s + forward_passes * pass_exposed(ag, fwd_unit, ag, prefetch);
  // Backward passes that reduce-scatter, and those that only re-gather.
  if (keeps && stack.pp_bulk_reduce_scatter) {
    exposed += units / std::max(1, config.virtual_stages) * rs;  // the last chunk's, in bulk
  } else {
    exposed += scatter_passes * backward_exposed(backward_gather, rs);
  }
  if (!keeps) exposed += (md - scatter_passes) * backward_exposed(backward_gather, 0.0);
  comm.exposed_s = exposed;
}

}  // namespace

UnitGatherPasses unit_gather_passes(const ParallelConfig& config, const Stack& stack, long long m) {
  if (pp_keeps_gathered(config, stack)) return {1.0, 0.0};
  const double md = static_cast<double>(m);
  const bool reshard = config.zero >= 3 && stack.reshard_after_forward;
  return {md, reshard ? md : 0.0};
}

ShardedCopyBytes sharded_copy_bytes(const Model& model, const ParallelConfig& config,
                                    const Stack& stack, long long m, double units, double experts,
                                    bool experts_sharded) {
  ShardedCopyBytes bytes;
  if (config.dp <= 1 || !stack.shards_per_unit(config.zero)) return bytes;
  const ParameterCount count = count_parameters(model);
  const double layers = units * count.per_layer / config.tp;
  const double edge = edge_unit_parameters(model, config, stack.edge_unit);
  if (stack.zero3_gather_copy_out) {
    // Read the gathered output, write the parameters, both in the gathered dtype. torchtitan's
    // own embedding unit reshards after forward like the layers; its [norm, output] unit (on
    // the stage that holds both ends) does not, and is gathered each forward (torchtitan
    // parallelize.py apply_fsdp: reshard_after_forward_policy == "always").
    const bool embedding_unit = stack.edge_unit == EdgeUnit::embedding;
    const double tail =
        embedding_unit && config.pp == 1 ? count.final_norm + count.output_layer / config.tp : 0.0;
    const double gathered_experts = experts_sharded ? experts : 0.0;
    const double copy = 2.0 * precision_of(model.training).weight_gather_bytes;
    const UnitGatherPasses gathers = unit_gather_passes(config, stack, m);
    bytes.forward += copy * gathers.forward * (layers + gathered_experts + edge + tail);
    bytes.backward +=
        copy * gathers.backward * (layers + gathered_experts + (embedding_unit ? edge : 0.0));
  }
  // Every backward: read the views' gradients, write the flat gradient.
  bytes.backward += stack.gradient_cat_bytes(model.training.dtype) * static_cast<double>(m) *
                    (layers + experts + edge);
  return bytes;
}

double unit_scatter_passes(const ParallelConfig& config, const Stack& stack, long long m) {
  return pp_keeps_gathered(config, stack) || !stack.reduce_every_micro_batch
             ? 1.0
             : static_cast<double>(m);
}

/// DP: the gradient all-reduce (ZeRO 0), reduce-scatter + weight all-gather (ZeRO 1/2), and
/// per unit all-gathers and reduce-scatters (ZeRO 3, and ZeRO 2 where the stack shards per
/// unit: FSDP SHARD_GRAD_OP).
CommDetail dp_comm(const Model& model, const ParallelConfig& config, const DpLinks& links,
                   double parameters, long long m, const DpWindow& stage, const Stack& stack,
                   const Calibration* calibration, bool moe_layers) {
  CommDetail comm;
  comm.link = config.hybrid_shard() ? links.shard : links.dp;
  if (config.dp <= 1) return comm;
  if (stack.shards_per_unit(config.zero)) {
    sharded_dp(comm, model, config, stack, m, stage, links, calibration);
  } else {
    // DeepSpeed keeps contiguous gradients (a reduce per partition) for MoE models (engine.py
    // `if not self.has_moe_layers: contiguous_gradients = False`, @v0.8.0 L1532-1534).
    const bool zero1_all_reduce = stack.zero1_all_reduces_gradients && !moe_layers;
    bucketed_dp(comm, config, stack, parameters, model.training, stage, m, calibration,
                zero1_all_reduce);
  }
  return comm;
}

CommDetail tied_embedding_grads(const Model& model, const ParallelConfig& config,
                                const Stack& stack, const GroupLink& pp_link,
                                const Calibration* calibration) {
  CommDetail out;
  out.collective = Collective::all_reduce;
  // Multi-token prediction embeds on the last stage with the word embedding too: kept in sync
  // the same way, tied or not (finalize_model_grads.py L141-145 @core_v0.12.0).
  const bool last_stage_embeds = model.tied_embeddings || model.mtp_layers > 0;
  if (!last_stage_embeds || config.pp <= 1) return out;
  // The first and the last stage: across NVLink domains whenever the pipeline crosses them.
  GroupLink link = pp_link;
  link.ranks = 2;
  const bool across = pp_link.domains > 1;
  link.domains = across ? 2 : 1;
  link.ranks_per_domain = across ? 1 : 2;
  link.min_ranks_per_domain = link.ranks_per_domain;
  out.link = link;
  out.bytes_per_call = static_cast<double>(model.vocab) * model.hidden / config.tp *
                       stack.buffer_bytes(model.training.dtype);
  out.calls_per_step = 1.0;
  out.time_per_call_s =
      collective_time_s(Collective::all_reduce, out.bytes_per_call, link, calibration);
  out.total_s = out.time_per_call_s;
  out.exposed_s = out.total_s;
  return out;
}

}  // namespace trident
