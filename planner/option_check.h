#pragma once
/// What makes a search's pins and limits impossible on their own, as data: the knob, what is
/// wrong and the numbers involved. The CLI turns it into its one-line message with the flag
/// names (cli/plan_checks.h); the planner speaks no flags.
#include <optional>

#include "costmodel/model.h"
#include "costmodel/stack.h"
#include "topology/errors.h"

namespace trident {

struct SearchOptions;

/// The search options a user sets (pins, limits) and the model facts they are checked against.
enum class Knob {
  tp,
  pp,
  dp,
  micro_batch,
  vp,
  min_tp,
  max_tp,
  zero,
  recompute,
  sequence_parallel,
  fp8_recipe,
  global_batch,
  cp,
  ep,
  min_cp,
  max_cp,
  min_ep,
  max_ep,
  dp_shard,
  recompute_layers,
  fp8_attention,  ///< the model file's training.fp8.attention
  fp8_params,     ///< the model file's training.fp8.params
  first_stage_layers,
  last_stage_layers,
  lighter_ends,
};

enum class OptionIssue {
  not_positive,            ///< value below 1 (max_tp: below 0)
  min_above_max,           ///< min_tp `value` above max_tp `limit`
  min_above_default_max,   ///< min_cp `value` above the search's own ceiling `limit` (no max_cp)
  out_of_range,            ///< ZeRO stage outside 0..3
  stack_lacks,             ///< the stack does not run `value` (a ZeRO stage, a Recompute, PP, ...)
  cp_unfused_fallback,     ///< CP `value` where the heads fall back to TE's unfused attention
  stack_lacks_with_pp,     ///< the stack does not run ZeRO `value` with PP `limit`
  not_dividing_heads,      ///< TP `value` does not divide heads and kv_heads
  not_dividing_layers,     ///< PP `value` leaves uneven stages under a stack without them
  uneven_middles,          ///< PP `value` leaves middle stages that differ, under a stack that
                           ///< shortens only the ends (Stack::uneven_stages_ends_only)
  uneven_ends_over_chunk,  ///< VP `value` over PP `limit`: an end's shortfall exceeds a virtual
                           ///< stage (or VP does not divide the largest), ends-only stack
  more_than_layers,        ///< PP `value` above the layer count
  missing,                 ///< not given at all (the global batch)
  not_dividing_sequence,   ///< CP `value`: 2 x cp does not divide the sequence `limit`
  no_experts,              ///< EP `value` on a dense model
  not_dividing_experts,    ///< EP `value` does not divide the `limit` experts
  moe_needs_sp,            ///< sequence parallel off with TP `limit` on a MoE model
  moe_needs_sp_stack,      ///< TP `value` on a MoE model under a stack without sequence parallel
  stack_needs_sp,          ///< sequence parallel off with TP `limit` under a stack that needs it
  moe_zero3,               ///< ZeRO `value` 3 on a MoE model (experts per unit not modelled)
  moe_stack_only_zero3,    ///< a MoE model under a stack whose only ZeRO stage is 3
  moe_dp_alone,            ///< a MoE model under a stack whose ZeRO 0-2 is DDP over DP alone
  not_dividing_dp,         ///< HSDP shard size `value` does not divide the pinned DP `limit`
  needs_unit_sharding,     ///< HSDP shard size `value` with ZeRO `limit`, not sharded per unit
  no_unit_sharding,        ///< HSDP shard size `value` under a stack sharding no stage per unit
  shard_below_two,         ///< HSDP shard size `value` 1: nothing to shard (DDP)
  moe_hybrid_shard,        ///< HSDP on a MoE model (experts' state per shard group not modelled)
  selective_needs_mla,     ///< selective recompute of MLA's up-projections on a model without MLA
  only_selective_needs_mla,  ///< recompute free, the stack's only mode that on a model without MLA
  needs_full_recompute,      ///< recompute_layers `value` with recompute `limit` other than full
  above_max,          ///< the pin `value` above its knob's maximum `limit` (max_tp, max_cp, max_ep)
  below_min,          ///< the pin `value` below its knob's minimum `limit` (min_tp, ...)
  vp_needs_pp,        ///< interleaving `value` > 1 with PP pinned to 1
  sp_needs_tp,        ///< sequence parallel on with TP pinned to 1
  above_largest_tp,   ///< min_tp `value` above `limit`, the gcd of heads, kv_heads, ffn_hidden
  more_than_experts,  ///< min_ep `value` above the model's `limit` experts
  no_ep_divides,      ///< no EP size from min_ep `value` to max_ep divides the `limit` experts
  fp8_params_zero0,   ///< ZeRO `value` 0 for a model with FP8 parameters under a stack that
                      ///< gathers them only from a sharded optimizer
  sgd_sharded,        ///< ZeRO `value` 1+ for an SGD model under a stack whose sharded
                      ///< optimizer is Adam's only (Stack::sharded_optimizer_adam_only)
  zero0_with_split,   ///< TP/PP/CP (or its minimum) `value` > 1 beside a pinned ZeRO-0 under a
                      ///< stack whose ZeRO-0 is DDP alone
  needs_other_end,    ///< one end stage's layers `value` pinned without the other's
  stage_ends_need_pp,     ///< end stages pinned without --pp
  stage_ends_twice,       ///< end stages pinned beside --lighter-ends
  stage_ends_invalid,     ///< the pinned ends `value` (first) cannot split the layers over PP:
                          ///< `limit` is the StageEndsProblem (costmodel/pipeline.h)
  no_lighter_split,       ///< lighter ends pinned on where PP `limit` leaves none
  stage_ends_over_chunk,  ///< VP `value` over PP `limit` with pinned ends an ends-only stack
                          ///< cannot write (ends_only_split)
  stage_ends_vp,          ///< VP `value` does not divide the largest stage, `limit` layers, of
                          ///< the pinned or lighter ends
};

struct OptionProblem {
  Knob knob = Knob::tp;
  OptionIssue issue = OptionIssue::not_positive;
  long long value = 0;  ///< the pinned value (enums as their integer)
  long long limit = 0;  ///< the other side: max_tp (max_cp, max_ep), the PP size
  long long other = 0;  ///< pinned end stages: the last stage's layers (`value` the first's)
};

/// A pin outside its own [min, max] limits (max 0 = none; above_max checked first): the
/// search would try nothing. nullopt when `pin` is unset or within them.
[[nodiscard]] std::optional<OptionProblem> pin_limit_problem(Knob knob,
                                                             const std::optional<int>& pin,
                                                             int min_value, int max_value);

/// A MoE model (planned with ZeRO 0-2) under a stack with no ZeRO-1 or 2 whose ZeRO-0 is DDP
/// over the whole job (torchtitan): data parallelism alone, TP, PP and CP 1.
[[nodiscard]] bool moe_dp_alone(const Model& model, const Stack& stack);

/// The first impossible pin or limit of `options` for `model` under `options.stack`, or nullopt.
[[nodiscard]] std::optional<OptionProblem> find_option_problem(const Model& model,
                                                               const SearchOptions& options);

/// Thrown by search() for find_option_problem's finding; the CLI checks first and says it in
/// words, so this carries the data for any other caller.
class OptionError : public InputError {
 public:
  explicit OptionError(const OptionProblem& problem)
      : InputError("impossible search option"), problem_(problem) {}
  [[nodiscard]] const OptionProblem& problem() const { return problem_; }

 private:
  OptionProblem problem_;
};

}  // namespace trident
