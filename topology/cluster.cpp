#include "topology/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trident {

bool ClusterHealth::healthy() const {
  return nvlinks_down.empty() && dead_mesh_links.empty() && nics_down.empty() &&
         dead_gpus.empty() && dead_servers.empty();
}

namespace {

/// A GPU's share of `nics` NICs of its server, GB/s one direction.
double share_of(const Cluster& cluster, int nics) {
  return nics * cluster.network.nic_gbits / 8.0 / cluster.gpus_per_server;
}

}  // namespace

double Cluster::nic_share_gbps(int server) const {
  int healthy_nics = network.nics_per_server;
  if (const auto down = health.nics_down.find(server); down != health.nics_down.end()) {
    healthy_nics = std::max(0, healthy_nics - down->second);
  }
  return share_of(*this, healthy_nics);
}

double Cluster::nic_gbps_per_gpu(int server) const {
  // A GPU reaches the NICs over its own PCIe link (GPUDirect RDMA): its share is at most that.
  return std::min(nic_share_gbps(server), pcie.gbps);
}

double Cluster::healthy_nic_gbps_per_gpu() const {
  return std::min(share_of(*this, network.nics_per_server), pcie.gbps);
}

int Cluster::usable_nics() const {
  const double nic_gbps = network.nic_gbits / 8.0;
  if (nic_gbps <= 0.0 || pcie.gbps <= 0.0) return network.nics_per_server;
  const double carried = std::ceil(gpus_per_server * pcie.gbps / nic_gbps);
  return carried < network.nics_per_server ? static_cast<int>(carried) : network.nics_per_server;
}

const char* to_string(NvlinkKind kind) {
  switch (kind) {
    case NvlinkKind::switch_fabric:
      return "switch";
    case NvlinkKind::mesh:
      return "mesh";
    case NvlinkKind::none:
      return "none";
  }
  return "?";
}

Cluster with_gpu(Cluster cluster, const Gpu& gpu) {
  const FromGpu& from = cluster.from_gpu;
  if (from.nvlink_latency) cluster.nvlink.latency_us = gpu.nvlink_latency_us;
  if (from.network_latency) cluster.network.latency_us = gpu.network_latency_us;
  if (from.pcie_gbps) cluster.pcie.gbps = gpu.pcie_gbps;
  if (from.pcie_latency) cluster.pcie.latency_us = gpu.pcie_latency_us;
  cluster.gpu = gpu;
  return cluster;
}

int job_segment_servers(const Cluster& cluster, int servers) {
  const NvlinkSpec& nv = cluster.nvlink;
  const int rack = nv.rack_gpus();
  const int per_server = cluster.gpus_per_server;
  if (!nv.job_segments || per_server < 1 || rack <= per_server || rack % per_server != 0) {
    return 0;
  }
  // The largest segment (servers) up to a rack's that divides the job's servers; 1 at least.
  int segment = std::min(rack / per_server, std::max(servers, 1));
  while (segment > 1 && servers % segment != 0) --segment;
  return segment;
}

Cluster in_job_segments(Cluster cluster) {
  const int segment = job_segment_servers(cluster, cluster.servers);
  if (segment == 0) return cluster;
  NvlinkSpec& nv = cluster.nvlink;
  const int rack = nv.rack_gpus();
  nv.domain_gpus = segment * cluster.gpus_per_server;
  nv.rack_domain_gpus = nv.domain_gpus == rack ? 0 : rack;
  return cluster;
}

int mesh_links_of(const NvlinkSpec& nvlink, int local) {
  int links = 0;
  for (const auto& link : nvlink.mesh) {
    if (link.a == local || link.b == local) links += link.links;
  }
  return links;
}

