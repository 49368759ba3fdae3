#pragma once
/// Which ranks talk to which in a plan: the planner's rank -> (tp, cp, pp, dp, ep) placement
/// (costmodel/placement.h) turned into communicator colours and ring neighbours.
#include <string>
#include <vector>

#include "validate/plan_reader.h"

namespace trident {

enum class GroupKind { tp, pp, dp, cp, ep };
[[nodiscard]] const char* to_string(GroupKind kind);

/// One rank's membership in one kind of group.
struct GroupMembership {
  GroupKind kind = GroupKind::tp;
  std::vector<int> members;  ///< world ranks, in group-rank order
  int color = 0;             ///< the same for every member (the smallest member's world rank)
  int group_rank = 0;        ///< this rank's index in `members`
  [[nodiscard]] int size() const { return static_cast<int>(members.size()); }
  /// Ring neighbours in the group (send/recv as nccl-tests' sendrecv_perf does).
  [[nodiscard]] int next() const { return (group_rank + 1) % size(); }
  [[nodiscard]] int prev() const { return (group_rank + size() - 1) % size(); }
  /// "tp group (ranks 2,3)" for messages.
  [[nodiscard]] std::string describe() const;
};

struct RankGroups {
  RankCoord coord;
  GroupMembership tp;
  GroupMembership pp;
  GroupMembership dp;  ///< DP x CP when cp > 1 (the gradients' group)
  GroupMembership cp;  ///< the context-parallel ring
  GroupMembership ep;  ///< the expert-parallel all-to-all group
  [[nodiscard]] const GroupMembership& get(GroupKind kind) const;
};

/// The groups of world rank `rank` under the plan's split and rank order.
[[nodiscard]] RankGroups rank_groups(const PlanSpec& plan, int rank);

}  // namespace trident
