#pragma once
/// Failures a cluster can be put under: `--fail-link SPEC`. Grammar (servers and GPUs are
/// 0-based; G is the GPU's local index on server S):
///   nvlink:S/G        one NVLink of GPU G down (it keeps the rest of its links)
///   nvlink:S/G:K      K NVLinks of GPU G down
///   nvlink:S/G:all    every NVLink of GPU G down (its traffic falls back to PCIe)
///   mesh:S/A-B        the direct link between GPUs A and B of a mesh server down
///   nvlink:S/A-B      the same (a mesh pair written as an NVLink spec)
///   nic:S/N           NIC N of server S down (its GPUs share the remaining NICs)
///   gpu:S/G           GPU G of server S dead
///   server:S          server S dead
/// On a mesh server nvlink:S/G:all takes down every direct link of GPU G; a bare nvlink:S/G
/// is refused there (name the pair). A spec naming a part twice is refused by apply_failures.
#include <string>
#include <utility>
#include <vector>

#include "topology/cluster.h"

namespace trident {

enum class FailureKind { nvlink, nvlink_all, mesh_link, nic, gpu, server };

struct Failure {
  FailureKind kind = FailureKind::nvlink;
  int server = 0;
  int gpu = 0;       ///< local index on the server (nvlink, nvlink_all, mesh_link's A, gpu)
  int peer = 0;      ///< mesh_link's B (local index)
  int nic = 0;       ///< nic
  int links = 1;     ///< nvlink: how many links down (0 for nvlink_all)
  std::string spec;  ///< as the user wrote it
};

/// Parses one spec; throws SpecError "'SPEC': expected ..." on a bad one (the CLI prefixes
/// its flag).
[[nodiscard]] Failure parse_failure(const std::string& spec);

/// The cluster with the failure applied. Throws InputError when the spec names a server,
/// GPU, NIC or link that does not exist in `cluster`.
[[nodiscard]] Cluster apply_failure(const Cluster& cluster, const Failure& failure);

/// Applies the failures in order; throws InputError as apply_failure does, and when two specs
/// name the same NIC, GPU, server or mesh pair ("'gpu:1/2': names the same part
/// as 'gpu:1/2'"). nvlink:S/G given twice means two of its links down.
[[nodiscard]] Cluster apply_failures(const Cluster& cluster, const std::vector<Failure>& failures);

/// Global ids of the GPUs that are dead (dead GPUs plus every GPU of a dead server), sorted.
[[nodiscard]] std::vector<int> dead_gpu_ids(const Cluster& cluster);

/// The mesh peers (server-local indexes) of server-local GPU `local` on `server`, with the
/// number of NVLinks to each, ascending. Empty on an NVSwitch server.
[[nodiscard]] std::vector<std::pair<int, int>> mesh_peers(const Cluster& cluster, int server,
                                                          int local);

}  // namespace trident
