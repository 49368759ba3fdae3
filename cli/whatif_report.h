#pragma once
/// `plan --fail-link`: runs the failure what-if (planner/whatif.h) and formats it. Table: the
/// healthy baseline, the groups the failures reach, every option with its split, step time
/// and slowdown, and the recommendation. JSON: the plan document of the options' plans
/// (recommended first) plus "failures" (the specs), "baseline" (the healthy best plan, same
/// keys as a plan) and "impact" ({"slowdown", "step_time_s_before", "step_time_s_after",
/// "groups_hit", "options", "recommended", "reason"}). CSV: the options' plans.
#include <string>
#include <vector>

#include "cli/plan_report.h"
#include "planner/search.h"
#include "planner/whatif.h"

namespace trident::cli {

/// Parses and applies `specs` to `healthy`, runs the what-if and formats it as `format`
/// (table|json|csv). `context` carries the model, assumptions and calibration of the run.
/// Parses the --fail-link specs and runs the what-if once, checked: every number finite and
/// something left to run (InputError otherwise). The report and the pictures both read it.
[[nodiscard]] WhatIf run_what_if(const std::vector<std::string>& specs, const Cluster& healthy,
                                 const Model& model, const SearchOptions& options,
                                 const Calibration* calibration);

/// The what-if as the table, JSON or CSV of `format`.
[[nodiscard]] std::string what_if_report(const WhatIf& w, const Model& model, ReportContext context,
                                         const std::string& format);

[[nodiscard]] std::string format_what_if_table(const WhatIf& w, const ReportContext& context);
[[nodiscard]] std::string format_what_if_json(const WhatIf& w, const ReportContext& context);

}  // namespace trident::cli
