#pragma once
/// `plan --explain [N]`: the case for one plan, written for a person who must defend it:
/// the three numbers, each dimension's traffic and link, the bubble, what TP across two
/// servers would cost, and the memory on the peak GPU.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/model.h"
#include "planner/search.h"
#include "topology/cluster.h"

namespace trident::cli {

/// The collectives a dimension's calls run and the group each rides: its own, the all-gather
/// beside a reduction (a reduce-scatter call's other half, ZeRO's weight gather, sharded data
/// parallel's per-unit gathers, the pipeline's TP gathers), HSDP's replica all-reduce.
[[nodiscard]] std::vector<std::pair<Collective, const GroupLink*>> collectives_run(
    const CommDetail& comm);

/// How many of `calibration`'s collective fits price some call of `e` (each counted once).
[[nodiscard]] std::size_t collective_fits_used(const Estimate& e, const Calibration& calibration);

/// `rank` is the plan's 1-based place in the ranking. `options` as the search used them
/// (reserve and stack).
[[nodiscard]] std::string explain_plan(const Cluster& cluster, const Model& model,
                                       const PlanResult& plan, std::size_t rank,
                                       const Calibration* calibration,
                                       const EstimateOptions& options);

}  // namespace trident::cli
