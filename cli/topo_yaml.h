#pragma once
/// The cluster YAML (configs/clusters format) `trident topo import` writes for an imported
/// server: what was read, assumed and found broken said in comments, the broken links as
/// --fail-link specs to plan with.
#include <string>

#include "topology/server_import.h"

namespace trident::cli {

struct ImportOptions {
  std::string name;  ///< cluster name
  std::string gpu;   ///< GPU preset (required)
  int servers = 1;
  int nics = 0;                ///< NICs per server, overrides the input's count; 0 = from it
  double nic_gbits = 0.0;      ///< overrides the input; 0 = from the input, else assumed
  double gbps_per_link = 0.0;  ///< overrides; 0 = from the GPU
};

/// A cluster YAML of `options.servers` servers like this one. Throws InputError naming --gpu
/// or --nvlink-gbps when the GPU or its NVLink speed is unknown, and when the server has no GPU.
[[nodiscard]] std::string cluster_yaml(const ImportedServer& server, const ImportOptions& options);

}  // namespace trident::cli
