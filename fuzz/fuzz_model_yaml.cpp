// libFuzzer target: model YAML (costmodel/model_loader.h load_model), then the parameter
// count of what loaded.
#include <cmath>

#include "costmodel/model.h"
#include "costmodel/model_loader.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  trident::fuzz::accept_input_errors([&] {
    trident::check_text(text, "input");  // as cli/input_file.h does first
    const trident::Model model = trident::load_model(text, "model.yaml");
    const trident::ParameterCount count = trident::count_parameters(model);
    trident::fuzz::require(std::isfinite(count.total) && count.total > 0,
                           "parameter count positive and finite");
  });
  return 0;
}
