#pragma once
/// Where a configuration's groups sit: the link each dimension's traffic rides. The planner
/// fills it from the topology for the real rank layout; tests use default_placement.
#include <vector>

#include "costmodel/collective.h"
#include "costmodel/parallel_config.h"
#include "topology/cluster.h"
#include "topology/link_tier.h"

namespace trident {

/// Order of the dimensions from innermost (fastest-varying rank) outwards. TP is always
/// innermost, CP next (Megatron-Core's order tp-cp-ep-dp-pp, parallel_state.py L617 @d98e8a64);
/// Megatron-LM's default is tp-(cp-)dp-pp; the planner also tries tp-pp-dp when cp = ep = 1.
/// Expert parallel groups are ep consecutive ranks of the tp x cp x dp block (expert TP 1).
enum class RankOrder { tp_dp_pp, tp_pp_dp };

struct Placement {
  RankOrder order = RankOrder::tp_dp_pp;
  GroupLink tp;   ///< the slowest TP group
  GroupLink pp;   ///< the slowest pair of neighbouring stages
  GroupLink dp;   ///< the slowest DP group (DP x CP when cp > 1: gradients reduce over both)
  GroupLink cp;   ///< the slowest CP group (ring neighbours and all-to-all alike)
  GroupLink ep;   ///< the slowest expert-parallel group (the MoE all-to-alls)
  GroupLink edp;  ///< the slowest expert-data-parallel group (expert gradients)
  /// HSDP only (config.hybrid_shard()): the slowest sharding group, dp_shard x cp ranks (the
  /// per-unit all-gathers and reduce-scatters), and replication group, dp / dp_shard ranks
  /// (the all-reduce of the gradient shards). One rank otherwise.
  GroupLink shard;
  GroupLink replicate;
  /// The slowest TP x CP x DP group of one stage: Megatron's amax reduction group
  /// (parallel_state.get_amax_reduction_group), where FP8 delayed scaling all-reduces amaxes.
  GroupLink amax;
};

/// Coordinates of a rank in the (tp, cp, pp, dp) grid.
struct RankCoord {
  int tp = 0;
  int pp = 0;
  int dp = 0;
  int cp = 0;
};

/// True when `b` is a slower link than `a` for `collective`-like traffic: compares the time
/// of a 64 MB collective (a total order: ties broken on tier, then bandwidth). The one
/// "slowest link" ordering: the planner's placement and default_placement both use it.
[[nodiscard]] bool slower_link(const GroupLink& a, const GroupLink& b, Collective collective);

/// Stride between neighbouring members of a dimension's group, in ranks (from rank_of: the
/// one rank layout).
struct RankStrides {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
};
[[nodiscard]] RankStrides rank_strides(const ParallelConfig& config, RankOrder order);

/// Rank -> coordinates for an order (rank = GPU id when the job uses GPUs 0..N-1).
[[nodiscard]] RankCoord rank_coord(const ParallelConfig& config, RankOrder order, int rank);
/// Coordinates -> rank.
[[nodiscard]] int rank_of(const ParallelConfig& config, RankOrder order, RankCoord coord);

/// Ranks of the TP group / DP group / PP group containing `rank`.
[[nodiscard]] std::vector<int> tp_group(const ParallelConfig& config, RankOrder order, int rank);
[[nodiscard]] std::vector<int> dp_group(const ParallelConfig& config, RankOrder order, int rank);
[[nodiscard]] std::vector<int> pp_group(const ParallelConfig& config, RankOrder order, int rank);
[[nodiscard]] std::vector<int> cp_group(const ParallelConfig& config, RankOrder order, int rank);
/// The ep ranks of `rank`'s expert-parallel group: consecutive in the tp x cp x dp block
/// (order tp-dp-pp; expert TP 1: Megatron-Core's expert order etp-ep-edp-pp).
[[nodiscard]] std::vector<int> ep_group(const ParallelConfig& config, int rank);
/// The tp*cp*dp/ep ranks holding the same experts as `rank` (expert data parallel).
[[nodiscard]] std::vector<int> edp_group(const ParallelConfig& config, int rank);
/// The tp*cp*dp ranks of `rank`'s pipeline stage (the amax reduction group).
[[nodiscard]] std::vector<int> stage_group(const ParallelConfig& config, RankOrder order, int rank);
/// Ranks of the DP x CP group of `rank` (Megatron reduces gradients over it).
/// HSDP groups of `rank`: its DP block of dp_shard ranks (with their CP ranks), and the DP
/// ranks dp_shard apart holding the same shard.
[[nodiscard]] std::vector<int> dp_shard_group(const ParallelConfig& config, RankOrder order,
                                              int rank);
[[nodiscard]] std::vector<int> dp_replicate_group(const ParallelConfig& config, RankOrder order,
                                                  int rank);
[[nodiscard]] std::vector<int> dp_cp_group(const ParallelConfig& config, RankOrder order, int rank);

/// Healthy-cluster placement with ranks = GPU ids 0..N-1: queries the topology for rank 0's
/// TP and DP groups and for its first pair of neighbouring pipeline stages.
[[nodiscard]] Placement default_placement(const Cluster& cluster, const ParallelConfig& config,
                                          RankOrder order = RankOrder::tp_dp_pp);

}  // namespace trident
