// One GEMM list (costmodel/gemms.h): the plan JSON's `gemms` are the GEMMs the cost model
// prices and counts. Their FLOPs times calls, over all GPUs, plus the attention core (batched
// GEMMs validate does not time) equal the estimate's hardware FLOPs.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

TEST_CASE("JSON GEMM FLOPs x calls = the estimate's hardware FLOPs", "[cli_gemms]") {
  // Llama 3 8B: L 32, h 4096, 32/8 heads, SwiGLU 14336, V 128256, s 8192; 8 GPUs: TP 2 x PP 1
  // x DP 4, micro-batch 1, global batch 16, no recompute.
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
  // Attention core: scores + context, 2 x 2 b s^2 h per layer forward; cuDNN's fused kernel
  // runs the causal half, forward once and backward 2.5x (its scores recomputed):
  // 0.5 x 3.5 x 4 x 16 x 8192^2 x 4096 x 32 layers.
  const double core = 0.5 * 3.5 * 4.0 * 16 * 8192.0 * 8192.0 * 4096.0 * 32;
  const double hardware = plan.at("hardware_tflops_per_gpu").get<double>() * 1e12 *
                          plan.at("step_time_s").get<double>() * 8;
  CHECK(linear_and_logits + core == Approx(hardware).epsilon(1e-9));
}

TEST_CASE("JSON GEMMs carry their dtype: FP8 linear layers, bf16 output layer",
          "[cli_gemms][fp8]") {
  // What validate runs each GEMM in (docs/validate.md): precision_of's linear_gemm and
  // output_gemm, priced at that dtype's rate.
  cli_test::TempDir dir;
  const std::string model =
      "name: fp8-model\nlayers: 4\nhidden: 1024\nheads: 8\nvocab: 32000\n"
      "seq_len: 2048\ntraining:\n  global_batch: 64\n  dtype: ";
  std::ofstream(dir.path / "fp8.yaml") << model << "fp8\n  fp8: {recipe: delayed}\n";
  std::ofstream(dir.path / "bf16.yaml") << model << "bf16\n";
  const auto plan_of = [&](const char* file) {
    const auto run = cli_test::run_trident(
        "plan --gpus 1 --servers 1 --gpu h200-sxm-141g --tp 1 --pp 1 --dp 1 --micro-batch 1 "
        "--format json --model " +
        (dir.path / file).string());
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.out).at("plans").at(0).at("gemms");
  };
  const auto fp8 = plan_of("fp8.yaml");
  const auto bf16 = plan_of("bf16.yaml");
  REQUIRE(fp8.size() == bf16.size());
  for (std::size_t i = 0; i < fp8.size(); ++i) {
    const bool logits = fp8[i].at("name") == "logits";
    INFO(fp8[i].at("name"));
    CHECK(fp8[i].at("dtype") == (logits ? "bf16" : "fp8"));
    CHECK(bf16[i].at("dtype") == "bf16");
    const double ratio =
        fp8[i].at("predicted_tflops").get<double>() / bf16[i].at("predicted_tflops").get<double>();
    if (logits) {
      CHECK(ratio == Approx(1.0));
    } else {
      CHECK(ratio > 1.2);  // the FP8 ceiling (0.734 x 1979) over BF16's, less the k fill
    }
  }
}

