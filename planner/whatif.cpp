// The failure what-if: keep, re-place, cordon a GPU, cordon a server (planner/whatif.h).
#include "planner/whatif.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "costmodel/placement.h"
#include "planner/layout.h"
#include "topology/errors.h"

namespace trident {

const char* to_string(WhatIfKind kind) {
  switch (kind) {
    case WhatIfKind::keep:
      return "keep";
    case WhatIfKind::replace:
      return "re-place";
    case WhatIfKind::cordon_gpu:
      return "cordon-gpu";
    case WhatIfKind::cordon_server:
      return "cordon-server";
  }
  return "?";
}

namespace {

/// "; WHY, so N more idle as spares" when servers are left idle; "" when none.
std::string spare_note(int spares, const std::string& why) {
  if (spares == 0) return "";
  std::string note = "; ";
  note += why;
  note += ", so ";
  note += std::to_string(spares);
  note += " more idle as spares";
  return note;
}

/// Relative step-time difference below which two options count as equally fast.
constexpr double kSameSpeed = 1e-9;

[[nodiscard]] std::string printf_string(const char* format, double a, double b = 0.0) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, a, b);
  return buffer;
}

[[nodiscard]] std::string seconds(double s) { return printf_string("%.3f s", s); }
[[nodiscard]] std::string percent(double fraction) {
  return printf_string("%+.1f%%", 100.0 * fraction);
}
[[nodiscard]] std::string gbps(double value) { return printf_string("%.0f GB/s", value); }

/// "136-139", "128..252 every 4", "8,12" for a set of GPU ids.
[[nodiscard]] std::string gpu_range(const std::vector<int>& gpus) {
  std::vector<int> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  const int n = static_cast<int>(sorted.size());
  const int step = n > 1 ? sorted[1] - sorted[0] : 0;
  bool even = n > 2;
  for (int i = 1; i < n && even; ++i) even = sorted[i] - sorted[i - 1] == step;
  if (even && step == 1)
    return std::to_string(sorted.front()) + "-" + std::to_string(sorted.back());
  if (even) {
    return std::to_string(sorted.front()) + ".." + std::to_string(sorted.back()) + " every " +
           std::to_string(step);
  }
  std::string text;
  for (const int gpu : sorted) {
    if (!text.empty()) text += ',';
    text += std::to_string(gpu);
  }
  return text;
}

[[nodiscard]] std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string text;
  for (const auto& part : parts) {
    if (!text.empty()) text += separator;
    text += part;
  }
  return text;
}

// ---- groups hit -------------------------------------------------------------------------

/// The cost model times a group's in-domain and cross-domain phases apart, so either
/// changing counts.
[[nodiscard]] bool changed(const GroupLink& a, const GroupLink& b) {
  const bool intra_used = a.domains == 1 || a.ranks_per_domain > 1;
  return a.tier != b.tier || (intra_used && a.intra_gbps != b.intra_gbps) ||
         a.inter_gbps != b.inter_gbps;
}

void add_hit(const Cluster& healthy, const Cluster& degraded, const std::string& dimension,
             const std::vector<int>& gpus, std::set<std::vector<int>>& seen,
             std::vector<GroupHit>& hits) {
  if (gpus.size() < 2 || !seen.insert(gpus).second) return;
  GroupHit hit{.dimension = dimension,
               .gpus = gpus,
               .before = query_group(healthy, gpus),
               .after = {},
               .lost = false};
  const auto dead = dead_gpu_ids(degraded);
  hit.lost = std::any_of(gpus.begin(), gpus.end(),
                         [&](int g) { return std::binary_search(dead.begin(), dead.end(), g); });
  if (!hit.lost) hit.after = query_group(degraded, gpus);
  if (hit.lost || changed(hit.before, hit.after)) hits.push_back(std::move(hit));
}

