// A --fail-link failure in words (cli/failure_text.h).
#include "cli/failure_text.h"

#include <fmt/format.h>

namespace trident::cli {
namespace {

[[nodiscard]] int global_id(const Cluster& cluster, int server, int local) {
  return server * cluster.gpus_per_server + local;
}

[[nodiscard]] std::string gpu_on(const Cluster& cluster, int server, int local) {
  return fmt::format("GPU {} on server {} (global GPU {})", local, server,
                     global_id(cluster, server, local));
}

[[nodiscard]] std::string peer_list(const std::vector<std::pair<int, int>>& peers) {
  std::string text;
  for (const auto& [peer, links] : peers) {
    text += (text.empty() ? "" : ", ") + std::to_string(peer);
  }
  return text.empty() ? "none" : text;
}

[[nodiscard]] std::string describe_nvlink(const Failure& f, const Cluster& cluster) {
  const int total = cluster.nvlink.links_per_gpu;
  if (cluster.nvlink.kind == NvlinkKind::mesh) {
    return fmt::format("every direct NVLink of {} (to GPUs {})", gpu_on(cluster, f.server, f.gpu),
                       peer_list(mesh_peers(cluster, f.server, f.gpu)));
  }
  if (f.kind == FailureKind::nvlink_all) {
    return fmt::format("all {} NVLinks of {}: its traffic falls back to PCIe", total,
                       gpu_on(cluster, f.server, f.gpu));
  }
  const std::string count = f.links == 1 ? "one" : std::to_string(f.links);
  // `cluster` has this failure applied: the GPU's links down there are this spec's and those of
  // any other spec on the same GPU, which the plan prices together.
  const auto down = cluster.health.nvlinks_down.find(global_id(cluster, f.server, f.gpu));
  const int left = total - (down == cluster.health.nvlinks_down.end() ? f.links : down->second);
  return fmt::format("{} of {} NVLinks of {}: it keeps {}{}", count, total,
                     gpu_on(cluster, f.server, f.gpu), left,
                     left == total - f.links ? "" : " (with its other failed links)");
}

[[nodiscard]] std::string describe_mesh(const Failure& f, const Cluster& cluster) {
  int links = 0;
  for (const auto& [peer, count] : mesh_peers(cluster, f.server, f.gpu)) {
    if (peer == f.peer) links = count;
  }
  return fmt::format("the direct link GPU {} - GPU {} on server {} ({} {})", f.gpu, f.peer,
                     f.server, links, links == 1 ? "NVLink" : "NVLinks");
}

}  // namespace

std::string describe(const Failure& failure, const Cluster& cluster) {
  const Failure& f = failure;
  switch (f.kind) {
    case FailureKind::nvlink:
    case FailureKind::nvlink_all:
      return describe_nvlink(f, cluster);
    case FailureKind::mesh_link:
      return describe_mesh(f, cluster);
    case FailureKind::nic: {
      const int nics = cluster.network.nics_per_server;
      // `cluster` has every failure applied: the NICs the server keeps of all of them.
      const auto down = cluster.health.nics_down.find(f.server);
      const int left = nics - (down == cluster.health.nics_down.end() ? 1 : down->second);
      std::string text =
          fmt::format("NIC {} of {} on server {}: its GPUs share the other {}{}", f.nic, nics,
                      f.server, left, left == nics - 1 ? "" : " (with its other failed NICs)");
      // `cluster` has the failure applied: what the NICs left give each GPU.
      const double share_gbps = cluster.nic_share_gbps(f.server);
      if (share_gbps > 0.0 && share_gbps >= cluster.pcie.gbps) {
        text += fmt::format(
            ", {:.1f} GB/s a GPU, still at least its {:.0f} GB/s PCIe link: no GPU's "
            "network rate falls",
            share_gbps, cluster.pcie.gbps);
      }
      return text;
    }
    case FailureKind::gpu:
      return gpu_on(cluster, f.server, f.gpu) + " dead";
    case FailureKind::server: {
      const int first = global_id(cluster, f.server, 0);
      return fmt::format("server {} dead (GPUs {}-{})", f.server, first,
                         first + cluster.gpus_per_server - 1);
    }
  }
  return f.spec;
}

}  // namespace trident::cli
