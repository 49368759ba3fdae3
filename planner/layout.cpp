// Rank placement: which GPUs form each TP/PP/DP group and the slowest group's link.
#include "planner/layout.h"

#include <map>
#include <numeric>
#include <tuple>

#include "costmodel/collective.h"
#include "topology/errors.h"

namespace trident {

namespace {

/// One dimension's groups: `size` members `stride` ranks apart; group bases are the ranks
/// whose coordinate in this dimension is 0. For PP (`pairs`) the "group" is a pair of
/// neighbours.
using Dimension = Placer::Groups;

/// GPUs that cannot take part in a group without being queried individually.
std::vector<char> touched_gpus(const Cluster& cluster) {
  std::vector<char> touched(static_cast<std::size_t>(cluster.gpus()), 0);
  const auto& health = cluster.health;
  for (const auto& [gpu, links] : health.nvlinks_down) touched[static_cast<std::size_t>(gpu)] = 1;
  for (const auto& [a, b] : health.dead_mesh_links) {
    touched[static_cast<std::size_t>(a)] = 1;
    touched[static_cast<std::size_t>(b)] = 1;
  }
  for (const auto& [server, nics] : health.nics_down) {
    for (int local = 0; local < cluster.gpus_per_server; ++local) {
      touched[static_cast<std::size_t>(server) * static_cast<std::size_t>(cluster.gpus_per_server) +
              static_cast<std::size_t>(local)] = 1;
    }
  }
  return touched;
}

/// Translating every GPU id by a multiple of this period maps a healthy cluster onto itself
/// (same local index in its server and in its NVLink domain).
int translation_period(const Cluster& cluster) {
  return std::lcm(cluster.nvlink.domain_gpus, cluster.gpus_per_server);
}

/// Keeps the slowest link seen.
class Slowest {
 public:
  explicit Slowest(Collective collective) : collective_(collective) {}
  void offer(const GroupLink& link) {
    if (!seen_ || slower_link(slowest_, link, collective_)) slowest_ = link;
    seen_ = true;
  }
  [[nodiscard]] const GroupLink& link() const { return slowest_; }

