// libFuzzer target: NCCL topology XML (topology/nccl_xml_import.h), then the inferred wiring
// and the cluster YAML written from it, which must load again.
#include "fuzz/fuzz_common.h"
#include "topology/cluster_loader.h"
#include "topology/nccl_xml_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  trident::fuzz::accept_input_errors([&] {
    const trident::ImportedServer server = trident::parse_nccl_topo_xml(text, "topo.xml");
    (void)trident::infer_nvlink(server);
    (void)trident::guess_gpu_preset(server);
    trident::ImportOptions options;
    options.name = "fuzz";
    options.gpu = "h100-sxm-80g";
    options.servers = 2;
    const std::string yaml = trident::cluster_yaml(server, options);
    (void)trident::load_cluster(yaml, "imported.yaml");
  });
  return 0;
}
