// A plan's memory apart from its time; see plan_memory.h.
#include "costmodel/plan_memory.h"

#include <algorithm>
#include <optional>

#include "costmodel/kernels.h"
#include "costmodel/moe.h"
#include "costmodel/pipeline.h"
#include "costmodel/precision.h"

namespace trident {

namespace {

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

PricedView priced_view(const Model& model, const ParallelConfig& config) {
  PricedView out;
  out.moe_share = stage_moe_fraction(model, config);
  if (model.is_moe() || config.cp > 1) {
    out.view = cp_local_view(moe_dense_view(model, out.moe_share), config);
  }
  return out;
}

double nccl_ring_channels(const Cluster& cluster, const GroupLink& link) {
  if (link.ranks < 2) return 0.0;
  if (link.domains <= 1) return kNcclChannelsInDomain;
  // Channels carry bandwidth: NICs past what the GPUs' PCIe links carry add none. Not scaled
  // by the share a ring paced by its in-domain links leaves idle (a PCIe server): a channel
  // count that grows with a link's speed priced a faster link a slower step (docs/cost_model.md).
  return kNcclChannelsPerNic * cluster.usable_nics();
}

MemoryOptions memory_options(const Cluster& cluster, const Model& model,
                             const ParallelConfig& config, const Placement& placement,
                             const EstimateOptions& options, CpKind cp_kind) {
  const Stack& stack = options.stack;
  MemoryOptions memory;
  memory.reserve_gib = options.reserve_gib;
  if (stack.defer_output_wgrad) {
    memory.deferred_output_wgrad_calls = deferred_output_wgrad_calls(
        config.pp, stack.output_wgrad_deferral_limit,
        config.num_micro_batches(model.training.global_batch), 1.0 + model.mtp_layers);
  }
  memory.fused_attention = is_fused(stack.attention);
  memory.unfused_softmax = stack.unfused_softmax;
  memory.grad_buffer_bytes = stack.buffer_bytes(model.training.dtype);
  const Precision precision =
      precision_of(model.training, cluster.gpu, stack.fp8_follows_gpu_layout());
  memory.weight_bytes = precision.weight_bytes;
  memory.activation_bytes = precision.activation_bytes;
  memory.weights_are_master = precision.weight_bytes >= 4.0;
  memory.zero_clones_fp32_partition = stack.zero_clones_fp32_partition;
  memory.weight_copy_bytes_per_parameter =
      weight_memory_bytes_per_parameter(precision, stack.fp8_weight_cache) - precision.weight_bytes;
  memory.fp8_saved_inputs = precision.fp8 && stack.fp8_saves_fp8_inputs;
  memory.prefetch_units = stack.prefetch_units;
  memory.zero3_keeps_gathered = stack.pp_keeps_gathered_weights;
  memory.zero3_side_stream_pools = stack.zero3_side_stream_pools;
  memory.pp_keeps_last_reduce_scatter_input = stack.pp_keeps_last_reduce_scatter_input;
  memory.zero3_fp32_shard_only = stack.zero3_fp32_shard_only;
  // FSDP mixed precision gathers the fp32 shard cast for compute; with FP8 parameters
  // (torchao's enable_fsdp_float8_all_gather) the gathered linear weights are FP8 and stay so.
  // Gathered in FP8, the gathered weights are the first copy: Transformer Engine keeps its
  // others beside them (the transpose, on Hopper); gathered in 16 bits (MXFP8), it quantizes
  // both usages beside the gathered tensor. torchao makes its column-major copy in the
  // backward's GEMM call and frees it (no copy held).
  if (stack.zero3_fp32_shard_only && precision.fp8_params) {
    memory.fp8_gathered_linear_weight_bytes = precision.weight_gather_bytes;
    const double gathered_fp8 = precision.weight_gather_bytes < precision.weight_bytes
                                    ? precision.weight_gather_bytes
                                    : 0.0;
    memory.weight_copy_bytes_per_parameter =
        stack.fp8_saves_fp8_inputs
            ? std::max(0.0, weight_memory_bytes_per_parameter(precision, stack.fp8_weight_cache) -
                                gathered_fp8)
            : 0.0;
  }
  memory.selective = stack.selective;
  memory.loss_bytes_per_logit = stack.loss_bytes_per_logit_at(config.tp);
  memory.gathered_inputs = stack.tp_keeps_gathered_inputs;  // no effect at TP 1 (nothing gathered)
  memory.adam_state_bytes = stack.adam_state_bytes;
  memory.pp_recv_buffers_per_micro_batch = stack.pp_recv_buffers_per_micro_batch;
  memory.pp_keeps_outputs = stack.pp_keeps_outputs;
  memory.combined_1f1b = stack.runs_ep_overlap(model, config);
  memory.nccl = nccl_groups(cluster, config, placement);
  if (config.cp > 1 && cp_kind == CpKind::all_gather) {
    memory.cp_gathered_kv_bytes =
        cp_allgather_working_bytes(model, config, stack.elementwise.gqa_repeat_kv);
  }
  return memory;
}

MemoryBreakdown plan_memory(const Cluster& cluster, const Model& model,
                            const ParallelConfig& config, const PricedView& view,
                            const Placement& placement, const EstimateOptions& options,
                            CpKind cp_kind) {
  const MemoryOptions memory = memory_options(cluster, model, config, placement, options, cp_kind);
  if (!model.is_moe()) {
    return peak_memory(cluster.gpu, view.model(model), view.config(config), memory);
  }
  // Each stage with its own experts before the stages are compared: the peak of a dense-first,
  // output-last model (DeepSeek-V3) is a stage's dense part with that stage's MoE layers. An end
  // stage whose MoE share differs from the pace-setting stage's gets its own dense view: its
  // dense layers' FFNs at their width (DeepSeek-V3's first stage: 3 of 18432, which the
  // pace-setting view held at the shared expert's 2048), its MoE layers' at the shared width.
  struct Experts final : StageAddition {
    const Model& model;
    const ParallelConfig& config;
    const MemoryOptions& options;
    std::optional<Model> first_view;
    std::optional<Model> last_view;
    Experts(const Model& m, const ParallelConfig& c, const MemoryOptions& o, double view_share)
        : model(m), config(c), options(o) {
      if (c.pp <= 1) return;
      const StageLayers split = model_stage_layers(m, c);
      const auto own = [&](bool first, double layers) -> std::optional<Model> {
        const double share = layers > 0.0 ? stage_moe_layers_on(m, c, first, !first) / layers : 0.0;
        if (share == view_share) return std::nullopt;
        return cp_local_view(moe_dense_view(m, share), c).model;
      };
      first_view = own(true, split.first);
      last_view = own(false, split.last);
    }
    void add(MemoryBreakdown& stage, bool first, bool last) const override {
      add_expert_memory(stage, model, config, options,
                        stage_moe_layers_on(model, config, first, last));
    }
    [[nodiscard]] const Model* stage_view(bool first, bool last) const override {
      if (first == last) return nullptr;  // one stage, or a middle one: the pace-setting view
      const std::optional<Model>& view = first ? first_view : last_view;
      return view ? &*view : nullptr;
    }
  };
  const Experts experts(model, config, memory, view.moe_share);
  return peak_memory(cluster.gpu, view.model(model), view.config(config), memory, &experts);
}

bool may_fit(const Cluster& cluster, const Model& model, const ParallelConfig& config,
             const Placement& placement, const EstimateOptions& options) {
  // estimate()'s re-entry for FP8 parameters gathered in 16 bits (its other, the job's pace,
  // moves the clock, which no memory term reads).
  if (options.stack.gathers_fp8_params_in_16_bits(model.training, config.shard_ranks())) {
    Model gathered = model;
    gathered.training.fp8.params = false;
    return may_fit(cluster, gathered, config, placement, options);
  }
  return plan_memory(cluster, model, config, priced_view(model, config), placement, options,
                     CpKind::p2p)
      .fits;
}

}  // namespace trident
