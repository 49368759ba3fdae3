// Placement with an arbitrary rank -> GPU map, regroupings of a server's GPUs, and the GPUs
// a failure reaches (planner/whatif.h).
#include <algorithm>
#include <functional>
#include <set>

#include "costmodel/collective.h"
#include "costmodel/placement.h"
#include "planner/layout.h"
#include "planner/whatif.h"

namespace trident {

std::vector<int> failure_gpus(const Cluster& cluster, const std::vector<Failure>& failures) {
  std::set<int> gpus;
  const int per_server = cluster.gpus_per_server;
  for (const Failure& f : failures) {
    const int first = f.server * per_server;
    switch (f.kind) {
      case FailureKind::nvlink:
      case FailureKind::nvlink_all:
      case FailureKind::gpu:
        gpus.insert(first + f.gpu);
        break;
      case FailureKind::mesh_link:
        gpus.insert(first + f.gpu);
        gpus.insert(first + f.peer);
        break;
      case FailureKind::nic:
      case FailureKind::server:
        for (int g = 0; g < per_server; ++g) gpus.insert(first + g);
        break;
    }
  }
  return {gpus.begin(), gpus.end()};
}

namespace {

/// Keeps the slowest link offered for one dimension.
class Slowest {
 public:
  explicit Slowest(Collective collective) : collective_(collective) {}
  void offer(const GroupLink& link) {
    if (!seen_ || slower_link(link_, link, collective_)) link_ = link;
    seen_ = true;
  }
  [[nodiscard]] GroupLink link_or(const GroupLink& fallback) const {
    return seen_ ? link_ : fallback;
  }

