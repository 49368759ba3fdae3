#include "costmodel/placement.h"

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
  const int base = rank_of(config, order, {0, 0, 0});
  return {rank_of(config, order, {1, 0, 0}) - base, rank_of(config, order, {0, 1, 0}) - base,
          rank_of(config, order, {0, 0, 1}) - base};
}

RankCoord rank_coord(const ParallelConfig& config, RankOrder order, int rank) {
  const OuterSizes sizes = outer_sizes(config, order);
  const int tp = rank % config.tp;
  const int middle = (rank / config.tp) % sizes.middle;
  const int outer = rank / (config.tp * sizes.middle);
  if (order == RankOrder::tp_dp_pp) return {tp, outer, middle};
  return {tp, middle, outer};
}

int rank_of(const ParallelConfig& config, RankOrder order, RankCoord coord) {
  const OuterSizes sizes = outer_sizes(config, order);
  const int middle = order == RankOrder::tp_dp_pp ? coord.dp : coord.pp;
  const int outer = order == RankOrder::tp_dp_pp ? coord.pp : coord.dp;
  return coord.tp + config.tp * (middle + sizes.middle * outer);
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

Placement default_placement(const Cluster& cluster, const ParallelConfig& config, RankOrder order) {
  Placement placement;
  placement.order = order;
  const std::vector<int> tp = tp_group(config, order, 0);
  const std::vector<int> dp = dp_group(config, order, 0);
  const std::vector<int> pp = pp_group(config, order, 0);
  placement.tp = tp.size() > 1 ? query_group(cluster, tp) : single_rank_link();
  placement.dp = dp.size() > 1 ? query_group(cluster, dp) : single_rank_link();
  placement.pp = slowest_neighbour_pair(cluster, pp);
  return placement;
}

}  // namespace trident