TEST_CASE("the JSON GEMMs run at the pace of the slowest of the plan's GPUs", "[cli_gemms]") {
  // The same layer's GEMMs (micro-batch 1, no TP) in a job of 8 H200s and one of 64: the
  // predicted rate is the GEMM ceiling's, which carries the job's pace. 8 GPUs: the preset's
  // 0.979; 64: 0.979 x (1 - 0.0104 x 2.3367) / (1 - 0.0104 x 1.4342) = 0.979 x 0.975698 /
  // 0.985084, so every compute-bound GEMM's rate falls by 0.990472.
  cli_test::TempDir dir;
  std::ofstream(dir.path / "m.yaml") << "name: m\nlayers: 4\nhidden: 4096\nheads: 32\nvocab: "
                                        "32000\nseq_len: 4096\ntraining:\n  global_batch: 64\n";
  const auto gemms_on = [&](int servers) {
    const auto run = cli_test::run_trident(
        "plan --gpus " + std::to_string(8 * servers) + " --servers " + std::to_string(servers) +
        " --gpu h200-sxm-141g --tp 1 --pp 1 --micro-batch 1 --zero 1 --format json --model " +
        (dir.path / "m.yaml").string());
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.out).at("plans").at(0).at("gemms");
  };
  const auto eight = gemms_on(1);
  const auto sixty_four = gemms_on(8);
  REQUIRE(eight.size() == sixty_four.size());
  REQUIRE_FALSE(eight.empty());
  for (std::size_t i = 0; i < eight.size(); ++i) {
    INFO(eight[i].at("name"));
    CHECK(sixty_four[i].at("predicted_tflops").get<double>() /
              eight[i].at("predicted_tflops").get<double>() ==
          Approx(0.975698 / 0.985084).epsilon(1e-5));
  }
}