 private:
  Collective collective_;
  GroupLink slowest_;
  bool seen_ = false;
};

/// Walks the groups of one dimension: calls visit(ids) with the GPU ids of each group.
/// For a pair dimension (PP) each group is two neighbouring stages.
template <typename Visit>
void for_each_group(const Dimension& dim, const std::vector<int>& gpu_of, std::vector<int>& ids,
                    Visit&& visit) {
  const int ranks = dim.ranks;
  const bool pairs = dim.pairs;
  const int span = dim.stride * dim.size;
  const int members = pairs ? 2 : dim.size;
  const int starts = pairs ? dim.size - 1 : 1;
  ids.resize(static_cast<std::size_t>(members));
  for (int hi = 0; hi < ranks; hi += span) {
    for (int j = 0; j < starts; ++j) {
      for (int lo = 0; lo < dim.stride; ++lo) {
        const int base = hi + j * dim.stride + lo;
        for (int k = 0; k < members; ++k) {
          ids[static_cast<std::size_t>(k)] =
              gpu_of[static_cast<std::size_t>(base) +
                     static_cast<std::size_t>(k) * static_cast<std::size_t>(dim.stride)];
        }
        visit(ids);
      }
    }
  }
}

/// Healthy cluster: ranks are GPU ids and every group of a dimension has the same offsets,
/// so groups whose first GPU sits at the same position in the period price alike.
GroupLink slowest_healthy(const Cluster& cluster, const Dimension& dim) {
  const int ranks = dim.ranks;
  const bool pairs = dim.pairs;
  Slowest slowest(dim.collective);
  const int period = translation_period(cluster);
  std::vector<char> seen(static_cast<std::size_t>(period), 0);
  const int span = dim.stride * dim.size;
  const int members = pairs ? 2 : dim.size;
  const int starts = pairs ? dim.size - 1 : 1;
  std::vector<int> ids(static_cast<std::size_t>(members));
  // A group's price depends only on its first rank modulo the period, and the first ranks'
  // residues repeat: over hi every lcm(span, period), over j every period / gcd(stride,
  // period) and over lo every period. Walking one cycle of each meets every residue.
  const long long hi_end = std::min<long long>(ranks, std::lcm<long long>(span, period));
  const int j_end = std::min(starts, period / std::gcd(dim.stride, period));
  const int lo_end = std::min(dim.stride, period);
  for (int hi = 0; hi < hi_end; hi += span) {
    for (int j = 0; j < j_end; ++j) {
      for (int lo = 0; lo < lo_end; ++lo) {
        const int base = hi + j * dim.stride + lo;
        auto& mark = seen[static_cast<std::size_t>(base % period)];
        if (mark != 0) continue;
        mark = 1;
        for (int k = 0; k < members; ++k) ids[static_cast<std::size_t>(k)] = base + k * dim.stride;
        slowest.offer(query_group(cluster, ids));
      }
    }
  }
  return slowest.link();
}

/// Cluster with failures: groups touching a broken GPU, NIC or link are queried one by one;
/// the others are grouped by (position in the period, offsets between members), which a gap
/// left by a dead GPU changes.
GroupLink slowest_degraded(const Cluster& cluster, const Dimension& dim,
                           const std::vector<int>& gpu_of) {
  Slowest slowest(dim.collective);
  const int period = translation_period(cluster);
  const auto touched = touched_gpus(cluster);
  std::map<std::vector<int>, char> shapes;
  std::vector<int> ids;
  std::vector<int> shape;
  for_each_group(dim, gpu_of, ids, [&](const std::vector<int>& group) {
    bool broken = false;
    for (const int gpu : group) broken = broken || touched[static_cast<std::size_t>(gpu)] != 0;
    if (!broken) {
      shape.assign(1, group.front() % period);
      for (const int gpu : group) shape.push_back(gpu - group.front());
      if (!shapes.emplace(shape, 1).second) return;
    }
    slowest.offer(query_group(cluster, group));
  });
  return slowest.link();
}

GroupLink slowest_group(const Cluster& cluster, const Dimension& dim,
                        const std::vector<int>& gpu_of) {
  if (dim.size < 2) {
    const int first = gpu_of.front();
    return query_group(cluster, std::span<const int>(&first, 1));
  }
  if (cluster.health.healthy()) return slowest_healthy(cluster, dim);
  return slowest_degraded(cluster, dim, gpu_of);
}

/// The slowest amax reduction group (TP x CP x DP of one stage). Stage s is stage 0 moved by
/// its first rank; on a healthy cluster a move by a multiple of the period prices alike, so
/// only stages whose first rank falls at a new position in the period are queried (a later
/// stage can straddle a domain boundary that stage 0 does not); with failures, every stage.
GroupLink amax_link(const Cluster& cluster, const ParallelConfig& config, RankOrder order,
                    const std::vector<int>& gpu_of) {
  const int period = translation_period(cluster);
  const bool healthy = cluster.health.healthy();
  std::vector<char> seen(static_cast<std::size_t>(period), 0);
  Slowest slowest(Collective::all_reduce);
  for (int stage = 0; stage < config.pp; ++stage) {
    RankCoord coord;
    coord.pp = stage;
    const int first = rank_of(config, order, coord);
    if (healthy) {
      auto& mark = seen[static_cast<std::size_t>(first % period)];
      if (mark != 0) continue;
      mark = 1;
    }
    std::vector<int> ids = stage_group(config, order, first);
    for (int& id : ids) id = gpu_of[static_cast<std::size_t>(id)];
    slowest.offer(query_group(cluster, ids));
  }
  return slowest.link();
}

bool same_link(const GroupLink& a, const GroupLink& b) {
  return std::tie(a.tier, a.ranks, a.domains, a.ranks_per_domain, a.min_ranks_per_domain,
                  a.intra_gbps, a.intra_latency_s, a.inter_gbps, a.inter_latency_s) ==
         std::tie(b.tier, b.ranks, b.domains, b.ranks_per_domain, b.min_ranks_per_domain,
                  b.intra_gbps, b.intra_latency_s, b.inter_gbps, b.inter_latency_s);
}

}  // namespace

std::vector<int> live_gpus(const Cluster& cluster) {
  std::vector<int> ids;
  ids.reserve(static_cast<std::size_t>(cluster.gpus()));
  const auto& health = cluster.health;
  if (health.dead_gpus.empty() && health.dead_servers.empty()) {
    ids.resize(static_cast<std::size_t>(cluster.gpus()));
    std::iota(ids.begin(), ids.end(), 0);
    return ids;
  }
  // Server by server, each dead GPU skipped in order: no set look-up per GPU (this runs for
  // every placement of a search; per-GPU look-ups made --fail-link quadratic in the cluster).
  auto dead = health.dead_gpus.begin();
  for (int server = 0; server < cluster.servers; ++server) {
    const int first = server * cluster.gpus_per_server;
    const int end = first + cluster.gpus_per_server;
    while (dead != health.dead_gpus.end() && *dead < first) ++dead;
    if (health.dead_servers.count(server) != 0) continue;
    for (int gpu = first; gpu < end; ++gpu) {
      if (dead != health.dead_gpus.end() && *dead == gpu) {
        ++dead;
        continue;
      }
      ids.push_back(gpu);
    }
  }
  return ids;
}

bool same_links(const Placement& a, const Placement& b) {
  return same_link(a.tp, b.tp) && same_link(a.pp, b.pp) && same_link(a.dp, b.dp) &&
         same_link(a.cp, b.cp) && same_link(a.ep, b.ep) && same_link(a.edp, b.edp) &&
         same_link(a.shard, b.shard) && same_link(a.replicate, b.replicate) &&
         same_link(a.amax, b.amax);
}

Placement place(const Cluster& cluster, const ParallelConfig& config, RankOrder order,
                bool amax_group) {
  return Placer(cluster).place(config, order, amax_group);
}

Placement with_shard_links(const Cluster& cluster, const ParallelConfig& config,
                           Placement placement) {
  return Placer(cluster).with_shard_links(config, placement);
}

Placer::Placer(const Cluster& cluster) : cluster_(cluster), live_(live_gpus(cluster)) {}

const GroupLink& Placer::slowest(const Groups& groups) {
  const auto found = slowest_.find(groups);
  if (found != slowest_.end()) return found->second;
  return slowest_.emplace(groups, slowest_group(cluster_, groups, live_)).first->second;
}

Placement Placer::place(const ParallelConfig& config, RankOrder order, bool amax_group) {
  const int ranks = config.gpus();
  if (ranks < 1 || ranks > static_cast<int>(live_.size())) {
    throw PlanError("placement needs " + std::to_string(ranks) + " GPUs, the cluster has " +
                    std::to_string(live_.size()) + " live");
  }
  const auto strides = rank_strides(config, order);
  const auto groups = [ranks](int size, int stride, Collective collective, bool pairs = false) {
    return Groups{ranks, size, stride, collective, pairs};
  };
  Placement placement;
  placement.order = order;
  placement.tp = slowest(groups(config.tp, strides.tp, Collective::all_reduce));
  placement.pp = slowest(groups(config.pp, strides.pp, Collective::send_recv, true));
  // Gradients reduce over DP x CP (Megatron's data-parallel group with CP): cp x dp ranks
  // tp apart in the order tp-cp-dp-pp, the only one searched with cp > 1.
  const bool dp_with_cp = config.cp > 1 && order == RankOrder::tp_dp_pp;
  placement.dp = slowest(groups(dp_with_cp ? config.dp * config.cp : config.dp,
                                dp_with_cp ? strides.cp : strides.dp, Collective::all_reduce));
  placement.cp = slowest(groups(config.cp, strides.cp, Collective::send_recv));
  // Expert parallel: ep consecutive ranks of the tp x cp x dp block (expert TP 1); the expert
  // data parallel group: the block's ranks ep apart. Only with ep > 1 (order tp-cp-dp-pp).
  if (config.ep > 1) {
    placement.ep = slowest(groups(config.ep, 1, Collective::all_to_all));
    const int edp = config.tp * config.cp * config.dp / config.ep;
    placement.edp = slowest(groups(edp, config.ep, Collective::all_reduce));
  } else {
    placement.ep = slowest(groups(1, 1, Collective::all_to_all));
    placement.edp = placement.dp;
  }
  add_shard_links(config, placement);
  if (amax_group) placement.amax = amax_link(cluster_, config, order, live_);
  return placement;
}

Placement Placer::with_shard_links(const ParallelConfig& config, Placement placement) {
  add_shard_links(config, placement);
  return placement;
}

/// HSDP: dp_shard consecutive DP ranks (with their CP ranks) shard; DP ranks dp_shard apart
/// replicate. One rank each otherwise.
void Placer::add_shard_links(const ParallelConfig& config, Placement& placement) {
  const int ranks = config.gpus();
  const auto strides = rank_strides(config, placement.order);
  const bool hybrid = config.hybrid_shard();
  const int dp_stride = config.cp > 1 ? strides.cp : strides.dp;
  placement.shard =
      slowest({ranks, hybrid ? config.dp_shard * config.cp : 1, dp_stride, Collective::all_gather});
  placement.replicate = slowest({ranks, hybrid ? config.dp / config.dp_shard : 1,
                                 config.shard_ranks() * strides.dp, Collective::all_reduce});
}

Placement place_tp_across_domains(const Cluster& cluster, const ParallelConfig& config,
                                  const Placement& base) {
  const int domain = cluster.nvlink.domain_gpus;
  if (config.tp < 2 || config.tp > domain) return base;
  const int first_half = (config.tp + 1) / 2;
  const int second_half = config.tp - first_half;
  std::map<int, std::vector<int>> by_domain;
  for (const int gpu : live_gpus(cluster)) by_domain[cluster.domain_of(gpu)].push_back(gpu);
  std::vector<int> ids;
  for (const auto& [index, members] : by_domain) {
    const int want = ids.empty() ? first_half : second_half;
    if (static_cast<int>(members.size()) < want) continue;
    ids.insert(ids.end(), members.begin(), members.begin() + want);
    if (static_cast<int>(ids.size()) == config.tp) break;
  }
  if (static_cast<int>(ids.size()) != config.tp) return base;
  Placement stretched = base;
  stretched.tp = query_group(cluster, ids);
  return stretched;
}

}  // namespace trident
