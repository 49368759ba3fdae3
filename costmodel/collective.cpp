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

double ring_time_s(Collective collective, double bytes, int ranks, double busbw_gbps,
                   double latency_s) {
  return alpha_beta_time_s(collective, bytes, ranks, busbw_gbps, latency_s);
}

/// NCCL's ring protocols (src/graph/tuning.cc @5067397, ncclTunerConstantsDefaults, Ring
/// column): base latency per call, per-hop latency on NVLink, PCIe and the network (us), and
/// the share of the bus bandwidth the protocol reaches (LL: half, LL128: 0.92; tuning.cc
/// L328-345). NCCL times every protocol and runs the fastest (enqueue.cc topoGetAlgoInfo).
enum class Protocol { ll, ll128, simple };
struct RingProtocol {
  Protocol kind;
  double base_us;
  double nvlink_us;
  double pcie_us;
  double net_us;
  double bandwidth_share;
};
constexpr RingProtocol kRingProtocols[] = {
    {Protocol::ll, 6.6, 0.6, 1.0, 2.7, 0.5},
    {Protocol::ll128, 14.0, 1.9, 2.5, 4.0, 0.92},
    {Protocol::simple, 8.4, 3.4, 5.7, 14.0, 1.0},
};
constexpr RingProtocol kSimple = kRingProtocols[2];

/// NCCL's ceiling on the LL protocol's bus bandwidth in a ring across `domains` nodes, GB/s
/// (tuning.cc @5067397 llMaxBws, the Intel-host row: 39.0 on two nodes, 20.4 on more; L268-272
/// pick it by the host CPU, AMD's row 22.5 / 19.0; L327 `busBw = min(llMaxBw, busBw * .5)`).
/// Applied where a domain holds more than one of the ring's ranks: with one rank a node NCCL
/// 2.23+ runs all-gather and reduce-scatter as PAT instead, which this ring does not model
/// (docs/cost_model.md#collectives). Within one node the ceiling is the GPU's (141 GB/s on
/// Hopper), not applied.
double ll_ceiling_gbps(int domains, int ranks) {
  if (domains < 2 || ranks <= domains) return 1e300;
  return domains == 2 ? 39.0 : 20.4;
}

/// NCCL's floor on an intra-node hop of a ring that crosses nodes, us: every step still posts
/// to the network proxy (tuning.cc @5067397 L404-410, getNetOverhead L228-233: 1 us on an
/// Intel host, 2 on AMD; three times that for Simple).
double net_overhead_us(Protocol protocol, int domains) {
  if (domains < 2) return 0.0;
  return protocol == Protocol::simple ? 3.0 : 1.0;
}

/// A ring of `ranks` over `domains` nodes whose `inter_steps` hops cross the network, the rest
/// inside a domain of tier `intra`. The link's per-hop latencies are the Simple protocol's (the
/// presets carry NCCL's values); the other protocols keep NCCL's ratio to Simple on the same
/// link.
double nccl_ring_time_s(Collective collective, double bytes, int ranks, int domains,
                        double inter_steps, double busbw_gbps, Tier intra, double intra_latency_s,
                        double inter_latency_s) {
  if (busbw_gbps <= 0.0) return 0.0;
  const double steps = latency_steps(collective, ranks);
  const double intra_steps = std::max(0.0, steps - inter_steps);
  // A domain's member fallen back to its NIC (a rack-scale domain's tray): network hops.
  const auto hop_of = [intra](const RingProtocol& p) {
    return intra == Tier::pcie ? p.pcie_us : intra == Tier::network ? p.net_us : p.nvlink_us;
  };
  const double intra_scale = intra_latency_s * 1e6 / hop_of(kSimple);
  const double inter_scale = inter_latency_s * 1e6 / kSimple.net_us;
  const double wire_bytes = bytes * busbw_factor(collective, ranks);
  const double ll_ceiling = ll_ceiling_gbps(domains, ranks);
  double best = 1e300;
  for (const RingProtocol& p : kRingProtocols) {
    const double hop_us = std::max(hop_of(p) * intra_scale, net_overhead_us(p.kind, domains));
    const double latency_us =
        p.base_us + intra_steps * hop_us + inter_steps * p.net_us * inter_scale;
    double gbps = busbw_gbps * p.bandwidth_share;
    if (p.kind == Protocol::ll) gbps = std::min(gbps, ll_ceiling);
    best = std::min(best, latency_us * 1e-6 + wire_bytes / (gbps * 1e9));
  }
  return best;
}

