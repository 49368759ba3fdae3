#pragma once
/// `plan --report DIR`: DIR/index.html, one self-contained page (inline CSS, the SVG of
/// cli/plan_svg.h inline, the ranked table, the --explain text) that opens from disk with no
/// server. And the texts of --svg and --report for the plan command, handed to the run's
/// outputs (cli/output_file.h), which write them with the plan's other outputs, all or none.
#include <string>
#include <vector>

#include "cli/output_file.h"
#include "cli/plan_report.h"
#include "cli/plan_svg.h"
#include "planner/search.h"

namespace trident::cli {

/// The page. `table` is the plan table (or the what-if table) as the terminal shows it.
[[nodiscard]] std::string html_report(const std::string& title,
                                      const std::vector<std::string>& assumptions,
                                      const std::string& table, const std::string& explain,
                                      const std::string& svg);

/// Declares --svg FILE and --report DIR (DIR/index.html) as outputs of the run.
void declare_picture_outputs(const PictureFlags& flags, RunOutputs& files);

/// --svg / --report after a plain search: their texts set in `files`. Throws PlanError for a
/// --svg-plan past the ranking.
void write_search_pictures(const PictureFlags& flags, const SearchResult& result,
                           const ReportContext& context, const Calibration* calibration,
                           const EstimateOptions& options, RunOutputs& files);

/// --svg / --report under --fail-link: runs the what-if as the report does and draws it.
void write_what_if_pictures(const PictureFlags& flags, const WhatIf& w, const Model& model,
                            const SearchOptions& options, const Calibration* calibration,
                            ReportContext context, RunOutputs& files);

}  // namespace trident::cli
