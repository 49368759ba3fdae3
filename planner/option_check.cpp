#include "planner/option_check.h"

#include <algorithm>

#include "costmodel/pipeline.h"
#include "planner/search.h"
#include "planner/splits.h"

namespace trident {

std::optional<OptionProblem> pin_limit_problem(Knob knob, const std::optional<int>& pin,
                                               int min_value, int max_value) {
  if (!pin) return std::nullopt;
  if (max_value > 0 && *pin > max_value) {
    return OptionProblem{knob, OptionIssue::above_max, *pin, max_value};
  }
  if (*pin < min_value) return OptionProblem{knob, OptionIssue::below_min, *pin, min_value};
  return std::nullopt;
}

namespace {

std::optional<OptionProblem> not_positive(Knob knob, const std::optional<int>& pin) {
  if (pin && *pin < 1) return OptionProblem{knob, OptionIssue::not_positive, *pin, 0};
  return std::nullopt;
}

/// A [min, max] limit pair (max 0 = no limit).
std::optional<OptionProblem> limit_problem(Knob min_knob, Knob max_knob, int min_value,
                                           int max_value) {
  if (min_value < 1) return OptionProblem{min_knob, OptionIssue::not_positive, min_value, 0};
  if (max_value < 0) return OptionProblem{max_knob, OptionIssue::not_positive, max_value, 0};
  if (max_value > 0 && min_value > max_value) {
    return OptionProblem{min_knob, OptionIssue::min_above_max, min_value, max_value};
  }
  return std::nullopt;
}

/// Context and expert parallel pins and limits that are wrong whatever the stack and model.
std::optional<OptionProblem> cp_ep_range_problem(const SearchOptions& o) {
  if (auto problem = not_positive(Knob::cp, o.cp)) return problem;
  if (auto problem = not_positive(Knob::ep, o.ep)) return problem;
  // An unset max_cp is the search's own ceiling, kMaxSearchedCp: a min_cp above it tries
  // nothing. A pinned CP is not bound by that ceiling (only by a --max-cp the user gives,
  // pin_conflict_problem).
  const int max_cp = o.max_cp > 0 ? o.max_cp : (o.cp ? 0 : kMaxSearchedCp);
  if (auto problem = limit_problem(Knob::min_cp, Knob::max_cp, o.min_cp, max_cp)) {
    if (problem->issue == OptionIssue::min_above_max && o.max_cp == 0) {
      problem->issue = OptionIssue::min_above_default_max;
    }
    return problem;
  }
  return limit_problem(Knob::min_ep, Knob::max_ep, o.min_ep, o.max_ep);
}

/// Pins that contradict one another or their own limits.
std::optional<OptionProblem> pin_conflict_problem(const SearchOptions& o) {
  if (auto problem = pin_limit_problem(Knob::tp, o.tp, o.min_tp, o.max_tp)) return problem;
  if (auto problem = pin_limit_problem(Knob::cp, o.cp, o.min_cp, o.max_cp)) return problem;
  if (auto problem = pin_limit_problem(Knob::ep, o.ep, o.min_ep, o.max_ep)) return problem;
  if (o.vp && *o.vp > 1 && o.pp && *o.pp == 1) {
    return OptionProblem{Knob::vp, OptionIssue::vp_needs_pp, *o.vp, 1};
  }
  if (o.sequence_parallel && *o.sequence_parallel && o.tp && *o.tp == 1) {
    return OptionProblem{Knob::sequence_parallel, OptionIssue::sp_needs_tp, 1, 1};
  }
  if (o.first_stage_layers.has_value() != o.last_stage_layers.has_value()) {
    return o.first_stage_layers
               ? OptionProblem{Knob::first_stage_layers, OptionIssue::needs_other_end,
                               *o.first_stage_layers, 0}
               : OptionProblem{Knob::last_stage_layers, OptionIssue::needs_other_end,
                               *o.last_stage_layers, 0};
  }
  if (o.first_stage_layers && !o.pp) {
    return OptionProblem{Knob::first_stage_layers, OptionIssue::stage_ends_need_pp,
                         *o.first_stage_layers, 0};
  }
  if (o.first_stage_layers && o.lighter_ends) {
    return OptionProblem{Knob::lighter_ends, OptionIssue::stage_ends_twice, *o.lighter_ends ? 1 : 0,
                         0};
  }
  return std::nullopt;
}

/// A CP pin (`knob`: cp or min_cp) of `value` the search's stack does not run: no context
/// parallelism in the stack, or TE's unfused fallback for the model's heads (resolve_attention).
OptionProblem cp_not_run(const SearchOptions& o, Knob knob, long long value) {
  return OptionProblem{
      knob, o.unfused_fallback ? OptionIssue::cp_unfused_fallback : OptionIssue::stack_lacks, value,
      0};
}

/// Context and expert parallel pins against the stack and the model (Megatron: 2 cp chunks per
/// sequence for causal load balancing; experts divisible by EP, arguments.py L1655-1658; MoE
/// with TP runs sequence parallel, moe_layer.py L636).
std::optional<OptionProblem> cp_ep_problem(const Model& model, const SearchOptions& o) {
  const Stack& stack = o.stack;
  if (o.cp && *o.cp > 1) {
    if (!stack.context_parallel()) return cp_not_run(o, Knob::cp, *o.cp);
    if (model.seq_len % (2LL * *o.cp) != 0) {  // 2 x 2^31 - 1 overflows int
      return OptionProblem{Knob::cp, OptionIssue::not_dividing_sequence, *o.cp, model.seq_len};
    }
  }
  if (!model.is_moe() && o.min_ep > 1) {
    return OptionProblem{Knob::min_ep, OptionIssue::no_experts, o.min_ep, 0};
  }
  if (model.is_moe() && o.min_ep > 1 && !stack.expert_parallel) {
    return OptionProblem{Knob::min_ep, OptionIssue::stack_lacks, o.min_ep, 0};
  }
  if (model.is_moe() && o.min_ep > model.moe.experts) {
    return OptionProblem{Knob::min_ep, OptionIssue::more_than_experts, o.min_ep, model.moe.experts};
  }
  if (model.is_moe() && o.min_ep > 1 && !(o.ep && *o.ep > 1)) {
    // The sizes the search tries (ep_candidates): powers of two dividing the experts; one must
    // lie in [min_ep, max_ep] (max_ep 0: the experts).
    const int experts = model.moe.experts;
    const int top = o.max_ep > 0 ? std::min(o.max_ep, experts) : experts;
    bool any = false;
    for (int ep = 2; ep <= top && experts % ep == 0 && !any; ep *= 2) any = ep >= o.min_ep;
    if (!any && top >= o.min_ep)
      return OptionProblem{Knob::min_ep, OptionIssue::no_ep_divides, o.min_ep, experts};
  }
  if (o.min_cp > 1 && !stack.context_parallel()) return cp_not_run(o, Knob::min_cp, o.min_cp);
  if (o.ep && *o.ep > 1) {
    if (!model.is_moe()) return OptionProblem{Knob::ep, OptionIssue::no_experts, *o.ep, 0};
    if (!stack.expert_parallel) return OptionProblem{Knob::ep, OptionIssue::stack_lacks, *o.ep, 0};
    if (model.moe.experts % *o.ep != 0) {
      return OptionProblem{Knob::ep, OptionIssue::not_dividing_experts, *o.ep, model.moe.experts};
    }
  }
  if (model.is_moe() && o.tp && *o.tp > 1 && o.sequence_parallel && !*o.sequence_parallel) {
    return OptionProblem{Knob::sequence_parallel, OptionIssue::moe_needs_sp, 0, *o.tp};
  }
  if (model.is_moe() && o.tp && *o.tp > 1 && !stack.sequence_parallel) {
    return OptionProblem{Knob::tp, OptionIssue::moe_needs_sp_stack, *o.tp, 0};
  }
  if (model.is_moe() && o.zero && *o.zero >= 3) {
    return OptionProblem{Knob::zero, OptionIssue::moe_zero3, *o.zero, 0};
  }
  // A stack whose only ZeRO stage is 3 leaves a MoE model nothing to plan.
  if (model.is_moe() && !o.zero && (stack.zero_stages & 0b0111U) == 0) {
    return OptionProblem{Knob::zero, OptionIssue::moe_stack_only_zero3, 3, 0};
  }
  // A pin below DP shards hybrid; one equal to DP is ZeRO-3 over all of DP, which MoE models
  // are not planned with either.
  if (model.is_moe() && o.dp_shard) {
    const bool all_of_dp = o.dp && *o.dp_shard == *o.dp;
    return OptionProblem{Knob::dp_shard,
                         all_of_dp ? OptionIssue::moe_zero3 : OptionIssue::moe_hybrid_shard,
                         *o.dp_shard, 0};
  }
  return std::nullopt;
}

/// The HSDP shard size against the stack, the ZeRO pin and the DP pin.
std::optional<OptionProblem> dp_shard_problem(const SearchOptions& o) {
  if (!o.dp_shard) return std::nullopt;
  if (auto problem = not_positive(Knob::dp_shard, o.dp_shard)) return problem;
  const long long shard = *o.dp_shard;
  if (shard < 2) return OptionProblem{Knob::dp_shard, OptionIssue::shard_below_two, shard, 0};
  if (o.dp && *o.dp % shard != 0) {
    return OptionProblem{Knob::dp_shard, OptionIssue::not_dividing_dp, shard, *o.dp};
  }
  // --dp-shard shards ZeRO-3 (or a stack's per-unit ZeRO-2) over N ranks: ZeRO 0/1 has no
  // sharded units, whether N is part of DP or all of it.
  if (o.zero && !o.stack.shards_per_unit(*o.zero)) {
    return OptionProblem{Knob::dp_shard, OptionIssue::needs_unit_sharding, shard, *o.zero};
  }
  // ZeRO free: some stage the stack runs (with the pinned PP) must shard per unit (a stack
  // file of ZeRO 0/1 only planned the pin as "DP = N" with nothing sharded).
  const int pp = o.pp.value_or(1);
  const auto runs_unit_sharding = [&o, pp](int zero) {
    return o.stack.shards_per_unit(zero) && o.stack.supports_zero(zero, pp);
  };
  if (!o.zero && !runs_unit_sharding(2) && !runs_unit_sharding(3)) {
    return OptionProblem{Knob::dp_shard, OptionIssue::no_unit_sharding, shard, pp};
  }
  if (o.dp && *o.dp == shard) return std::nullopt;  // all of DP: plain sharding
  if (!o.stack.hybrid_shard)
    return OptionProblem{Knob::dp_shard, OptionIssue::stack_lacks, shard, 0};
  if (o.zero && !o.stack.supports_hybrid_shard(*o.zero)) {
    return OptionProblem{Knob::dp_shard, OptionIssue::needs_unit_sharding, shard, *o.zero};
  }
  return std::nullopt;
}

/// Limits and pins that are wrong whatever the stack and the model.
std::optional<OptionProblem> range_problem(const SearchOptions& o) {
  for (const auto& [knob, pin] :
       {std::pair{Knob::tp, o.tp}, std::pair{Knob::pp, o.pp}, std::pair{Knob::dp, o.dp},
        std::pair{Knob::micro_batch, o.micro_batch}, std::pair{Knob::vp, o.vp},
        std::pair{Knob::recompute_layers, o.recompute_layers},
        std::pair{Knob::first_stage_layers, o.first_stage_layers},
        std::pair{Knob::last_stage_layers, o.last_stage_layers}}) {
    if (auto problem = not_positive(knob, pin)) return problem;
  }
  if (o.min_tp < 1) return OptionProblem{Knob::min_tp, OptionIssue::not_positive, o.min_tp, 0};
  if (o.max_tp < 0) return OptionProblem{Knob::max_tp, OptionIssue::not_positive, o.max_tp, 0};
  if (o.max_tp > 0 && o.min_tp > o.max_tp) {
    return OptionProblem{Knob::min_tp, OptionIssue::min_above_max, o.min_tp, o.max_tp};
  }
  if (o.zero && (*o.zero < 0 || *o.zero > 3)) {
    return OptionProblem{Knob::zero, OptionIssue::out_of_range, *o.zero, 0};
  }
  if (auto problem = cp_ep_range_problem(o)) return problem;
  return pin_conflict_problem(o);
}

/// The first of TP, PP, CP (VP with `with_vp`), --min-tp and --min-cp pinned or bounded above 1,
/// with its value: what a stack running DP alone refuses.
std::optional<std::pair<Knob, int>> split_pin_above_one(const SearchOptions& o, bool with_vp) {
  const std::pair<Knob, int> splits[] = {
      {Knob::tp, o.tp.value_or(1)}, {Knob::pp, o.pp.value_or(1)},
      {Knob::cp, o.cp.value_or(1)}, {Knob::vp, with_vp ? o.vp.value_or(1) : 1},
      {Knob::min_tp, o.min_tp},     {Knob::min_cp, o.min_cp}};
  for (const auto& split : splits) {
    if (split.second > 1) return split;
  }
  return std::nullopt;
}

/// Pins the stack cannot run.
std::optional<OptionProblem> stack_problem(const SearchOptions& o) {
  const Stack& stack = o.stack;
  if (o.zero && !stack.supports_zero(*o.zero, 1)) {
    return OptionProblem{Knob::zero, OptionIssue::stack_lacks, *o.zero, 0};
  }
  if (o.pp && *o.pp > 1 && !stack.pipelines()) {
    return OptionProblem{Knob::pp, OptionIssue::stack_lacks, *o.pp, 0};
  }
  if (o.zero && o.pp && *o.pp > 1 && !stack.supports_zero(*o.zero, *o.pp)) {
    return OptionProblem{Knob::zero, OptionIssue::stack_lacks_with_pp, *o.zero, *o.pp};
  }
  // ZeRO-0 is plain DDP over the whole job only (torchtitan): a TP, PP or CP pinned or bounded
  // above 1 (the knob named).
  if (o.zero && *o.zero == 0 && stack.zero0_one_dimensional) {
    if (const auto split = split_pin_above_one(o, false)) {
      return OptionProblem{split->first, OptionIssue::zero0_with_split, split->second, 0};
    }
  }
  if (o.recompute && !stack.supports(*o.recompute)) {
    return OptionProblem{Knob::recompute, OptionIssue::stack_lacks,
                         static_cast<long long>(*o.recompute), 0};
  }
  if (o.recompute_layers && o.recompute && *o.recompute != Recompute::full) {
    return OptionProblem{Knob::recompute_layers, OptionIssue::needs_full_recompute,
                         *o.recompute_layers, static_cast<long long>(*o.recompute)};
  }
  if (o.recompute_layers &&
      (stack.partial_recompute == PartialRecompute::none || !stack.supports(Recompute::full))) {
    return OptionProblem{Knob::recompute_layers, OptionIssue::stack_lacks, *o.recompute_layers, 0};
  }
  if (o.sequence_parallel && *o.sequence_parallel && !stack.sequence_parallel) {
    return OptionProblem{Knob::sequence_parallel, OptionIssue::stack_lacks, 1, 0};
  }
  if (o.sequence_parallel && !*o.sequence_parallel && o.tp && *o.tp > 1 &&
      stack.sequence_parallel_required) {
    return OptionProblem{Knob::sequence_parallel, OptionIssue::stack_needs_sp, 0, *o.tp};
  }
  if (o.vp && *o.vp > 1 && !stack.interleaved_pipeline) {
    return OptionProblem{Knob::vp, OptionIssue::stack_lacks, *o.vp, 0};
  }
  return dp_shard_problem(o);
}

/// A MoE model is planned with ZeRO 0-2; under a stack with no ZeRO-1 or 2 whose ZeRO-0 is
/// DDP over the whole job (torchtitan) that leaves data parallelism alone: a TP, PP or CP
/// pinned or bounded above 1 is named (--zero 3 is moe_zero3's).
std::optional<OptionProblem> moe_dp_alone_problem(const Model& model, const SearchOptions& o) {
  if (!moe_dp_alone(model, o.stack) || (o.zero && *o.zero != 0)) return std::nullopt;
  if (const auto split = split_pin_above_one(o, true)) {
    return OptionProblem{split->first, OptionIssue::moe_dp_alone, split->second, 0};
  }
  // Sequence parallelism splits over TP, which is 1 here.
  if (o.sequence_parallel && *o.sequence_parallel) {
    return OptionProblem{Knob::sequence_parallel, OptionIssue::moe_dp_alone, 1, 0};
  }
  return std::nullopt;
}

/// Pins the model cannot take, and what the model asks of the stack.
std::optional<OptionProblem> model_problem(const Model& model, const SearchOptions& o) {
  // Every TP the shape takes divides largest_tp (planner/splits.h); a --min-tp above it
  // leaves no TP at all (it was the generic "no configuration" line).
  const int largest = largest_tp(model);
  if (o.tp && largest % *o.tp != 0) {
    return OptionProblem{Knob::tp, OptionIssue::not_dividing_heads, *o.tp, 0};
  }
  if (!o.tp && o.min_tp > largest) {
    return OptionProblem{Knob::min_tp, OptionIssue::above_largest_tp, o.min_tp, largest};
  }
  if (o.pp && model.layers % *o.pp != 0 && !o.stack.uneven_stages) {
    return OptionProblem{Knob::pp, OptionIssue::not_dividing_layers, *o.pp, 0};
  }
  if (o.pp && *o.pp > model.layers) {
    return OptionProblem{Knob::pp, OptionIssue::more_than_layers, *o.pp, 0};
  }
  // Pinned or lighter-only ends: stage_ends_pin_problem checks their split.
  if (o.pp && o.stack.uneven_stages_ends_only && !o.first_stage_layers && o.lighter_ends != true) {
    if (!ends_only_writable(model, o, *o.pp, 1)) {
      return OptionProblem{Knob::pp, OptionIssue::uneven_middles, *o.pp, 0};
    }
    if (o.vp && !ends_only_writable(model, o, *o.pp, *o.vp)) {
      return OptionProblem{Knob::vp, OptionIssue::uneven_ends_over_chunk, *o.vp, *o.pp};
    }
  }
  if (o.zero && !o.stack.runs_fp8_params_at(*o.zero, model.training)) {
    return OptionProblem{Knob::zero, OptionIssue::fp8_params_zero0, *o.zero, 0};
  }
  if (o.zero && !o.stack.runs_optimizer_at(*o.zero, model.training)) {
    return OptionProblem{Knob::zero, OptionIssue::sgd_sharded, *o.zero, 0};
  }
  // FP8 parameters need a sharded optimizer, SGD the unsharded one: no ZeRO stage runs both.
  if (!o.zero && !o.stack.runs_fp8_params_at(0, model.training) &&
      !o.stack.runs_optimizer_at(1, model.training)) {
    return OptionProblem{Knob::fp8_params, OptionIssue::sgd_sharded, 1, 0};
  }
  // Not pinned: a stack whose only ZeRO stage (with the pinned PP) is 0 leaves nothing to plan.
  const unsigned stages = o.pp && *o.pp > 1 ? o.stack.zero_stages_with_pp : o.stack.zero_stages;
  if (!o.zero && !o.stack.runs_fp8_params_at(0, model.training) && (stages & ~1u) == 0) {
    return OptionProblem{Knob::fp8_params, OptionIssue::fp8_params_zero0, 1, 0};
  }
  if (model.training.dtype == Dtype::fp8 && !o.stack.supports(model.training.fp8.recipe)) {
    return OptionProblem{Knob::fp8_recipe, OptionIssue::stack_lacks,
                         static_cast<long long>(model.training.fp8.recipe), 0};
  }
  if (model.training.dtype == Dtype::fp8 && model.training.fp8.attention &&
      !o.stack.runs_fp8_attention()) {
    return OptionProblem{Knob::fp8_attention, OptionIssue::stack_lacks, 1, 0};
  }
  if (o.recompute && *o.recompute == Recompute::selective &&
      !selective_applies(o.stack.selective, model)) {
    return OptionProblem{Knob::recompute, OptionIssue::selective_needs_mla,
                         static_cast<long long>(Recompute::selective), 0};
  }
  // Recompute free, and the stack's only mode is a selective recompute with nothing to repeat
  // on this model: no configuration at all (the generic "no configuration" line blamed rules
  // that hold).
  if (!o.recompute &&
      o.stack.recompute_modes == (1u << static_cast<unsigned>(Recompute::selective)) &&
      !selective_applies(o.stack.selective, model)) {
    return OptionProblem{Knob::recompute, OptionIssue::only_selective_needs_mla,
                         static_cast<long long>(Recompute::selective), 0};
  }
  if (auto problem = cp_ep_problem(model, o)) return problem;
  if (model.training.global_batch < 1) {
    return OptionProblem{Knob::global_batch, OptionIssue::missing, 0, 0};
  }
  return std::nullopt;
}

/// A pinned or lighter split (`split`, of PP `pp`) the pinned VP or an ends-only stack cannot
/// take: the VP pin named where there is one, else the flag that set the ends (`ends`, its
/// value `ends_value`).
std::optional<OptionProblem> set_split_problem(const Model& model, const SearchOptions& o, int pp,
                                               const StageLayers& split, Knob ends,
                                               long long ends_value) {
  const int vp = o.vp.value_or(1);
  if (split.most() % vp != 0) {
    return OptionProblem{Knob::vp, OptionIssue::stage_ends_vp, vp, split.most()};
  }
  if (o.stack.uneven_stages_ends_only && !ends_only_split(model.layers, pp, vp, split)) {
    return o.vp ? OptionProblem{Knob::vp, OptionIssue::stage_ends_over_chunk, vp, pp}
                : OptionProblem{ends, OptionIssue::stage_ends_over_chunk, ends_value, pp};
  }
  return std::nullopt;
}

/// Pinned end stages (both given with PP: pin_conflict_problem) that the layers or the stack
/// refuse, and lighter ends pinned on where there are none.
std::optional<OptionProblem> stage_ends_pin_problem(const Model& model, const SearchOptions& o) {
  const Stack& stack = o.stack;
  if (o.first_stage_layers && o.last_stage_layers && o.pp) {
    const int first = *o.first_stage_layers;
    const int last = *o.last_stage_layers;
    const StageEndsProblem why =
        stage_ends_problem(model.layers, *o.pp, first, last, stack.runs_unequal_middles());
    if (why != StageEndsProblem::ok) {
      return OptionProblem{Knob::first_stage_layers, OptionIssue::stage_ends_invalid, first,
                           static_cast<long long>(why), last};
    }
    ParallelConfig pinned;
    pinned.pp = *o.pp;
    pinned.first_stage_layers = first;
    pinned.last_stage_layers = last;
    const StageLayers split = stage_layers(model.layers, pinned);
    if (!stack.stage_ends_pinned && sets_ends(model.layers, pinned)) {
      return OptionProblem{Knob::first_stage_layers, OptionIssue::stack_lacks, first, 0};
    }
    return set_split_problem(model, o, *o.pp, split, Knob::first_stage_layers, first);
  }
  if (o.lighter_ends && *o.lighter_ends) {
    if (!stack.stage_ends_pinned) {
      return OptionProblem{Knob::lighter_ends, OptionIssue::stack_lacks, 1, 0};
    }
    if (!o.pp) return std::nullopt;
    const std::vector<StageLayers> lighter = lighter_candidates(model, stack, *o.pp);
    if (lighter.empty()) {
      return OptionProblem{Knob::lighter_ends, OptionIssue::no_lighter_split, 1, *o.pp};
    }
    // Refused only where no candidate takes the other pins (the first one's reason said; a VP
    // that divides no candidate's largest stage names another candidate's count beside it).
    std::optional<OptionProblem> first_problem;
    for (const StageLayers& split : lighter) {
      auto problem = set_split_problem(model, o, *o.pp, split, Knob::lighter_ends, 1);
      if (!problem) return std::nullopt;
      if (!first_problem) {
        first_problem = problem;
      } else if (first_problem->issue == OptionIssue::stage_ends_vp &&
                 problem->issue == OptionIssue::stage_ends_vp && first_problem->other == 0 &&
                 problem->limit != first_problem->limit) {
        first_problem->other = problem->limit;
      }
    }
    return first_problem;
  }
  return std::nullopt;
}

}  // namespace

bool moe_dp_alone(const Model& model, const Stack& stack) {
  const bool zero_1_or_2 = (stack.zero_stages & 0b0110U) != 0;
  return model.is_moe() && stack.zero0_one_dimensional && !zero_1_or_2;
}

std::optional<OptionProblem> find_option_problem(const Model& model, const SearchOptions& options) {
  if (auto problem = range_problem(options)) return problem;
  // A MoE model refuses --dp-shard under any stack: said before the stack's own refusal,
  // whose fix (another stack) would be refused next.
  if (model.is_moe() && options.dp_shard) {
    if (auto problem = model_problem(model, options)) return problem;
  }
  if (auto problem = moe_dp_alone_problem(model, options)) return problem;
  if (auto problem = stack_problem(options)) return problem;
  if (auto problem = model_problem(model, options)) return problem;
  return stage_ends_pin_problem(model, options);
}

}  // namespace trident
