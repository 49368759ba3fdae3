// Panel 3 of `plan --svg`: where the step time and the GPU memory go, one stacked bar per
// plan, the plans side by side (under --fail-link: the healthy baseline against each option).
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "cli/svg_panels.h"

namespace trident::cli {

namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
constexpr double kRow = 42.0;
constexpr double kBar = 20.0;

struct Part {
  const char* name;
  const char* colour;
  double value;
  bool optional = false;  ///< in the legend only when some plan has it (CP, EP)
};

using TimeParts = std::array<Part, 10>;
using MemoryParts = std::array<Part, 5>;

TimeParts time_parts(const Estimate& e) {
  const TimeBreakdown& t = e.time;
  return {{{"compute", "#3b6ea5", t.compute_s()},
           {"TP comm", "#76b7b2", t.tp_comm_s},
           {"PP comm", "#edc948", t.pp_comm_s},
           {"DP comm", "#8c6bb1", t.dp_comm_s},
           {"CP comm", "#ff9da7", t.cp_comm_s, true},
           {"EP comm", "#9c755f", t.ep_comm_s, true},
           {"FP8 amax", "#d37295", t.amax_comm_s, true},
           {"bubble", "#b5b5b5", t.bubble_s},
           {"optimizer", "#59a14f", t.optimizer_s},
           {"SM contention", "#e15759", t.overlap_contention_s}}};
}

MemoryParts memory_parts(const Estimate& e) {
  const MemoryBreakdown& m = e.memory;
  return {{{"weights", "#3b6ea5", m.weights_bytes / kGib},
           {"gradients", "#e8772e", m.gradients_bytes / kGib},
           {"optimizer", "#59a14f", m.optimizer_bytes / kGib},
           {"activations", "#e15759", m.activations_bytes / kGib},
           {"other", "#b5b5b5", m.other_bytes / kGib}}};
}

template <std::size_t N>
double total_of(const std::array<Part, N>& parts) {
  double sum = 0.0;
  for (const Part& p : parts) sum += p.value;
  return sum;
}

template <std::size_t N>
void draw_legend(SvgWriter& svg, const std::array<Part, N>& parts, double x, double y,
                 bool show_optional = false) {
  for (const Part& p : parts) {
    if (p.optional && !show_optional) continue;
    svg.rect(x, y - 9, 11, 11, {{"fill", p.colour}});
    svg.text(x + 15, y, p.name, {{"font-size", "10.5"}});
    x += 24 + 6.2 * static_cast<double>(std::string(p.name).size());
  }
}

template <std::size_t N>
void draw_bar(SvgWriter& svg, const std::array<Part, N>& parts, double x, double y, double scale,
              const std::string& label, const std::string& unit, bool bold) {
  svg.text(x, y + 10, label, {{"font-size", "11"}, {"font-weight", bold ? "bold" : "normal"}});
  double at = x;
  const double by = y + 14;
  for (const Part& p : parts) {
    const double w = p.value * scale;
    if (w <= 0.0) continue;
    svg.rect(at, by, w, kBar, {{"class", "seg"}, {"fill", p.colour}});
    svg.title(fmt::format("{}: {:.3f} {}", p.name, p.value, unit));
    const std::string text = fmt::format("{:.2f}", p.value);
    if (w >= 6.2 * static_cast<double>(text.size()) + 6) {
      svg.text(at + w / 2, by + 14, text,
               {{"font-size", "10"}, {"text-anchor", "middle"}, {"fill", "#111111"}});
    }
    at += w;
  }
  svg.text(at + 5, by + 14, fmt::format("{:.2f} {}", total_of(parts), unit),
           {{"font-size", "10.5"}});
}

/// Room for the total written after the longest bar.
constexpr double kTotalRoom = 70.0;

}  // namespace

double draw_breakdown_panel(SvgWriter& svg, const PictureInput& input, double top, double width) {
  const std::size_t n = input.plans.size();  // the callers keep the few compared
  double y =
      top + draw_panel_title(svg, top, "3. Where the step time and the memory go",
                             "Per GPU, on the critical path (time) and on the peak rank (memory); "
                             "communication counts only the exposed part.");
  const double gap = 40.0;
  const double chart_w = (width - 32 - gap) / 2;
  const double x_time = 16;
  const double x_mem = 16 + chart_w + gap;
  double max_time = 0.0;
  double max_mem = 0.0;
  bool cp_ep = false;
  for (std::size_t i = 0; i < n; ++i) {
    const ParallelConfig& c = input.plans[i].config;
    cp_ep = cp_ep || c.cp > 1 || c.ep > 1;
    max_time = std::max(max_time, total_of(time_parts(input.plans[i].estimate)));
    max_mem = std::max({max_mem, total_of(memory_parts(input.plans[i].estimate)),
                        input.plans[i].estimate.memory.capacity_bytes / kGib});
  }
  svg.text(x_time, y + 4, "Step time per GPU (s)", {{"font-size", "12"}, {"font-weight", "bold"}});
  svg.text(x_mem, y + 4, "Memory per GPU (GiB)", {{"font-size", "12"}, {"font-weight", "bold"}});
  draw_legend(svg, time_parts(Estimate{}), x_time, y + 22, cp_ep);
  draw_legend(svg, memory_parts(Estimate{}), x_mem, y + 22);
  y += 32;
  const double time_scale = (chart_w - kTotalRoom) / std::max(max_time, 1e-12);
  const double mem_scale = (chart_w - kTotalRoom) / std::max(max_mem, 1e-12);
  const double bottom = y + kRow * static_cast<double>(n);
  if (n > 0) {  // drawn first: the totals written after the bars stay readable over it
    const double usable = input.plans[0].estimate.memory.capacity_bytes / kGib;
    const double ux = x_mem + usable * mem_scale;
    svg.line(ux, y + 10, ux, bottom,
             {{"stroke", "#d62728"}, {"stroke-dasharray", "5 3"}, {"stroke-width", "1.5"}});
    svg.text(ux - 4, y + 8, fmt::format("usable {:.0f} GiB", usable),
             {{"font-size", "10"}, {"fill", "#d62728"}, {"text-anchor", "end"}});
  }
  svg.open_group({{"id", "breakdown"}});
  for (std::size_t i = 0; i < n; ++i) {
    const PlanResult& plan = input.plans[i];
    const std::string name = input.labels[i] + "  " + split_label(plan.config);
    svg.open_group({{"class", "bar"}, {"data-plan", input.labels[i]}});
    draw_bar(svg, time_parts(plan.estimate), x_time, y + kRow * static_cast<double>(i), time_scale,
             name, "s", i == input.drawn);
    draw_bar(svg, memory_parts(plan.estimate), x_mem, y + kRow * static_cast<double>(i), mem_scale,
             name, "GiB", i == input.drawn);
    svg.close_group();
  }
  svg.close_group();
  const double axis_h =
      draw_axis(svg, x_time, bottom, time_scale * max_time, max_time, "seconds per step");
  draw_axis(svg, x_mem, bottom, mem_scale * max_mem, max_mem, "GiB per GPU");
  return bottom + axis_h - top;
}

}  // namespace trident::cli
