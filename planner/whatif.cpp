// The failure what-if: keep, re-place, cordon a GPU, cordon a server (planner/whatif.h).
#include "planner/whatif.h"

#include <algorithm>
#include <map>
#include <numeric>
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

/// cordon-server: server counts searched below the first that runs (a search each).
constexpr int kMaxFewerCounts = 16;

// ---- groups hit -------------------------------------------------------------------------

/// The cost model times a group's in-domain and cross-domain phases apart, so either
/// changing counts.
[[nodiscard]] bool changed(const GroupLink& a, const GroupLink& b) {
  const bool intra_used = a.domains == 1 || a.ranks_per_domain > 1;
  return a.tier != b.tier || (intra_used && a.intra_gbps != b.intra_gbps) ||
         a.inter_gbps != b.inter_gbps;
}

/// The groups a failure reaches, each once: its links before and after, or lost.
struct HitScan {
  const Cluster& healthy;
  const Cluster& degraded;
  std::vector<int> dead;  ///< sorted, listed once per scan (not per group: 2,000 dead servers)
  std::set<std::vector<int>> seen;
  std::vector<GroupHit> hits;
  int unchanged = 0;  ///< groups reached whose links keep their rates

  void add(const std::string& dimension, const std::vector<int>& gpus) {
    if (gpus.size() < 2 || !seen.insert(gpus).second) return;
    GroupHit hit{.dimension = dimension,
                 .gpus = gpus,
                 .before = query_group(healthy, gpus),
                 .after = {},
                 .lost = false};
    hit.lost = std::any_of(gpus.begin(), gpus.end(),
                           [&](int g) { return std::binary_search(dead.begin(), dead.end(), g); });
    if (!hit.lost) hit.after = query_group(degraded, gpus);
    if (hit.lost || changed(hit.before, hit.after)) {
      hits.push_back(std::move(hit));
    } else {
      ++unchanged;
    }
  }
};

/// Groups of the baseline (ranks = GPU ids) holding a GPU the failures reach, whose link
/// changed or which lost a member, and the count of those it reaches at the same rates.
[[nodiscard]] HitScan groups_hit(const Cluster& healthy, const Cluster& degraded,
                                 const PlanResult& plan, const std::vector<int>& reached) {
  const ParallelConfig& config = plan.config;
  const RankOrder order = plan.placement.order;
  HitScan scan{healthy, degraded, dead_gpu_ids(degraded), {}, {}};
  for (const int gpu : reached) {
    if (gpu >= config.gpus()) continue;
    scan.add("tp", tp_group(config, order, gpu));
    const std::vector<int> stages = pp_group(config, order, gpu);
    const int stage = rank_coord(config, order, gpu).pp;
    for (const int lower : {stage - 1, stage}) {
      if (lower < 0 || lower + 1 >= config.pp) continue;
      scan.add("pp", {stages[static_cast<std::size_t>(lower)],
                      stages[static_cast<std::size_t>(lower) + 1]});
    }
    if (config.hybrid_shard()) {  // HSDP: the shard group and the replicas, each its own ring
      scan.add("dp shard", dp_shard_group(config, order, gpu));
      scan.add("dp replica", dp_replicate_group(config, order, gpu));
    } else {
      // Gradients reduce over DP x CP: the group the plan's `dp` link and traffic price.
      scan.add("dp", dp_cp_group(config, order, gpu));
    }
    if (config.cp > 1) scan.add("cp", cp_group(config, order, gpu));
    if (config.ep > 1) scan.add("ep", ep_group(config, gpu));
  }
  return scan;
}

// ---- the options ------------------------------------------------------------------------

struct Context {
  const Cluster& healthy;
  const Cluster& degraded;
  const Model& model;
  const SearchOptions& options;
  const Calibration* calibration;
  const WhatIf& w;
  SearchResult& searched;  ///< every search's counters, summed
};

/// Adds one search's counters to `total` (its plans are not kept).
void add_counts(SearchResult& total, const SearchResult& one) {
  total.configurations_searched += one.configurations_searched;
  total.feasible += one.feasible;
  total.tight += one.tight;
  total.does_not_fit += one.does_not_fit;
  total.evaluations += one.evaluations;
  total.placements += one.placements;
}

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

