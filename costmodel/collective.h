#pragma once
/// Collectives as a table (name, bus-bandwidth factor) and their alpha-beta time on a group's
/// link, with nccl-tests' definitions (doc/PERFORMANCE.md): busbw = algbw x factor.
#include <string>

#include "topology/link_tier.h"

namespace trident {

enum class Collective { all_reduce, all_gather, reduce_scatter, send_recv, all_to_all, broadcast };

/// A token exchange bounded by its slower side: `in_domain_bytes` each GPU moves over its
/// NVLink domain and `off_domain_bytes` through its NIC share at `network_fraction` of the
/// line rate, concurrently; plus NCCL's Simple base latency and one hop per tier used. NCCL's
/// all-to-all and the MoE dispatchers price through it (docs/cost_model.md#all-to-all).
[[nodiscard]] double exchange_time_s(double in_domain_bytes, double off_domain_bytes,
                                     double network_fraction, const GroupLink& link);

[[nodiscard]] const char* to_string(Collective collective);
/// Parses "all-reduce", "allreduce", "all_reduce"... ; throws InputError on an unknown name.
[[nodiscard]] Collective parse_collective(const std::string& name);

/// nccl-tests bus-bandwidth factor: 2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter,
/// all-to-all; 1 send/recv, broadcast.
[[nodiscard]] double busbw_factor(Collective collective, int ranks);

/// Number of latency hops of a ring: 2(n-1) all-reduce, (n-1) all-gather/reduce-scatter, 1 p2p.
[[nodiscard]] double latency_steps(Collective collective, int ranks);

/// Share of a link's nominal bandwidth that NCCL reaches as bus bandwidth on large messages,
/// per tier (docs/cost_model.md#collectives): nvlink 0.80 (nccl-tests 8-GPU all-reduce busbw
/// A100 232 of 300 GB/s, H100 370 of 450), network 0.94 (NDR: 46-48 of 50 GB/s per NIC),
/// pcie 0.80 (Gen5 x16: 48-55 of 64 GB/s).
[[nodiscard]] double achievable_fraction(Tier tier);
/// link_gbps x achievable_fraction(tier).
[[nodiscard]] double effective_gbps(Tier tier, double link_gbps);

/// The alpha-beta time of a flat ring: latency_steps x latency + S x factor / busbw (the one
/// formula the calibration fit and a calibrated estimate share).
[[nodiscard]] double alpha_beta_time_s(Collective collective, double bytes, int ranks,
                                       double busbw_gbps, double latency_s);

/// Bus bandwidth of a ring across NVLink domains (`link.domains` > 1): the narrowest cut,
/// min(intra x its tier's fraction, min_ranks_per_domain x inter x the network's), GB/s.
[[nodiscard]] double cross_domain_ring_busbw_gbps(const GroupLink& link);

struct Calibration;

/// Time of one collective of `bytes` (for all-gather/reduce-scatter: the whole gathered
/// array, as nccl-tests counts S) over `link`, as NCCL runs it: inside one domain a ring
/// timed under each of NCCL's protocols (LL, LL128, Simple: base + per-hop latency, share of
/// bus bandwidth) and the fastest kept; across domains all-gather and reduce-scatter as one
/// ring whose bus bandwidth is min(intra, min_ranks_per_domain x inter) (the narrowest cut),
/// all-reduce as the faster of that ring and NCCL's tree. A calibration entry for
/// (collective, ranks, tier) replaces the default bandwidth/latency when present.
[[nodiscard]] double collective_time_s(Collective collective, double bytes, const GroupLink& link,
                                       const Calibration* calibration = nullptr);

}  // namespace trident
