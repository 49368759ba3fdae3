// The failure what-if: keep, re-place, cordon a GPU, cordon a server (planner/whatif.h).
#include "planner/whatif.h"

#include <algorithm>
#include <set>

#include "costmodel/placement.h"
#include "costmodel/precision.h"
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

/// Relative step-time difference below which two options count as equally fast.
constexpr double kSameSpeed = 1e-9;

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
    if (config.hybrid_shard()) {  // HSDP: the shard group and the replicas, each its own ring
      add_hit(healthy, degraded, "dp shard", dp_shard_group(config, order, gpu), seen, hits);
      add_hit(healthy, degraded, "dp replica", dp_replicate_group(config, order, gpu), seen, hits);
    } else {
      add_hit(healthy, degraded, "dp", dp_group(config, order, gpu), seen, hits);
    }
    if (config.cp > 1) add_hit(healthy, degraded, "cp", cp_group(config, order, gpu), seen, hits);
    if (config.ep > 1) add_hit(healthy, degraded, "ep", ep_group(config, gpu), seen, hits);
  }
  return hits;
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

[[nodiscard]] WhatIfOption with_plan(WhatIfKind kind, const PlanResult& plan, int gpus,
                                     OptionNote note) {
  WhatIfOption option;
  option.kind = kind;
  option.available = true;
  option.note = note;
  option.step_time_s = plan.estimate.time.step_s;
  option.plan = plan;
  option.gpus = gpus;
  return option;
}

[[nodiscard]] WhatIfOption unavailable(WhatIfKind kind, OptionNote why) {
  WhatIfOption option;
  option.kind = kind;
  option.note = why;
  return option;
}

[[nodiscard]] WhatIfOption keep_option(const Context& c) {
  const PlanResult& base = c.w.baseline;
  if (!dead_gpu_ids(c.degraded).empty()) {
    return unavailable(WhatIfKind::keep, OptionNote::ranks_on_dead);
  }
  const Placement placement =
      place(c.degraded, base.config, base.placement.order, reduces_amax(c.model.training));
  PlanResult plan{base.config,
                  placement,
                  estimate(c.degraded, c.model, base.config, placement, c.calibration,
                           estimate_options(c.options)),
                  {}};
  WhatIfOption option =
      with_plan(WhatIfKind::keep, plan, base.config.gpus(), OptionNote::same_gpus);
  option.cluster = c.degraded;
  return option;
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

[[nodiscard]] OptionNote no_regroup_reason(const Context& c, int tp) {
  const int per_server = c.healthy.gpus_per_server;
  if (regroupable_servers(c).empty()) return OptionNote::nic_only;
  if (c.healthy.nvlink.domain_gpus != per_server || per_server > 8) {
    return OptionNote::not_one_domain;
  }
  return tp >= per_server ? OptionNote::tp_whole_server : OptionNote::tp_no_split;
}

struct Regrouped {
  std::vector<int> gpu_of;
  PlanResult plan;
  std::vector<Regrouping> layout;  ///< the servers regrouped
};

/// Tries every regrouping of each bad server's GPUs (one server at a time) for the baseline's
/// split and order; returns the fastest found, the identity when nothing beats it.
[[nodiscard]] Regrouped best_regrouping(const Context& c, const PlanResult& keep) {
  const PlanResult& base = c.w.baseline;
  const ParallelConfig& config = base.config;
  const int per_server = c.healthy.gpus_per_server;
  Regrouped best{std::vector<int>(static_cast<std::size_t>(config.gpus())), keep, {}};
  for (int r = 0; r < config.gpus(); ++r) best.gpu_of[static_cast<std::size_t>(r)] = r;
  // Every group a failure reaches (a NIC of another server too), or a regrouping can move, is
  // priced on the degraded cluster; only the groups none touches keep the healthy links.
  const std::vector<int> servers = regroupable_servers(c);
  std::vector<int> changed = failure_gpus(c.healthy, c.w.failures);
  for (const int server : servers) {
    for (int g = 0; g < per_server; ++g) changed.push_back(server * per_server + g);
  }
  for (const int server : servers) {
    const std::vector<int>* chosen = nullptr;
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
        best.plan = plan;
        chosen = &order;
      }
    }
    if (chosen != nullptr) best.layout.push_back({server, *chosen});
  }
  return best;
}