/// NCCL's tree protocols (src/graph/tuning.cc @5067397, ncclTunerConstantsDefaults, Tree
/// column): base latency and per-hop latency inside a domain (NVLink, PCIe) and across the
/// network (us); bandwidth shares as the ring's.
constexpr RingProtocol kTreeProtocols[] = {
    {Protocol::ll, 6.8, 0.6, 1.0, 5.0, 0.5},
    {Protocol::ll128, 14.0, 1.25, 1.9, 8.5, 0.92},
    {Protocol::simple, 8.4, 4.0, 4.0, 14.0, 1.0},
};

/// NCCL's tree all-reduce across domains: reduce-scatter inside each domain, all-reduce of
/// 1/ranks_per_domain of the data across the domains, all-gather inside; the smallest domain
/// sets the cross-domain share. Latency as NCCL models it (tuning.cc L414-417): base + 2 x
/// ((ranks per domain - 1) x intra hop + log2i(domains) x network hop), per protocol, the
/// fastest taken (a few-byte reduction runs LL: tens of us where Simple's hops cost hundreds).
double tree_all_reduce_time_s(double bytes, const GroupLink& link) {
  const int r = std::max(1, link.min_ranks_per_domain);
  const int d = link.domains;
  const double intra = effective_gbps(link.intra_tier, link.intra_gbps);
  const double inter = effective_gbps(Tier::network, link.inter_gbps);
  const double intra_wire_s =
      intra > 0.0
          ? bytes * busbw_factor(Collective::reduce_scatter, link.ranks_per_domain) / (intra * 1e9)
          : 0.0;
  const double inter_wire_s = (bytes / r) * busbw_factor(Collective::all_reduce, d) / (inter * 1e9);
  const double wire_s = 2.0 * intra_wire_s + inter_wire_s;
  const auto hop_of = [&link](const RingProtocol& p) {
    return link.intra_tier == Tier::pcie      ? p.pcie_us
           : link.intra_tier == Tier::network ? p.net_us
                                              : p.nvlink_us;
  };
  const double intra_scale = link.intra_latency_s * 1e6 / hop_of(kSimple);
  const double inter_scale = link.inter_latency_s * 1e6 / kSimple.net_us;
  const double intra_hops = std::max(0, link.ranks_per_domain - 1);
  const double net_hops = std::floor(std::log2(static_cast<double>(std::max(1, d))));
  double best = 1e300;
  for (const RingProtocol& p : kTreeProtocols) {
    const double latency_us = p.base_us + 2.0 * (intra_hops * hop_of(p) * intra_scale +
                                                 net_hops * p.net_us * inter_scale);
    best = std::min(best, latency_us * 1e-6 + wire_s / p.bandwidth_share);
  }
  return best;
}

/// A single ring threading every domain, one channel per NIC (NCCL's ring on a rail-optimised
/// fabric): each domain's GPUs share the ring's crossing traffic over their NICs, so the
/// narrowest cut (the domain with the fewest members) bounds it: bus bandwidth =
/// min(intra, min_ranks_per_domain x inter).
double flat_ring_time_s(Collective collective, double bytes, const GroupLink& link) {
  const double busbw = cross_domain_ring_busbw_gbps(link);
  return nccl_ring_time_s(collective, bytes, link.ranks, link.domains,
                          latency_steps(collective, link.domains), busbw, link.intra_tier,
                          link.intra_latency_s, link.inter_latency_s);
}

/// Share of a GPU's NIC bandwidth NCCL's all-to-all reaches across servers. Measured (NVIDIA
/// GTC 2025 S72583, all-to-all over 32 GPUs in 4 servers, nccl-tests busbw): DGX H100 48 GB/s
/// with 8x400 Gb/s, DGX A100 24 GB/s with 8x200 Gb/s. In the model below each GPU moves its
/// 24/32 off-server share over its NIC while busbw counts 31/32 of S, so the NIC ran at
/// 24 x busbw / (31 x NIC): 24 x 48 / (31 x 50) = 0.743 on H100 and 24 x 24 / (31 x 25) = 0.743
/// on A100 (a ring collective reaches 0.94: achievable_fraction). The many concurrent
/// point-to-point flows of an all-to-all, not the link, set it.
constexpr double kAllToAllNetworkFraction = 0.743;

}  // namespace

double exchange_time_s(double in_domain_bytes, double off_domain_bytes, double network_fraction,
                       const GroupLink& link) {
  const double intra = effective_gbps(link.intra_tier, link.intra_gbps);
  double wire_s = intra > 0.0 ? in_domain_bytes / (intra * 1e9) : 0.0;
  double latency_s =
      kSimple.base_us * 1e-6 + (link.ranks_per_domain > 1 ? link.intra_latency_s : 0.0);
  if (link.domains > 1) {
    const double inter = link.inter_gbps * network_fraction;
    if (inter > 0.0) wire_s = std::max(wire_s, off_domain_bytes / (inter * 1e9));
    latency_s += link.inter_latency_s;
  }
  return latency_s + wire_s;
}

