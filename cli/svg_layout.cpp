// Panel 1 of `plan --svg`: the rank layout. Servers as boxes of GPUs coloured by pipeline
// stage, TP groups outlined, DP replicas numbered, the link of each dimension named, failed
// parts marked. Large clusters: a few servers in full, the rest as boxes of counts.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/cluster_args.h"
#include "cli/plan_report.h"
#include "cli/report_text.h"
#include "cli/svg_panels.h"
#include "costmodel/placement.h"

namespace trident::cli {

namespace {

constexpr double kCell = 28.0;
constexpr double kPitch = 31.0;   // cell + gap
constexpr double kHeader = 18.0;  // server box title
constexpr double kFooter = 16.0;
constexpr double kPad = 8.0;
constexpr double kSpacing = 10.0;
constexpr std::size_t kServersInFull = 8;
const char* const kFailed = "#d62728";

/// The grid row of the `index`-th cell, `per_row` cells to a row (integer division on purpose).
int row_of(int index, int per_row) { return index / per_row; }

struct Geometry {
  int cols = 8;
  int rows = 1;
  double box_w = 0.0;
  double box_h = 0.0;
  int per_row = 1;
};

Geometry geometry(const Cluster& cluster, double width) {
  Geometry g;
  g.cols = std::min(cluster.gpus_per_server, 8);
  g.rows = (cluster.gpus_per_server + g.cols - 1) / g.cols;
  g.box_w = g.cols * kPitch - 3 + 2 * kPad;
  g.box_h = kHeader + g.rows * kPitch + kFooter + kPad;
  g.per_row = std::max(1, static_cast<int>((width - 32 + kSpacing) / (g.box_w + kSpacing)));
  return g;
}

/// What rank (if any) runs on each GPU: rank r on GPU r for r below the plan's size.
struct Ranks {
  const ParallelConfig* config;
  RankOrder order;
  [[nodiscard]] bool used(int gpu) const { return gpu < config->gpus(); }
  [[nodiscard]] RankCoord at(int gpu) const { return rank_coord(*config, order, gpu); }
};

bool server_failed(const Cluster& c, int server) {
  const ClusterHealth& h = c.health;
  if (h.dead_servers.count(server) != 0 || h.nics_down.count(server) != 0) return true;
  const int first = server * c.gpus_per_server;
  const int last = first + c.gpus_per_server;
  const auto in = [&](int gpu) { return gpu >= first && gpu < last; };
  for (const auto& [gpu, links] : h.nvlinks_down) {
    if (in(gpu)) return true;
  }
  for (const int gpu : h.dead_gpus) {
    if (in(gpu)) return true;
  }
  for (const auto& [a, b] : h.dead_mesh_links) {
    if (in(a) || in(b)) return true;
  }
  return false;
}

/// Servers drawn in full: every failed server, then the first server of each pipeline stage
/// (server 0 first) until kServersInFull are chosen.
std::vector<int> servers_in_full(const Cluster& c, const Ranks& ranks) {
  if (static_cast<std::size_t>(c.servers) <= kServersInFull) {
    std::vector<int> all(static_cast<std::size_t>(c.servers));
    for (int s = 0; s < c.servers; ++s) all[static_cast<std::size_t>(s)] = s;
    return all;
  }
  std::set<int> chosen;
  for (int s = 0; s < c.servers; ++s) {
    if (server_failed(c, s)) chosen.insert(s);
  }
  const std::size_t limit = std::max(kServersInFull, chosen.size());
  chosen.insert(0);
  for (int stage = 1; stage < ranks.config->pp && chosen.size() < limit; ++stage) {
    const int rank = rank_of(*ranks.config, ranks.order, {0, stage, 0});
    chosen.insert(c.server_of(rank));
  }
  return {chosen.begin(), chosen.end()};
}

std::string range_text(int lo, int hi) {
  return lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi);
}

void draw_gpu(SvgWriter& svg, const Cluster& c, const Ranks& ranks, int gpu, double x, double y) {
  if (!ranks.used(gpu)) {
    svg.rect(x, y, kCell, kCell,
             {{"class", "gpu idle"}, {"data-gpu", std::to_string(gpu)}, {"fill", "#cccccc"}});
    svg.text(x + kCell / 2, y + 17, "idle", {{"font-size", "8"}, {"text-anchor", "middle"}});
    return;
  }
  const RankCoord rc = ranks.at(gpu);
  svg.rect(x, y, kCell, kCell,
           {{"class", "gpu"},
            {"data-gpu", std::to_string(gpu)},
            {"data-stage", std::to_string(rc.pp)},
            {"data-tp", std::to_string(rc.tp)},
            {"data-dp", std::to_string(rc.dp)},
            {"fill", stage_colour(rc.pp)},
            {"rx", "3"}});
  const ParallelConfig& config = *ranks.config;
  std::string title =
      fmt::format("GPU {} (server {}, local {}): stage {}, TP rank {}, DP replica {}", gpu,
                  c.server_of(gpu), gpu % c.gpus_per_server, rc.pp, rc.tp, rc.dp);
  if (config.cp > 1) title += fmt::format(", CP rank {}", rc.cp);
  if (config.ep > 1) title += fmt::format(", EP group {}", gpu / config.ep);
  svg.title(title);
  const SvgAttrs small{{"font-size", "8.5"}, {"text-anchor", "middle"}, {"fill", "#111111"}};
  svg.text(x + kCell / 2, y + 11, fmt::format("s{}", rc.pp), small);
  // With CP the second line names the CP rank too: c#d#.
  svg.text(x + kCell / 2, y + 23,
           config.cp > 1 ? fmt::format("c{}d{}", rc.cp, rc.dp) : fmt::format("d{}", rc.dp), small);
}

void mark_gpu_failure(SvgWriter& svg, const Cluster& c, int gpu, double x, double y) {
  const ClusterHealth& h = c.health;
  if (h.dead_gpus.count(gpu) != 0) {
    svg.path(fmt::format("M{} {} L{} {} M{} {} L{} {}", svg_num(x), svg_num(y), svg_num(x + kCell),
                         svg_num(y + kCell), svg_num(x + kCell), svg_num(y), svg_num(x),
                         svg_num(y + kCell)),
             {{"class", "failed"},
              {"data-failure", "gpu"},
              {"stroke", kFailed},
              {"stroke-width", "3.5"}});
  }
  const auto down = h.nvlinks_down.find(gpu);
  if (down != h.nvlinks_down.end()) {
    svg.rect(x - 2, y - 2, kCell + 4, kCell + 4,
             {{"class", "failed"},
              {"data-failure", "nvlink"},
              {"fill", "none"},
              {"stroke", kFailed},
              {"stroke-width", "3"}});
    svg.title(fmt::format("GPU {}: {} NVLinks down", gpu, down->second));
  }
}

/// Groups of `size` consecutive ranks outlined (TP; EP, whose groups are consecutive ranks of
/// the tp x cp x dp block): runs of one group within one row of the box.
void outline_groups(SvgWriter& svg, const Cluster& c, const Ranks& ranks, int server, double gx,
                    double gy, int cols, int size, const SvgAttrs& style) {
  const int tp = size;
  if (tp < 2) return;
  const int first = server * c.gpus_per_server;
  int run_start = 0;
  for (int local = 1; local <= c.gpus_per_server; ++local) {
    const int prev = first + local - 1;
    const bool ends = local == c.gpus_per_server || local % cols == 0 ||
                      !ranks.used(first + local) || (first + local) / tp != prev / tp;
    if (!ends) continue;
    if (ranks.used(prev)) {
      const double x = gx + (run_start % cols) * kPitch - 1.5;
      const double y = gy + row_of(run_start, cols) * kPitch - 1.5;
      svg.rect(x, y, (local - run_start) * kPitch, kCell + 3, style);
    }
    run_start = local;
  }
}

std::string server_footer(const Cluster& c, const Ranks& ranks, int server) {
  int stage_lo = 1 << 30, stage_hi = -1, dp_lo = 1 << 30, dp_hi = -1;
  for (int local = 0; local < c.gpus_per_server; ++local) {
    const int gpu = server * c.gpus_per_server + local;
    if (!ranks.used(gpu)) continue;
    const RankCoord rc = ranks.at(gpu);
    stage_lo = std::min(stage_lo, rc.pp);
    stage_hi = std::max(stage_hi, rc.pp);
    dp_lo = std::min(dp_lo, rc.dp);
    dp_hi = std::max(dp_hi, rc.dp);
  }
  if (stage_hi < 0) return "idle";
  const int tp = ranks.config->tp;
  const std::string spans = tp > c.gpus_per_server
                                ? fmt::format(" · TP group spans {} servers",
                                              (tp + c.gpus_per_server - 1) / c.gpus_per_server)
                                : "";
  return fmt::format("stage {} · DP {}{}", range_text(stage_lo, stage_hi), range_text(dp_lo, dp_hi),
                     spans);
}

void draw_server(SvgWriter& svg, const Cluster& c, const Ranks& ranks, const Geometry& g,
                 int server, double x, double y) {
  const bool dead = c.health.dead_servers.count(server) != 0;
  svg.open_group({{"class", "server"}, {"data-server", std::to_string(server)}});
  svg.rect(x, y, g.box_w, g.box_h, {{"fill", "#fafafa"}, {"stroke", "#555555"}, {"rx", "5"}});
  const int first = server * c.gpus_per_server;
  svg.text(
      x + kPad, y + 13,
      fmt::format("server {} · GPUs {}", server, range_text(first, first + c.gpus_per_server - 1)),
      {{"font-size", "10.5"}, {"font-weight", "bold"}});
  int nvlinks = 0;
  for (int local = 0; local < c.gpus_per_server; ++local) {
    const auto down = c.health.nvlinks_down.find(first + local);
    if (down != c.health.nvlinks_down.end()) nvlinks += down->second;
  }
  if (nvlinks > 0) {
    svg.text(
        x + g.box_w - kPad, y + 13,
        fmt::format("{} NVLink{} down", nvlinks, nvlinks > 1 ? "s" : ""),
        {{"font-size", "10"}, {"text-anchor", "end"}, {"fill", kFailed}, {"font-weight", "bold"}});
  }
  const auto nics = c.health.nics_down.find(server);
  if (nics != c.health.nics_down.end()) {
    svg.text(x + g.box_w - kPad, y + 13, fmt::format("{} NIC down", nics->second),
             {{"class", "failed"},
              {"data-failure", "nic"},
              {"font-size", "10"},
              {"text-anchor", "end"},
              {"fill", kFailed},
              {"font-weight", "bold"}});
  }
  const double gx = x + kPad;
  const double gy = y + kHeader + 2;
  for (int local = 0; local < c.gpus_per_server; ++local) {
    draw_gpu(svg, c, ranks, first + local, gx + (local % g.cols) * kPitch,
             gy + row_of(local, g.cols) * kPitch);
  }
  outline_groups(svg, c, ranks, server, gx, gy, g.cols, ranks.config->tp,
                 {{"class", "tpgroup"},
                  {"fill", "none"},
                  {"stroke", "#1a1a1a"},
                  {"stroke-width", "1.6"},
                  {"rx", "4"}});
  // EP groups: a wider dashed purple outline around the TP boxes.
  outline_groups(svg, c, ranks, server, gx - 2.5, gy - 2.5, g.cols, ranks.config->ep,
                 {{"class", "epgroup"},
                  {"fill", "none"},
                  {"stroke", "#9467bd"},
                  {"stroke-width", "1.6"},
                  {"stroke-dasharray", "4 2"},
                  {"rx", "5"}});
  for (int local = 0; local < c.gpus_per_server; ++local) {
    mark_gpu_failure(svg, c, first + local, gx + (local % g.cols) * kPitch,
                     gy + row_of(local, g.cols) * kPitch);
  }
  for (const auto& [a, b] : c.health.dead_mesh_links) {
    if (c.server_of(a) != server) continue;
    const int la = a - first, lb = b - first;
    const auto cx = [&](int l) { return gx + (l % g.cols) * kPitch + kCell / 2; };
    const auto cy = [&](int l) { return gy + row_of(l, g.cols) * kPitch + kCell / 2; };
    svg.line(cx(la), cy(la), cx(lb), cy(lb),
             {{"class", "failed"},
              {"data-failure", "mesh"},
              {"stroke", kFailed},
              {"stroke-width", "3"},
              {"stroke-dasharray", "5 3"}});
  }
  svg.text(x + kPad, y + g.box_h - 7, dead ? "server down" : server_footer(c, ranks, server),
           {{"font-size", "10"}, {"fill", dead ? kFailed : "#333333"}});
  if (dead) {
    svg.path(fmt::format("M{} {} L{} {}", svg_num(x), svg_num(y), svg_num(x + g.box_w),
                         svg_num(y + g.box_h)),
             {{"class", "failed"},
              {"data-failure", "server"},
              {"stroke", kFailed},
              {"stroke-width", "4"}});
  }
  svg.close_group();
}

/// Servers [lo, hi] not drawn: how many, and how many GPUs of each stage they hold.
void draw_summary(SvgWriter& svg, const Cluster& c, const Ranks& ranks, const Geometry& g, int lo,
                  int hi, double x, double y) {
  std::map<int, long long> per_stage;
  long long idle = 0;
  for (int gpu = lo * c.gpus_per_server; gpu < (hi + 1) * c.gpus_per_server; ++gpu) {
    if (ranks.used(gpu)) {
      ++per_stage[ranks.at(gpu).pp];
    } else {
      ++idle;
    }
  }
  svg.open_group({{"class", "summary"}, {"data-servers", std::to_string(hi - lo + 1)}});
  svg.rect(x, y, g.box_w, g.box_h,
           {{"fill", "#f3f3f3"}, {"stroke", "#888888"}, {"stroke-dasharray", "5 3"}, {"rx", "5"}});
  const long long servers = hi - lo + 1;
  svg.text(x + kPad, y + 13,
           fmt::format("{} {} not drawn", lo == hi ? "server" : "servers", range_text(lo, hi)),
           {{"font-size", "10.5"}, {"font-weight", "bold"}});
  svg.text(x + kPad, y + 27,
           fmt::format("{} {}, {} GPUs", thousands(servers), servers == 1 ? "server" : "servers",
                       thousands(servers * c.gpus_per_server)),
           {{"font-size", "10"}});
  const int lines = std::max(1, static_cast<int>((g.box_h - 34) / 12));
  int line = 0;
  for (auto it = per_stage.begin(); it != per_stage.end(); ++it) {
    const auto& [stage, count] = *it;
    const double ty = y + 40 + line * 12;
    if (line + 1 == lines && std::next(it) != per_stage.end()) {
      long long rest = 0;
      for (auto r = it; r != per_stage.end(); ++r) rest += r->second;
      svg.text(
          x + kPad, ty,
          fmt::format("stages {}-{}: {} GPUs", stage, per_stage.rbegin()->first, thousands(rest)),
          {{"font-size", "10"}});
      ++line;
      break;
    }
    svg.rect(x + kPad, ty - 8, 9, 9, {{"fill", stage_colour(stage)}});
    svg.text(x + kPad + 13, ty, fmt::format("stage {}: {} GPUs", stage, thousands(count)),
             {{"font-size", "10"}});
    ++line;
  }
  if (idle > 0 && line < lines) {
    svg.text(x + kPad, y + 40 + line * 12, fmt::format("idle: {} GPUs", thousands(idle)),
             {{"font-size", "10"}});
  }
  svg.close_group();
}

std::string link_words(const GroupLink& link, const char* domain) {
  if (link.ranks < 2) return "no traffic (group of one)";
  const std::string where = link.domains < 2 ? fmt::format("inside one {}", domain)
                                             : fmt::format("across {} {}s", link.domains, domain);
  return fmt::format("over {} at {:.0f} GB/s per GPU, {}", link_name(link), link.bottleneck_gbps(),
                     where);
}

const char* tier_colour(const GroupLink& link) {
  if (link.ranks < 2) return "#bbbbbb";
  switch (link.tier) {
    case Tier::nvlink:
      return "#2ca02c";
    case Tier::pcie:
      return "#ff7f0e";
    case Tier::network:
      return "#7f7f7f";
  }
  return "#7f7f7f";
}

double draw_links(SvgWriter& svg, const Cluster& cluster, const PlanResult& plan, double x,
                  double y) {
  const char* domain = link_domain_word(cluster);
  const ParallelConfig& c = plan.config;
  const Placement& p = plan.placement;
  std::vector<std::string> rows = {
      c.tp < 2 ? std::string("TP: 1 GPU per group, no tensor parallel traffic")
               : fmt::format("TP (outlined boxes): {} GPUs per group, {} {}", c.tp,
                             tp_collective_name(c), link_words(p.tp, domain)),
      c.pp < 2 ? std::string("PP: 1 stage, no pipeline traffic")
               : fmt::format("PP (GPU colours, s#): {} stages, {} between neighbouring stages {}",
                             c.pp, pp_collective_name(c), link_words(p.pp, domain)),
      c.dp < 2 ? std::string("DP: 1 replica, no gradient traffic")
               : fmt::format("DP (d#): {} replicas, {} of the gradients {}", c.dp,
                             dp_collective_name(c, plan.estimate.dp.collective),
                             link_words(p.dp, domain))};
  std::vector<const GroupLink*> links = {&p.tp, &p.pp, &p.dp};
  if (c.cp > 1) {
    rows.push_back(fmt::format("CP (c#): {} GPUs per sequence, {} of K/V chunks {}", c.cp,
                               cp_collective_name(plan), link_words(p.cp, domain)));
    links.push_back(&p.cp);
  }
  if (c.ep > 1) {
    rows.push_back(fmt::format("EP (dashed purple boxes): {} GPUs per expert group, {} {}", c.ep,
                               ep_collective_name(c), link_words(p.ep, domain)));
    links.push_back(&p.ep);
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double ly = y + 15.0 * static_cast<double>(i);
    svg.line(x, ly - 4, x + 26, ly - 4,
             {{"class", "link"},
              {"stroke", tier_colour(*links[i])},
              {"stroke-width", "3"},
              {"stroke-dasharray", links[i]->tier == Tier::network ? "6 3" : "none"}});
    svg.text(x + 34, ly, rows[i], {{"font-size", "11"}});
  }
  return 48.0 + 15.0 * static_cast<double>(rows.size() - 3);
}

std::string hit_text(const GroupHit& hit, const Cluster& cluster) {
  const std::string gpus = hit.gpus.empty() ? std::string("?")
                                            : fmt::format("{}..{} ({} GPUs)", hit.gpus.front(),
                                                          hit.gpus.back(), hit.gpus.size());
  if (hit.lost) return fmt::format("{} group {}: a member GPU is dead", hit.dimension, gpus);
  if (hit.before.domains > 1) {
    const std::string unit = domain_word(cluster);
    return fmt::format(
        "{} group {}: inside a {} {:.0f} -> {:.0f} GB/s, across {}s "
        "{:.0f} -> {:.0f} GB/s",
        hit.dimension, gpus, unit, hit.before.intra_gbps, hit.after.intra_gbps, unit,
        hit.before.inter_gbps, hit.after.inter_gbps);
  }
  return fmt::format("{} group {}: {} {:.0f} GB/s -> {} {:.0f} GB/s", hit.dimension, gpus,
                     to_string(hit.before.tier), hit.before.bottleneck_gbps(),
                     to_string(hit.after.tier), hit.after.bottleneck_gbps());
}

}  // namespace

