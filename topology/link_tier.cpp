// query_group: which tier a group of GPUs talks over and what each member gets.
//
// The model (all bandwidths GB/s per GPU, one direction; see docs/topology.md):
//
// In-domain part (members that share an NVLink domain):
//  * switch: each GPU reaches the NVSwitch fabric over its healthy links, so a member gets
//    healthy_links x gbps_per_link and the group runs at its slowest member:
//        intra_gbps = min over members (links_per_gpu - links_down) x gbps_per_link.
//    A member with no NVLink left talks over PCIe, and so does every ring through it: the
//    group's intra tier becomes pcie and that member contributes pcie.gbps to the min.
//  * mesh (DGX-1 hybrid cube mesh): NCCL builds rings over the direct links. We peel
//    edge-disjoint Hamiltonian cycles off the members' link multigraph (dead links removed),
//    best cycle first (widest weakest edge, exhaustive search, domains <= 8 GPUs); each cycle
//    of width w carries a ring in each direction, so a GPU sends 2 x w x gbps_per_link on it:
//        intra_gbps = 2 x (sum of peeled cycle widths) x gbps_per_link      (>= 3 members)
//        intra_gbps = links(a, b) x gbps_per_link                           (2 members)
//    e.g. all 8 GPUs of a DGX-1V: cycles of width 2 and 1 -> 2 x 3 x 25 = 150 GB/s, the
//    sum of a GPU's six links, as NVIDIA quotes. No Hamiltonian cycle left -> PCIe.
//    A single member in a domain gets its own healthy links x gbps_per_link.
//  * none: PCIe, pcie.gbps.
// Across domains (domains > 1), tier network:
//        inter_gbps = min over members' servers of healthy_nics x nic_gbits / 8
//                     / gpus_per_server / oversubscription
//    (all members ride their server's NICs; a server with NICs down shares the rest). When
//    every member sits on one server (domains smaller than a server) the crossing is PCIe.
//    Latency: network.latency_us; a fabric that is not rail-optimised sends ring neighbours
//    (same local index on different servers) leaf -> spine -> leaf instead of through one
//    rail switch: we add kExtraSwitchHops x kSwitchHopUs to the latency. Bandwidth taper is
//    what `oversubscription` says, for both kinds of fabric.
// A dead GPU (or a GPU of a dead server) in the group is a PlanError: the planner must not
// place ranks there. Cost: O(members) with no allocation for a healthy switch cluster whose
// group ids are sorted by domain (the planner's case); mesh groups cost a small search.
#include "topology/link_tier.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "topology/errors.h"

