#pragma once
/// Which tier a group of GPUs talks over, and what bandwidth and latency each member gets.
/// The cost model and the planner call `query_group` for every TP, PP and DP group.
#include <span>

#include "topology/cluster.h"

namespace trident {

enum class Tier { nvlink, pcie, network };

[[nodiscard]] const char* to_string(Tier tier);

/// What a group of GPUs gets. A group inside one NVLink domain has domains == 1 and only the
/// intra fields matter; a group spanning domains runs hierarchically: inside each domain at
/// intra_gbps, across domains at inter_gbps (the per-GPU share of the NICs, after
/// oversubscription), and `tier` is the slowest tier crossed.
struct GroupLink {
  Tier tier = Tier::nvlink;
  /// Tier of the in-domain part: nvlink, or pcie when NVLink is missing or broken there.
  Tier intra_tier = Tier::nvlink;
  int ranks = 1;
  int domains = 1;           ///< NVLink domains the group spans
  int ranks_per_domain = 1;  ///< largest number of members in one domain
  /// Smallest number of members in one domain: the narrowest cut a cross-domain ring passes
  /// (a 2+4 split crosses on the 2 GPUs' NICs, not the 4's).
  int min_ranks_per_domain = 1;
  double intra_gbps = 0.0;  ///< per-GPU bandwidth inside a domain (bottleneck member), GB/s
  double intra_latency_s = 0.0;
  double inter_gbps = 0.0;  ///< per-GPU bandwidth across domains (bottleneck member), GB/s
  double inter_latency_s = 0.0;
  // intra_* are filled even when ranks_per_domain == 1 (the members' own link bandwidth, never
  // 0); inter_* are 0 when domains == 1. See link_tier.cpp for the model.
  /// Bottleneck bandwidth under the cluster's failures over the same group's on the cluster as
  /// built (1 when no failure reaches it): a rate measured on the healthy group (a calibration
  /// fit) is scaled by it.
  double health_fraction = 1.0;
  /// The group's tier on the cluster as built, and its bottleneck bandwidth under the failures
  /// over the built one's whatever path it now takes (health_fraction is 1 for a group fallen
  /// back to PCIe or a NIC, whose own tier's fit prices it): a fit measured on the built tier,
  /// scaled by it, bounds a fallen-back group that its own tier's fit does not price.
  Tier built_tier = Tier::nvlink;
  double built_fraction = 1.0;
  /// Bandwidth of the slowest tier crossed (the one a flat ring would see), GB/s.
  [[nodiscard]] double bottleneck_gbps() const;
};

/// The tier and per-GPU bandwidth/latency of a group given by its global GPU ids. Accounts for
/// ClusterHealth: a GPU with NVLinks down gets the rest of its links (PCIe when none are left),
/// a server with NICs down shares the rest. Throws PlanError when a member is a dead GPU.
[[nodiscard]] GroupLink query_group(const Cluster& cluster, std::span<const int> gpu_ids);

}  // namespace trident
