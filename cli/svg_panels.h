#pragma once
/// The three panels of `plan --svg` (cli/plan_svg.h) and what they share. Each draw_* writes
/// its panel at vertical offset `top` across `width` pixels and returns the height it used.
#include <string>

#include "cli/plan_svg.h"
#include "cli/svg.h"
#include "costmodel/estimate.h"
#include "costmodel/pipeline.h"

namespace trident::cli {

/// Fill colour of pipeline stage `stage` (a 12-colour cycle; the stage number is written too).
[[nodiscard]] std::string stage_colour(int stage);

/// "TP4 PP4 DP32 mb2 v6 ZeRO-2" (short, for titles and bar labels).
[[nodiscard]] std::string split_label(const ParallelConfig& config);

/// One micro-batch's forward and backward time through one whole stage, as the Gantt chart
/// draws them: the cost model's per-micro-batch compute (recomputation counted in backward)
/// with the exposed TP and PP communication added in proportion. Their sum is the cost
/// model's ideal time / m, so schedule_1f1b's makespan is that ideal time plus the bubble.
/// Where the other stages are lighter than the slowest (Estimate::bubble_fill_ratio r < 1),
/// every stage runs r of it and the last stage's last chunk the rest (`tail`): the drawing puts
/// the slowest stage last, where the output layer makes it.
struct GanttTimes {
  double forward_s = 0.0;
  double backward_s = 0.0;
  ScheduleTail tail;
  double tail_dp_s = 0.0;         ///< exposed DP communication after the last backward
  double tail_optimizer_s = 0.0;  ///< optimizer step after that
};
[[nodiscard]] GanttTimes gantt_times(const Estimate& estimate, const ParallelConfig& config);

double draw_layout_panel(SvgWriter& svg, const PictureInput& input, double top, double width);
double draw_gantt_panel(SvgWriter& svg, const PictureInput& input, double top, double width);
double draw_breakdown_panel(SvgWriter& svg, const PictureInput& input, double top, double width);

/// A panel's title (bold) and an optional second line; returns the height used.
double draw_panel_title(SvgWriter& svg, double top, const std::string& title,
                        const std::string& subtitle);

/// A horizontal axis under a chart: ticks at round values from 0 to `max_value` mapped onto
/// [x0, x0 + length], numbers and `label` (with its unit) below. Returns the height used.
double draw_axis(SvgWriter& svg, double x0, double y, double length, double max_value,
                 const std::string& label);

}  // namespace trident::cli
