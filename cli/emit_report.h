#pragma once
/// `plan --emit NAME[@VERSION]`: the chosen plan as the release's configuration, or the
/// one-line refusal that names the nearest plan the release can run.
#include <string>
#include <vector>

#include "planner/export.h"
#include "planner/search.h"

namespace trident::cli {

/// The search that ranked the plans: what --emit checks its suggestions against.
struct EmitSearch {
  const SearchOptions& options;           ///< its pins, bounds (--min-tp ...) and stack
  const Calibration* measured = nullptr;  ///< its calibration, if any
};

/// Plan `rank` (1-based) of `plans` as `release`'s configuration. Throws PlanError (exit 2)
/// "--emit ID: plan N (SUMMARY) cannot run there: REASON; nearest it can run: PINS; ..."
/// when the release cannot run it. The nearest plan is the mechanical fix of the split (TP
/// folded into DP, interleaving off, ...); where it breaks a bound of the search or does not
/// fit in memory the message says so, and it names the best plan of the whole search (every
/// plan that fits, under the same pins and bounds) the release runs, or that none does. When
/// the stack refuses the nearest plan's pins, the message says why and which built-in stack
/// runs as the release does.
[[nodiscard]] std::string emit_plan(const Release& release, const std::vector<PlanResult>& plans,
                                    std::size_t rank, const Cluster& cluster, const Model& model,
                                    const EmitSearch& search);

/// The plan one option of a failure report runs (`label`: "option 2 (cordon-server)"), as
/// `release`'s configuration on `cluster`; the refusal as emit_plan's, naming the option (its
/// nearest plan checked on `cluster`; no whole-search fallback).
[[nodiscard]] std::string emit_option_plan(const Release& release, const PlanResult& plan,
                                           const std::string& label, const Cluster& cluster,
                                           const Model& model, const EmitSearch& search);

/// "--tp 1 --pp 8 --dp 64 --micro-batch 1 --vp 1 --recompute full --zero 1
/// --sequence-parallel off": the pins that make `plan` evaluate exactly this config.
[[nodiscard]] std::string pins_of(const ParallelConfig& config);

}  // namespace trident::cli