namespace {

/// All-to-all as NCCL runs it: every rank sends S/n to each peer through grouped
/// ncclSend/ncclRecv (nccl-tests src/alltoall.cu; NCCL src/collectives.cc ncclAllToAll), the
/// peers served concurrently over the channels. Nothing is aggregated: each GPU pushes its own
/// off-domain share (n - r_min)/n x S through its NIC share and its in-domain share
/// (r_max - 1)/n x S over NVLink, the slower of the two bounding the call. Latency: NCCL's
/// Simple base plus one hop per tier used (per-peer latency is not modelled: unsourced, a
/// lower bound; docs/cost_model.md#all-to-all).
double all_to_all_time_s(double bytes, const GroupLink& link) {
  const double n = link.ranks;
  const double in_domain = bytes * (std::max(1, link.ranks_per_domain) - 1.0) / n;
  const double off_domain = bytes * (n - std::max(1, link.min_ranks_per_domain)) / n;
  return exchange_time_s(in_domain, off_domain, kAllToAllNetworkFraction, link);
}

}  // namespace

double alpha_beta_time_s(Collective collective, double bytes, int ranks, double busbw_gbps,
                         double latency_s) {
  if (busbw_gbps <= 0.0) return 0.0;
  return latency_steps(collective, ranks) * latency_s +
         bytes * busbw_factor(collective, ranks) / (busbw_gbps * 1e9);
}

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

double cross_domain_ring_busbw_gbps(const GroupLink& link) {
  const double intra = effective_gbps(link.intra_tier, link.intra_gbps);
  const double inter =
      effective_gbps(Tier::network, link.inter_gbps) * std::max(1, link.min_ranks_per_domain);
  return link.ranks_per_domain > 1 ? std::min(intra, inter) : inter;
}

namespace {

/// The model's own price of a collective on `link` (no calibration).
double modelled_time_s(Collective collective, double bytes, const GroupLink& link) {
  if (collective == Collective::all_to_all) return all_to_all_time_s(bytes, link);
  if (collective == Collective::send_recv) {
    const bool crosses = link.domains > 1;
    const Tier tier = crosses ? Tier::network : link.tier;
    const double gbps = effective_gbps(tier, crosses ? link.inter_gbps : link.intra_gbps);
    return ring_time_s(collective, bytes, 2, gbps,
                       crosses ? link.inter_latency_s : link.intra_latency_s);
  }
  if (link.domains <= 1) {
    return nccl_ring_time_s(collective, bytes, link.ranks, 1, 0.0,
                            effective_gbps(link.tier, link.intra_gbps), link.intra_tier,
                            link.intra_latency_s, 0.0);
  }
  // Across domains NCCL runs all-gather and reduce-scatter as a ring (no tree for them;
  // tuning.cc L289-300); all-reduce as the faster of ring and tree.
  const double ring_s = flat_ring_time_s(collective, bytes, link);
  if (collective != Collective::all_reduce) return ring_s;
  return std::min(ring_s, tree_all_reduce_time_s(bytes, link));
}

}  // namespace

double collective_time_s(Collective collective, double bytes, const GroupLink& link,
                         const Calibration* calibration) {
  if (bytes <= 0.0) return 0.0;
  if (link.ranks <= 1 && collective != Collective::send_recv) return 0.0;
  // A rack-scale domain's member fallen back to its NIC (intra tier network): no fit measured
  // that shape (a network fit's busbw counts every NIC of a domain), so the model prices it.
  if (calibration != nullptr && link.intra_tier != Tier::network) {
    if (const auto fit = calibration->collective_fit(collective, link.ranks, link.tier)) {
      // Measured on healthy links: a failure on this group's path slows it as it slows the
      // model's own rate (docs/failures.md).
      return ring_time_s(collective, bytes, link.ranks, fit->busbw_gbps * link.health_fraction,
                         fit->latency_s);
    }
  }
  const double model_s = modelled_time_s(collective, bytes, link);
  // Fallen back from the tier the calibration measured (NVLink to PCIe or, in a rack-scale
  // domain, a NIC, whose fits are not read above) with no fit of its own: never faster than
  // the measured fit scaled to the fallback's rate, which is what the last link before the
  // fallback was priced at, so one more link down is never faster.
  if (calibration != nullptr &&
      (link.tier != link.built_tier || link.intra_tier == Tier::network)) {
    if (const auto fit = calibration->collective_fit(collective, link.ranks, link.built_tier)) {
      return std::max(model_s, ring_time_s(collective, bytes, link.ranks,
                                           fit->busbw_gbps * link.built_fraction, fit->latency_s));
    }
  }
  return model_s;
}

}  // namespace trident
