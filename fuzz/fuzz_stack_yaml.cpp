// libFuzzer target: software stack YAML (costmodel/stack.h load_stack, with or without
// `base:`; a `base:` naming a file reads the input itself again, so chains end in the cycle
// check or a preset), then one plan priced under that stack on two 8-GPU servers with PP 2
// (interleaved where the stack interleaves): a stack that loads gives finite times (no NaN out).
#include <cmath>
#include <optional>
#include <string>

#include "costmodel/model_loader.h"
#include "costmodel/stack.h"
#include "fuzz/fuzz_common.h"
#include "planner/search.h"
#include "topology/cluster_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trident::fuzz::accept_input_errors([&] {
    const std::string text = trident::fuzz::as_checked_text(data, size, "stack.yaml");
    trident::EstimateOptions options;
    // Every file name a base gives reads this same input under that name.
    const trident::StackFileReader reader =
        [&text](const std::string& name, const std::string&,
                const std::string&) -> std::optional<trident::StackText> {
      if (!name.ends_with(".yaml")) return std::nullopt;
      return trident::StackText{text, name, ""};
    };
    options.stack = trident::load_stack(text, "stack.yaml", reader);
    trident::fuzz::require(
        std::isfinite(options.stack.measured_error) && options.stack.measured_error >= 0.0,
        "measured_error finite and not negative");
    trident::Cluster cluster = trident::cluster_preset("dgx-h100");
    cluster.servers = 2;
    trident::Model model = trident::model_preset("llama3-8b");
    model.training.global_batch = 16;
    trident::ParallelConfig config;
    config.tp = 2;
    config.pp = 2;
    config.dp = 4;  // m = 16 / 4 = 4
    config.virtual_stages = options.stack.interleaved_pipeline ? 2 : 1;
    const trident::PlanResult plan =
        trident::evaluate_plan(cluster, model, config, nullptr, options);
    const trident::Estimate& e = plan.estimate;
    trident::fuzz::require_finite(
        {e.time.step_s, e.time.forward_s, e.time.backward_s, e.time.pp_comm_s, e.time.dp_comm_s,
         e.time.bubble_s, e.mfu, e.memory.total_bytes},
        "estimate");
  });
  return 0;
}
