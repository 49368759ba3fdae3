#pragma once
/// Megatron-Core's combined 1F1B, "EP A2A overlap" (--overlap-moe-expert-parallel-comm): the
/// forward of one micro-batch and the backward of another run together layer by layer, each
/// MoE layer's dispatch and combine all-to-alls on a communication stream beside the other
/// pass's compute. Derivation and sources: docs/cost_model.md#ep-overlap.
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"

namespace trident {

/// Whether Megatron-Core runs the combined schedule for this split of `model` when asked to:
/// a 16-bit (bf16, fp16; FP8 on bf16) MoE model with EP > 1, PP 1 or interleaved, no full
/// recompute and at most one MTP layer (megatron/core/transformer/transformer_config.py
/// L2669-2713 @core_v0.19.0 asserts each; L3002-3046 @d98e8a64).
[[nodiscard]] bool combined_1f1b_runs(const Model& model, const ParallelConfig& config);

/// The first of those conditions a split misses (none when it runs; the CLI words it).
enum class CombinedBlock { none, not_moe, dtype, ep, pipeline, full_recompute, mtp };
[[nodiscard]] CombinedBlock combined_1f1b_block(const Model& model, const ParallelConfig& config);

/// One MoE layer's compute for one micro-batch on one GPU, split as the combined schedule runs
/// it (Megatron-LM@d98e8a64 megatron/core/models/common/model_chunk_schedule_plan.py,
/// TransformerLayerSchedulePlan.run): what comes before the dispatch (attention, router, shared
/// experts) and the routed experts, forward and backward. The experts' backward is their input
/// gradient (`experts_dgrad_s`) and weight gradient (`experts_wgrad_s`); without
/// --delay-wgrad-compute the weight gradient runs inside the backward node, so dgrad holds both
/// and wgrad is 0.
struct CombinedLayer {
  double attention_forward_s = 0.0;
  double attention_backward_s = 0.0;  ///< its selective recompute included
  double experts_forward_s = 0.0;
  double experts_dgrad_s = 0.0;
  double experts_wgrad_s = 0.0;
  /// What the combine node runs after its all-to-all on the communication stream, forward
  /// (the unpermutation back to token order, `postprocess`, fine_grained_callables.py
  /// submodule_combine_forward), and its gradient before the backward all-to-all.
  double combine_forward_compute_s = 0.0;
  double combine_backward_compute_s = 0.0;
  [[nodiscard]] double compute_s() const {
    return attention_forward_s + attention_backward_s + experts_forward_s + experts_dgrad_s +
           experts_wgrad_s + combine_forward_compute_s + combine_backward_compute_s;
  }
};

/// Time one paired layer (one micro-batch's forward beside another's backward) takes beyond
/// its compute, with every all-to-all `a2a_s` long. The two streams, in run()'s order (the
/// combine nodes also carry their unpermutation, before the backward all-to-all and after the
/// forward one):
///   communication: combine bwd | dispatch fwd -> dispatch bwd | combine fwd
///   compute:       attention fwd | experts dgrad -> experts wgrad -> experts fwd | attention bwd
/// and each waits for what it carries: experts dgrad for the combine bwd, the dispatch fwd for
/// attention fwd, the dispatch bwd for experts dgrad, experts fwd for the dispatch fwd, the
/// combine fwd for experts fwd, attention bwd for the dispatch bwd. The next layer's pair starts
/// when both streams are done (its attention fwd needs this combine fwd, its combine bwd this
/// attention bwd), so layers add. 4 x a2a_s without compute; 0 when compute covers it all.
[[nodiscard]] double combined_pair_exposed_s(const CombinedLayer& layer, double a2a_s);

/// Share of a pipeline rank's forward (and backward) chunk passes that run paired. Without a
/// pipeline, all but the first forward and the last backward: (m - 1) / m
/// (pipeline_parallel/combined_1f1b.py combined_1f1b_schedule_for_no_pipelining). Interleaved,
/// the 1F1B steady state after the warm-up, which the combined schedule lengthens by one
/// forward (schedules.py get_pp_rank_microbatches): on the first rank, whose warm-up is the
/// longest and whose passes open and close the step, (p - 1) x 2 + (v - 1) x p + 1 of the
/// m x v passes run alone. 0 for a pipeline without interleaving (Megatron asserts VP there).
[[nodiscard]] double combined_paired_share(int pp, int virtual_stages, long long micro_batches);

/// The all-to-all time one MoE layer exposes per micro-batch under the combined schedule: paired
/// passes expose combined_pair_exposed_s, the rest their four all-to-alls in full.
[[nodiscard]] double combined_layer_exposed_s(const CombinedLayer& layer, double a2a_s,
                                              double paired_share);

}  // namespace trident
