#pragma once
/// Collectives as a table (name, bus-bandwidth factor) and their alpha-beta time on a group's
/// link, with nccl-tests' definitions (doc/PERFORMANCE.md): busbw = algbw x factor.
#include <string>

#include "topology/link_tier.h"

namespace trident {

enum class Collective { all_reduce, all_gather, reduce_scatter, send_recv, all_to_all, broadcast };

[[nodiscard]] const char* to_string(Collective collective);
/// Parses "all-reduce", "allreduce", "all_reduce"... ; throws InputError on an unknown name.
[[nodiscard]] Collective parse_collective(const std::string& name);

/// nccl-tests bus-bandwidth factor: 2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter,
/// all-to-all; 1 send/recv, broadcast.
[[nodiscard]] double busbw_factor(Collective collective, int ranks);

/// Number of latency hops of a ring: 2(n-1) all-reduce, (n-1) all-gather/reduce-scatter, 1 p2p.
[[nodiscard]] double latency_steps(Collective collective, int ranks);

class Calibration;

/// Time of one collective of `bytes` (for all-gather/reduce-scatter: the whole gathered
/// array, as nccl-tests counts S) over `link`. Flat alpha-beta inside one domain;
/// hierarchical (intra reduce-scatter, inter, intra all-gather) across domains. A calibration
/// entry for (collective, ranks, tier) replaces the default bandwidth/latency when present.
[[nodiscard]] double collective_time_s(Collective collective, double bytes, const GroupLink& link,
                                       const Calibration* calibration = nullptr);

}  // namespace trident
