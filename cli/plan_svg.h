#pragma once
/// `plan --svg FILE` / `--svg-plan N` / `--report DIR`: one self-contained SVG with three
/// panels, all drawn from the planner's and the cost model's own results:
///   1. rank layout: servers as boxes, GPUs coloured by pipeline stage, TP groups outlined,
///      DP replicas labelled, the link each dimension rides named; failures marked. Large
///      clusters: a few servers in full, the rest summarised with counts;
///   2. the pipeline schedule of one step (costmodel/pipeline.h schedule_1f1b, the schedule
///      the cost model's bubble formula describes), every forward and backward block;
///   3. where the step time and the memory go, top plans side by side (under --fail-link:
///      the healthy baseline against each option).
/// Elements tests count: rect.gpu (one per GPU drawn, data-gpu/-stage/-tp/-dp), .failed
/// (one marker per failed part drawn), g#gantt-step rect.fwd / rect.bwd (2*m*pp*v),
/// rect.stage (one lane per stage), g#breakdown g.bar (one per plan compared).
#include <cstddef>
#include <string>
#include <vector>

#include "costmodel/model.h"
#include "planner/search.h"
#include "planner/whatif.h"
#include "topology/cluster.h"

namespace CLI {
class App;
}

namespace trident::cli {

/// The picture flags of `plan`, as parsed.
struct PictureFlags {
  std::string svg;              ///< --svg FILE
  std::size_t svg_plan = 1;     ///< --svg-plan N (1-based rank of the drawn plan)
  bool svg_plan_given = false;  ///< --svg-plan was on the command line
  std::string report;           ///< --report DIR
  [[nodiscard]] bool wanted() const { return !svg.empty() || !report.empty(); }
};

void add_picture_flags(CLI::App& sub, PictureFlags& flags);

/// What the pictures draw.
struct PictureInput {
  const Cluster* cluster = nullptr;  ///< the cluster as planned (failures applied)
  const Model* model = nullptr;
  std::vector<PlanResult> plans;    ///< compared in panel 3, in order
  std::vector<std::string> labels;  ///< one per plan: "#1", "healthy", "keep"...
  std::size_t drawn = 0;            ///< index into plans of the plan in panels 1 and 2
  /// Plan whose rank layout panel 1 shows (rank r on GPU r); the drawn plan when not failing,
  /// the healthy baseline under --fail-link (where the failure lands in the running job).
  const PlanResult* layout_plan = nullptr;
  std::string layout_note;            ///< a line under panel 1's title
  std::vector<std::string> failures;  ///< specs with descriptions
  std::vector<GroupHit> hits;         ///< groups of the layout plan the failures reach
};

/// Panel 3 compares at most this many plans.
inline constexpr std::size_t kPlansCompared = 4;

/// The input for a plain search: plan `svg_plan` drawn, the top plans compared. Throws
/// PlanError "--svg-plan N: only K plans fit" when N is past the ranking.
[[nodiscard]] PictureInput pictures_of_search(const Cluster& cluster, const Model& model,
                                              const SearchResult& result, std::size_t svg_plan);

/// The input under --fail-link: option `svg_plan` (1 = the recommended one) drawn in panel 2,
/// the healthy baseline's layout with the failures in panel 1, baseline and options compared.
[[nodiscard]] PictureInput pictures_of_what_if(const WhatIf& what_if, const Model& model,
                                               std::size_t svg_plan);

/// The whole SVG document.
[[nodiscard]] std::string plan_svg(const PictureInput& input);

}  // namespace trident::cli
