// `plan --svg`: the document and the helpers its three panels share (cli/plan_svg.h).
#include "cli/plan_svg.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>

#include "cli/cluster_args.h"
#include "cli/failure_text.h"
#include "cli/report_text.h"
#include "cli/svg_panels.h"
#include "topology/errors.h"

namespace trident::cli {

namespace {

constexpr double kWidth = 1400.0;

/// Tableau-like 12 colours, light enough for dark text on top.
constexpr const char* kStageColours[] = {"#8fb3dd", "#f6b26b", "#93c47d", "#e98b8b",
                                         "#b4a7d6", "#c9a88a", "#f4a6d7", "#c2c2c2",
                                         "#d9d36a", "#7fd3d3", "#ffd966", "#a4c2a8"};

/// 1, 2 or 5 times a power of ten, giving about `target` ticks over `range`.
double nice_step(double range, int target) {
  const double raw = range / std::max(1, target);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double f : {1.0, 2.0, 5.0}) {
    if (f * power >= raw) return f * power;
  }
  return 10.0 * power;
}

std::string tick_text(double value, double step) {
  const int decimals = step >= 1.0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace

std::string stage_colour(int stage) {
  return kStageColours[static_cast<std::size_t>(stage) % std::size(kStageColours)];
}

std::string split_label(const ParallelConfig& c) {
  return fmt::format("TP{} PP{} DP{} mb{} v{} ZeRO-{} recompute {}{}{}{}", c.tp, c.pp, c.dp,
                     c.micro_batch, c.virtual_stages, c.zero, recompute_text(c),
                     c.sequence_parallel ? " SP" : "", c.cp > 1 ? fmt::format(" CP{}", c.cp) : "",
                     c.ep > 1 ? fmt::format(" EP{}", c.ep) : "");
}

double draw_axis(SvgWriter& svg, double x0, double y, double length, double max_value,
                 const std::string& label) {
  svg.line(x0, y, x0 + length, y, {{"stroke", "#333333"}});
  if (max_value <= 0.0 || length <= 0.0) return label.empty() ? 16.0 : 30.0;
  const int target = std::max(2, static_cast<int>(length / 90.0));
  const double step = nice_step(max_value, target);
  for (double v = 0.0; v <= max_value * (1 + 1e-9); v += step) {
    const double x = x0 + v / max_value * length;
    svg.line(x, y, x, y + 4, {{"stroke", "#333333"}});
    svg.text(x, y + 14, tick_text(v, step), {{"font-size", "10"}, {"text-anchor", "middle"}});
  }
  if (label.empty()) return 16.0;
  svg.text(x0 + length / 2, y + 28, label, {{"font-size", "11"}, {"text-anchor", "middle"}});
  return 32.0;
}

double draw_panel_title(SvgWriter& svg, double top, const std::string& title,
                        const std::string& subtitle) {
  svg.text(16, top + 18, title, {{"font-size", "15"}, {"font-weight", "bold"}});
  double y = top + 18;
  std::size_t start = 0;
  while (start < subtitle.size()) {
    const std::size_t end = std::min(subtitle.find('\n', start), subtitle.size());
    y += 15;
    svg.text(16, y, subtitle.substr(start, end - start),
             {{"font-size", "11"}, {"fill", "#444444"}});
    start = end + 1;
  }
  return y - top + 10;
}

void add_picture_flags(CLI::App& sub, PictureFlags& flags) {
  sub.add_option("--svg", flags.svg,
                 "write a picture of the plan to FILE (SVG): rank layout, pipeline schedule, "
                 "where time and memory go");
  sub.add_option("--svg-plan", flags.svg_plan,
                 "plan N of the ranking to draw (default 1; under --fail-link: option N)")
      ->check(non_negative_integer_check())  // 0 gets its own words below
      ->each([&flags](const std::string&) { flags.svg_plan_given = true; });
  sub.add_option("--report", flags.report,
                 "write DIR/index.html: the ranked table, the explanation and the picture");
}

PictureInput pictures_of_search(const Cluster& cluster, const Model& model,
                                const SearchResult& result, std::size_t svg_plan) {
  if (svg_plan < 1) throw InputError("--svg-plan 0: plans are numbered from 1");
  if (svg_plan > result.plans.size()) {
    throw PlanError(fmt::format("--svg-plan {}: the ranking has {} plans that fit", svg_plan,
                                result.plans.size()));
  }
  PictureInput input;
  input.cluster = &cluster;
  input.model = &model;
  const std::size_t shown = std::max(kPlansCompared, svg_plan);
  for (std::size_t i = 0; i < result.plans.size() && i < shown; ++i) {
    input.plans.push_back(result.plans[i]);
    input.labels.push_back(fmt::format("#{}", i + 1));
  }
  // The drawn plan is compared even when it ranks below the first few.
  if (svg_plan > kPlansCompared) {
    std::swap(input.plans[kPlansCompared - 1], input.plans[svg_plan - 1]);
    std::swap(input.labels[kPlansCompared - 1], input.labels[svg_plan - 1]);
    input.drawn = kPlansCompared - 1;
  } else {
    input.drawn = svg_plan - 1;
  }
  input.plans.resize(std::min(input.plans.size(), kPlansCompared));
  input.labels.resize(input.plans.size());
  return input;
}

PictureInput pictures_of_what_if(const WhatIf& w, const Model& model, std::size_t svg_plan) {
  if (svg_plan < 1) throw InputError("--svg-plan 0: plans are numbered from 1");
  PictureInput input;
  input.cluster = &w.degraded;
  input.model = &model;
  input.plans.push_back(w.baseline);
  input.labels.emplace_back("healthy");
  std::size_t available = 0;
  for (const WhatIfOption& o : w.options) {
    if (!o.available) continue;
    ++available;
    if (available == svg_plan) input.drawn = input.plans.size();
    if (input.plans.size() < kPlansCompared || available == svg_plan) {
      input.plans.push_back(*o.plan);
      input.labels.push_back(available == 1 ? fmt::format("best: {}", to_string(o.kind))
                                            : std::string(to_string(o.kind)));
    }
  }
  if (svg_plan > available) {
    throw PlanError(fmt::format("--svg-plan {}: only {} {} can run", svg_plan, available,
                                available == 1 ? "option" : "options"));
  }
  input.layout_plan = &w.baseline;
  input.layout_note =
      "The healthy plan's layout with the failures marked (red): where they land "
      "in the job running now.";
  for (std::size_t i = 0; i < w.failures.size(); ++i) {
    input.failures.push_back(w.failures[i].spec + ": " + describe(w.failures[i], w.degraded));
  }
  input.hits = w.groups_hit;
  return input;
}

std::string plan_svg(const PictureInput& input) {
  PictureInput in = input;
  if (in.layout_plan == nullptr) in.layout_plan = &in.plans.at(in.drawn);
  SvgWriter svg;
  double y = 8.0;
  y += draw_layout_panel(svg, in, y, kWidth) + 18;
  svg.line(16, y - 9, kWidth - 16, y - 9, {{"stroke", "#cccccc"}});
  y += draw_gantt_panel(svg, in, y, kWidth) + 18;
  svg.line(16, y - 9, kWidth - 16, y - 9, {{"stroke", "#cccccc"}});
  y += draw_breakdown_panel(svg, in, y, kWidth) + 12;
  return svg.document(kWidth, std::ceil(y), "");
}

}  // namespace trident::cli