/// Groups of the baseline (ranks = GPU ids) holding a GPU the failures reach, whose link
/// changed or which lost a member.
[[nodiscard]] std::vector<GroupHit> groups_hit(const Cluster& healthy, const Cluster& degraded,
                                               const PlanResult& plan,
                                               const std::vector<int>& reached) {
  const ParallelConfig& config = plan.config;
  const RankOrder order = plan.placement.order;
  std::vector<GroupHit> hits;
  std::set<std::vector<int>> seen;
  for (const int gpu : reached) {
    if (gpu >= config.gpus()) continue;
    add_hit(healthy, degraded, "tp", tp_group(config, order, gpu), seen, hits);
    const std::vector<int> stages = pp_group(config, order, gpu);
    const int stage = rank_coord(config, order, gpu).pp;
    for (const int lower : {stage - 1, stage}) {
      if (lower < 0 || lower + 1 >= config.pp) continue;
      add_hit(
          healthy, degraded, "pp",
          {stages[static_cast<std::size_t>(lower)], stages[static_cast<std::size_t>(lower) + 1]},
          seen, hits);
    }
    add_hit(healthy, degraded, "dp", dp_group(config, order, gpu), seen, hits);
    if (config.cp > 1) add_hit(healthy, degraded, "cp", cp_group(config, order, gpu), seen, hits);
    if (config.ep > 1) add_hit(healthy, degraded, "ep", ep_group(config, gpu), seen, hits);
  }
  return hits;
}

[[nodiscard]] std::string hit_text(const GroupHit& hit) {
  std::string dim = hit.dimension;
  for (char& ch : dim) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const std::string what =
      dim + (hit.dimension == "pp" ? " pair " : " group ") + gpu_range(hit.gpus);
  if (hit.lost) return what + " lost a GPU";
  const GroupLink& a = hit.before;
  const GroupLink& b = hit.after;
  if (a.domains > 1 && a.inter_gbps != b.inter_gbps) {
    return what + ": across servers " + gbps(a.inter_gbps) + " -> " + gbps(b.inter_gbps);
  }
  const std::string inside = a.domains > 1 ? "inside the server " : "";
  return what + ": " + inside + gbps(a.intra_gbps) + " -> " + gbps(b.intra_gbps) +
         (b.tier != a.tier ? " (" + std::string(to_string(b.tier)) + ")" : "");
}

// ---- the options ------------------------------------------------------------------------

struct Context {
  const Cluster& healthy;
  const Cluster& degraded;
  const Model& model;
  const SearchOptions& options;
  const Calibration* calibration;
  const WhatIf& w;
};

[[nodiscard]] WhatIfOption with_plan(WhatIfKind kind, PlanResult plan, int gpus,
                                     std::string detail) {
  WhatIfOption option;
  option.kind = kind;
  option.available = true;
  option.detail = std::move(detail);
  option.step_time_s = plan.estimate.time.step_s;
  option.plan = std::move(plan);
  option.gpus = gpus;
  return option;
}

[[nodiscard]] WhatIfOption unavailable(WhatIfKind kind, std::string why) {
  WhatIfOption option;
  option.kind = kind;
  option.detail = std::move(why);
  return option;
}

[[nodiscard]] std::string dead_text(const Cluster& degraded) {
  const auto dead = dead_gpu_ids(degraded);
  return std::to_string(dead.size()) + (dead.size() == 1 ? " GPU (" : " GPUs (") + gpu_range(dead) +
         ")";
}

[[nodiscard]] WhatIfOption keep_option(const Context& c) {
  const PlanResult& base = c.w.baseline;
  if (!dead_gpu_ids(c.degraded).empty()) {
    return unavailable(WhatIfKind::keep, "the plan has ranks on " + dead_text(c.degraded) +
                                             " that are dead: it cannot run as placed");
  }
  const Placement placement = place(c.degraded, base.config, base.placement.order);
  PlanResult plan{base.config,
                  placement,
                  estimate(c.degraded, c.model, base.config, placement, c.calibration,
                           estimate_options(c.options)),
                  {}};
  std::string detail = "same split on the same GPUs";
  if (c.w.groups_hit.empty()) detail += "; no group of this split crosses the failed part";
  for (std::size_t i = 0; i < c.w.groups_hit.size() && i < 3; ++i) {
    detail += (i == 0 ? "; " : ", ") + hit_text(c.w.groups_hit[i]);
  }
  if (c.w.groups_hit.size() > 3)
    detail += " and " + std::to_string(c.w.groups_hit.size() - 3) + " more";
  return with_plan(WhatIfKind::keep, std::move(plan), base.config.gpus(), detail);
}

/// Servers whose GPUs can be regrouped into other TP groups around a bad GPU or link.
[[nodiscard]] std::vector<int> regroupable_servers(const Context& c) {
  std::set<int> servers;
  for (const Failure& f : c.w.failures) {
    if (f.kind == FailureKind::nvlink || f.kind == FailureKind::nvlink_all ||
        f.kind == FailureKind::mesh_link) {
      servers.insert(f.server);
    }
  }
  return {servers.begin(), servers.end()};
}

