// libFuzzer target: calibration JSON (costmodel/calibration_io.h). What parses must write
// back and parse again.
#include "costmodel/calibration_io.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  bool parsed = false;
  std::string written;
  trident::fuzz::accept_input_errors([&] {
    trident::check_text(text, "input");  // as cli/input_file.h does first
    const trident::Calibration calibration = trident::parse_calibration(text, "calib.json");
    written = trident::to_json(calibration);
    parsed = true;
  });
  if (!parsed) return 0;
  try {
    (void)trident::parse_calibration(written, "rewritten.json");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident fuzz: written calibration does not parse: %s\n", e.what());
    std::abort();
  }
  return 0;
}
