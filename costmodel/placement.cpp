#include "costmodel/placement.h"

#include <algorithm>
#include <tuple>

#include "costmodel/collective.h"

namespace trident {

namespace {

/// Sizes of the two outer dimensions, inner first, for an order (TP is always innermost).
struct OuterSizes {
  int middle = 1;
  int outer = 1;
};

OuterSizes outer_sizes(const ParallelConfig& config, RankOrder order) {
  if (order == RankOrder::tp_dp_pp) return {config.dp, config.pp};
  return {config.pp, config.dp};
}

std::vector<int> group_along(const ParallelConfig& config, RankOrder order, int rank,
                             int RankCoord::*axis, int size) {
  RankCoord coord = rank_coord(config, order, rank);
  std::vector<int> ranks;
  ranks.reserve(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) {
    coord.*axis = i;
    ranks.push_back(rank_of(config, order, coord));
  }
  return ranks;
}

/// A group of one rank: no traffic.
GroupLink single_rank_link() {
  GroupLink link;
  link.ranks = 1;
  return link;
}

/// The slowest link between neighbouring stages of a pipeline (a crossing of domains first,
/// then the lowest bandwidth).
GroupLink slowest_neighbour_pair(const Cluster& cluster, const std::vector<int>& stages) {
  if (stages.size() < 2) return single_rank_link();
  GroupLink slowest;
  bool found = false;
  for (std::size_t i = 0; i + 1 < stages.size(); ++i) {
    const int pair[2] = {stages[i], stages[i + 1]};
    const GroupLink link = query_group(cluster, pair);
    if (!found || slower_link(slowest, link, Collective::send_recv)) slowest = link;
    found = true;
  }
  return slowest;
}

}  // namespace

bool slower_link(const GroupLink& a, const GroupLink& b, Collective collective) {
  constexpr double kProbeBytes = 64e6;  // bandwidth, not latency, decides
  const double time_a = collective_time_s(collective, kProbeBytes, a);
  const double time_b = collective_time_s(collective, kProbeBytes, b);
  if (time_a != time_b) return time_b > time_a;
  return std::tuple(static_cast<int>(b.tier), -b.bottleneck_gbps()) >
         std::tuple(static_cast<int>(a.tier), -a.bottleneck_gbps());
}

RankStrides rank_strides(const ParallelConfig& config, RankOrder order) {
  const int base = rank_of(config, order, {0, 0, 0, 0});
  return {rank_of(config, order, {1, 0, 0, 0}) - base, rank_of(config, order, {0, 1, 0, 0}) - base,
          rank_of(config, order, {0, 0, 1, 0}) - base, rank_of(config, order, {0, 0, 0, 1}) - base};
}

RankCoord rank_coord(const ParallelConfig& config, RankOrder order, int rank) {
  const OuterSizes sizes = outer_sizes(config, order);
  const int tp = rank % config.tp;
  const int cp = (rank / config.tp) % config.cp;
  const int inner = config.tp * config.cp;
  const int middle = (rank / inner) % sizes.middle;
  const int outer = rank / (inner * sizes.middle);
  if (order == RankOrder::tp_dp_pp) return {tp, outer, middle, cp};
  return {tp, middle, outer, cp};
}

int rank_of(const ParallelConfig& config, RankOrder order, RankCoord coord) {
  const OuterSizes sizes = outer_sizes(config, order);
  const int middle = order == RankOrder::tp_dp_pp ? coord.dp : coord.pp;
  const int outer = order == RankOrder::tp_dp_pp ? coord.pp : coord.dp;
  return coord.tp + config.tp * (coord.cp + config.cp * (middle + sizes.middle * outer));
}

std::vector<int> tp_group(const ParallelConfig& config, RankOrder order, int rank) {
  return group_along(config, order, rank, &RankCoord::tp, config.tp);
}

std::vector<int> dp_group(const ParallelConfig& config, RankOrder order, int rank) {
  return group_along(config, order, rank, &RankCoord::dp, config.dp);
}

std::vector<int> pp_group(const ParallelConfig& config, RankOrder order, int rank) {
  return group_along(config, order, rank, &RankCoord::pp, config.pp);
}

std::vector<int> cp_group(const ParallelConfig& config, RankOrder order, int rank) {
  return group_along(config, order, rank, &RankCoord::cp, config.cp);
}

std::vector<int> ep_group(const ParallelConfig& config, int rank) {
  const int first = rank - rank % std::max(1, config.ep);
  std::vector<int> ranks(static_cast<std::size_t>(std::max(1, config.ep)));
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i] = first + static_cast<int>(i);
  return ranks;
}