double draw_layout_panel(SvgWriter& svg, const PictureInput& input, double top, double width) {
  const Cluster& c = *input.cluster;
  const PlanResult& plan = *input.layout_plan;
  const Ranks ranks{&plan.config, plan.placement.order};
  const Geometry g = geometry(c, width);
  const std::vector<int> full = servers_in_full(c, ranks);
  const int hidden = c.servers - static_cast<int>(full.size());
  std::string subtitle =
      fmt::format("{} GPUs in {} server{} of {}; rank order {} (rank r on GPU r); {}",
                  thousands(c.gpus()), thousands(c.servers), c.servers > 1 ? "s" : "",
                  c.gpus_per_server, rank_order_text(plan.placement.order, plan.config),
                  hidden > 0 ? fmt::format("{} servers drawn in full, {} summarised with counts",
                                           full.size(), thousands(hidden))
                             : std::string("every server drawn"));
  if (!input.layout_note.empty()) subtitle += "\n" + input.layout_note;
  double y =
      top + draw_panel_title(svg, top, "1. Rank layout: " + split_label(plan.config), subtitle);
  svg.open_group({{"id", "layout"}});
  int item = 0;
  const auto place = [&](auto&& draw) {
    const double x = 16 + (item % g.per_row) * (g.box_w + kSpacing);
    const double iy = y + row_of(item, g.per_row) * (g.box_h + kSpacing);
    draw(x, iy);
    ++item;
  };
  int next = 0;
  for (const int server : full) {
    if (server > next) {
      place([&](double x, double iy) { draw_summary(svg, c, ranks, g, next, server - 1, x, iy); });
    }
    place([&](double x, double iy) { draw_server(svg, c, ranks, g, server, x, iy); });
    next = server + 1;
  }
  if (next < c.servers) {
    place([&](double x, double iy) { draw_summary(svg, c, ranks, g, next, c.servers - 1, x, iy); });
  }
  svg.close_group();
  const int rows = (item + g.per_row - 1) / g.per_row;
  y += rows * (g.box_h + kSpacing) + 12;
  y += draw_links(svg, c, plan, 16, y);
  for (const auto& failure : input.failures) {
    svg.text(16, y, "failure " + failure, {{"font-size", "11"}, {"fill", kFailed}});
    y += 15;
  }
  constexpr std::size_t kHitsDrawn = 4;
  for (std::size_t i = 0; i < input.hits.size() && i < kHitsDrawn; ++i) {
    svg.text(16, y, "hit: " + hit_text(input.hits[i], *input.cluster),
             {{"font-size", "11"}, {"fill", kFailed}});
    y += 15;
  }
  if (input.hits.size() > kHitsDrawn) {  // the table and the JSON list them all
    svg.text(16, y, fmt::format("... and {} more groups hit", input.hits.size() - kHitsDrawn),
             {{"font-size", "11"}, {"fill", kFailed}});
    y += 15;
  }
  return y - top;
}

}  // namespace trident::cli