namespace {

/// Mesh domains are searched exhaustively for rings (link_tier.cpp); beyond this it explodes.
constexpr int kMaxMeshDomain = 8;

std::optional<Problem> below(const std::string& key, double value, double minimum,
                             const char* words) {
  if (value >= minimum) return std::nullopt;
  return Problem{key, fmt::format("expected {}, got {}", words, value)};
}

std::optional<Problem> not_positive(const std::string& key, double value, bool integer) {
  if (value > 0.0) return std::nullopt;
  return Problem{
      key, fmt::format("expected a positive {}, got {}", integer ? "integer" : "number", value)};
}

std::optional<Problem> shape_problem(const Cluster& c) {
  if (auto p = not_positive("servers", c.servers, true)) return p;
  if (auto p = not_positive("gpus_per_server", c.gpus_per_server, true)) return p;
  const long long total = static_cast<long long>(c.servers) * c.gpus_per_server;
  if (total > kMaxClusterGpus) {  // gpus() is an int: refuse before it overflows
    return Problem{"servers", fmt::format("{} servers x {} GPUs = {} GPUs; at most {}", c.servers,
                                          c.gpus_per_server, total, kMaxClusterGpus)};
  }
  const int domain = c.nvlink.domain_gpus;
  if (auto p = not_positive("nvlink.domain_gpus", domain, true)) return p;
  const int per_server = c.gpus_per_server;
  if (per_server % domain != 0 && domain % per_server != 0) {
    return Problem{"nvlink.domain_gpus",
                   fmt::format("{} neither divides nor is a multiple of gpus_per_server {}", domain,
                               per_server)};
  }
  // A rack-scale switch domain (NVL72) may end partly filled: a job on 128 GPUs holds one
  // whole rack and 56 GPUs of the next. A mesh has no such partial form.
  if (domain > per_server && c.servers % (domain / per_server) != 0 &&
      c.nvlink.kind != NvlinkKind::switch_fabric) {
    return Problem{"nvlink.domain_gpus",
                   fmt::format("a domain of {} GPUs spans {} servers, which does not tile {} "
                               "servers",
                               domain, domain / per_server, c.servers)};
  }
  return std::nullopt;
}

std::optional<Problem> mesh_problem(const NvlinkSpec& nv) {
  if (nv.domain_gpus > kMaxMeshDomain) {
    return Problem{"nvlink.domain_gpus", fmt::format("mesh domains are limited to {} GPUs, got {}",
                                                     kMaxMeshDomain, nv.domain_gpus)};
  }
  if (nv.mesh.empty()) return Problem{"nvlink.links", "expected at least one GPU pair"};
  for (std::size_t i = 0; i < nv.mesh.size(); ++i) {
    const MeshLink& link = nv.mesh[i];
    const std::string key = fmt::format("nvlink.links[{}]", i);
    for (const int gpu : {link.a, link.b}) {
      if (gpu < 0 || gpu >= nv.domain_gpus) {
        return Problem{key, fmt::format("GPU {} is outside the domain of {} GPUs (0..{})", gpu,
                                        nv.domain_gpus, nv.domain_gpus - 1)};
      }
    }
    if (link.a == link.b) {
      return Problem{key, fmt::format("GPU {} cannot link to itself", link.a)};
    }
    if (auto p = not_positive(key + ".count", link.links, true)) return p;
    for (std::size_t j = 0; j < i; ++j) {
      const MeshLink& other = nv.mesh[j];
      if (std::minmax(other.a, other.b) == std::minmax(link.a, link.b)) {
        return Problem{key, fmt::format("pair {}-{} is already listed as nvlink.links[{}]", link.a,
                                        link.b, j)};
      }
    }
  }
  return std::nullopt;
}

std::optional<Problem> nvlink_problem(const NvlinkSpec& nv) {
  if (nv.kind != NvlinkKind::none) {
    if (auto p = not_positive("nvlink.gbps_per_link", nv.gbps_per_link, false)) return p;
  }
  if (nv.kind == NvlinkKind::switch_fabric) {
    if (auto p = not_positive("nvlink.links_per_gpu", nv.links_per_gpu, true)) return p;
  }
  if (nv.kind == NvlinkKind::mesh) {
    if (auto p = mesh_problem(nv)) return p;
  }
  return below("nvlink.latency_us", nv.latency_us, 0.0, "a non-negative number");
}

std::optional<Problem> network_problem(const Cluster& c) {
  const NetworkSpec& net = c.network;
  if (net.nics_per_server < 0) {
    return Problem{"network.nics_per_server",
                   fmt::format("expected a non-negative integer, got {}", net.nics_per_server)};
  }
  if (net.nics_per_server == 0 && c.domains() > 1) {
    return Problem{"network.nics_per_server",
                   fmt::format("expected at least 1 NIC per server to connect {} NVLink "
                               "domains, got 0",
                               c.domains())};
  }
  if (net.nics_per_server > 0) {
    if (auto p = not_positive("network.nic_gbits", net.nic_gbits, false)) return p;
  }
  if (auto p = below("network.oversubscription", net.oversubscription, 1.0, "a number >= 1")) {
    return p;
  }
  return below("network.latency_us", net.latency_us, 0.0, "a non-negative number");
}

/// Rates within [kMinHardwareRate, kMaxHardwareRate], latencies and the taper bounded: keeps
/// every predicted time finite (the positive checks above come first).
std::optional<Problem> bounds_problem(const Cluster& c) {
  std::vector<std::pair<std::string, double>> rates = {{"pcie.gbps", c.pcie.gbps}};
  if (c.nvlink.kind != NvlinkKind::none) {
    rates.emplace_back("nvlink.gbps_per_link", c.nvlink.gbps_per_link);
  }
  if (c.network.nics_per_server > 0) rates.emplace_back("network.nic_gbits", c.network.nic_gbits);
  for (const auto& [key, value] : rates) {
    if (value < kMinHardwareRate || value > kMaxHardwareRate) {
      return Problem{key, fmt::format("expected a number in [{:g}, {:g}], got {:g}",
                                      kMinHardwareRate, kMaxHardwareRate, value)};
    }
  }
  const std::pair<const char*, double> limited[] = {
      {"nvlink.latency_us", c.nvlink.latency_us},
      {"network.latency_us", c.network.latency_us},
      {"pcie.latency_us", c.pcie.latency_us},
      {"network.oversubscription", c.network.oversubscription}};
  for (const auto& [key, value] : limited) {
    if (value > kMaxLatencyUs)
      return Problem{key, fmt::format("expected at most 1e+06, got {:g}", value)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Problem> find_cluster_problem(const Cluster& cluster) {
  if (cluster.name.empty()) return Problem{"name", "expected a non-empty name"};
  if (auto p = find_gpu_problem(cluster.gpu)) return Problem{"gpu." + p->key, p->message};
  if (auto p = shape_problem(cluster)) return p;
  if (auto p = nvlink_problem(cluster.nvlink)) return p;
  if (auto p = network_problem(cluster)) return p;
  if (auto p = not_positive("pcie.gbps", cluster.pcie.gbps, false)) return p;
  if (auto p = below("pcie.latency_us", cluster.pcie.latency_us, 0.0, "a non-negative number")) {
    return p;
  }
  return bounds_problem(cluster);
}

void check_cluster(const Cluster& cluster, const std::string& source) {
  if (const auto problem = find_cluster_problem(cluster)) {
    throw InputError(source + ": " + problem->key + ": " + problem->message);
  }
}

}  // namespace trident
