// One GEMM list (costmodel/gemms.h): the plan JSON's `gemms` are the GEMMs the cost model
// prices and counts. Their FLOPs times calls, over all GPUs, plus the attention core (batched
// GEMMs validate does not time) equal the estimate's hardware FLOPs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

TEST_CASE("JSON GEMM FLOPs x calls = the estimate's hardware FLOPs", "[cli_gemms]") {
  // Llama 3 8B: L 32, h 4096, 32/8 heads, SwiGLU 14336, V 128256, s 8192; 8 GPUs: TP 2 x PP 1
  // x DP 4, micro-batch 1, global batch 16, no recompute (hardware = model FLOPs).
  const auto run = cli_test::run_trident(
      "plan --gpus 8 --servers 1 --model llama3-8b --global-batch 16 --tp 2 --pp 1 --dp 4 "
      "--micro-batch 1 --recompute none --zero 1 --sequence-parallel on --format json");
  REQUIRE(run.code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  const auto& plan = doc.at("plans").at(0);
  double per_gpu = 0.0;
  for (const auto& gemm : plan.at("gemms")) {
    per_gpu += 2.0 * gemm.at("m").get<double>() * gemm.at("n").get<double>() *
               gemm.at("k").get<double>() * gemm.at("calls_per_step").get<double>();
  }
  // Every GPU of a TP group runs 1/t of each GEMM and each DP replica its own batch: 2 x 4.
  const double linear_and_logits = per_gpu * 2 * 4;
  // Attention core: scores + context, 2 x 2 b s^2 h per layer forward, x3 with backward:
  // 12 x 16 x 8192^2 x 4096 x 32 layers.
  const double core = 12.0 * 16 * 8192.0 * 8192.0 * 4096.0 * 32;
  const double hardware = plan.at("hardware_tflops_per_gpu").get<double>() * 1e12 *
                          plan.at("step_time_s").get<double>() * 8;
  CHECK(linear_and_logits + core == Approx(hardware).epsilon(1e-9));
}
