#pragma once
/// Rank-to-GPU placement as Megatron-LM lays ranks out: TP innermost, then DP and PP
/// (order tp-dp-pp, Megatron's default) or PP and DP (tp-pp-dp). Rank r runs on the r-th
/// live GPU (GPU ids ascending, dead GPUs and GPUs of dead servers skipped), so on a healthy
/// cluster rank r is GPU r. For every dimension the placement holds the slowest group's link:
/// synchronous training runs at the pace of its slowest group.
#include <map>
#include <tuple>
#include <vector>

#include "costmodel/collective.h"
#include "costmodel/parallel_config.h"
#include "costmodel/placement.h"
#include "topology/cluster.h"

namespace trident {

/// Global ids of the GPUs that can take a rank, ascending.
[[nodiscard]] std::vector<int> live_gpus(const Cluster& cluster);

/// The slowest TP group, the slowest pair of neighbouring pipeline stages and the slowest DP
/// group for `config` laid out in `order` on `cluster`'s live GPUs. On a healthy cluster
/// only groups that differ in position within the repeating server/domain pattern are
/// queried; with failures every group touching a broken GPU, link, NIC or a gap left by a
/// dead GPU is queried as well. Throws PlanError when config.gpus() exceeds the live GPUs.
/// `amax_group`: also price the amax reduction group (TP x CP x DP of a stage), which only FP8
/// delayed scaling uses (reduces_amax); left at one rank otherwise, sparing its query.
[[nodiscard]] Placement place(const Cluster& cluster, const ParallelConfig& config, RankOrder order,
                              bool amax_group = false);

/// `placement` with the HSDP shard and replicate links of `config` filled in (one rank each
/// when config is not hybrid); the other links as they were.
[[nodiscard]] Placement with_shard_links(const Cluster& cluster, const ParallelConfig& config,
                                         Placement placement);

/// Places many splits on one cluster as place() and with_shard_links() do, with the live GPUs
/// listed once and each dimension's slowest group remembered: a group's link depends only on
/// the GPU count and the dimension's size, stride, collective and pairing, and the thousands
/// of splits of a search repeat a few hundred of those. Under failures a dimension walks every
/// group around the gaps (a walk of every GPU): a failure what-if of DeepSeek-V3 on 36,864
/// GB200 NVL72 GPUs placed 14,565 splits in 9 s of walks; remembered, each runs once.
/// Holds a reference to `cluster`, which must outlive it.
class Placer {
 public:
  explicit Placer(const Cluster& cluster);
  /// live_gpus(cluster), listed once.
  [[nodiscard]] const std::vector<int>& live() const { return live_; }
  [[nodiscard]] Placement place(const ParallelConfig& config, RankOrder order, bool amax_group);
  [[nodiscard]] Placement with_shard_links(const ParallelConfig& config, Placement placement);

  /// One dimension's groups: `size` members `stride` ranks apart among the first `ranks`;
  /// `pairs`: neighbouring members two at a time (PP's send/recv).
  struct Groups {
    int ranks = 0;
    int size = 1;
    int stride = 1;
    Collective collective = Collective::all_reduce;
    bool pairs = false;
    friend bool operator<(const Groups& a, const Groups& b) {
      return std::tie(a.ranks, a.size, a.stride, a.collective, a.pairs) <
             std::tie(b.ranks, b.size, b.stride, b.collective, b.pairs);
    }
  };

 private:
  /// The slowest of `groups`, walked once per distinct `groups`.
  [[nodiscard]] const GroupLink& slowest(const Groups& groups);
  void add_shard_links(const ParallelConfig& config, Placement& placement);

  const Cluster& cluster_;
  std::vector<int> live_;
  std::map<Groups, GroupLink> slowest_;
};

/// Both placements carry the same links (the two rank orders price alike).
[[nodiscard]] bool same_links(const Placement& a, const Placement& b);

/// The placement with the TP group stretched across two NVLink domains (half of it in each,
/// e.g. two DGX servers), everything else as `base`: what TP would cost outside the box.
/// Returns `base` unchanged when TP has no traffic (tp < 2), already spans domains
/// (tp > domain_gpus), or the cluster has no two domains with tp/2 live GPUs each.
[[nodiscard]] Placement place_tp_across_domains(const Cluster& cluster,
                                                const ParallelConfig& config,
                                                const Placement& base);

}  // namespace trident