namespace trident {

const char* to_string(Tier tier) {
  switch (tier) {
    case Tier::nvlink:
      return "nvlink";
    case Tier::pcie:
      return "pcie";
    case Tier::network:
      return "network";
  }
  return "?";
}

double GroupLink::bottleneck_gbps() const {
  if (domains <= 1) return intra_gbps;
  return ranks_per_domain > 1 ? std::min(intra_gbps, inter_gbps) : inter_gbps;
}

namespace {

constexpr double kSecondsPerUs = 1e-6;
/// Switch traversals a non-rail-optimised fabric adds per hop (leaf -> spine -> leaf vs one
/// rail leaf), and an assumed port-to-port latency per switch (InfiniBand NDR switches quote
/// well under 1 us; 0.5 us keeps the estimate on the safe side).
constexpr int kExtraSwitchHops = 2;
constexpr double kSwitchHopUs = 0.5;

void check_member(const Cluster& c, int id) {
  if (id < 0 || id >= c.gpus()) {
    throw PlanError("GPU " + std::to_string(id) + " is outside the cluster (GPUs 0.." +
                    std::to_string(c.gpus() - 1) + ")");
  }
  const int server = c.server_of(id);
  if (c.health.dead_gpus.count(id) != 0 || c.health.dead_servers.count(server) != 0) {
    throw PlanError("GPU " + std::to_string(id) + " (server " + std::to_string(server) + ", GPU " +
                    std::to_string(id % c.gpus_per_server) + ") is dead and cannot be in a group");
  }
}

struct Spread {
  int domains = 0;
  int ranks_per_domain = 0;
  int min_ranks_per_domain = 0;
  bool one_server = true;
};

/// Domains spanned and the largest per-domain count; sorts a copy only when the ids are not
/// grouped by domain.
Spread spread_of(const Cluster& c, std::span<const int> ids) {
  Spread s;
  const int first_server = c.server_of(ids.front());
  bool grouped = true;
  for (std::size_t i = 1; i < ids.size() && grouped; ++i) {
    grouped = c.domain_of(ids[i - 1]) <= c.domain_of(ids[i]);
  }
  std::vector<int> sorted;
  if (!grouped) {
    sorted.reserve(ids.size());
    for (const int id : ids) sorted.push_back(c.domain_of(id));
    std::sort(sorted.begin(), sorted.end());
  }
  int run = 0;
  int previous = -1;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int domain = grouped ? c.domain_of(ids[i]) : sorted[i];
    if (domain != previous && run > 0) {
      s.min_ranks_per_domain =
          s.min_ranks_per_domain == 0 ? run : std::min(s.min_ranks_per_domain, run);
    }
    run = domain == previous ? run + 1 : 1;
    if (domain != previous) ++s.domains;
    previous = domain;
    s.ranks_per_domain = std::max(s.ranks_per_domain, run);
    s.one_server = s.one_server && c.server_of(ids[i]) == first_server;
  }
  s.min_ranks_per_domain =
      s.min_ranks_per_domain == 0 ? run : std::min(s.min_ranks_per_domain, run);
  return s;
}

struct Intra {
  double gbps = 0.0;
  bool pcie = false;
  /// A member's fallback leaves its server: through its NIC (a rack-scale domain's trays).
  bool network = false;
};

/// Whether the group has members on more than one server.
bool spans_servers(const Cluster& c, std::span<const int> ids) {
  const int first = c.server_of(ids.front());
  return std::any_of(ids.begin(), ids.end(), [&](int id) { return c.server_of(id) != first; });
}

Intra switch_intra(const Cluster& c, std::span<const int> ids) {
  const double full = c.nvlink.switch_gbps_per_gpu();
  Intra result{full, false};
  if (c.health.nvlinks_down.empty()) return result;
  // A domain of several servers (GB200 NVL72's trays) has no PCIe between them: a member that
  // leaves NVLink reaches the other trays' members through its NIC (NCCL's NET path).
  const bool across = c.nvlink.domain_gpus > c.gpus_per_server && spans_servers(c, ids);
  for (const int id : ids) {
    const auto down = c.health.nvlinks_down.find(id);
    if (down == c.health.nvlinks_down.end()) continue;
    // NCCL's graph search relaxes the path type (NVLink -> PCIe) before it lowers the
    // bandwidth it asks for (graph/search.cpp ncclTopoCompute: typeIntra += 1 first), so a GPU
    // left with fewer NVLinks than its PCIe carries talks over PCIe: never slower than none.
    const int left = std::max(0, c.nvlink.links_per_gpu - down->second);
    const double fallback =
        across ? c.nic_gbps_per_gpu(c.server_of(id)) / c.network.oversubscription : c.pcie.gbps;
    if (left == 0 && fallback <= 0.0) {
      throw PlanError("GPU " + std::to_string(id) +
                      " has no NVLink left and its server no working NIC: it cannot reach the "
                      "other servers of its NVLink domain");
    }
    const bool falls_back = left * c.nvlink.gbps_per_link < fallback;
    result.pcie = result.pcie || (falls_back && !across);
    result.network = result.network || (falls_back && across);
    const double member = falls_back ? fallback : left * c.nvlink.gbps_per_link;
    result.gbps = std::min(result.gbps, member);
  }
  return result;
}

/// Healthy NVLink counts between the local GPUs of one mesh domain.
struct MeshGraph {
  int n = 0;
  std::vector<int> links;  // n x n
  [[nodiscard]] int& at(int a, int b) {
    return links[static_cast<std::size_t>(a) * static_cast<std::size_t>(n) +
                 static_cast<std::size_t>(b)];
  }
};

/// The domain's mesh under the cluster's failures, or as built (`with_failures` false).
MeshGraph mesh_graph(const Cluster& c, int domain, bool with_failures = true) {
  const int n = c.nvlink.domain_gpus;
  MeshGraph g{n, std::vector<int>(static_cast<std::size_t>(n * n), 0)};
  const int base = domain * n;
  for (const auto& link : c.nvlink.mesh) {
    const std::pair<int, int> global = std::minmax(base + link.a, base + link.b);
    const bool dead = with_failures && c.health.dead_mesh_links.count(global) != 0;
    g.at(link.a, link.b) = g.at(link.b, link.a) = dead ? 0 : link.links;
  }
  if (!with_failures) return g;
  for (int local = 0; local < n; ++local) {
    const auto down = c.health.nvlinks_down.find(base + local);
    if (down == c.health.nvlinks_down.end() || down->second < mesh_links_of(c.nvlink, local)) {
      continue;  // partial loss on a mesh is named per pair (mesh:S/A-B)
    }
    for (int other = 0; other < n; ++other) g.at(local, other) = g.at(other, local) = 0;
  }
  return g;
}

/// Widest Hamiltonian cycle over `members` (its weakest edge); fills `best_order`.
int widest_cycle(MeshGraph& g, std::vector<int> order, std::vector<int>& best_order) {
  int best = 0;
  do {
    int width = g.at(order.back(), order.front());
    for (std::size_t i = 1; i < order.size() && width > best; ++i) {
      width = std::min(width, g.at(order[i - 1], order[i]));
    }
    if (width > best) {
      best = width;
      best_order = order;
    }
  } while (std::next_permutation(order.begin() + 1, order.end()));
  return best;
}

/// Per-GPU ring bandwidth in links (both ring directions counted) over `members`.
int mesh_ring_links(MeshGraph g, const std::vector<int>& members) {
  if (members.size() == 1) {
    int total = 0;
    for (int other = 0; other < g.n; ++other) total += g.at(members[0], other);
    return total;
  }
  if (members.size() == 2) return g.at(members[0], members[1]);
  int total = 0;
  std::vector<int> cycle;
  while (const int width = widest_cycle(g, members, cycle)) {
    total += width;
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      const int a = cycle[i];
      const int b = cycle[(i + 1) % cycle.size()];
      g.at(a, b) -= width;
      g.at(b, a) -= width;
    }
  }
  return 2 * total;
}

