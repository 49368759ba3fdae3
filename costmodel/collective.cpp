#include "costmodel/collective.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "costmodel/calibration.h"
#include "topology/errors.h"

namespace trident {

namespace {

struct CollectiveRow {
  Collective collective;
  const char* name;
};

constexpr CollectiveRow kCollectives[] = {
    {Collective::all_reduce, "all-reduce"},         {Collective::all_gather, "all-gather"},
    {Collective::reduce_scatter, "reduce-scatter"}, {Collective::send_recv, "send-recv"},
    {Collective::all_to_all, "all-to-all"},         {Collective::broadcast, "broadcast"},
};

/// "All_Reduce" -> "allreduce": compare names without case, '-' or '_'.
std::string squash(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '-' || c == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

/// Ring time of a flat group: steps x latency + S x factor / busbw.
double ring_time_s(Collective collective, double bytes, int ranks, double busbw_gbps,
                   double latency_s) {
  if (busbw_gbps <= 0.0) return 0.0;
  return latency_steps(collective, ranks) * latency_s +
         bytes * busbw_factor(collective, ranks) / (busbw_gbps * 1e9);
}

/// The two-level decomposition of a collective spanning domains: what runs inside each domain
/// and what crosses the NICs.
double hierarchical_time_s(Collective collective, double bytes, const GroupLink& link) {
  const int r = link.ranks_per_domain;
  const int d = link.domains;
  const double intra = effective_gbps(Tier::nvlink, link.intra_gbps);
  const double inter = effective_gbps(Tier::network, link.inter_gbps);
  const double intra_rs = ring_time_s(Collective::reduce_scatter, bytes, r, intra,
                                      link.intra_latency_s);
  // Each GPU carries 1/r of the data across the domains; log2(d) latency hops (tree).
  const double inter_bytes = bytes / r;
  const double inter_s = inter_bytes * busbw_factor(collective, d) / (inter * 1e9) +
                         2.0 * std::ceil(std::log2(static_cast<double>(d))) *
                             link.inter_latency_s;
  switch (collective) {
    case Collective::all_reduce:
      return 2.0 * intra_rs + inter_s;  // RS inside, AR across, AG inside
    case Collective::all_gather:
    case Collective::reduce_scatter:
      return intra_rs + inter_s;
    default:
      return inter_s;
  }
}

/// A single ring threading every domain, one channel per NIC (NCCL's ring on a
/// rail-optimised fabric): every GPU's NVLink and its NIC share carry the ring's traffic, so
/// bus bandwidth = min(intra, ranks_per_domain x inter).
double flat_ring_time_s(Collective collective, double bytes, const GroupLink& link) {
  const double intra = effective_gbps(Tier::nvlink, link.intra_gbps);
  const double inter = effective_gbps(Tier::network, link.inter_gbps) * link.ranks_per_domain;
  const double busbw = std::min(intra, inter);
  const double steps_inter = latency_steps(collective, link.domains);
  const double steps_intra = latency_steps(collective, link.ranks) - steps_inter;
  return std::max(0.0, steps_intra) * link.intra_latency_s + steps_inter * link.inter_latency_s +
         bytes * busbw_factor(collective, link.ranks) / (busbw * 1e9);
}

}  // namespace

const char* to_string(Collective collective) {
  for (const auto& row : kCollectives) {
    if (row.collective == collective) return row.name;
  }
  return "?";
}

Collective parse_collective(const std::string& name) {
  for (const auto& row : kCollectives) {
    if (squash(row.name) == squash(name)) return row.collective;
  }
  throw InputError("collective '" + name +
                   "': expected all-reduce|all-gather|reduce-scatter|send-recv|all-to-all|"
                   "broadcast");
}

double busbw_factor(Collective collective, int ranks) {
  const double n = ranks;
  if (ranks <= 1) return collective == Collective::send_recv ? 1.0 : 0.0;
  switch (collective) {
    case Collective::all_reduce:
      return 2.0 * (n - 1.0) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      return (n - 1.0) / n;
    case Collective::send_recv:
    case Collective::broadcast:
      return 1.0;
  }
  return 1.0;
}

double latency_steps(Collective collective, int ranks) {
  if (ranks <= 1) return collective == Collective::send_recv ? 1.0 : 0.0;
  switch (collective) {
    case Collective::all_reduce:
      return 2.0 * (ranks - 1);
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
    case Collective::broadcast:
      return ranks - 1.0;
    case Collective::send_recv:
      return 1.0;
  }
  return 1.0;
}

double achievable_fraction(Tier tier) {
  switch (tier) {
    case Tier::nvlink:
      return 0.80;  // nccl-tests 8-GPU all-reduce busbw: A100 232/300, H100 370/450
    case Tier::network:
      return 0.94;  // NDR 400 Gb/s NIC: 46-48 of 50 GB/s (nccl-tests #160, #290)
    case Tier::pcie:
      return 0.80;  // PCIe Gen5 x16: 48-55 of 64 GB/s
  }
  return 1.0;
}

double effective_gbps(Tier tier, double link_gbps) { return link_gbps * achievable_fraction(tier); }

double collective_time_s(Collective collective, double bytes, const GroupLink& link,
                         const Calibration* calibration) {
  if (bytes <= 0.0) return 0.0;
  if (link.ranks <= 1 && collective != Collective::send_recv) return 0.0;
  if (calibration != nullptr) {
    if (const auto fit = calibration->collective_fit(collective, link.ranks, link.tier)) {
      return ring_time_s(collective, bytes, link.ranks, fit->busbw_gbps, fit->latency_s);
    }
  }
  if (collective == Collective::send_recv) {
    const bool crosses = link.domains > 1;
    const Tier tier = crosses ? Tier::network : link.tier;
    const double gbps = effective_gbps(tier, crosses ? link.inter_gbps : link.intra_gbps);
    return ring_time_s(collective, bytes, 2, gbps,
                       crosses ? link.inter_latency_s : link.intra_latency_s);
  }
  if (link.domains <= 1) {
    return ring_time_s(collective, bytes, link.ranks, effective_gbps(link.tier, link.intra_gbps),
                       link.intra_latency_s);
  }
  // NCCL picks the faster algorithm for the size; model the better of the two.
  return std::min(flat_ring_time_s(collective, bytes, link),
                  hierarchical_time_s(collective, bytes, link));
}

}  // namespace trident