/// Index of GPU `slot` of `server` (servers of `n` GPUs) in a rank -> GPU map.
[[nodiscard]] std::size_t slot_index(int server, int n, int slot) {
  return static_cast<std::size_t>(server) * static_cast<std::size_t>(n) +
         static_cast<std::size_t>(slot);
}

/// What a server's failures look like from inside it (local GPU indexes): servers alike regroup
/// alike.
[[nodiscard]] std::vector<int> failure_pattern(const Cluster& c, int server,
                                               const PlanResult& base) {
  const int n = c.gpus_per_server;
  const int first = server * n;
  std::vector<int> pattern;
  // Servers alike only when their ranks sit alike too: each slot's TP and CP coordinate and
  // whether its stage is the first, a middle or the last (servers of a split whose TP x DP is
  // no multiple of the server hold different mixes of stages).
  const ParallelConfig& config = base.config;
  for (int slot = 0; slot < n && first + slot < config.gpus(); ++slot) {
    const RankCoord coord = rank_coord(config, base.placement.order, first + slot);
    const int role = coord.pp == 0 ? 0 : coord.pp == config.pp - 1 ? 2 : 1;
    pattern.insert(pattern.end(), {coord.tp, coord.cp, role});
  }
  for (const auto& [a, b] : c.health.dead_mesh_links) {
    if (a >= first && a < first + n) pattern.insert(pattern.end(), {a - first, b - first});
  }
  for (int g = 0; g < n; ++g) {
    const auto down = c.health.nvlinks_down.find(first + g);
    pattern.push_back(down == c.health.nvlinks_down.end() ? 0 : down->second);
  }
  const auto nics = c.health.nics_down.find(server);
  pattern.push_back(nics == c.health.nics_down.end() ? 0 : nics->second);
  return pattern;
}

/// The best regrouping of one bad server, judged alone: every other server as built, so the
/// step compares this server's groups only (the slowest group elsewhere would hide any gain
/// when several servers are bad). nullptr when none beats the identity.
[[nodiscard]] const std::vector<int>* best_order_alone(
    const Context& c, int server, const std::vector<std::vector<int>>& orders) {
  const PlanResult& base = c.w.baseline;
  const ParallelConfig& config = base.config;
  const int n = c.healthy.gpus_per_server;
  std::vector<int> gpu_of(static_cast<std::size_t>(config.gpus()));
  std::iota(gpu_of.begin(), gpu_of.end(), 0);
  std::vector<int> changed(static_cast<std::size_t>(n));
  std::iota(changed.begin(), changed.end(), server * n);
  const std::vector<int>* chosen = nullptr;
  double best_s = 0.0;
  for (const auto& order : orders) {
    for (int slot = 0; slot < n; ++slot) {
      gpu_of[slot_index(server, n, slot)] = server * n + order[static_cast<std::size_t>(slot)];
    }
    const Placement placement =
        place_mapped(c.degraded, config, base.placement.order, gpu_of, changed, base.placement);
    const double step_s =
        estimate(c.degraded, c.model, config, placement, c.calibration, estimate_options(c.options))
            .time.step_s;
    if (chosen == nullptr || step_s < best_s * (1 - kSameSpeed)) {  // the identity comes first
      chosen = &order;
      best_s = step_s;
    }
  }
  return chosen == &orders.front() ? nullptr : chosen;
}

