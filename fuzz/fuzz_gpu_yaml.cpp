// libFuzzer target: GPU YAML (topology/cluster_loader.h load_gpu), then one plan priced on an
// 8-GPU server of that GPU: a GPU that loads gives finite times (no NaN out).
#include <cmath>

#include "costmodel/kernels.h"
#include "costmodel/model_loader.h"
#include "fuzz/fuzz_common.h"
#include "planner/search.h"
#include "topology/cluster_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trident::fuzz::accept_input_errors([&] {
    const std::string text = trident::fuzz::as_checked_text(data, size, "gpu.yaml");
    const trident::Gpu gpu = trident::load_gpu(text, "gpu.yaml");
    trident::fuzz::require(std::isfinite(gpu.memory_gib) && gpu.memory_gib > 0,
                           "memory_gib positive and finite");
    trident::Cluster cluster = trident::cluster_preset("dgx-h100");
    cluster.servers = 1;
    cluster.gpu = gpu;
    trident::Model model = trident::model_preset("llama3-8b");
    model.training.global_batch = 8;
    trident::check_model_on_gpu(model, gpu);  // a dtype the GPU lacks is refused first
    trident::ParallelConfig config;
    config.tp = 8;
    const trident::PlanResult plan = trident::evaluate_plan(cluster, model, config);
    const trident::Estimate& e = plan.estimate;
    trident::fuzz::require_finite({e.time.step_s, e.time.forward_s, e.time.backward_s,
                                   e.time.tp_comm_s, e.mfu, e.tokens_per_s},
                                  "estimate");
  });
  return 0;
}