TEST_CASE("multi-token prediction in the JSON GEMMs: a second output pass and its projection",
          "[cli_gemms]") {
  // DeepSeek-V3 (mtp_layers 1) on 128 GPUs: TP 2 x PP 4 x DP 16, EP 32, micro-batch 1, global
  // batch 64 -> m = 64 / 16 = 4 micro-batches. The output layer runs twice per micro-batch
  // forward and backward: 3 x 2 x 4 = 24 calls; the projection [b s x h/t x 2h] 3 x 4 = 12.
  const auto run = cli_test::run_trident(
      "plan --gpus 128 --servers 16 --model deepseek-v3 --global-batch 64 --tp 2 --pp 4 --dp 16 "
      "--ep 32 --micro-batch 1 --vp 1 --recompute full --sequence-parallel on --format json "
      "--show-infeasible");
  REQUIRE(run.code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  const auto& plans = doc.at("plans").empty() ? doc.at("infeasible") : doc.at("plans");
  REQUIRE_FALSE(plans.empty());
  bool projection = false;
  for (const auto& gemm : plans.at(0).at("gemms")) {
    if (gemm.at("name") == "logits") CHECK(gemm.at("calls_per_step").get<double>() == 24.0);
    if (gemm.at("name") != "mtp_projection") continue;
    projection = true;
    CHECK(gemm.at("m").get<long long>() == 4096);  // 1 x 4096 tokens
    CHECK(gemm.at("n").get<long long>() == 3584);  // 7168 / 2
    CHECK(gemm.at("k").get<long long>() == 14336);
    CHECK(gemm.at("calls_per_step").get<double>() == 12.0);
  }
  CHECK(projection);
}

TEST_CASE("--explain says how many linear GEMMs the calibration's measured rates price",
          "[cli_gemms]") {
  // A calibration measuring the plan's own QKV and FFN-up forward shapes: the ceiling line is
  // not what those GEMMs rest on any more, and --explain says so (it printed the ceiling alone
  // next to an MFU above it).
  const std::string pins =
      "plan --gpus 8 --servers 1 --model llama3-8b --global-batch 8 --tp 8 --pp 1 --dp 1 "
      "--micro-batch 1 --recompute full --sequence-parallel on";
  const auto run = cli_test::run_trident(pins + " --format json");
  REQUIRE(run.code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  nlohmann::json gemms = nlohmann::json::array();
  for (const auto& gemm : doc.at("plans").at(0).at("gemms")) {
    if (gemm.at("name") != "qkv" && gemm.at("name") != "ffn_up") continue;
    gemms.push_back({{"m", gemm.at("m")},
                     {"n", gemm.at("n")},
                     {"k", gemm.at("k")},
                     {"dtype", "bf16"},
                     {"tflops", 700.0}});
  }
  REQUIRE(gemms.size() == 2);
  cli_test::TempDir dir;
  const auto file = dir.path / "calibration.json";
  std::ofstream(file) << nlohmann::json{
      {"trident_calibration", 1},
      {"gpu", "NVIDIA H100 80GB HBM3"},
      {"collectives", nlohmann::json::array()},
      {"fits", nlohmann::json::array()},
      {"gemms", gemms}}.dump();
  const auto explained = cli_test::run_trident(pins + " --explain --calibration " + file.string());
  REQUIRE(explained.code == 0);
  // Measured (m, n, k): QKV 8192 x 768 x 4096 and FFN up 8192 x 3584 x 4096. The lookup takes
  // the nearest shape within 2x in every dimension, so of the 12 shapes priced (each GEMM
  // forward (m,n,k), input gradient (m,k,n), weight gradient (k,n,m)) seven take a measured
  // rate: QKV's forward and weight gradient 4096 x 768 x 8192; FFN up's forward, input
  // gradient 8192 x 4096 x 3584 and weight gradient 4096 x 3584 x 8192; the attention output's
  // input gradient 8192 x 512 x 4096 (near QKV's) and FFN down's 8192 x 1792 x 4096 (FFN up's).
  CHECK(explained.out.find("(the calibration's measured rates replace the ceiling for 7 of the "
                           "layer's 12 linear GEMM shapes: 4 GEMMs, forward and both gradients)") !=
        std::string::npos);
  const auto plain = cli_test::run_trident(pins + " --explain");
  CHECK(plain.out.find("measured rates replace the ceiling") == std::string::npos);
}

TEST_CASE("--explain names the calibration's fit where it prices a dimension's calls",
          "[cli_gemms]") {
  // all_reduce_old.txt: nccl-tests all_reduce_perf on 8 A100 over NVLink; its fit prices the
  // TP all-reduce (0.545 ms a call at the link's rate, 0.474 ms with the fit), while the link
  // line still shows NVLink's 300 GB/s: the explanation says which priced the calls.
  cli_test::TempDir dir;
  const std::string calibration = (dir.path / "c.json").string();
  const auto made =
      cli_test::run_trident("calibrate --nccl-tests " + std::string(TRIDENT_SOURCE_DIR) +
                            "/tests/data/nccl_tests/all_reduce_old.txt --output " + calibration);
  REQUIRE(made.code == 0);
  const std::string plan =
      "plan --cluster dgx-a100 --model llama2-70b --tp 8 --pp 4 --dp 8 --vp 4 --micro-batch 1 "
      "--recompute none --sequence-parallel off --zero 0 --explain 1";
  const auto calibrated = cli_test::run_trident(plan + " --calibration " + calibration);
  REQUIRE(calibrated.code == 0);
  CHECK(calibrated.out.find("      calibrated: the all-reduce calls are priced by the "
                            "calibration's all-reduce fit over 8 ranks on nvlink (262.1 GB/s bus "
                            "bandwidth, 1.9 us latency), not the link's rate\n") !=
        std::string::npos);
  const auto plain = cli_test::run_trident(plan);
  CHECK(plain.out.find("calibrated:") == std::string::npos);
  // The all-gather half of ZeRO-1's reduce-scatter + all-gather, priced by an all-gather fit,
  // is named too (it moved DP's call from 120.8 to 202.7 ms with nothing said).
  const std::string gathers = (dir.path / "ag.json").string();
  REQUIRE(cli_test::run_trident("calibrate --nccl-tests " + std::string(TRIDENT_SOURCE_DIR) +
                                "/tests/data/nccl_tests/all_gather_new.txt --output " + gathers)
              .code == 0);
  const auto zero1 = cli_test::run_trident(
      "plan --gpus 16 --servers 2 --model llama3-8b --tp 2 --pp 1 --dp 8 --zero 1 "
      "--micro-batch 1 --recompute none --sequence-parallel on --explain --calibration " +
      gathers);
  REQUIRE(zero1.code == 0);
  CHECK(zero1.out.find("      calibrated: the all-gather calls are priced by the calibration's "
                       "all-gather fit over") != std::string::npos);
}
