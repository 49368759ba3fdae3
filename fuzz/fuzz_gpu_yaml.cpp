// libFuzzer target: GPU YAML (topology/cluster_loader.h load_gpu).
#include <cmath>

#include "fuzz/fuzz_common.h"
#include "topology/cluster_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  trident::fuzz::accept_input_errors([&] {
    const trident::Gpu gpu = trident::load_gpu(text, "gpu.yaml");
    trident::fuzz::require(std::isfinite(gpu.memory_gib) && gpu.memory_gib > 0,
                           "memory_gib positive and finite");
  });
  return 0;
}
