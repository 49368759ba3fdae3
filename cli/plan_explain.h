#pragma once
/// `plan --explain [N]`: the case for one plan, written for a person who must defend it:
/// the three numbers, each dimension's traffic and link, the bubble, what TP across two
/// servers would cost, and the memory on the peak GPU.
#include <string>

#include "costmodel/calibration.h"
#include "costmodel/model.h"
#include "planner/search.h"
#include "topology/cluster.h"

namespace trident::cli {

/// `rank` is the plan's 1-based place in the ranking. `options` as the search used them
/// (reserve and stack).
[[nodiscard]] std::string explain_plan(const Cluster& cluster, const Model& model,
                                       const PlanResult& plan, std::size_t rank,
                                       const Calibration* calibration,
                                       const EstimateOptions& options);

}  // namespace trident::cli
