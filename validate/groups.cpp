// Groups from the planner's placement functions, so validate measures exactly the groups the
// cost model priced.
#include "validate/groups.h"

#include <algorithm>

namespace trident {
namespace {

GroupMembership membership(GroupKind kind, std::vector<int> members, int rank) {
  GroupMembership out;
  out.kind = kind;
  out.members = std::move(members);
  out.color = *std::min_element(out.members.begin(), out.members.end());
  const auto it = std::find(out.members.begin(), out.members.end(), rank);
  out.group_rank = static_cast<int>(it - out.members.begin());
  return out;
}

}  // namespace

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::tp:
      return "tp";
    case GroupKind::pp:
      return "pp";
    case GroupKind::dp:
      return "dp";
    case GroupKind::cp:
      return "cp";
    case GroupKind::ep:
      return "ep";
  }
  return "?";
}

std::string GroupMembership::describe() const {
  std::string ranks;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0) ranks += ',';
    ranks += std::to_string(members[i]);
  }
  std::string out = to_string(kind);
  out += " group (ranks ";
  out += ranks;
  out += ')';
  return out;
}

const GroupMembership& RankGroups::get(GroupKind kind) const {
  switch (kind) {
    case GroupKind::tp:
      return tp;
    case GroupKind::pp:
      return pp;
    case GroupKind::dp:
      return dp;
    case GroupKind::cp:
      return cp;
    case GroupKind::ep:
      return ep;
  }
  return tp;
}

RankGroups rank_groups(const PlanSpec& plan, int rank) {
  RankGroups out;
  out.coord = rank_coord(plan.config, plan.order, rank);
  out.tp = membership(GroupKind::tp, tp_group(plan.config, plan.order, rank), rank);
  out.pp = membership(GroupKind::pp, pp_group(plan.config, plan.order, rank), rank);
  // Under HSDP the DP traffic (per-unit gathers and reduce-scatters) is the shard group's.
  out.dp = membership(GroupKind::dp,
                      plan.config.hybrid_shard() ? dp_shard_group(plan.config, plan.order, rank)
                      : plan.config.cp > 1       ? dp_cp_group(plan.config, plan.order, rank)
                                                 : dp_group(plan.config, plan.order, rank),
                      rank);
  out.cp = membership(GroupKind::cp, cp_group(plan.config, plan.order, rank), rank);
  out.ep =
      membership(GroupKind::ep,
                 plan.config.ep > 1 ? ep_group(plan.config, rank) : std::vector<int>{rank}, rank);
  return out;
}

}  // namespace trident