 private:
  Collective collective_;
  GroupLink link_;
  bool seen_ = false;
};

[[nodiscard]] std::vector<int> on_gpus(const std::vector<int>& ranks,
                                       const std::vector<int>& gpu_of) {
  std::vector<int> gpus;
  gpus.reserve(ranks.size());
  for (const int rank : ranks) gpus.push_back(gpu_of[static_cast<std::size_t>(rank)]);
  return gpus;
}

/// Offers every group of one dimension (TP or DP) that holds `rank`, once per group.
void offer_group(const Cluster& cluster, const std::vector<int>& ranks,
                 const std::vector<int>& gpu_of, std::set<int>& seen, Slowest& slowest) {
  if (ranks.size() < 2 || !seen.insert(ranks.front()).second) return;
  slowest.offer(query_group(cluster, on_gpus(ranks, gpu_of)));
}

/// Offers the pairs of neighbouring pipeline stages that hold `rank`.
void offer_pp_pairs(const Cluster& cluster, const ParallelConfig& config, RankOrder order, int rank,
                    const std::vector<int>& gpu_of, std::set<int>& seen, Slowest& slowest) {
  if (config.pp < 2) return;
  const std::vector<int> stages = pp_group(config, order, rank);
  const int stage = rank_coord(config, order, rank).pp;
  for (const int lower : {stage - 1, stage}) {
    if (lower < 0 || lower + 1 >= config.pp) continue;
    const std::vector<int> pair{stages[static_cast<std::size_t>(lower)],
                                stages[static_cast<std::size_t>(lower) + 1]};
    if (!seen.insert(pair.front()).second) continue;
    slowest.offer(query_group(cluster, on_gpus(pair, gpu_of)));
  }
}

}  // namespace

Placement place_mapped(const Cluster& cluster, const ParallelConfig& config, RankOrder order,
                       const std::vector<int>& gpu_of, const std::vector<int>& changed,
                       const Placement& base) {
  std::vector<char> is_changed(static_cast<std::size_t>(cluster.gpus()), 0);
  for (const int gpu : changed) is_changed[static_cast<std::size_t>(gpu)] = 1;
  const bool everything = static_cast<int>(changed.size()) >= cluster.gpus();
  Slowest tp(Collective::all_reduce);
  Slowest pp(Collective::send_recv);
  Slowest dp(Collective::all_reduce);
  Slowest cp(Collective::send_recv);
  Slowest ep(Collective::all_to_all);
  Slowest edp(Collective::all_reduce);
  Slowest shard(Collective::all_gather);
  Slowest replicate(Collective::all_reduce);
  if (!everything) {
    tp.offer(base.tp);
    pp.offer(base.pp);
    dp.offer(base.dp);
    cp.offer(base.cp);
    ep.offer(base.ep);
    edp.offer(base.edp);
    shard.offer(base.shard);
    replicate.offer(base.replicate);
  }
  std::set<int> seen_tp;
  std::set<int> seen_pp;
  std::set<int> seen_dp;
  std::set<int> seen_cp;
  std::set<int> seen_ep;
  std::set<int> seen_edp;
  std::set<int> seen_shard;
  std::set<int> seen_replicate;
  const bool hybrid = config.hybrid_shard();
  for (int rank = 0; rank < config.gpus(); ++rank) {
    if (is_changed[static_cast<std::size_t>(gpu_of[static_cast<std::size_t>(rank)])] == 0) continue;
    offer_group(cluster, tp_group(config, order, rank), gpu_of, seen_tp, tp);
    // Gradients reduce over DP x CP (costmodel/placement.h).
    offer_group(cluster, dp_cp_group(config, order, rank), gpu_of, seen_dp, dp);
    offer_pp_pairs(cluster, config, order, rank, gpu_of, seen_pp, pp);
    if (config.cp > 1) offer_group(cluster, cp_group(config, order, rank), gpu_of, seen_cp, cp);
    if (config.ep > 1) {
      offer_group(cluster, ep_group(config, rank), gpu_of, seen_ep, ep);
      offer_group(cluster, edp_group(config, rank), gpu_of, seen_edp, edp);
    }
    if (hybrid) {
      offer_group(cluster, dp_shard_group(config, order, rank), gpu_of, seen_shard, shard);
      offer_group(cluster, dp_replicate_group(config, order, rank), gpu_of, seen_replicate,
                  replicate);
    }
  }
  Placement out;
  out.order = order;
  out.tp = config.tp < 2 ? base.tp : tp.link_or(base.tp);
  out.pp = config.pp < 2 ? base.pp : pp.link_or(base.pp);
  out.dp = config.dp * config.cp < 2 ? base.dp : dp.link_or(base.dp);
  out.cp = config.cp < 2 ? base.cp : cp.link_or(base.cp);
  out.ep = config.ep < 2 ? base.ep : ep.link_or(base.ep);
  out.edp = config.ep < 2 ? out.dp : edp.link_or(base.edp);
  out.shard = hybrid ? shard.link_or(base.shard) : base.shard;
  out.replicate = hybrid ? replicate.link_or(base.replicate) : base.replicate;
  out.amax = base.amax;  // a few bytes over the same span of domains (layout.cpp amax_link)
  return out;
}

std::vector<std::vector<int>> regroupings(int n, int size) {
  std::vector<std::vector<int>> out;
  if (n > 8 || size < 1 || n % size != 0) return out;
  std::vector<int> order;
  std::vector<char> used(static_cast<std::size_t>(n), 0);
  // Fills groups one at a time: each group starts at the smallest unused GPU and takes
  // `size - 1` larger unused ones in ascending order, so every split is produced once.
  std::function<void(int, int)> fill = [&](int in_group, int last) {
    if (static_cast<int>(order.size()) == n) {
      out.push_back(order);
      return;
    }
    if (in_group == size) return fill(0, -1);
    for (int g = in_group == 0 ? 0 : last + 1; g < n; ++g) {
      if (used[static_cast<std::size_t>(g)] != 0) continue;
      used[static_cast<std::size_t>(g)] = 1;
      order.push_back(g);
      fill(in_group + 1, g);
      order.pop_back();
      used[static_cast<std::size_t>(g)] = 0;
      if (in_group == 0) break;  // a group starts at the smallest unused GPU
    }
  };
  fill(0, -1);
  return out;
}

}  // namespace trident
