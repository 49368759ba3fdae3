#pragma once
/// The cluster as data: GPUs, servers, NVLink domains with their link graph, NICs, fabric.
/// Global GPU ids run 0..gpus()-1, server-major: GPU g sits on server g / gpus_per_server
/// with local index g % gpus_per_server. NVLink domain of g is g / nvlink.domain_gpus.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "topology/errors.h"
#include "topology/gpu.h"

namespace trident {

enum class NvlinkKind { switch_fabric, mesh, none };

/// A direct NVLink connection between two GPUs of one mesh domain (local indexes inside the
/// domain), carrying `links` NVLinks (DGX-1 hybrid cube mesh: 1 or 2).
struct MeshLink {
  int a = 0;
  int b = 0;
  int links = 1;
};

struct NvlinkSpec {
  /// GPUs per NVLink domain: divides a server, equals it, or spans whole servers (a rack-scale
  /// switch domain such as NVL72; the last domain may be partly filled: 128 GPUs = 72 + 56).
  int domain_gpus = 8;
  NvlinkKind kind = NvlinkKind::switch_fabric;
  int links_per_gpu = 18;       ///< switch: links from each GPU into the NVSwitch fabric
  double gbps_per_link = 25.0;  ///< GB/s per link, one direction
  std::vector<MeshLink> mesh;   ///< mesh only: the pairs and their link counts
  double latency_us = 2.0;
  /// A job takes a domain that spans servers in equal segments of whole servers (SLURM
  /// `--segment`, as NVIDIA's launchers run every GB200 job): see in_job_segments().
  bool job_segments = false;
  /// The rack's domain where in_job_segments() narrowed domain_gpus to the job's segment;
  /// 0 when domain_gpus is the rack's own.
  int rack_domain_gpus = 0;
  /// GPUs of the cluster's own domain (a rack), whatever the job's segment.
  [[nodiscard]] int rack_gpus() const {
    return rack_domain_gpus > 0 ? rack_domain_gpus : domain_gpus;
  }
  /// A GPU's rate into the switch fabric, one direction (GB/s): every link it has (a mesh:
  /// its best-linked GPU's, links_per_gpu being the most links any GPU has there).
  [[nodiscard]] double switch_gbps_per_gpu() const { return links_per_gpu * gbps_per_link; }
};

struct NetworkSpec {
  int nics_per_server = 8;
  double nic_gbits = 400.0;  ///< Gb/s per NIC (bits)
  bool rail_optimized = true;
  double oversubscription = 1.0;  ///< core-to-edge taper; >= 1
  double latency_us = 5.0;
};

struct PcieSpec {
  double gbps = 64.0;  ///< per GPU, one direction, GB/s
  double latency_us = 2.0;
};

/// What is broken, kept sparse so a 100,000-GPU cluster stays cheap to copy.
struct ClusterHealth {
  std::map<int, int> nvlinks_down;                 ///< global GPU id -> NVLinks down (switch kind)
  std::set<std::pair<int, int>> dead_mesh_links;   ///< global GPU id pairs (a < b), mesh kind
  std::set<std::pair<int, int>> named_mesh_links;  ///< of those, the ones named one by one
  std::set<int> mesh_all_gpus;                     ///< mesh GPUs whose links all went down
  std::map<int, int> nics_down;                    ///< server -> NICs down
  std::set<std::pair<int, int>> named_nics;        ///< (server, NIC) down: each named once
  std::set<int> dead_gpus;                         ///< global GPU ids
  std::set<int> dead_servers;
  [[nodiscard]] bool healthy() const;
};

/// Most GPUs a cluster may have (2^24 = 16,777,216, ~80x the largest cluster built): keeps
/// servers x gpus_per_server an int, and the planner, which walks every GPU of each candidate
/// split, within seconds (2^24 GPUs: ~7 s; 10^9 would take ~7 min and 4 GB).
inline constexpr long long kMaxClusterGpus = 1LL << 24;

/// The link figures a cluster file left to its GPU's defaults (nvlink.latency_us,
/// network.latency_us, pcie.gbps, pcie.latency_us): with_gpu() takes them from the new GPU.
struct FromGpu {
  bool nvlink_latency = true;
  bool network_latency = true;
  bool pcie_gbps = true;
  bool pcie_latency = true;
};

struct Cluster {
  std::string name;
  /// The software stack named by the file's `stack:` key (a preset NAME or FILE), "" = none;
  /// the CLI resolves it (a --stack flag wins).
  std::string stack;
  /// Where `stack` was set ("FILE:LINE: stack"), for errors reading it; "" when not from a file.
  std::string stack_from;
  Gpu gpu;
  int servers = 1;
  int gpus_per_server = 8;
  NvlinkSpec nvlink;
  NetworkSpec network;
  PcieSpec pcie;
  FromGpu from_gpu;
  ClusterHealth health;

