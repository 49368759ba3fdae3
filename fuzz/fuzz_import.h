#pragma once
/// Shared by the server-import fuzz targets (nvidia-smi text, NCCL XML): what is done with a
/// parsed server — infer its wiring, guess its GPU, write the cluster YAML — and that YAML
/// must load again.
#include "topology/cluster_loader.h"
#include "topology/server_import.h"

namespace trident::fuzz {

inline void check_imported_server(const ImportedServer& server) {
  (void)infer_nvlink(server);
  (void)guess_gpu_preset(server);
  ImportOptions options;
  options.name = "fuzz";
  options.gpu = "h100-sxm-80g";
  options.servers = 2;
  (void)load_cluster(cluster_yaml(server, options), "imported.yaml");
}

}  // namespace trident::fuzz
