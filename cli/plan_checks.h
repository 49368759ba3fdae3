#pragma once
/// Checks `plan` makes on what the planner returns before anything is reported: the answer's
/// numbers are finite, and failures leave something to plan on.
#include <string>
#include <vector>

#include "planner/option_check.h"
#include "planner/search.h"
#include "planner/whatif.h"
#include "topology/cluster.h"

namespace trident::cli {

/// A model dtype the GPU has no peak for (dtype_instead), or under `--dtype DTYPE` (`given`,
/// "" when not) FP8 under a stack without the model's FP8 recipe: InputError naming --dtype,
/// before the checks that name the model file's keys the user did not write.
void check_dtype_flag(const std::string& given, const Model& model, const Gpu& gpu,
                      const Stack& stack);

/// Throws InputError "--tp 8 x --pp 8 x --dp 2 x --cp 2 = 256 GPUs; the cluster has 512" when
/// TP, PP, DP and CP are all pinned and take fewer GPUs than the cluster has; a --min-tp,
/// --min-cp or --min-ep above the cluster's GPUs. Call after check_pinned_within_cluster (which
/// refuses pins that take more). Healthy clusters only: under --fail-link the re-plans decide.
void check_pinned_gpus(const Cluster& cluster, const SearchOptions& options);

/// Throws InputError "--tp 1048576 x --cp 4096 = 4294967296 GPUs; the cluster has 64" when the
/// pinned sizes among TP, PP, DP and CP already take more GPUs than the cluster has: no split,
/// healthy or re-planned under failures, can run them (their product overflowed an int in the
/// split walk). Every cluster, --fail-link or not.
void check_pinned_within_cluster(const Cluster& cluster, const SearchOptions& options);

/// Throws PlanError "--fail-link: every GPU of the cluster has failed; nothing is left to run
/// on" when the failures leave no live GPU (a dead server of a one-server cluster).
void check_gpus_left(const Cluster& cluster, const std::vector<std::string>& specs);

/// Throws PlanError "plan 1 (tp 8, pp 1, dp 1): step_s is not a finite number (inf); an input
/// rate or size is too extreme to price" when a reported time, rate, FLOP count or memory is
/// NaN or infinite. Every plan shown (feasible and infeasible) is checked.
void check_finite(const SearchResult& result);
/// Throws PlanError "--fail-link: no plan can run under the failures: WHY" when no option of
/// the what-if is available (the answer would otherwise be a report with nothing to run).
void check_something_runs(const WhatIf& what_if);
/// The same for every plan a what-if reports (the baseline and each available option).
void check_finite(const WhatIf& what_if);

}  // namespace trident::cli
