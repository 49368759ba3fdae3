#pragma once
/// `plan --report DIR`: DIR/index.html, one self-contained page (inline CSS, the SVG of
/// cli/plan_svg.h inline, the ranked table, the --explain text) that opens from disk with no
/// server. And the writing of --svg and --report for the plan command: every text is built
/// before anything is written, each file is written atomically (temporary file + rename).
#include <string>
#include <vector>

#include "cli/plan_report.h"
#include "cli/plan_svg.h"
#include "planner/search.h"

namespace trident::cli {

/// The page. `table` is the plan table (or the what-if table) as the terminal shows it.
[[nodiscard]] std::string html_report(const std::string& title,
                                      const std::vector<std::string>& assumptions,
                                      const std::string& table, const std::string& explain,
                                      const std::string& svg);

/// --svg / --report after a plain search. Throws PlanError for a --svg-plan past the ranking,
/// InputError "--svg 'FILE': cannot write: REASON" (or --report 'DIR') when writing fails.
void write_search_pictures(const PictureFlags& flags, const SearchResult& result,
                           const ReportContext& context, const Calibration* calibration,
                           const EstimateOptions& options);

/// --svg / --report under --fail-link: runs the what-if as the report does and draws it.
void write_what_if_pictures(const PictureFlags& flags, const std::vector<std::string>& specs,
                            const Cluster& healthy, const Model& model,
                            const SearchOptions& options, const Calibration* calibration,
                            ReportContext context);

}  // namespace trident::cli