[[nodiscard]] std::string no_regroup_reason(const Context& c, int tp) {
  const int per_server = c.healthy.gpus_per_server;
  const bool links = !regroupable_servers(c).empty();
  if (!links) {
    return "a GPU carries its traffic over its server's NICs whichever rank it holds: no layout "
           "of the same split avoids a NIC";
  }
  if (c.healthy.nvlink.domain_gpus != per_server || per_server > 8) {
    return "regrouping is tried only on servers of up to 8 GPUs that are one NVLink domain";
  }
  if (tp >= per_server) {
    return "TP " + std::to_string(tp) + " takes the whole server: there is no other grouping" +
           (c.healthy.nvlink.kind == NvlinkKind::mesh ? " (its ring already routes around the link)"
                                                      : "");
  }
  return "TP " + std::to_string(tp) + " does not split a server into groups (TP 2-" +
         std::to_string(per_server / 2) + " do)";
}

struct Regrouped {
  std::vector<int> gpu_of;
  PlanResult plan;
  std::vector<std::string> layout;  ///< per regrouped server: "server 1 TP groups [0 2 3 5] [..]"
};

[[nodiscard]] std::string groups_text(int server, const std::vector<int>& order, int tp) {
  std::string text = "server " + std::to_string(server) + " TP groups";
  for (std::size_t i = 0; i < order.size(); ++i) {
    text += (i % static_cast<std::size_t>(tp) == 0 ? " [" : " ") + std::to_string(order[i]);
    if ((i + 1) % static_cast<std::size_t>(tp) == 0) text += "]";
  }
  return text;
}

/// Tries every regrouping of each bad server's GPUs (one server at a time) for the baseline's
/// split and order; returns the fastest found, the identity when nothing beats it.
[[nodiscard]] Regrouped best_regrouping(const Context& c, const PlanResult& keep) {
  const PlanResult& base = c.w.baseline;
  const ParallelConfig& config = base.config;
  const int per_server = c.healthy.gpus_per_server;
  Regrouped best{std::vector<int>(static_cast<std::size_t>(config.gpus())), keep, {}};
  for (int r = 0; r < config.gpus(); ++r) best.gpu_of[static_cast<std::size_t>(r)] = r;
  for (const int server : regroupable_servers(c)) {
    const std::vector<int>* chosen = nullptr;
    std::vector<int> changed(static_cast<std::size_t>(per_server));
    for (int g = 0; g < per_server; ++g)
      changed[static_cast<std::size_t>(g)] = server * per_server + g;
    const auto candidates = regroupings(per_server, config.tp);
    for (const auto& order : candidates) {
      std::vector<int> gpu_of = best.gpu_of;
      for (int slot = 0; slot < per_server; ++slot) {
        gpu_of[static_cast<std::size_t>(server) * static_cast<std::size_t>(per_server) +
               static_cast<std::size_t>(slot)] =
            server * per_server + order[static_cast<std::size_t>(slot)];
      }
      const Placement placement =
          place_mapped(c.degraded, config, base.placement.order, gpu_of, changed, base.placement);
      PlanResult plan{config,
                      placement,
                      estimate(c.degraded, c.model, config, placement, c.calibration,
                               estimate_options(c.options)),
                      {}};
      if (plan.estimate.time.step_s < best.plan.estimate.time.step_s * (1 - kSameSpeed)) {
        best.gpu_of = gpu_of;
        best.plan = std::move(plan);
        chosen = &order;
      }
    }
    if (chosen != nullptr) best.layout.push_back(groups_text(server, *chosen, config.tp));
  }
  return best;
}

