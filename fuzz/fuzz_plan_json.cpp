// libFuzzer target: the plan JSON read by validate (validate/plan_reader.h), plans[0] and
// plans[1].
#include "fuzz/fuzz_common.h"
#include "validate/plan_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = trident::fuzz::as_text(data, size);
  for (int index = 0; index < 2; ++index) {
    trident::fuzz::accept_input_errors([&] {
      const trident::PlanSpec plan = trident::read_plan(text, "plan.json", index);
      trident::fuzz::require(plan.world_size() > 0, "world size positive");
    });
  }
  return 0;
}