[[nodiscard]] WhatIfOption replace_option(const Context& c, const WhatIfOption& keep) {
  const ParallelConfig& config = c.w.baseline.config;
  if (!dead_gpu_ids(c.degraded).empty()) {
    const int live = static_cast<int>(live_gpus(c.degraded).size());
    if (live < config.gpus()) return unavailable(WhatIfKind::replace, OptionNote::no_spare);
    PlanResult plan =
        evaluate_plan(c.degraded, c.model, config, c.calibration, estimate_options(c.options));
    WhatIfOption option =
        with_plan(WhatIfKind::replace, plan, config.gpus(), OptionNote::onto_spares);
    option.cluster = c.degraded;
    return option;
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
                       switched ? OptionNote::switch_no_gain : OptionNote::no_better_grouping);
  }
  WhatIfOption option =
      with_plan(WhatIfKind::replace, best.plan, config.gpus(), OptionNote::regrouped);
  option.regrouped = std::move(best.layout);
  option.cluster = c.degraded;
  return option;
}

/// Searches `cluster`; nullopt with `outcome` saying why when no split exists or none fits.
[[nodiscard]] std::optional<PlanResult> best_plan(const Context& c, const Cluster& cluster,
                                                  ReplanOutcome& outcome) {
  outcome.gpus = static_cast<int>(live_gpus(cluster).size());
  if (outcome.gpus == 0) {  // search() would divide by the zero GPUs (SIGFPE: all cordoned)
    outcome.result = Replan::no_gpu_left;
    return std::nullopt;
  }
  try {
    SearchResult result = search(cluster, c.model, c.options, c.calibration);
    outcome.result = result.plans.empty() ? Replan::no_fit : Replan::runs;
    if (!result.plans.empty()) return result.plans.front();
  } catch (const PlanError&) {
    outcome.result = Replan::no_split;
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
  if (bad.empty()) return unavailable(WhatIfKind::cordon_gpu, OptionNote::not_one_gpu);
  for (const int gpu : bad) cluster.health.dead_gpus.insert(gpu);
  ReplanOutcome outcome;
  auto plan = best_plan(c, cluster, outcome);
  const int gpus = static_cast<int>(live_gpus(cluster).size());
  WhatIfOption option = plan ? with_plan(WhatIfKind::cordon_gpu, *plan, gpus, OptionNote::cordoned)
                             : unavailable(WhatIfKind::cordon_gpu, OptionNote::cordoned);
  if (plan) option.cluster = cluster;
  option.cordoned = std::move(bad);
  option.replan = outcome;
  return option;
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
  ReplanOutcome first;
  std::vector<int> left = live_servers(cluster);
  WhatIfOption option = unavailable(WhatIfKind::cordon_server, OptionNote::cordoned);
  for (int spares = 0; !left.empty(); ++spares) {
    const int gpus = static_cast<int>(left.size()) * c.healthy.gpus_per_server;
    // A server count with no split at all is set aside at once: a search per server (each
    // walks every GPU) made this loop quadratic in the cluster on a batch that divides few
    // GPU counts. The first count is searched regardless, for its outcome.
    if (spares > 0 && !has_split(gpus, c.model, c.options)) {
      cluster.health.dead_servers.insert(left.back());
      left.pop_back();
      continue;
    }
    ReplanOutcome outcome;
    auto plan = best_plan(c, cluster, outcome);
    if (spares == 0) first = outcome;
    if (plan) {
      option = with_plan(WhatIfKind::cordon_server, *plan, gpus, OptionNote::cordoned);
      option.cluster = cluster;
      option.servers = static_cast<int>(left.size());
      option.spare_servers = spares;
      break;
    }
    cluster.health.dead_servers.insert(left.back());  // set the highest-numbered one aside
    left.pop_back();
  }
  option.cordoned.assign(bad.begin(), bad.end());
  option.replan = first;
  return option;
}

// ---- ranking ----------------------------------------------------------------------------

void rank_options(std::vector<WhatIfOption>& options) {
  std::stable_sort(options.begin(), options.end(),
                   [](const WhatIfOption& a, const WhatIfOption& b) {
                     if (a.available != b.available) return a.available;
                     return a.available && a.step_time_s < b.step_time_s * (1 - kSameSpeed);
                   });
}

}  // namespace

WhatIf what_if(const Cluster& healthy, const Model& model, const std::vector<Failure>& failures,
               const SearchOptions& options, const Calibration* calibration) {
  WhatIf w;
  w.failures = failures;
  w.degraded = apply_failures(healthy, failures);
  SearchResult healthy_result = search(healthy, model, options, calibration);
  if (healthy_result.plans.empty()) {
    throw NoHealthyPlanError();
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
  return w;
}

}  // namespace trident
