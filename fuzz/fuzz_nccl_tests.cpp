// libFuzzer target: nccl-tests logs, text and `-J` JSON (validate/nccl_tests_parser.h), named
// by the file ("all_reduce_perf.log") or not ("log.txt": the collective is inferred from the
// table), then the samples, the fits and the calibration file `calibrate` would write.
#include <cmath>

#include "costmodel/calibration_io.h"
#include "fuzz/fuzz_common.h"
#include "validate/collective_fit.h"
#include "validate/nccl_tests_parser.h"

namespace {

void calibrate(const std::string& text, const std::string& source) {
  trident::Calibration calibration;
  for (const trident::NcclTestsTable& table : trident::parse_nccl_tests(text, source)) {
    for (const trident::CollectiveSample& sample :
         trident::to_samples(table, trident::infer_tier(table))) {
      // Rows are bounded (size <= 1e15 B, time <= 1e9 us): every sample is a finite rate.
      trident::fuzz::require_finite({sample.time_s, sample.busbw_gbps, sample.bytes}, "sample");
      calibration.collectives.push_back(sample);
    }
  }
  calibration.fits = trident::fit_all(calibration.collectives);
  for (const auto& fit : calibration.fits) {
    trident::fuzz::require(!std::isnan(fit.latency_s) && !std::isnan(fit.busbw_gbps),
                           "fit is a number");
  }
  // calibrate writes only what plan --calibration accepts; here that check may refuse
  // (InputError), never crash.
  (void)trident::parse_calibration(trident::to_json(calibration), "calibration.json");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const char* source : {"all_reduce_perf.log", "log.txt"}) {
    trident::fuzz::accept_input_errors(
        [&] { calibrate(trident::fuzz::as_checked_text(data, size, source), source); });
  }
  return 0;
}
