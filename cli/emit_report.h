#pragma once
/// `plan --emit NAME[@VERSION]`: the chosen plan as the release's configuration, or the
/// one-line refusal that names the nearest plan the release can run.
#include <string>
#include <vector>

#include "planner/export.h"
#include "planner/search.h"

namespace trident::cli {

/// Plan `rank` (1-based) of `plans` as `release`'s configuration. Throws PlanError (exit 2)
/// "--emit ID: plan N (SUMMARY) cannot run there: REASON; nearest it can run: PINS; ..."
/// when the release cannot run it, naming also the best-ranked plan of `plans` it can run.
/// `stack` is the plan's: when it refuses the nearest plan's pins, the message says why and
/// which built-in stack runs as the release does.
[[nodiscard]] std::string emit_plan(const Release& release, const std::vector<PlanResult>& plans,
                                    std::size_t rank, const Cluster& cluster, const Model& model,
                                    const Stack& stack);

/// The plan one option of a failure report runs (`label`: "option 2 (cordon-server)"), as
/// `release`'s configuration on `cluster`; the refusal as emit_plan's, naming the option.
[[nodiscard]] std::string emit_option_plan(const Release& release, const PlanResult& plan,
                                           const std::string& label, const Cluster& cluster,
                                           const Model& model, const Stack& stack);

/// "--tp 1 --pp 8 --dp 64 --micro-batch 1 --vp 1 --recompute full --zero 1
/// --sequence-parallel off": the pins that make `plan` evaluate exactly this config.
[[nodiscard]] std::string pins_of(const ParallelConfig& config);

}  // namespace trident::cli
