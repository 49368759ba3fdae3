#pragma once
/// Pipeline schedules: the bubble of 1F1B and interleaved 1F1B (Narayanan et al. 2021 section
/// 2.2) and an explicit schedule, block by block, for drawing and for checking the formula.
#include <algorithm>
#include <optional>
#include <vector>

#include "costmodel/model.h"
#include "costmodel/parallel_config.h"

namespace trident {

/// Layers each pipeline stage holds, split as Megatron-Core (--decoder-first/last-pipeline-
/// num-layers), torchtitan (first/last_stage_less_layers) and DeepSpeed (partition_method
/// 'parameters', embedding and output counted) do: the middle stages hold ceil(L/p); the
/// shortfall p*ceil(L/p) - L comes off the last stage (which also runs the output layer) and the
/// first stage (the embedding), at least one layer left on each; what remains comes off middle
/// stages. Even splits: L/p everywhere. pp = 1: one stage of L.
struct StageLayers {
  int first = 0;
  int middle = 0;  ///< the most layers any middle stage holds (0 when pp < 3)
  int last = 0;
  [[nodiscard]] int most() const { return std::max({first, middle, last}); }
  /// Every one of `pp` stages holds the same layers (no uneven split, no MTP layers on the
  /// last).
  [[nodiscard]] bool even(int pp) const { return first == last && (pp < 3 || middle == first); }
  bool operator==(const StageLayers&) const = default;
};

// The split is asked for many times per evaluation (every memory term, stage and view): these
// few integer steps are defined here so that each caller inlines them (docs/cost_model.md#speed).
namespace stage_split {

/// ceil(a / b) for b > 0 and a >= 0 (at most 0 for a negative a), without a + b - 1, which
/// could wrap.
[[nodiscard]] inline long long ceil_div(long long a, long long b) {
  return a / b + (a % b > 0 ? 1 : 0);
}

/// `layers` over `pp` (> 1) stages of ceil(L/p) each, the shortfall taken off the last stage
/// (half of it, rounded up, or all of it with `last_takes_all`; at most ceil - 1), then the
/// first (at most ceil - 1), then one layer each off middle stages. From the quotient and
/// remainder: a layer count near INT_MAX must not wrap (as layers + pp - 1 or pp x ceil would).
[[nodiscard]] inline StageLayers shortfall_split(int layers, int pp, bool last_takes_all) {
  const int remainder = layers % pp;
  const int ceil_layers = layers / pp + (remainder != 0 ? 1 : 0);
  const int shortfall = remainder != 0 ? pp - remainder : 0;
  const int last_share = last_takes_all ? shortfall : (shortfall + 1) / 2;
  const int from_last = std::min(ceil_layers - 1, last_share);
  const int from_first = std::min(ceil_layers - 1, shortfall - from_last);
  const int rest = shortfall - from_last - from_first;  // taken one each off middle stages
  StageLayers out{ceil_layers - from_first, 0, ceil_layers - from_last};
  if (pp > 2) out.middle = rest >= pp - 2 ? ceil_layers - 1 : ceil_layers;
  return out;
}

}  // namespace stage_split

[[nodiscard]] inline StageLayers stage_layers(int layers, int pp) {
  if (pp <= 1) return {layers, 0, layers};
  return stage_split::shortfall_split(layers, pp, false);  // half the shortfall off each end
}

/// The plan's split: its pinned end stages (ParallelConfig::first_stage_layers and
/// last_stage_layers, the middle stages sharing the rest equally) or stage_layers' default.
[[nodiscard]] inline StageLayers stage_layers(int layers, const ParallelConfig& config) {
  if (!config.pinned_stage_ends() || config.pp < 2) return stage_layers(layers, config.pp);
  StageLayers out{config.first_stage_layers, 0, config.last_stage_layers};
  if (config.pp > 2) {
    // The largest middle stage: where the rest does not divide (a layout's split), the
    // earlier middle stages hold one layer more (middle_stages).
    const long long rest = static_cast<long long>(layers) - out.first - out.last;
    out.middle = static_cast<int>(std::max(0LL, stage_split::ceil_div(rest, config.pp - 2LL)));
  }
  return out;
}

/// The model's layers split as the plan splits them (stage_layers), then its multi-token-
/// prediction layers on the last stage (Megatron-Core builds the MTP block in the last stage's
/// post-process).
[[nodiscard]] inline StageLayers model_stage_layers(const Model& model,
                                                    const ParallelConfig& config) {
  StageLayers out = stage_layers(model.layers, config);
  out.last += model.mtp_layers;
  if (config.pp <= 1) out.first += model.mtp_layers;  // one stage: first and last alike
  return out;
}

/// Whether the plan's end stages are set away from stage_layers' default split: pinned ends
/// that are the default (its ends, its middle stages all equal) are not.
[[nodiscard]] bool sets_ends(int layers, const ParallelConfig& config);

/// Why pinned end stages cannot split `layers` over `pp` stages, as Megatron-Core's
/// TransformerConfig refuses them (Megatron-LM@d98e8a64 megatron/core/transformer/
/// transformer_config.py L2295-2360): `ok` when they can. Interleaved, its first/last counts
/// must also divide by VP there; an interleaved uneven split is written as a pipeline layout
/// instead (planner/export_target.h pipeline_layout), so VP follows the search's rule for any
/// uneven split (it divides the largest stage). `middles_may_differ`: the stack runs middle
/// stages of two counts (Stack::runs_unequal_middles, written as a layout), so the rest need
/// not divide by them: the earlier middle stages take one layer more.
enum class StageEndsProblem {
  ok,
  no_pipeline,      ///< pp < 2: nothing to pin
  empty_end,        ///< an end stage of no layer
  layers_left,      ///< two stages: first + last must be every layer
  middle_empty,     ///< more stages: the middle stages would hold no layer
  middles_unequal,  ///< the rest does not divide by the p - 2 middle stages
};
[[nodiscard]] StageEndsProblem stage_ends_problem(int layers, int pp, int first, int last,
                                                  bool middles_may_differ);
/// The even or default split with lighter ends, which the search tries beside it (end stages
/// the launcher takes: Stack::stage_ends_pinned): every middle stage one layer more than
/// stage_layers gives it, the ends sharing the rest, the first the larger half (the last runs
/// the output layer and the loss); two stages: one layer moved from the last to the first.
/// Where the middle stages may differ (`middles_may_differ`) and that leaves an end no layer,
/// the ends hold one layer each and the middle stages the rest, the earlier ones one more
/// (never more than that one layer over ceil(L/p): 32 layers over 16 stages 1|3x2,2x12|1, as
/// the default split of 33 is 1|3x3,2x11|1). nullopt where no such split leaves each end a
/// layer or differs from the default split, or pp < 2.
[[nodiscard]] std::optional<StageLayers> lighter_ends(int layers, int pp, bool middles_may_differ);
/// The default split of a count PP does not divide with its shortfall taken off the last stage
/// first (it runs the output layer, the loss and any MTP layers), then the first, then middle
/// stages; stage_layers(layers, pp) takes it half off each end. DeepSeek-V3's 61 over 16:
/// 4 | 4 x14 | 1 against 3 | 4 x14 | 2. nullopt where that is the default split (a shortfall
/// of one, or none), or pp < 3.
[[nodiscard]] std::optional<StageLayers> lightest_last(int layers, int pp);
/// The p - 2 middle stages of a split of `layers` (MTP layers included) as stage_layers makes
/// it: `full` of them hold split.middle layers, `fewer` one layer less.
struct MiddleStages {
  int full = 0;
  int fewer = 0;
};
[[nodiscard]] MiddleStages middle_stages(int layers, int pp, const StageLayers& split);
/// Whether a split of `layers` over `pp` stages, each in `virtual_stages` chunks, shortens
/// only its first and last virtual stage, as torchtitan writes an uneven split
/// (pipeline_parallel_layers_per_stage with first/last_stage_less_layers,
/// generate_llm_fqn_per_model_part @v0.2.2): even splits always; otherwise the middle stages
/// hold the same layers, the most of any stage (the counts only shorten the ends), the virtual
/// stages divide the largest stage, and each end's shortfall fits in one virtual stage.
[[nodiscard]] bool ends_only_split(int layers, int pp, int virtual_stages);
/// The same for a given split of `layers` (a pinned one, stage_layers(layers, config)).
[[nodiscard]] bool ends_only_split(int layers, int pp, int virtual_stages,
                                   const StageLayers& split);
/// Layers of the largest model chunk of the plan's split: its largest stage's (MTP layers
/// counted) / the virtual stages, rounded up.
[[nodiscard]] int model_chunk_layers(const Model& model, const ParallelConfig& config);

/// Bubble as a fraction of the ideal (bubble-free) time: (p-1) / (v*m).
[[nodiscard]] double bubble_fraction(int pp, int virtual_stages, long long micro_batches);

/// What the bubble's (p-1)/v slots take, as a share of the bottleneck stage's per-micro-batch
/// time: the bottleneck runs its m micro-batches back to back, and the fill (micro-batch 0's
/// forward) and the drain (the last one's backward) cross every other stage once, so the step
/// is m x t_bottleneck + (1/v) x the other stages' times, not (m + (p-1)/v) x t_bottleneck
/// (docs/cost_model.md#pipeline). Per-micro-batch times: `first_s`, `middle_s` (the slowest
/// middle stage), `middles_total_s` (all p - 2 middle stages together) and `last_s` (the
/// output layer and loss included). 1 for equal stages; 1 without a pipeline.
[[nodiscard]] double fill_drain_ratio(int pp, double first_s, double middle_s,
                                      double middles_total_s, double last_s);

/// Megatron-Core's defer_embedding_wgrad_compute (Stack::defer_output_wgrad) over one step.
struct DeferredOutputWgrad {
  double calls = 0.0;       ///< output-layer calls whose weight gradient waits for the flush
  double saved_s = 0.0;     ///< taken off the pace-setting last stage's micro-batches
  double deferred_s = 0.0;  ///< the deferred GEMMs, run after the last stage's last backward
  double exposed_s = 0.0;   ///< of those, what the other stages' drain does not cover
  double drain_s = 0.0;     ///< the last stage's idle drain they fill
};

/// Output-layer calls a step defers: `limit` of its m x `calls_per_micro_batch` (0: all of
/// them); none without a pipeline. What the last stage holds at its peak (memory.h).
[[nodiscard]] double deferred_output_wgrad_calls(int pp, int limit, long long micro_batches,
                                                 double calls_per_micro_batch);
/// The last stage keeps the weight-gradient GEMM of the output layer's first `limit` calls
/// (0: all m x `calls_per_micro_batch` of the step) and runs them after its last backward,
/// while the other stages drain (Stack::defer_output_wgrad). Each deferred micro-batch's
/// stage time falls by its wgrad (`wgrad_per_micro_batch_s`, all its calls), at most by
/// `last_margin_s`, how much longer the last stage's micro-batch is than the next slowest
/// stage's (0 where the last stage does not set the pace); the deferred GEMMs fill the last
/// stage's `drain_idle_s` and the rest is exposed. None without a pipeline (`pp` 1).
[[nodiscard]] DeferredOutputWgrad deferred_output_wgrad(int pp, int limit, long long micro_batches,
                                                        double calls_per_micro_batch,
                                                        double wgrad_per_micro_batch_s,
                                                        double last_margin_s, double drain_idle_s);

/// Transfers on micro-batch 0's trip through all p*v model chunks and back: 2(p*v - 1), the
/// chain the interleaved schedule cannot hide (interleaved_p2p_exposed_s).
[[nodiscard]] double interleaved_chain_transfers(int pp, int virtual_stages);

/// How much longer a step of Megatron's interleaved 1F1B gets when its point-to-point
/// transfers overlap compute (--overlap-p2p-communication: each transfer delays only the op
/// waiting for it): micro-batch 0's trip through every model chunk and back, 2(p*v - 1) hops,
/// plus, when a hop outlasts a chunk's slack (the shorter of its forward and backward,
/// min(stage_forward_s, stage_backward_s) / v), the excess on each op of the steady state
/// beyond the first group of p micro-batches. The whole step's increase, fill and drain
/// included. schedule_1f1b with hop_s gives the same exactly below that threshold, and within
/// -16%..+80% above it (docs/cost_model.md#pipeline-p2p). 0 for one stage, no chunk, no batch.
[[nodiscard]] double interleaved_p2p_exposed_s(int pp, int virtual_stages, long long micro_batches,
                                               double hop_s, double stage_forward_s,
                                               double stage_backward_s);

/// One block of a schedule: a micro-batch's forward or backward through one model chunk of
/// one stage.
struct ScheduleBlock {
  int stage = 0;
  int micro_batch = 0;
  int chunk = 0;  ///< model chunk on this stage, 0..v-1 (0 for plain 1F1B)
  bool is_forward = true;
  double start_s = 0.0;
  double end_s = 0.0;
};

/// Time the last stage's last model chunk takes beyond the others' (the output layer and loss),
/// per micro-batch, forward and backward.
struct ScheduleTail {
  double forward_s = 0.0;
  double backward_s = 0.0;
};

/// Megatron-LM's 1F1B (v = 1) and interleaved 1F1B (v > 1) schedule of m micro-batches over
/// p stages, simulated with their data dependencies. t_fwd_s and t_bwd_s are one micro-batch's
/// forward and backward through a whole stage (all its chunks; one chunk takes 1/v of it).
/// Interleaving needs m to be a multiple of p (Megatron's condition). With uniform times the
/// makespan is (m + (p-1)/v) * (t_fwd + t_bwd). hop_s delays every input that comes from
/// another stage (an overlapped point-to-point transfer; a negative or NaN hop counts as 0).
/// `tail` lengthens the last stage's last chunk: the makespan is then m x (t + tail) + (p-1)/v
/// x t (fill_drain_ratio). Blocks are ordered by stage, then start time.
[[nodiscard]] std::vector<ScheduleBlock> schedule_1f1b(int pp, int micro_batches,
                                                       int virtual_stages, double t_fwd_s,
                                                       double t_bwd_s, double hop_s = 0.0,
                                                       ScheduleTail tail = {});

/// DeepSpeed's pipeline engine (deepspeed/runtime/pipe/schedule.py TrainSchedule): each stage
/// runs 2(m + p - 1) steps, a forward or a backward by the parity of step and stage, and sends
/// the previous step's activation or gradient before receiving this step's input (the order
/// since DeepSpeed v0.10.0, PR #2862; v0.5.10's TrainSchedule.steps L205-216 and every release
/// before receive first, and a simulation of that order gives the same makespan: a helper's
/// check, 2026-12-04, docs/cost_model.md#deepspeed-pipeline); every send and receive is its own
/// blocking call (pipe/p2p.py dist.send/recv) that ends hop_s after both sides have reached it
/// (a negative or NaN hop counts as 0). Returns the simulated makespan; 0 without stages or
/// micro-batches.
[[nodiscard]] double deepspeed_schedule_makespan_s(int pp, int micro_batches, double t_fwd_s,
                                                   double t_bwd_s, double hop_s);

/// Transfers that schedule puts on the critical path per step (its makespan grows by this
/// many hop_s while a hop is shorter than a forward): a middle stage's own four blocking calls
/// per micro-batch, plus 2(p - 4) at the pipeline's ends; two per micro-batch with two stages
/// (each has one neighbour); one micro-batch's trip there and back, 2(p - 1), with one.
[[nodiscard]] double deepspeed_p2p_exposed_transfers(int pp, long long micro_batches);

/// End of the last block.
[[nodiscard]] double schedule_makespan_s(const std::vector<ScheduleBlock>& blocks);

}  // namespace trident