/// Each bad server regrouped as is best for it alone (servers whose failures look alike share
/// the search), then the whole plan priced once on the degraded cluster: every group a failure
/// reaches (a NIC of another server too) or a regrouping moves is priced there, only the groups
/// none touches keep the healthy links. The identity (keep) when nothing beats it.
[[nodiscard]] Regrouped best_regrouping(const Context& c, const PlanResult& keep) {
  const PlanResult& base = c.w.baseline;
  const ParallelConfig& config = base.config;
  const int n = c.healthy.gpus_per_server;
  Regrouped best{std::vector<int>(static_cast<std::size_t>(config.gpus())), keep, {}};
  std::iota(best.gpu_of.begin(), best.gpu_of.end(), 0);
  const std::vector<int> servers = regroupable_servers(c);
  const auto orders = regroupings(n, config.tp);
  if (orders.empty()) return best;
  std::map<std::vector<int>, const std::vector<int>*> by_pattern;
  std::vector<int> changed = failure_gpus(c.healthy, c.w.failures);
  for (const int server : servers) {
    const auto [at, fresh] =
        by_pattern.try_emplace(failure_pattern(c.degraded, server, base), nullptr);
    if (fresh) at->second = best_order_alone(c, server, orders);
    if (at->second == nullptr) continue;
    const std::vector<int>& order = *at->second;
    for (int slot = 0; slot < n; ++slot) {
      best.gpu_of[slot_index(server, n, slot)] = server * n + order[static_cast<std::size_t>(slot)];
      changed.push_back(server * n + slot);
    }
    best.layout.push_back({server, order});
  }
  if (best.layout.empty()) return best;
  // place_mapped prices every group itself when `changed` lists every GPU (by its length): a
  // failed GPU of a regrouped server must count once.
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  const Placement placement =
      place_mapped(c.degraded, config, base.placement.order, best.gpu_of, changed, base.placement);
  PlanResult plan{
      config,
      placement,
      estimate(c.degraded, c.model, config, placement, c.calibration, estimate_options(c.options)),
      {}};
  if (!(plan.estimate.time.step_s < keep.estimate.time.step_s * (1 - kSameSpeed))) {
    best.layout.clear();  // together they do not beat keeping the plan
    return best;
  }
  best.plan = plan;
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
  // On an NVSwitch every GPU sits in some group of each dimension whatever the grouping, and a
  // group runs at its slowest member's links (and the server's NIC share is every GPU's): no
  // regrouping of the same split beats keeping it, so none is tried (trying them all cost
  // minutes for 100 failed GPUs on 131,072).
  if (c.healthy.nvlink.kind == NvlinkKind::switch_fabric) {
    return unavailable(WhatIfKind::replace, OptionNote::switch_no_gain);
  }
  Regrouped best = best_regrouping(c, *keep.plan);
  if (best.layout.empty()) return unavailable(WhatIfKind::replace, OptionNote::no_better_grouping);
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
    add_counts(c.searched, result);
    outcome.result = result.plans.empty() ? Replan::no_fit : Replan::runs;
    if (!result.plans.empty()) return result.plans.front();
  } catch (const PlanError&) {
    outcome.result = Replan::no_split;
    const SearchOptions& o = c.options;
    outcome.pinned = o.tp || o.pp || o.dp || o.cp;
    if (const auto need = pinned_gpus(o); need && *need > outcome.gpus) {
      outcome.pinned_gpus = *need;
    }
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
  std::sort(bad.begin(), bad.end());  // two specs on one GPU (links that add up): it goes once
  bad.erase(std::unique(bad.begin(), bad.end()), bad.end());
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

/// The plan to keep of one on more servers (`chosen`) and one on fewer (`fewer`): fewer GPUs
/// only when faster by more than the stack's measured error band (a gain inside it is not worth
/// servers).
[[nodiscard]] bool fewer_servers_win(const PlanResult& chosen, const PlanResult& fewer) {
  return fewer.estimate.time.step_s < chosen.estimate.time.step_s &&
         !tied_with_leader(fewer, chosen);
}

/// The cluster a cordon-server search prices: `cluster` has whole servers out and nothing else
/// broken (every failure is on a cordoned server). Where each NVLink domain lies inside one
/// server the live servers are alike and interchangeable, so the same number of healthy
/// servers prices every split as they do, and the search walks one period per group instead
/// of every group around the gaps (64 server counts on 131,072 GPUs: 2.5 s -> see bench).
/// A cluster whose jobs take rack-scale domains in segments (GB200 NVL72, job_segments): the
/// re-plan is a new job on the live servers, which its launcher segments for its own server
/// count, as `plan --gpus N` prices it; the dead server and the spares set aside are the ones
/// the scheduler leaves out. Other multi-server domains (racks filled in order) lose GPUs with
/// a server: priced as they are.
[[nodiscard]] Cluster priced_as(const Cluster& cluster, int live_servers) {
  const bool domain_in_server = cluster.nvlink.domain_gpus <= cluster.gpus_per_server &&
                                cluster.gpus_per_server % cluster.nvlink.domain_gpus == 0;
  if (!domain_in_server && !cluster.nvlink.job_segments) return cluster;
  Cluster compact = cluster;
  compact.servers = live_servers;
  compact.health = {};
  return in_job_segments(compact);
}

[[nodiscard]] WhatIfOption cordon_server_option(const Context& c) {
  Cluster cluster = c.healthy;
  std::set<int> bad;
  for (const Failure& f : c.w.failures) bad.insert(f.server);
  for (const int s : bad) cluster.health.dead_servers.insert(s);
  ReplanOutcome first;
  std::vector<int> left = live_servers(cluster);
  // Every server cordoned (a one-server job): nothing to search, and the option says why.
  if (left.empty()) first.result = Replan::no_gpu_left;
  const std::size_t fewest = (left.size() + 1) / 2;  // at least half the live servers run
  WhatIfOption option = unavailable(WhatIfKind::cordon_server, OptionNote::cordoned);
  ServerCountScan scan;
  // Below the first count that runs, at most kMaxFewerCounts more are searched (each is a
  // whole search: 596 counts of GPT-3 with a batch of 16M sequences took 34 s).
  int fewer_searched = 0;
  const auto scanning = [&] {
    if (left.empty()) return false;
    if (!option.available) return true;
    return left.size() >= fewest && fewer_searched < kMaxFewerCounts;
  };
  for (int spares = 0; scanning(); ++spares) {
    const int gpus = static_cast<int>(left.size()) * c.healthy.gpus_per_server;
    // A server count with no split at all is set aside at once: a search per server (each
    // walks every GPU) made this loop quadratic in the cluster on a batch that divides few
    // GPU counts. The first count is searched regardless, for its outcome.
    if (spares == 0 || has_split(gpus, c.model, c.options)) {
      if (option.available) ++fewer_searched;
      ReplanOutcome outcome;
      auto plan = best_plan(c, priced_as(cluster, static_cast<int>(left.size())), outcome);
      if (spares == 0) first = outcome;
      ++scan.counts_searched;
      scan.lowest_count = static_cast<int>(left.size());
      if (plan && scan.most_servers == 0) {
        scan.most_servers = static_cast<int>(left.size());
        scan.most_servers_step_s = plan->estimate.time.step_s;
      }
      if (plan && (!option.available || fewer_servers_win(*option.plan, *plan))) {
        option = with_plan(WhatIfKind::cordon_server, *plan, gpus, OptionNote::cordoned);
        option.cluster = cluster;
        option.servers = static_cast<int>(left.size());
        option.spare_servers = spares;
      }
    }
    cluster.health.dead_servers.insert(left.back());  // set the highest-numbered one aside
    left.pop_back();
  }
  option.cordoned.assign(bad.begin(), bad.end());
  option.replan = first;
  option.scan = scan;
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
  HitScan scan = groups_hit(healthy, w.degraded, w.baseline, failure_gpus(healthy, failures));
  w.groups_hit = std::move(scan.hits);
  w.groups_unchanged = scan.unchanged;
  SearchResult searched;
  add_counts(searched, healthy_result);
  const Context c{healthy, w.degraded, model, options, calibration, w, searched};
  WhatIfOption keep = keep_option(c);
  WhatIfOption replace = replace_option(c, keep);
  w.options = {std::move(keep), std::move(replace), cordon_gpu_option(c), cordon_server_option(c)};
  for (WhatIfOption& o : w.options) {
    if (o.available) o.slowdown = o.step_time_s / w.baseline.estimate.time.step_s - 1.0;
  }
  rank_options(w.options);
  w.searched = searched;
  return w;
}

}  // namespace trident