[[nodiscard]] WhatIfOption replace_option(const Context& c, const WhatIfOption& keep) {
  const ParallelConfig& config = c.w.baseline.config;
  const auto dead = dead_gpu_ids(c.degraded);
  if (!dead.empty()) {
    const int live = static_cast<int>(live_gpus(c.degraded).size());
    if (live < config.gpus()) {
      return unavailable(WhatIfKind::replace, "the split needs " + std::to_string(config.gpus()) +
                                                  " GPUs and " + std::to_string(live) +
                                                  " are left: no spare server to move the ranks "
                                                  "of " +
                                                  dead_text(c.degraded) + " to (the job uses all " +
                                                  std::to_string(c.healthy.servers) + ")");
    }
    PlanResult plan =
        evaluate_plan(c.degraded, c.model, config, c.calibration, estimate_options(c.options));
    return with_plan(WhatIfKind::replace, std::move(plan), config.gpus(),
                     "moves the ranks of " + dead_text(c.degraded) + " onto spare GPUs");
  }
  const int per_server = c.healthy.gpus_per_server;
  const bool can_regroup = !regroupable_servers(c).empty() && config.tp >= 2 &&
                           config.tp < per_server && c.healthy.nvlink.domain_gpus == per_server &&
                           per_server <= 8;
  if (!can_regroup) return unavailable(WhatIfKind::replace, no_regroup_reason(c, config.tp));
  Regrouped best = best_regrouping(c, *keep.plan);
  if (best.layout.empty()) {
    const bool switched = c.healthy.nvlink.kind == NvlinkKind::switch_fabric;
    return unavailable(WhatIfKind::replace,
                       switched ? "on an NVSwitch a group runs at its slowest member's links and "
                                  "every GPU is in some TP group: no regrouping of the same split "
                                  "avoids the bad GPU"
                                : "no regrouping of the bad server's GPUs into TP groups of " +
                                      std::to_string(config.tp) + " beats keeping the plan");
  }
  return with_plan(WhatIfKind::replace, std::move(best.plan), config.gpus(),
                   "same split, GPUs regrouped: " + join(best.layout, "; "));
}

/// Searches `cluster`; nullopt with `why` filled when no split exists or none fits.
[[nodiscard]] std::optional<PlanResult> best_plan(const Context& c, const Cluster& cluster,
                                                  std::string& why) {
  const int gpus = static_cast<int>(live_gpus(cluster).size());
  if (gpus == 0) {  // search() would divide by the zero GPUs (SIGFPE: every GPU cordoned)
    why = "no GPU is left";
    return std::nullopt;
  }
  try {
    SearchResult result = search(cluster, c.model, c.options, c.calibration);
    if (!result.plans.empty()) return result.plans.front();
    why = "no split of " + std::to_string(gpus) + " GPUs fits in memory";
  } catch (const PlanError&) {
    why = "no split of " + std::to_string(gpus) + " GPUs divides the model and batch";
  }
  return std::nullopt;
}

[[nodiscard]] WhatIfOption cordon_gpu_option(const Context& c) {
  Cluster cluster = c.healthy;
  std::vector<int> bad;
  for (const Failure& f : c.w.failures) {
    if (f.kind == FailureKind::nic || f.kind == FailureKind::server) {
      cluster = apply_failure(cluster, f);
      continue;
    }
    bad.push_back(f.server * c.healthy.gpus_per_server + f.gpu);  // a mesh link: its first GPU
  }
  if (bad.empty()) {
    return unavailable(WhatIfKind::cordon_gpu, "the failure is not on one GPU");
  }
  for (const int gpu : bad) cluster.health.dead_gpus.insert(gpu);
  std::string why;
  auto plan = best_plan(c, cluster, why);
  const int gpus = static_cast<int>(live_gpus(cluster).size());
  const std::string what = "takes GPU " + gpu_range(bad) + " out";
  if (!plan) return unavailable(WhatIfKind::cordon_gpu, what + ": " + why);
  return with_plan(WhatIfKind::cordon_gpu, std::move(*plan), gpus,
                   what + ", re-plans on " + std::to_string(gpus) + " GPUs");
}

[[nodiscard]] std::vector<int> live_servers(const Cluster& cluster) {
  std::vector<int> servers;
  for (int s = 0; s < cluster.servers; ++s) {
    if (cluster.health.dead_servers.count(s) == 0) servers.push_back(s);
  }
  return servers;
}

[[nodiscard]] WhatIfOption cordon_server_option(const Context& c) {
  Cluster cluster = c.healthy;
  std::set<int> bad;
  for (const Failure& f : c.w.failures) bad.insert(f.server);
  for (const int s : bad) cluster.health.dead_servers.insert(s);
  std::string list;
  for (const int s : bad) {
    if (!list.empty()) list += ',';
    list += std::to_string(s);
  }
  const std::string what = (bad.size() == 1 ? "takes server " : "takes servers ") + list + " out";
  std::string first_why;
  std::vector<int> left = live_servers(cluster);
  for (int spares = 0; !left.empty(); ++spares) {
    std::string why;
    auto plan = best_plan(c, cluster, why);
    if (spares == 0) first_why = why;
    const int gpus = static_cast<int>(left.size()) * c.healthy.gpus_per_server;
    if (plan) {
      WhatIfOption option = with_plan(WhatIfKind::cordon_server, std::move(*plan), gpus,
                                      what + spare_note(spares, first_why) + ": re-plans on " +
                                          std::to_string(left.size()) + " servers (" +
                                          std::to_string(gpus) + " GPUs)");
      option.spare_servers = spares;
      return option;
    }
    cluster.health.dead_servers.insert(left.back());  // set the highest-numbered one aside
    left.pop_back();
  }
  return unavailable(WhatIfKind::cordon_server,
                     what + ": " + first_why + " on any number of servers");
}

