// libFuzzer target: nccl-tests logs, text and `-J` JSON (validate/nccl_tests_parser.h), then
// the tier and the samples drawn from each table.
#include <cmath>

#include "fuzz/fuzz_common.h"
#include "validate/nccl_tests_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  trident::fuzz::accept_input_errors([&] {
    const auto tables = trident::parse_nccl_tests(text, "all_reduce_perf.log");
    for (const trident::NcclTestsTable& table : tables) {
      for (const trident::CollectiveSample& sample :
           trident::to_samples(table, trident::infer_tier(table))) {
        trident::fuzz::require(!std::isnan(sample.busbw_gbps), "busbw is a number");
      }
    }
  });
  return 0;
}
