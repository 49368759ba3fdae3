// libFuzzer target: the plan JSON read by validate (validate/plan_reader.h), plans[0] and
// plans[1].
#include <cmath>

#include "fuzz/fuzz_common.h"
#include "validate/plan_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (int index = 0; index < 2; ++index) {
    trident::fuzz::accept_input_errors([&] {
      const std::string text = trident::fuzz::as_checked_text(data, size, "plan.json");
      const trident::PlanSpec plan = trident::read_plan(text, "plan.json", index);
      // tp x pp x dp is checked before it is multiplied: no wrap to the MPI world size.
      trident::fuzz::require(plan.world_size() > 0 && plan.world_size() <= (1 << 24),
                             "world size in 1..2^24");
      for (const auto* comm : {&plan.tp, &plan.pp, &plan.dp}) {
        if (*comm) {
          trident::fuzz::require((*comm)->bytes_per_call <= 1e15, "bytes per call <= 1e15");
        }
      }
    });
  }
  return 0;
}