// ---- ranking and the recommendation -----------------------------------------------------

void rank_options(std::vector<WhatIfOption>& options) {
  std::stable_sort(options.begin(), options.end(),
                   [](const WhatIfOption& a, const WhatIfOption& b) {
                     if (a.available != b.available) return a.available;
                     return a.available && a.step_time_s < b.step_time_s * (1 - kSameSpeed);
                   });
}

[[nodiscard]] std::string why_clause(const WhatIfOption& best, const WhatIf& w) {
  const int before = w.baseline.config.gpus();
  switch (best.kind) {
    case WhatIfKind::keep:
      return w.groups_hit.empty() ? "no group of the plan uses the failed part"
                                  : "running at the pace of the degraded group costs less than "
                                    "giving up GPUs";
    case WhatIfKind::replace:
      return "it keeps all " + std::to_string(best.gpus) +
             " GPUs and takes the failure out of "
             "the slowest groups";
    case WhatIfKind::cordon_gpu:
    case WhatIfKind::cordon_server: {
      const std::string lost =
          std::to_string(before - best.gpus) + " of " + std::to_string(before) + " GPUs";
      const bool keep_runs = std::any_of(
          w.options.begin(), w.options.end(),
          [](const WhatIfOption& o) { return o.kind == WhatIfKind::keep && o.available; });
      if (!keep_runs) {
        return "the healthy plan cannot run without its dead GPUs and there is no spare, so it "
               "re-plans on what is left, giving up " +
               lost;
      }
      return "losing " + lost +
             " costs less than running every step at the pace of the degraded group";
    }
  }
  return "";
}

[[nodiscard]] std::string recommend(const WhatIf& w) {
  const WhatIfOption& best = w.options.front();
  if (!best.available) return "no option runs: " + best.detail;
  std::string text = std::string(to_string(best.kind)) + ": " + seconds(best.step_time_s) +
                     "/step (" + percent(best.slowdown) + " vs the healthy " +
                     seconds(w.baseline.estimate.time.step_s) + ")";
  std::string others;
  for (std::size_t i = 1; i < w.options.size(); ++i) {
    const WhatIfOption& o = w.options[i];
    if (!o.available) continue;
    others += (others.empty() ? " against " : ", ") + std::string(to_string(o.kind)) + " " +
              seconds(o.step_time_s) + " (" + percent(o.slowdown) + ")";
  }
  return text + others + "; " + why_clause(best, w);
}

}  // namespace

WhatIf what_if(const Cluster& healthy, const Model& model, const std::vector<Failure>& failures,
               const SearchOptions& options, const Calibration* calibration) {
  WhatIf w;
  w.failures = failures;
  w.degraded = apply_failures(healthy, failures);
  for (const Failure& f : failures) w.described.push_back(describe(f, w.degraded));
  SearchResult healthy_result = search(healthy, model, options, calibration);
  if (healthy_result.plans.empty()) {
    throw PlanError("no plan fits the healthy cluster: nothing to compare the failures with");
  }
  w.baseline = healthy_result.plans.front();
  w.groups_hit = groups_hit(healthy, w.degraded, w.baseline, failure_gpus(healthy, failures));
  const Context c{healthy, w.degraded, model, options, calibration, w};
  WhatIfOption keep = keep_option(c);
  WhatIfOption replace = replace_option(c, keep);
  w.options = {std::move(keep), std::move(replace), cordon_gpu_option(c), cordon_server_option(c)};
  for (WhatIfOption& o : w.options) {
    if (o.available) o.slowdown = o.step_time_s / w.baseline.estimate.time.step_s - 1.0;
  }
  rank_options(w.options);
  w.reason = recommend(w);
  return w;
}

}  // namespace trident
