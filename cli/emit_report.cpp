// plan --emit: the configuration, or a refusal with the nearest plan the release can run.
#include "cli/emit_report.h"

#include <fmt/format.h>

#include "cli/emit_text.h"
#include "cli/option_text.h"
#include "cli/plan_checks.h"
#include "cli/report_text.h"
#include "costmodel/pipeline.h"
#include "planner/option_check.h"
#include "topology/errors.h"

namespace trident::cli {

std::string pins_of(const ParallelConfig& c) {
  std::string pins = fmt::format(
      "--tp {} --pp {} --dp {} --micro-batch {} --vp {} --recompute {} --zero {} "
      "--sequence-parallel {}",
      c.tp, c.pp, c.dp, c.micro_batch, c.virtual_stages, to_string(c.recompute), c.zero,
      c.sequence_parallel ? "on" : "off");
  if (c.recompute == Recompute::full && c.recompute_layers > 0) {
    pins += fmt::format(" --recompute-layers {}", c.recompute_layers);
  }
  if (c.cp > 1) pins += fmt::format(" --cp {}", c.cp);
  if (c.hybrid_shard()) pins += fmt::format(" --dp-shard {}", c.dp_shard);
  if (c.ep > 1) pins += fmt::format(" --ep {}", c.ep);
  if (c.pinned_stage_ends()) {
    pins += fmt::format(" --first-stage-layers {} --last-stage-layers {}", c.first_stage_layers,
                        c.last_stage_layers);
  }
  return pins;
}

namespace {

/// Plans the whole-search fallback looks through: a bound on its time and memory (10,000 kept
/// plans of a 4,096-GPU search take about a second; the seed example has 5,962 plans).
constexpr std::size_t kEmitSearchKeep = 10000;

/// A priced plan as `release` writes it: the stack's selective recompute and overlaps, the
/// estimate's CP kind, userbuffers and attention kernel.
Export export_priced(const Release& release, const PlanResult& plan, const Cluster& cluster,
                     const Model& model, const Stack& stack) {
  StackSwitches switches =
      stack_switches(stack, plan.estimate.tp_userbuffers, model.training.dtype, plan.config);
  switches.attention = plan.estimate.attention;  // Transformer Engine's fallback, as priced
  switches.te_unfused_attention =
      plan.estimate.attention == AttentionKernel::unfused &&
      (stack.attention_is_fallback || plan.estimate.attention != stack.attention ||
       stack.unfused_softmax == UnfusedSoftmax::transformer_engine);
  return export_plan(release, cluster, model, plan.config, stack.selective, plan.estimate.cp_kind,
                     switches, plan.placement.order);
}

bool runs_there(const Release& release, const PlanResult& plan, const Cluster& cluster,
                const Model& model, const Stack& stack) {
  return !export_priced(release, plan, cluster, model, stack).refusal;
}

/// The best plan the release can run, as a sentence: of the shown ranking (its number, for
/// --explain), else of the whole search under the same pins and bounds, else that none is.
/// `splits_help`: whether another split might run there (the refusal named a nearest plan);
/// a refusal of the model (MoE, no flavor) or of the release skips the whole search.
std::string best_runnable(const Release& release, const std::vector<PlanResult>& plans,
                          const Cluster& cluster, const Model& model, const EmitSearch& search,
                          bool splits_help) {
  const Stack& stack = search.options.stack;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (runs_there(release, plans[i], cluster, model, stack)) {
      return fmt::format(
          "; the best plan of this ranking it runs is plan {} ({}): --explain {} "
          "--emit {}",
          i + 1, split_summary(plans[i].config, "ZeRO-"), i + 1, release_id(release));
    }
  }
  if (!splits_help) return "";  // the model or the release refuses: no split would run
  SearchOptions every = search.options;
  every.keep = kEmitSearchKeep;
  every.show_infeasible = false;
  const SearchResult all = trident::search(cluster, model, every, search.measured);
  for (std::size_t i = plans.size(); i < all.plans.size(); ++i) {
    if (runs_there(release, all.plans[i], cluster, model, stack)) {
      return fmt::format(
          "; the best plan of the search it runs is plan {} ({}, {:.3f} s a step): --top {} "
          "--explain {} --emit {}",
          i + 1, split_summary(all.plans[i].config, "ZeRO-"), all.plans[i].estimate.time.step_s,
          i + 1, i + 1, release_id(release));
    }
  }
  if (all.plans.size() == kEmitSearchKeep) {
    return fmt::format(
        "; none of the search's best {} plans runs there (pin the knobs it lacks to search "
        "further)",
        kEmitSearchKeep);
  }
  return "; no plan of the search that fits runs there";
}

/// How the nearest plan `c` breaks a pinned --recompute-layers `pin`, in words; empty when it
/// keeps it. A pin of at least a chunk's layers is plain full recompute (the search stores it
/// so), which full recompute of every layer keeps.
std::string broken_recompute_layers(const ParallelConfig& c, int pin, const Model& model) {
  if (c.recompute != Recompute::full) {
    return fmt::format(", but it drops the pinned --recompute-layers {} (recompute {})", pin,
                       to_string(c.recompute));
  }
  if (pin >= model_chunk_layers(model, c)) return "";
  if (c.recompute_layers == 0) {
    return fmt::format(
        ", but it drops the pinned --recompute-layers {} (recompute full of every layer)", pin);
  }
  if (c.recompute_layers != pin) {
    return fmt::format(", but it changes the pinned --recompute-layers {} to {}", pin,
                       c.recompute_layers);
  }
  return "";
}

/// The first of the user's pins and bounds the nearest plan `c` breaks, in words; empty when
/// it keeps them all.
std::string broken_pin(const ParallelConfig& c, const SearchOptions& o, const Model& model) {
  const std::pair<const char*, int> pins[] = {{"--tp", c.tp},
                                              {"--pp", c.pp},
                                              {"--dp", c.dp},
                                              {"--micro-batch", c.micro_batch},
                                              {"--vp", c.virtual_stages},
                                              {"--zero", c.zero},
                                              {"--cp", c.cp},
                                              {"--ep", c.ep}};
  const std::optional<int> pinned[] = {o.tp, o.pp, o.dp, o.micro_batch, o.vp, o.zero, o.cp, o.ep};
  for (std::size_t i = 0; i < std::size(pins); ++i) {
    if (pinned[i] && *pinned[i] != pins[i].second) {
      return fmt::format(", but it changes the pinned {} {} to {}", pins[i].first, *pinned[i],
                         pins[i].second);
    }
  }
  if (o.sequence_parallel && *o.sequence_parallel != c.sequence_parallel) {
    return fmt::format(", but it changes the pinned --sequence-parallel {} to {}",
                       *o.sequence_parallel ? "on" : "off", c.sequence_parallel ? "on" : "off");
  }
  if (o.recompute && *o.recompute != c.recompute) {
    return fmt::format(", but it changes the pinned --recompute {} to {}", to_string(*o.recompute),
                       to_string(c.recompute));
  }
  if (o.recompute_layers) {
    if (std::string broken = broken_recompute_layers(c, *o.recompute_layers, model);
        !broken.empty()) {
      return broken;
    }
  }
  const std::tuple<Knob, const char*, const char*, int, int, int> bounds[] = {
      {Knob::tp, "TP", "tp", c.tp, o.min_tp, o.max_tp},
      {Knob::cp, "CP", "cp", c.cp, o.min_cp, o.max_cp},
      {Knob::ep, "EP", "ep", c.ep, o.min_ep, o.max_ep}};
  for (const auto& [knob, name, flag, value, least, most] : bounds) {
    if (const auto p = pin_limit_problem(knob, value, least, most)) {
      const bool below = p->issue == OptionIssue::below_min;
      return fmt::format(", but its {} {} is {} --{}-{} {}", name, value, below ? "below" : "above",
                         below ? "min" : "max", flag, p->limit);
    }
  }
  return "";
}

/// Why the search would not give the nearest plan `c`: a pin or bound it breaks, no split that
/// takes its pins, or that it does not fit in memory; empty when a search pinned to it plans
/// it, or when the stack refuses its pins (stack_note says that).
/// The best plan of one search of `pins` alone, on the search's memory reserve; nullopt where
/// none fits. Throws NoSplitError where no split takes the pins.
std::optional<PlanResult> best_pinned(SearchOptions pins, const Cluster& cluster,
                                      const Model& model, const EmitSearch& search) {
  pins.reserve_gib = search.options.reserve_gib;
  pins.keep = 1;
  pins.show_infeasible = false;
  const SearchResult one = trident::search(cluster, model, pins, search.measured);
  if (one.plans.empty()) return std::nullopt;
  return one.plans.front();
}

std::string nearest_problem(const ParallelConfig& c, const SearchOptions& pins,
                            const Cluster& cluster, const Model& model, const EmitSearch& search) {
  if (std::string broken = broken_pin(c, search.options, model); !broken.empty()) return broken;
  if (find_option_problem(model, pins)) return "";
  try {
    if (!best_pinned(pins, cluster, model, search)) return ", but it does not fit in GPU memory";
  } catch (const NoSplitError&) {
    return ", but no split of the model and batch takes those pins";
  }
  return "";
}

/// The search options that pin `c` as pins_of() and refusal_message() write it.
SearchOptions pinned(const ParallelConfig& c, bool shard_all_of_dp, const Stack& stack) {
  SearchOptions o;
  o.tp = c.tp;
  o.pp = c.pp;
  o.dp = c.dp;
  o.micro_batch = c.micro_batch;
  o.vp = c.virtual_stages;
  o.recompute = c.recompute;
  if (c.recompute == Recompute::full && c.recompute_layers > 0)
    o.recompute_layers = c.recompute_layers;
  o.zero = c.zero;
  o.sequence_parallel = c.sequence_parallel;
  if (c.cp > 1) o.cp = c.cp;
  if (c.ep > 1) o.ep = c.ep;
  if (c.hybrid_shard()) o.dp_shard = c.dp_shard;
  if (shard_all_of_dp) o.dp_shard = c.dp;
  if (c.pinned_stage_ends()) {
    o.first_stage_layers = c.first_stage_layers;
    o.last_stage_layers = c.last_stage_layers;
  } else {
    o.lighter_ends = false;
  }
  o.stack = stack;
  return o;
}

/// A plan refused for its tp-pp-dp placement: the same split placed tp-dp-pp, priced (its pins,
/// its EP too, the order forced), as a sentence; where it does not fit, that; empty where the
/// release refuses that placement too or no split takes the pins. (The search keeps each split
/// in its faster order only, so its other plans need not hold the split placed tp-dp-pp.)
std::string same_split_tp_dp_pp(const Release& release, const ParallelConfig& c,
                                const Cluster& cluster, const Model& model,
                                const EmitSearch& search) {
  SearchOptions pins = pinned(c, false, search.options.stack);
  if (model.is_moe()) pins.ep = c.ep;  // pinned() leaves EP 1 to the search, as pins_of writes it
  pins.stack.tp_pp_dp_order = false;
  std::optional<PlanResult> plan;
  try {
    plan = best_pinned(pins, cluster, model, search);
  } catch (const NoSplitError&) {
    return "";
  }
  if (!plan) return "; placed tp-dp-pp the same split does not fit";
  if (!runs_there(release, *plan, cluster, model, pins.stack)) return "";
  return fmt::format(
      "; placed tp-dp-pp the same split runs there at {:.3f} s a step (--stack {} ranks every "
      "split so)",
      plan->estimate.time.step_s, release.stack);
}

/// " (--zero 1: stack torchtitan does not run ZeRO-1; plan it with --stack megatron-core)" when
/// the plan's own stack refuses the nearest plan's pins; empty when it takes them.
std::string stack_note(const Release& release, const SearchOptions& nearest, const Model& model) {
  const auto problem = find_option_problem(model, nearest);
  if (!problem) return "";
  std::string note = " (" + describe(*problem, model, nearest.stack);
  SearchOptions release_stack = nearest;
  release_stack.stack = stack_preset(release.stack);
  if (release_stack.stack.name != nearest.stack.name &&
      !find_option_problem(model, release_stack)) {
    note += fmt::format("; plan it with --stack {}", release.stack);
  }
  return note + ")";
}

/// "--emit ID: LABEL (SUMMARY) cannot run there: REASON; nearest ... it can run: ...".
/// The nearest plan is checked against the search's pins, bounds and memory on `cluster`.
std::string refusal_message(const Release& release, const Refusal& r, const std::string& label,
                            const ParallelConfig& config, const Cluster& cluster,
                            const Model& model, const EmitSearch& search) {
  const Stack& stack = search.options.stack;
  std::string message =
      fmt::format("--emit {}: {} ({}) cannot run there: {}", release_id(release), label,
                  split_summary(config, "ZeRO-"), refusal_reason(r.reason, release, model));
  if (r.nearest) {
    message += "; nearest plan it can run: " + pins_of(*r.nearest);
    // Sharding over all of DP, pinned: a stack with hybrid sharding would try HSDP again.
    // Only while the nearest plan still shards per unit (ZeRO 2 or 3: HSDP ran at that ZeRO):
    // a further fix of the target (Megatron's ZeRO-1 under PP) leaves nothing to shard, and
    // --dp-shard with ZeRO 0/1 is refused.
    const bool shard_all = r.reason.kind == RefusalKind::hybrid_shard && r.nearest->zero >= 2;
    if (shard_all) message += fmt::format(" --dp-shard {}", r.nearest->dp);
    const SearchOptions pins = pinned(*r.nearest, shard_all, stack);
    message += stack_note(release, pins, model);
    message += nearest_problem(*r.nearest, pins, cluster, model, search);
  } else if (const std::string change = refusal_change(r, release, stack); !change.empty()) {
    // The fix of the first obstacle ran into another with no fix of a knob (CP 2 fixed by CP 1,
    // then a geglu FFN): both said, so the change offered answers the reason given.
    if (!r.no_dividing_split && r.change.kind != r.reason.kind) {
      message += "; with that changed, " + refusal_reason(r.change, release, model);
    }
    message += "; nearest it can run: " + change;
  }
  return message;
}

}  // namespace

