// `plan --report DIR` and the writing of the pictures (cli/html_report.h).
#include "cli/html_report.h"

#include <fmt/format.h>

#include "cli/output_file.h"
#include "cli/plan_explain.h"
#include "cli/svg.h"
#include "cli/whatif_report.h"
#include "topology/errors.h"
#include "topology/failure.h"

namespace trident::cli {

namespace {

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px; color: #1a1a1a;
       max-width: 1440px; }
h1 { font-size: 20px; margin: 0 0 8px 0; }
h2 { font-size: 16px; margin: 24px 0 8px 0; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
p.note { color: #555; font-size: 13px; margin: 2px 0; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 10px; font-size: 12px;
      overflow-x: auto; line-height: 1.35; }
.picture { overflow-x: auto; border: 1px solid #ddd; }
)";

/// Builds every text; the run's commit writes them with the other outputs, all or none.
void write_pictures(const PictureFlags& flags, const PictureInput& input,
                    const ReportContext& context, const std::string& table,
                    const std::string& explain, RunOutputs& files) {
  const std::string svg = plan_svg(input);
  if (!flags.svg.empty()) files.set_text("--svg", svg);
  if (!flags.report.empty()) {
    const std::string title = fmt::format("trident plan: {} on {} ({} GPUs)", input.model->name,
                                          input.cluster->name, input.cluster->gpus());
    files.set_text("--report", html_report(title, context.assumptions, table, explain, svg));
  }
}

}  // namespace

std::string html_report(const std::string& title, const std::vector<std::string>& assumptions,
                        const std::string& table, const std::string& explain,
                        const std::string& svg) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + xml_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n";
  out += "<body>\n<h1>" + xml_escape(title) + "</h1>\n";
  for (const auto& line : assumptions) out += "<p class=\"note\">" + xml_escape(line) + "</p>\n";
  out += "<h2>Pictures</h2>\n<div class=\"picture\">\n";
  // The SVG document without its XML-only parts is valid inline HTML.
  out += svg;
  out += "</div>\n<h2>Ranked plans</h2>\n<pre>" + xml_escape(table) + "</pre>\n";
  if (!explain.empty()) out += "<h2>Explanation</h2>\n<pre>" + xml_escape(explain) + "</pre>\n";
  out += "</body>\n</html>\n";
  return out;
}

void declare_picture_outputs(const PictureFlags& flags, RunOutputs& files) {
  if (!flags.svg.empty()) files.add_output("--svg", flags.svg);
  if (!flags.report.empty()) files.add_output_in_dir("--report", flags.report, "index.html");
}

void write_search_pictures(const PictureFlags& flags, const SearchResult& result,
                           const ReportContext& context, const Calibration* calibration,
                           const EstimateOptions& options, RunOutputs& files) {
  if (!flags.wanted()) return;
  const PictureInput input =
      pictures_of_search(*context.cluster, *context.model, result, flags.svg_plan);
  std::string table;
  std::string explain;
  if (!flags.report.empty()) {
    table = format_table(result, context);
    explain = explain_plan(*context.cluster, *context.model, result.plans[flags.svg_plan - 1],
                           flags.svg_plan, calibration, options);
  }
  write_pictures(flags, input, context, table, explain, files);
}

void write_what_if_pictures(const PictureFlags& flags, const WhatIf& w, const Model& model,
                            const SearchOptions& options, const Calibration* calibration,
                            ReportContext context, RunOutputs& files) {
  if (!flags.wanted()) return;
  context.cluster = &w.degraded;
  context.model = &model;
  const PictureInput input = pictures_of_what_if(w, model, flags.svg_plan);
  std::string table;
  std::string explain;
  if (!flags.report.empty()) {
    table = format_what_if_table(w, context);
    explain = explain_plan(w.degraded, model, input.plans[input.drawn], flags.svg_plan, calibration,
                           estimate_options(options));
  }
  write_pictures(flags, input, context, table, explain, files);
}

}  // namespace trident::cli
