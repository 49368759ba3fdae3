// libFuzzer target: NCCL topology XML (topology/nccl_xml_import.h), then the inferred wiring
// and the cluster YAML written from it, which must load again.
#include "fuzz/fuzz_common.h"
#include "fuzz/fuzz_import.h"
#include "topology/nccl_xml_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  trident::fuzz::accept_input_errors([&] {
    trident::check_text(text, "input");  // as cli/input_file.h does first
    trident::fuzz::check_imported_server(trident::parse_nccl_topo_xml(text, "topo.xml"));
  });
  return 0;
}
