#pragma once
/// Formats a search result: table (default), JSON (docs/cli.md "JSON keys", with
/// docs/architecture.md's "Plan JSON" extras), CSV. No modelling here: every number comes from
/// the planner.
#include <string>
#include <vector>

#include "costmodel/model.h"
#include "planner/search.h"
#include "topology/cluster.h"

namespace trident::cli {

/// What the report says besides the plans.
struct ReportContext {
  const Cluster* cluster = nullptr;
  const Model* model = nullptr;
  std::vector<std::string> assumptions;  ///< first lines of the table: what was assumed
  std::vector<std::string> failures;     ///< --fail-link specs applied, described
  std::string calibration_source;        ///< file whose measurements were used; "" = defaults
  const Calibration* calibration = nullptr;
  double search_seconds = 0.0;
  std::string stack;       ///< the software stack's name (JSON "stack")
  std::string stack_file;  ///< the stack file it came from (JSON "stack_file"); empty: a preset
};

/// `plan` is tied with the ranking's leader: inside its band (tied_with_leader) and, like the
/// table's band line, on the same side of the tight verdict (a tight plan is ranked after the
/// plans that fit, not tied with them). The JSON's `tied` key.
[[nodiscard]] bool tied_in_ranking(const PlanResult& leader, const PlanResult& plan);
/// Plans 1..N (1-based count from the top) whose step time lies inside the leader's band.
[[nodiscard]] std::size_t tied_count(const std::vector<PlanResult>& plans);

[[nodiscard]] std::string format_table(const SearchResult& result, const ReportContext& context);
/// "searched N configurations (E cost-model evaluations, P placements) in S s; F fit in memory
/// (T of them tight)": the summary line's text, without its "# ".
[[nodiscard]] std::string search_summary(const SearchResult& result, const ReportContext& context);
/// Trailing CSV columns a caller adds (the what-if: which option each row is).
struct CsvTail {
  std::string header;              ///< ",option,gpus,slowdown"
  std::vector<std::string> cells;  ///< one per result.plans row, each starting with ','
  std::size_t first_rank = 1;      ///< the rank of result.plans[0]
};

[[nodiscard]] std::string format_csv(const SearchResult& result, const ReportContext& context,
                                     const CsvTail& tail = {});
/// `explain_text` is added under "explain" when not empty.
[[nodiscard]] std::string format_json(const SearchResult& result, const ReportContext& context,
                                      const std::string& explain_text = "");

/// Name of the traffic of a dimension as the JSON and table show it: "none" for a group of
/// one, "all-reduce", "reduce-scatter+all-gather" (sequence parallel TP; ZeRO DP), "send-recv".
[[nodiscard]] std::string tp_collective_name(const ParallelConfig& config);
[[nodiscard]] std::string pp_collective_name(const ParallelConfig& config);
/// ZeRO 0: "all-reduce"; ZeRO 1-3: the gradient collective (`reduce`, CommDetail::collective:
/// reduce-scatter, or all-reduce for a ZeRO-1 that all-reduces) + "all-gather".
[[nodiscard]] std::string dp_collective_name(const ParallelConfig& config, Collective reduce);
/// The experts' gradient reduction over their data-parallel group (Estimate::edp): ZeRO's
/// reduction + all-gather as DP's, "none" for a group of one.
[[nodiscard]] std::string expert_dp_collective_name(const ParallelConfig& config,
                                                    const CommDetail& edp);
/// " x r" where the bubble's slots take r < 1 of the slowest stage's time
/// (Estimate::bubble_fill_ratio, printed to three places), "" where they take all of it.
[[nodiscard]] std::string bubble_fill_text(const Estimate& estimate);
/// "none" (cp 1), "send-recv" (ring attention, p2p) or "all-to-all" (Ulysses, a2a).
[[nodiscard]] std::string cp_collective_name(const PlanResult& plan);
/// "none" (ep 1) or "all-to-all" (MoE dispatch and combine).
[[nodiscard]] std::string ep_collective_name(const ParallelConfig& config);
/// What hides the MoE all-to-alls: "combined_1f1b" (another micro-batch's compute),
/// "shared_experts" (the shared experts on their side stream) or "none".
[[nodiscard]] std::string ep_overlap_name(const Estimate& estimate);
/// The assumption line on how context and expert parallelism are searched ("" when neither
/// can be: a short sequence under a dense model without pins).
[[nodiscard]] std::string describe_cp_ep_search(const Model& model, const SearchOptions& options);
/// "nvlink" | "pcie" | "network", or "none" for a group of one GPU.
[[nodiscard]] std::string link_name(const GroupLink& link);

/// One GEMM shape a GPU runs per layer (after the TP split), for validate.
struct GemmCall {
  std::string name;
  long long m = 0;
  long long n = 0;
  long long k = 0;
  double calls_per_step = 0.0;  ///< forward + the two backward GEMMs (+1 with full recompute)
  Dtype dtype = Dtype::bf16;    ///< precision_of(training): linear_gemm, output_gemm for logits
  /// A linear layer's GEMM (Transformer Engine's module: priced by linear_gemm_time_s, at the
  /// recipe's kernel rate); false for the output layer's logits.
  bool linear = true;
};
[[nodiscard]] std::vector<GemmCall> gemm_calls(const Model& model, const ParallelConfig& config);

}  // namespace trident::cli