bool domain_has_mesh_failure(const Cluster& c, int domain) {
  const int first = domain * c.nvlink.domain_gpus;
  const int end = first + c.nvlink.domain_gpus;
  const auto link = c.health.dead_mesh_links.lower_bound({first, -1});
  if (link != c.health.dead_mesh_links.end() && link->first < end) return true;
  const auto down = c.health.nvlinks_down.lower_bound(first);
  return down != c.health.nvlinks_down.end() && down->first < end;
}

Intra mesh_intra(const Cluster& c, std::span<const int> ids) {
  const int n = c.nvlink.domain_gpus;
  std::map<int, std::vector<int>> by_domain;
  for (const int id : ids) by_domain[c.domain_of(id)].push_back(id % n);
  std::map<std::uint32_t, int> healthy_cache;  // member mask -> ring links, failure-free domains
  Intra result{0.0, false};
  bool first = true;
  for (auto& [domain, members] : by_domain) {
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    const bool failed = domain_has_mesh_failure(c, domain);
    std::uint32_t mask = 0;
    for (const int local : members) mask |= 1U << local;
    int links = 0;
    if (const auto hit = healthy_cache.find(mask); !failed && hit != healthy_cache.end()) {
      links = hit->second;
    } else {
      links = mesh_ring_links(mesh_graph(c, domain), members);
      if (!failed) healthy_cache[mask] = links;
    }
    const double gbps = links > 0 ? links * c.nvlink.gbps_per_link : c.pcie.gbps;
    result.pcie = result.pcie || links == 0;
    result.gbps = first ? gbps : std::min(result.gbps, gbps);
    first = false;
  }
  return result;
}

Intra intra_of(const Cluster& c, std::span<const int> ids) {
  switch (c.nvlink.kind) {
    case NvlinkKind::switch_fabric:
      return switch_intra(c, ids);
    case NvlinkKind::mesh:
      return mesh_intra(c, ids);
    case NvlinkKind::none:
      break;
  }
  return Intra{c.pcie.gbps, true};
}

double network_gbps(const Cluster& c, std::span<const int> ids) {
  double share = c.nic_gbps_per_gpu(c.server_of(ids.front()));
  if (!c.health.nics_down.empty()) {
    for (const int id : ids) {
      const int server = c.server_of(id);
      const double server_share = c.nic_gbps_per_gpu(server);
      if (server_share <= 0.0) {
        throw PlanError("server " + std::to_string(server) +
                        " has no working NIC: its GPUs cannot reach other NVLink domains");
      }
      share = std::min(share, server_share);
    }
  }
  return share / c.network.oversubscription;
}

