// plan --emit: the configuration, or a refusal with the nearest plan the release can run.
#include "cli/emit_report.h"

#include <fmt/format.h>

#include "cli/emit_text.h"
#include "cli/plan_checks.h"
#include "cli/report_text.h"
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
  return pins;
}

namespace {

/// The best-ranked plan of `plans` the release can run, as a sentence; empty when none.
std::string best_runnable(const Release& release, const std::vector<PlanResult>& plans,
                          const Cluster& cluster, const Model& model, SelectiveKind selective) {
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!export_plan(release, cluster, model, plans[i].config, selective, plans[i].estimate.cp_kind)
             .refusal) {
      return fmt::format(
          "; the best plan of this ranking it runs is plan {} ({}): --explain {} "
          "--emit {}",
          i + 1, split_summary(plans[i].config, "ZeRO-"), i + 1, release_id(release));
    }
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
  o.stack = stack;
  return o;
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
std::string refusal_message(const Release& release, const Refusal& r, const std::string& label,
                            const ParallelConfig& config, const Model& model, const Stack& stack) {
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
    message += stack_note(release, pinned(*r.nearest, shard_all, stack), model);
  } else if (const std::string change = refusal_change(r, release, stack); !change.empty()) {
    message += "; nearest it can run: " + change;
  }
  return message;
}

}  // namespace

std::string emit_plan(const Release& release, const std::vector<PlanResult>& plans,
                      std::size_t rank, const Cluster& cluster, const Model& model,
                      const Stack& stack) {
  const SelectiveKind selective = stack.selective;
  if (plans.empty()) throw PlanError("--emit: no plan fits to emit");
  if (rank > plans.size()) {
    throw PlanError(
        fmt::format("--explain {}: the ranking has {} plans that fit", rank, plans.size()));
  }
  const ParallelConfig& config = plans[rank - 1].config;
  const Export exported =
      export_plan(release, cluster, model, config, selective, plans[rank - 1].estimate.cp_kind);
  if (!exported.refusal) return exported.text;
  throw PlanError(refusal_message(release, *exported.refusal, fmt::format("plan {}", rank), config,
                                  model, stack) +
                  best_runnable(release, plans, cluster, model, selective));
}

std::string emit_option_plan(const Release& release, const PlanResult& plan,
                             const std::string& label, const Cluster& cluster, const Model& model,
                             const Stack& stack) {
  const Export exported =
      export_plan(release, cluster, model, plan.config, stack.selective, plan.estimate.cp_kind);
  if (!exported.refusal) return exported.text;
  throw PlanError(refusal_message(release, *exported.refusal, label, plan.config, model, stack));
}

}  // namespace trident::cli
