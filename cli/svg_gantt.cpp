// Panel 2 of `plan --svg`: the pipeline schedule of one step as a Gantt chart, block by block
// from costmodel/pipeline.h's schedule_1f1b (the schedule the cost model's bubble describes).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cli/plan_report.h"
#include "cli/svg_panels.h"
#include "costmodel/pipeline.h"
#include "topology/errors.h"

namespace trident::cli {

GanttTimes gantt_times(const Estimate& e, const ParallelConfig& config) {
  const double m = static_cast<double>(std::max(1LL, e.num_micro_batches));
  const TimeBreakdown& t = e.time;
  const double forward = t.forward_s / m;
  const double backward = (t.backward_s + t.recompute_s) / m;
  // Exposed TP/PP/CP/EP time, FP8's amax all-reduces (all per micro-batch, inside the cost
  // model's bubble too) and the compute slowed by overlapped NCCL kernels stretch each block.
  // PP time that is the whole step's increase is spread over the m + r(p-1)/v blocks' worth of
  // the schedule's makespan, so the drawing adds it once, not scaled by the bubble.
  const double r = e.bubble_fill_ratio;
  const double pp_share =
      e.pp_whole_step
          ? m * (1.0 + r * bubble_fraction(config.pp, config.virtual_stages, e.num_micro_batches))
          : m;
  const double comm =
      (t.tp_comm_s + t.cp_comm_s + t.ep_comm_s + t.amax_comm_s + t.overlap_contention_s) / m +
      t.pp_comm_s / pp_share;
  const double compute = forward + backward;
  const double scale = compute > 0.0 ? 1.0 + comm / compute : 1.0;
  // The slowest stage drawn last: the others run r of its time, its last chunk the rest.
  GanttTimes g;
  g.forward_s = r * forward * scale;
  g.backward_s = r * backward * scale;
  g.tail = {(1.0 - r) * forward * scale, (1.0 - r) * backward * scale};
  g.tail_dp_s = t.dp_comm_s;
  g.tail_optimizer_s = t.optimizer_s;
  return g;
}

namespace {

constexpr double kLabelWidth = 96.0;  // lane labels left of the chart
constexpr double kMinLabelledPx = 16.0;
const char* const kForward = "#3b6ea5";
const char* const kBackward = "#e8772e";

/// Chunk c of v drawn lighter the later it is in the model, so interleaving is visible.
std::string shade(const char* base, int chunk, int v) {
  const double mix = v > 1 ? 0.55 * chunk / (v - 1.0) : 0.0;
  unsigned r = 0, g = 0, b = 0;
  std::sscanf(base, "#%02x%02x%02x", &r, &g, &b);
  const auto lift = [mix](unsigned c) {
    return static_cast<unsigned>(std::lround(c + (255.0 - c) * mix));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", lift(r), lift(g), lift(b));
}

struct Chart {
  double x0 = 0.0;     // left edge of time 0
  double y0 = 0.0;     // top of lane 0
  double width = 0.0;  // pixels for [t0, t1]
  double lane = 0.0;   // lane height
  double t0 = 0.0;
  double t1 = 1.0;
  int pp = 1;
  int v = 1;
  [[nodiscard]] double x(double t) const { return x0 + (t - t0) / (t1 - t0) * width; }
  [[nodiscard]] double y(int stage) const { return y0 + stage * lane; }
};

double lane_height(int pp) { return std::clamp(300.0 / pp, 8.0, 24.0); }

void draw_lanes(SvgWriter& svg, const Chart& c, bool labels, bool counted) {
  const int every = std::max(1, static_cast<int>(std::ceil(11.0 / c.lane)));
  for (int s = 0; s < c.pp; ++s) {
    SvgAttrs attrs{{"fill", "#e6e6e6"}, {"stroke", "#ffffff"}, {"stroke-width", "1"}};
    if (counted)
      attrs.insert(attrs.begin(), {{"class", "stage"}, {"data-stage", std::to_string(s)}});
    svg.rect(c.x0, c.y(s), c.width, c.lane, attrs);
    if (!labels) continue;
    svg.rect(4, c.y(s) + 1, 8, c.lane - 2, {{"fill", stage_colour(s)}});
    if (s % every == 0 || s == c.pp - 1) {
      svg.text(16, c.y(s) + c.lane / 2 + 4, fmt::format("stage {}", s), {{"font-size", "11"}});
    }
  }
}

void draw_block(SvgWriter& svg, const Chart& c, const ScheduleBlock& b, bool labelled) {
  const double start = std::max(b.start_s, c.t0);
  const double end = std::min(b.end_s, c.t1);
  if (end <= start) return;
  const double x = c.x(start);
  const double w = c.x(end) - x;
  const char* base = b.is_forward ? kForward : kBackward;
  SvgAttrs attrs{{"class", b.is_forward ? "fwd" : "bwd"},
                 {"data-mb", std::to_string(b.micro_batch)},
                 {"fill", shade(base, b.chunk, c.v)}};
  if (w > 3) {  // a white edge between neighbours; thinner blocks would turn white
    attrs.emplace_back("stroke", "#ffffff");
    attrs.emplace_back("stroke-width", "0.6");
  }
  svg.rect(x, c.y(b.stage) + 1, w, c.lane - 2, attrs);
  const std::string label = std::to_string(b.micro_batch);
  if (!labelled || c.lane < 10 || w < 6.5 * static_cast<double>(label.size()) + 4) return;
  svg.text(x + w / 2, c.y(b.stage) + c.lane / 2 + 3.5, label,
           {{"font-size", c.lane >= 14 ? "10" : "8"},
            {"text-anchor", "middle"},
            {"fill", b.chunk * 2 < c.v || c.v == 1 ? "#ffffff" : "#1a1a1a"}});
}

/// Under blocks narrower than a few pixels: each stage's busy runs in the forward/backward
/// blend, so anti-aliasing seams between sub-pixel blocks do not wash the lane out to grey.
void draw_busy_runs(SvgWriter& svg, const Chart& c, const std::vector<ScheduleBlock>& blocks,
                    const GanttTimes& g) {
  const double share = g.backward_s / (g.forward_s + g.backward_s);
  unsigned fr = 0, fg = 0, fb = 0, br = 0, bg = 0, bb = 0;
  std::sscanf(kForward, "#%02x%02x%02x", &fr, &fg, &fb);
  std::sscanf(kBackward, "#%02x%02x%02x", &br, &bg, &bb);
  const auto mix = [share](unsigned f, unsigned b) {
    return static_cast<unsigned>(std::lround(f + (static_cast<double>(b) - f) * share));
  };
  const std::string fill =
      fmt::format("#{:02x}{:02x}{:02x}", mix(fr, br), mix(fg, bg), mix(fb, bb));
  const double joined = 1e-9 * c.t1;
  std::size_t i = 0;
  while (i < blocks.size()) {  // blocks are ordered by stage, then start time
    std::size_t j = i;
    while (j + 1 < blocks.size() && blocks[j + 1].stage == blocks[i].stage &&
           blocks[j + 1].start_s - blocks[j].end_s <= joined) {
      ++j;
    }
    const double x = c.x(blocks[i].start_s);
    svg.rect(x, c.y(blocks[i].stage) + 1, c.x(blocks[j].end_s) - x, c.lane - 2,
             {{"class", "busy"}, {"fill", fill}});
    i = j + 1;
  }
}

/// DP communication and the optimizer step after the last backward, across every lane.
void draw_tail(SvgWriter& svg, const Chart& c, double makespan, const GanttTimes& g) {
  const double height = c.pp * c.lane;
  const double dp_end = makespan + g.tail_dp_s;
  const double opt_end = dp_end + g.tail_optimizer_s;
  svg.rect(c.x(makespan), c.y0, c.x(dp_end) - c.x(makespan), height,
           {{"class", "tail"}, {"fill", "#8c6bb1"}});
  svg.rect(c.x(dp_end), c.y0, c.x(opt_end) - c.x(dp_end), height,
           {{"class", "tail"}, {"fill", "#59a14f"}});
  svg.line(c.x(makespan), c.y0 - 4, c.x(makespan), c.y0 + height + 4,
           {{"stroke", "#333333"}, {"stroke-dasharray", "3 2"}});
}

void draw_legend(SvgWriter& svg, double x, double y, int v) {
  const auto item = [&](double at, const std::string& fill, const std::string& text) {
    svg.rect(at, y - 10, 14, 12, {{"fill", fill}});
    svg.text(at + 19, y, text, {{"font-size", "11"}});
  };
  item(x, kForward, v > 1 ? "forward (chunk 0 dark ... chunk v-1 light)" : "forward");
  item(x + 290, kBackward,
       v > 1 ? "backward incl. recompute (same shading)" : "backward incl. recompute");
  item(x + 570, "#e6e6e6", "idle: the pipeline bubble");
  item(x + 760, "#8c6bb1", "DP comm (exposed)");
  item(x + 910, "#59a14f", "optimizer step");
}

/// A window of the step drawn large enough to read micro-batch numbers.
void draw_zoom(SvgWriter& svg, const std::vector<ScheduleBlock>& blocks, Chart c,
               const std::string& id, const std::string& caption, bool lane_labels) {
  svg.text(c.x0, c.y0 - 6, caption, {{"font-size", "11"}, {"font-weight", "bold"}});
  svg.open_group({{"id", id}});
  draw_lanes(svg, c, lane_labels, false);
  for (const auto& b : blocks) draw_block(svg, c, b, true);
  svg.close_group();
  draw_axis(svg, c.x0, c.y(c.pp) + 2, c.width, c.t1 - c.t0, "");
  svg.text(c.x0, c.y(c.pp) + 30, fmt::format("seconds from {:.3f} s", c.t0),
           {{"font-size", "10"}, {"fill", "#555555"}});
}

std::string schedule_title(const ParallelConfig& config, long long m) {
  if (config.virtual_stages > 1) {
    return fmt::format(
        "2. Pipeline schedule of one step: interleaved 1F1B, {} stages x {} "
        "chunks, {} micro-batches ({} blocks)",
        config.pp, config.virtual_stages, m, 2 * m * config.pp * config.virtual_stages);
  }
  if (config.pp == 1) {
    return fmt::format(
        "2. Schedule of one step: no pipeline (1 stage), {} micro-batches "
        "({} blocks)",
        m, 2 * m);
  }
  return fmt::format(
      "2. Pipeline schedule of one step: 1F1B, {} stages, {} micro-batches "
      "({} blocks)",
      config.pp, m, 2 * m * config.pp);
}

std::string bubble_line(const PlanResult& plan, const std::vector<ScheduleBlock>& blocks,
                        double makespan) {
  const Estimate& e = plan.estimate;
  // The last stage's: the slowest, which the drawing puts last (every stage alike when the
  // others are not lighter).
  const int last = plan.config.pp - 1;
  double busy = 0.0;
  for (const auto& b : blocks) {
    if (b.stage == last) busy += b.end_s - b.start_s;
  }
  const double idle = makespan - busy;
  const std::string fill = bubble_fill_text(e);
  return fmt::format(
      "Stages top to bottom, time left to right; a block is one micro-batch (its "
      "number inside where it fits) through one model chunk of one stage, as "
      "costmodel's schedule_1f1b runs it with the cost model's times.\n"
      "makespan {:.3f} s, {} idle {:.3f} s of it (grey: the bubble); cost "
      "model: bubble {:.3f} s = (p-1)/(v*m) = {:.2f}% of the ideal time{}; then DP "
      "{:.3f} s + optimizer {:.3f} s: step {:.3f} s",
      makespan, fill.empty() ? "every stage" : "the slowest stage", idle, e.time.bubble_s,
      100.0 * bubble_fraction(plan.config.pp, plan.config.virtual_stages, e.num_micro_batches),
      fill.empty() ? std::string() : fill + " (the other stages are lighter)", e.time.dp_comm_s,
      e.time.optimizer_s, e.time.step_s);
}

/// Most forward and backward blocks one picture draws (~10 MB of SVG).
constexpr long long kMaxDrawnBlocks = 100000;

}  // namespace

double draw_gantt_panel(SvgWriter& svg, const PictureInput& input, double top, double width) {
  const PlanResult& plan = input.plans.at(input.drawn);
  const ParallelConfig& config = plan.config;
  const long long m = plan.estimate.num_micro_batches;
  const GanttTimes g = gantt_times(plan.estimate, config);
  const long long drawn = 2 * m * config.pp * config.virtual_stages;
  if (drawn > kMaxDrawnBlocks) {
    // Not built (2^24 micro-batches wrote 3 GB): the panel says so, and the rest of the picture
    // (and of a report) is drawn.
    return draw_panel_title(
        svg, top, schedule_title(config, m),
        fmt::format("not drawn: {} blocks (2 x {} micro-batches x pp {} x vp {}), more than the "
                    "{} a picture draws;\na plan of larger micro-batches or fewer of them draws "
                    "(--svg-plan N, or pin --micro-batch / --global-batch)",
                    drawn, m, config.pp, config.virtual_stages, kMaxDrawnBlocks));
  }
  const auto blocks = schedule_1f1b(config.pp, static_cast<int>(m), config.virtual_stages,
                                    g.forward_s, g.backward_s, 0.0, g.tail);
  if (static_cast<long long>(blocks.size()) != 2 * m * config.pp * config.virtual_stages) {
    throw PlanError("--svg: the pipeline schedule of " + split_label(config) + " did not finish");
  }
  const double makespan = schedule_makespan_s(blocks);
  double y = top + draw_panel_title(svg, top, schedule_title(config, m),
                                    bubble_line(plan, blocks, makespan));
  draw_legend(svg, kLabelWidth, y + 12, config.virtual_stages);
  y += 26;
  Chart c{kLabelWidth,
          y,
          width - kLabelWidth - 24,
          lane_height(config.pp),
          0.0,
          makespan + g.tail_dp_s + g.tail_optimizer_s,
          config.pp,
          config.virtual_stages};
  const double block_px = c.width * g.forward_s / config.virtual_stages / c.t1;
  // Crisp edges only where blocks cover whole pixels: below that, sampling one block per pixel
  // draws moire bands that read as long runs of forwards or backwards.
  svg.open_group(
      {{"id", "gantt-step"}, {"shape-rendering", block_px >= 3.0 ? "crispEdges" : "auto"}});
  draw_lanes(svg, c, true, true);
  if (block_px < 3.0) draw_busy_runs(svg, c, blocks, g);
  for (const auto& b : blocks) draw_block(svg, c, b, true);
  draw_tail(svg, c, makespan, g);
  svg.close_group();
  y = c.y(config.pp) + 2;
  y += draw_axis(svg, c.x0, y, c.width, c.t1, "time in the step (s)");
  if (block_px >= kMinLabelledPx) return y - top;
  // Blocks too narrow to read: the start and the end of the step, drawn large.
  const double gap = 30.0;
  Chart zoom = c;
  zoom.width = (c.width - gap) / 2;
  zoom.y0 = y + 22;
  const double chunk_s = std::min(g.forward_s, g.backward_s) / config.virtual_stages;
  const double window = std::min(makespan / 2, chunk_s * zoom.width / 22.0);
  zoom.t0 = 0.0;
  zoom.t1 = window;
  draw_zoom(svg, blocks, zoom, "gantt-zoom-start",
            fmt::format("zoom: the first {:.3f} s{}", window,
                        config.pp > 1 ? " (warm-up: the bubble at the start)" : ""),
            true);
  zoom.x0 = c.x0 + zoom.width + gap;
  zoom.t0 = makespan - window;
  zoom.t1 = makespan;
  draw_zoom(svg, blocks, zoom, "gantt-zoom-end",
            fmt::format("zoom: the last {:.3f} s before DP and optimizer{}", window,
                        config.pp > 1 ? " (cool-down)" : ""),
            false);
  return zoom.y(config.pp) + 36 - top;
}

}  // namespace trident::cli