/// The group's in-domain bandwidth with no failure (intra_of on the cluster as built).
double healthy_intra_gbps(const Cluster& c, std::span<const int> ids) {
  if (c.nvlink.kind == NvlinkKind::switch_fabric) {
    return c.nvlink.switch_gbps_per_gpu();
  }
  if (c.nvlink.kind == NvlinkKind::none) return c.pcie.gbps;
  const int n = c.nvlink.domain_gpus;
  std::map<int, std::vector<int>> by_domain;
  for (const int id : ids) by_domain[c.domain_of(id)].push_back(id % n);
  std::map<std::uint32_t, int> by_mask;
  double gbps = 0.0;
  bool first = true;
  for (auto& [domain, members] : by_domain) {
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    std::uint32_t mask = 0;
    for (const int local : members) mask |= 1U << local;
    const auto [hit, fresh] = by_mask.try_emplace(mask, 0);  // as built, domains alike
    if (fresh) hit->second = mesh_ring_links(mesh_graph(c, domain, false), members);
    const int links = hit->second;
    const double member = links > 0 ? links * c.nvlink.gbps_per_link : c.pcie.gbps;
    gbps = first ? member : std::min(gbps, member);
    first = false;
  }
  return gbps;
}

/// A group whose in-domain path left NVLink for PCIe or a NIC under the failures.
bool fallen_back(const Cluster& c, const GroupLink& link) {
  return link.intra_tier != Tier::nvlink && c.nvlink.kind != NvlinkKind::none;
}

/// The group's bottleneck bandwidth under the failures over the same group's with none: what
/// a measured rate of the healthy group (a calibration fit) is scaled by. 1 when healthy.
double built_fraction(const Cluster& c, std::span<const int> ids, const GroupLink& link) {
  GroupLink healthy = link;
  healthy.intra_gbps = healthy_intra_gbps(c, ids);
  if (link.tier == Tier::network) {
    healthy.inter_gbps = c.healthy_nic_gbps_per_gpu() / c.network.oversubscription;
  }
  const double before = healthy.bottleneck_gbps();
  return before > 0.0 ? std::min(1.0, link.bottleneck_gbps() / before) : 1.0;
}

double network_latency_s(const NetworkSpec& net) {
  const double extra = net.rail_optimized ? 0.0 : kExtraSwitchHops * kSwitchHopUs;
  return (net.latency_us + extra) * kSecondsPerUs;
}

}  // namespace

GroupLink query_group(const Cluster& cluster, std::span<const int> gpu_ids) {
  if (gpu_ids.empty()) throw PlanError("query_group: a group needs at least one GPU");
  const bool healthy = cluster.health.healthy();
  for (const int id : gpu_ids) {
    if (healthy && id >= 0 && id < cluster.gpus()) continue;
    check_member(cluster, id);
  }
  const Spread spread = spread_of(cluster, gpu_ids);
  const Intra intra = intra_of(cluster, gpu_ids);

  GroupLink link;
  link.ranks = static_cast<int>(gpu_ids.size());
  link.domains = spread.domains;
  link.ranks_per_domain = spread.ranks_per_domain;
  link.min_ranks_per_domain = spread.min_ranks_per_domain;
  link.intra_tier = intra.network ? Tier::network : intra.pcie ? Tier::pcie : Tier::nvlink;
  link.intra_gbps = intra.gbps;
  link.intra_latency_s = intra.network ? network_latency_s(cluster.network)
                         : intra.pcie  ? cluster.pcie.latency_us * kSecondsPerUs
                                       : cluster.nvlink.latency_us * kSecondsPerUs;
  link.tier = link.intra_tier;
  if (spread.domains > 1 && spread.one_server) {
    link.tier = Tier::pcie;
    link.inter_gbps = cluster.pcie.gbps;
    link.inter_latency_s = cluster.pcie.latency_us * kSecondsPerUs;
  } else if (spread.domains > 1) {
    link.tier = Tier::network;
    link.inter_gbps = network_gbps(cluster, gpu_ids);
    link.inter_latency_s = network_latency_s(cluster.network);
  }
  // Only link failures change a group's rate (dead GPUs and servers take members out).
  const ClusterHealth& h = cluster.health;
  link.built_tier = link.tier;
  if (!h.nvlinks_down.empty() || !h.dead_mesh_links.empty() || !h.nics_down.empty()) {
    link.built_fraction = built_fraction(cluster, gpu_ids, link);
    // A member fallen back to PCIe (or a NIC): the fit looked up for it is that tier's,
    // measured as it runs, so unscaled.
    const bool fell = fallen_back(cluster, link);
    link.health_fraction = fell ? 1.0 : link.built_fraction;
    // A group inside one domain whose traffic left NVLink: as built, it rode NVLink (a group
    // across domains rode the network as built, whatever its in-domain path now).
    if (fell && link.domains <= 1) link.built_tier = Tier::nvlink;
  }
  return link;
}

}  // namespace trident