std::vector<int> edp_group(const ParallelConfig& config, int rank) {
  const int block = config.tp * config.cp * config.dp;
  const int base = rank - rank % block + rank % std::max(1, config.ep);
  std::vector<int> ranks;
  for (int r = base; r < rank - rank % block + block; r += std::max(1, config.ep)) {
    ranks.push_back(r);
  }
  return ranks;
}

namespace {

/// The ranks of DP coordinates [first, first + count), each with all its CP ranks, that share
/// `rank`'s other coordinates.
std::vector<int> dp_block(const ParallelConfig& config, RankOrder order, int rank, int first,
                          int count) {
  std::vector<int> ranks;
  RankCoord coord = rank_coord(config, order, rank);
  for (int d = first; d < first + count; ++d) {
    for (int c = 0; c < config.cp; ++c) {
      coord.dp = d;
      coord.cp = c;
      ranks.push_back(rank_of(config, order, coord));
    }
  }
  return ranks;
}

}  // namespace

std::vector<int> dp_cp_group(const ParallelConfig& config, RankOrder order, int rank) {
  return dp_block(config, order, rank, 0, config.dp);
}

std::vector<int> stage_group(const ParallelConfig& config, RankOrder order, int rank) {
  RankCoord coord;
  coord.pp = rank_coord(config, order, rank).pp;
  std::vector<int> ranks;
  ranks.reserve(static_cast<std::size_t>(config.tp) * static_cast<std::size_t>(config.cp) *
                static_cast<std::size_t>(config.dp));
  for (coord.dp = 0; coord.dp < config.dp; ++coord.dp) {
    for (coord.cp = 0; coord.cp < config.cp; ++coord.cp) {
      for (coord.tp = 0; coord.tp < config.tp; ++coord.tp) {
        ranks.push_back(rank_of(config, order, coord));
      }
    }
  }
  return ranks;
}

std::vector<int> dp_shard_group(const ParallelConfig& config, RankOrder order, int rank) {
  const int shard = config.shard_ranks();
  const int dp = rank_coord(config, order, rank).dp;
  return dp_block(config, order, rank, dp - dp % shard, shard);
}

std::vector<int> dp_replicate_group(const ParallelConfig& config, RankOrder order, int rank) {
  std::vector<int> ranks;
  RankCoord coord = rank_coord(config, order, rank);
  const int shard = config.shard_ranks();
  for (int d = coord.dp % shard; d < config.dp; d += shard) {
    coord.dp = d;
    ranks.push_back(rank_of(config, order, coord));
  }
  return ranks;
}

Placement default_placement(const Cluster& cluster, const ParallelConfig& config, RankOrder order) {
  Placement placement;
  placement.order = order;
  const auto link_of = [&cluster](const std::vector<int>& ranks) {
    return ranks.size() > 1 ? query_group(cluster, ranks) : single_rank_link();
  };
  placement.tp = link_of(tp_group(config, order, 0));
  placement.dp = link_of(dp_cp_group(config, order, 0));
  placement.pp = slowest_neighbour_pair(cluster, pp_group(config, order, 0));
  placement.cp = link_of(cp_group(config, order, 0));
  placement.ep = link_of(ep_group(config, 0));
  placement.edp = config.ep > 1 ? link_of(edp_group(config, 0)) : placement.dp;
  if (config.hybrid_shard()) {
    placement.shard = link_of(dp_shard_group(config, order, 0));
    placement.replicate = link_of(dp_replicate_group(config, order, 0));
  } else {
    placement.shard = single_rank_link();
    placement.replicate = single_rank_link();
  }
  placement.amax = link_of(stage_group(config, order, 0));
  return placement;
}

}  // namespace trident
