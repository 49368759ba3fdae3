#pragma once
/// Shared by the server-import fuzz targets (nvidia-smi text, NCCL XML): what is done with a
/// parsed server — infer its wiring, guess its GPU, write the cluster YAML — and that YAML
/// must load again.
#include "cli/topo_yaml.h"
#include "fuzz/fuzz_common.h"
#include "topology/cluster_loader.h"
#include "topology/server_import.h"

namespace trident::fuzz {

inline void check_imported_server(const ImportedServer& server) {
  // Sizes are bounded before the GPUs x GPUs matrix is built, link counts per cell.
  require(server.gpus > 0 && server.gpus <= kMaxImportGpus, "GPUs in 1..kMaxImportGpus");
  for (const auto& row : server.pair_links) {
    for (const int links : row) require(links >= 0 && links <= kMaxNvlinks, "NVLinks per pair");
  }
  (void)infer_nvlink(server);
  (void)guess_gpu_preset(server);
  cli::ImportOptions options;
  options.name = "fuzz";
  options.gpu = "h100-sxm-80g";
  options.servers = 2;
  (void)load_cluster(cli::cluster_yaml(server, options), "imported.yaml");
}

}  // namespace trident::fuzz