  [[nodiscard]] int gpus() const { return servers * gpus_per_server; }
  [[nodiscard]] int server_of(int gpu_id) const { return gpu_id / gpus_per_server; }
  [[nodiscard]] int domain_of(int gpu_id) const { return gpu_id / nvlink.domain_gpus; }
  /// NVLink domains, counting a partly filled last one.
  [[nodiscard]] int domains() const {
    return (gpus() + nvlink.domain_gpus - 1) / nvlink.domain_gpus;
  }
  /// GPUs in domain `domain` (the last one may hold fewer than domain_gpus).
  [[nodiscard]] int domain_size(int domain) const {
    return std::min(nvlink.domain_gpus, gpus() - domain * nvlink.domain_gpus);
  }
  /// True when the GPUs end in a partly filled NVLink domain.
  [[nodiscard]] bool partial_domain() const { return gpus() % nvlink.domain_gpus != 0; }
  /// Per-GPU share of its server's NICs, GB/s one direction (healthy NICs only), before the
  /// GPU's own PCIe link caps it.
  [[nodiscard]] double nic_share_gbps(int server) const;
  /// What a GPU gets of the network: nic_share_gbps, at most pcie.gbps (GPUDirect RDMA
  /// crosses the GPU's PCIe link).
  [[nodiscard]] double nic_gbps_per_gpu(int server) const;
  /// The same with every NIC healthy: what a calibration of the healthy cluster measured.
  [[nodiscard]] double healthy_nic_gbps_per_gpu() const;
  /// NICs of a server whose bandwidth its GPUs can use: all of them, or as many as carry the
  /// GPUs' PCIe links (rounded up) where those cap them (nic_gbps_per_gpu).
  [[nodiscard]] int usable_nics() const;
};

[[nodiscard]] const char* to_string(NvlinkKind kind);  ///< "switch", "mesh", "none"

/// `cluster` with `gpu` in its servers: the link figures its file left to the GPU's defaults
/// (`from_gpu`) become the new GPU's; those the file set stay. The wiring (NVLink count and
/// speed, NICs) is the cluster's and stays.
[[nodiscard]] Cluster with_gpu(Cluster cluster, const Gpu& gpu);

/// The cluster as a job sees its NVLink domains. Where `nvlink.job_segments` is set and a
/// domain spans servers, the scheduler gives the job its servers in equal segments, each inside
/// one domain: the largest server count up to a domain's that divides the job's servers
/// (NVIDIA/NeMo@7a8f1cc7 scripts/performance/utils.py L114-120 and NVIDIA-NeMo/Megatron-Bridge
/// @6e16ebf scripts/performance/utils/executors.py L168-177: `--segment` for GB200 jobs). So
/// 64 trays of GB200 NVL72 run as four 16-tray segments, 64-GPU domains, not 72 + 72 + 72 + 40.
/// Sets domain_gpus to the segment's GPUs (rack_domain_gpus keeps the rack's); otherwise
/// returns the cluster unchanged. Applying it twice gives the same cluster.
[[nodiscard]] Cluster in_job_segments(Cluster cluster);

/// in_job_segments' rule for a job of `servers` servers on `cluster`: the servers of one
/// segment (what the launcher passes as SLURM --segment), or 0 where the cluster's jobs are not
/// segmented (no job_segments, or domains inside a server).
[[nodiscard]] int job_segment_servers(const Cluster& cluster, int servers);

/// NVLinks of local GPU `local` in a mesh domain: the sum of its MeshLink counts.
[[nodiscard]] int mesh_links_of(const NvlinkSpec& nvlink, int local);

/// The first reason the cluster is impossible, keyed by its dotted YAML key
/// ("nvlink.domain_gpus", "nvlink.links[3]", "gpu.memory_gib"), or nullopt when it is sound.
[[nodiscard]] std::optional<Problem> find_cluster_problem(const Cluster& cluster);

/// Throws InputError "SOURCE: KEY: MESSAGE" for find_cluster_problem's finding.
/// Throws InputError naming `source` when the cluster is impossible (0 GPUs, a domain that
/// does not tile the servers, negative bandwidth, mesh link to a GPU outside the domain...).
void check_cluster(const Cluster& cluster, const std::string& source);

}  // namespace trident
