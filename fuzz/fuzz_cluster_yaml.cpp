// libFuzzer target: cluster YAML (topology/cluster_loader.h load_cluster).
#include <cmath>

#include "fuzz/fuzz_common.h"
#include "topology/cluster_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  trident::fuzz::accept_input_errors([&] {
    trident::check_text(text, "input");  // as cli/input_file.h does first
    const trident::Cluster cluster = trident::load_cluster(text, "cluster.yaml");
    // A loaded cluster passed check_cluster: its sizes are positive and finite.
    trident::fuzz::require(cluster.gpus() > 0, "gpus() > 0");
    trident::fuzz::require(cluster.domains() > 0, "domains() > 0");
    trident::fuzz::require(std::isfinite(cluster.network.nic_gbits), "nic_gbits finite");
  });
  return 0;
}