std::string emit_plan(const Release& release, const std::vector<PlanResult>& plans,
                      std::size_t rank, const Cluster& cluster, const Model& model,
                      const EmitSearch& search) {
  if (plans.empty()) throw PlanError("--emit: no plan fits to emit");
  if (rank > plans.size()) {
    throw PlanError(
        fmt::format("--explain {}: the ranking has {} plans that fit", rank, plans.size()));
  }
  const ParallelConfig& config = plans[rank - 1].config;
  const Export exported =
      export_priced(release, plans[rank - 1], cluster, model, search.options.stack);
  if (!exported.refusal) return exported.text;
  // Another split may run where no knob fixes this one: one whose stages divide the layers as
  // the release writes them. A tp-pp-dp placement: the same split placed tp-dp-pp.
  const RefusalKind kind = exported.refusal->reason.kind;
  if (kind == RefusalKind::rank_order) {
    throw PlanError(refusal_message(release, *exported.refusal, fmt::format("plan {}", rank),
                                    config, cluster, model, search) +
                    same_split_tp_dp_pp(release, config, cluster, model, search));
  }
  const bool splits_help =
      exported.refusal->nearest.has_value() || kind == RefusalKind::uneven_stages;
  throw PlanError(refusal_message(release, *exported.refusal, fmt::format("plan {}", rank), config,
                                  cluster, model, search) +
                  best_runnable(release, plans, cluster, model, search, splits_help));
}

std::string emit_option_plan(const Release& release, const PlanResult& plan,
                             const std::string& label, const Cluster& cluster, const Model& model,
                             const EmitSearch& search) {
  const Export exported = export_priced(release, plan, cluster, model, search.options.stack);
  if (!exported.refusal) return exported.text;
  throw PlanError(
      refusal_message(release, *exported.refusal, label, plan.config, cluster, model, search));
}

}  // namespace trident::cli
