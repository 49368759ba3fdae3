// trident plan --stack end to end: the stack in the assumptions and the JSON, its refusals,
// the cluster file's `stack:` key, the band and ties.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace {

using cli_test::Run;
using cli_test::TempDir;

Run trident(const std::string& args) {
  Run run = cli_test::run_trident(args);
  REQUIRE(run.code != -1);
  return run;
}

const std::string kSmall = "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64";

}  // namespace

TEST_CASE("the stack is stated in the assumptions and the JSON", "[cli_stack]") {
  const Run table = trident(kSmall + " --top 3");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("# stack megatron-core (default; change with --stack): attention cudnn") !=
        std::string::npos);
  CHECK(table.out.find("# band: ") != std::string::npos);

  const Run run = trident(kSmall + " --stack fsdp --format json --top 3");
  REQUIRE(run.code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc.at("stack") == "fsdp");
  REQUIRE(!doc.at("plans").empty());
  const auto& lead = doc.at("plans")[0];
  CHECK(lead.at("stack") == "fsdp");
  CHECK(lead.at("tied") == true);  // the leader is inside its own band
  CHECK(lead.at("mfu_causal").get<double>() < lead.at("mfu").get<double>());
  CHECK(lead.at("step_time_s_low").get<double>() < lead.at("step_time_s").get<double>());
  CHECK(lead.at("step_time_s_high").get<double>() > lead.at("step_time_s").get<double>());
  for (const auto& plan : doc.at("plans")) {
    CHECK(plan.at("pp") == 1);  // FSDP as llm-foundry runs it has no pipeline
    CHECK(plan.at("zero") != 1);
    CHECK(plan.at("recompute") != "selective");
  }
  CHECK(doc.at("assumptions")[1].get<std::string>().rfind("stack fsdp (from --stack)", 0) == 0);

  // The model line says which tensors are 8-bit under the stack: torchtitan gathers FP8 weights
  // under tensorwise scaling only, so a blockwise (rowwise) model's weights stay 16-bit there
  // (a review's find: the line said "weights in FP8", the --explain 16-bit).
  TempDir dir;
  const std::string examples = std::string(TRIDENT_SOURCE_DIR) + "/docs/examples/";
  std::ifstream in(examples + "llama3-8b-fp8.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string model = text.str();
  model.replace(model.find("recipe: delayed"), 15, "recipe: blockwise");
  std::ofstream(dir.path / "rowwise.yaml") << model;
  const std::string fp8 =
      "plan --gpus 64 --servers 8 --top 1 --model " + (dir.path / "rowwise.yaml").string();
  CHECK(trident(fp8 + " --stack torchtitan")
            .out.find("fp8 blockwise scaling (linear GEMMs, TP all-gathers in FP8; output layer, "
                      "activations, "
                      "attention, weights (stack torchtitan gathers FP8 weights under tensorwise "
                      "scaling only) in bf16)") != std::string::npos);
  CHECK(trident(fp8).out.find("fp8 blockwise scaling (linear GEMMs, TP all-gathers, weights in "
                              "FP8; output layer, activations, attention in bf16)") !=
        std::string::npos);
}

TEST_CASE("what a stack cannot run is refused with one line and exit 2", "[cli_stack]") {
  const Run unknown = trident(kSmall + " --stack fsdq");
  CHECK(unknown.code == 2);
  CHECK(unknown.err.rfind("trident: error: --stack 'fsdq': unknown stack (did you mean 'fsdp'?)",
                          0) == 0);
  const Run zero = trident(kSmall + " --stack megatron-2021 --zero 1");
  CHECK(zero.code == 2);
  CHECK(zero.err == "trident: error: --zero 1: stack megatron-2021 does not run ZeRO-1\n");
  const Run pipelined = trident(kSmall + " --stack fsdp --pp 2");
  CHECK(pipelined.code == 2);
  CHECK(pipelined.err ==
        "trident: error: --pp 2: stack fsdp has no pipeline parallelism; use --pp 1 or another "
        "--stack\n");
  const Run sp = trident(kSmall + " --stack deepspeed-megatron --sequence-parallel on");
  CHECK(sp.code == 2);
  CHECK(sp.err ==
        "trident: error: --sequence-parallel on: stack deepspeed-megatron has no sequence "
        "parallelism\n");
  const Run sp_off = trident(kSmall + " --stack torchtitan --tp 2 --sequence-parallel off");
  CHECK(sp_off.code == 2);
  CHECK(sp_off.err ==
        "trident: error: --sequence-parallel off with --tp 2: stack torchtitan runs tensor "
        "parallelism only with sequence parallelism; use --sequence-parallel on or --tp 1\n");
  // torchtitan shortens only the first and the last (virtual) stage of an uneven split: 32
  // layers over PP 13 (ceil 3, 7 short: 2 off each end, 3 off middles: 1 | 3 x 8, 2 x 3 | 1)
  // has middles that differ; over PP 5 (6 | 7 x 3 | 5) VP 7 leaves chunks of 1 layer where
  // the last stage is 2 short.
  const Run middles = trident("plan --gpus 104 --model llama3-8b --pp 13 --stack torchtitan");
  CHECK(middles.code == 2);
  CHECK(middles.err ==
        "trident: error: --pp 13: PP 13 splits model llama3-8b's 32 layers 1 | up to 3 | 1, "
        "middle stages of different sizes; stack torchtitan shortens only the first and the "
        "last stage; use another --pp or --stack\n");
  const Run ends = trident("plan --gpus 40 --model llama3-8b --pp 5 --vp 7 --stack torchtitan");
  CHECK(ends.code == 2);
  CHECK(ends.err ==
        "trident: error: --vp 7: PP 5 splits model llama3-8b's 32 layers 6 | up to 7 | 5; stack "
        "torchtitan shortens only the first and the last virtual stage, so VP must divide 7 and "
        "leave chunks of at least 2 layers; use another --vp\n");
  // torchtitan trains in bf16 or fp32 (FP8 linears on top), never fp16: refused naming the
  // flag, or the model whose dtype it is; a stack file may narrow its own list.
  const Run fp16 = trident(kSmall + " --stack torchtitan --dtype fp16");
  CHECK(fp16.code == 2);
  CHECK(fp16.err ==
        "trident: error: --dtype fp16: stack torchtitan does not train in it (it runs bf16, fp8, "
        "fp32)\n");
  CHECK(trident(kSmall + " --stack torchtitan --dtype bf16").code == 0);
  TempDir dir;
  const auto stack = dir.path / "s.yaml";
  std::ofstream(stack) << "name: bf16-only\nbase: megatron-core\ndtypes: [bf16]\n";
  const Run narrowed = trident(kSmall + " --stack " + stack.string() + " --dtype fp16");
  CHECK(narrowed.code == 2);
  CHECK(narrowed.err.find("stack bf16-only does not train in it (it runs bf16)") !=
        std::string::npos);
  std::ofstream(stack) << "name: bad\nbase: megatron-core\ndtypes: [bf16, fp64]\n";
  const Run bad = trident(kSmall + " --stack " + stack.string());
  CHECK(bad.code == 2);
  CHECK(bad.err.find("s.yaml:3: dtypes: expected bf16|fp16|fp8|tf32|fp32, got 'fp64'") !=
        std::string::npos);
}

TEST_CASE("a cluster file's stack: key, and --stack over it; a stack FILE", "[cli_stack]") {
  TempDir dir;
  const auto cluster = dir.path / "c.yaml";
  std::ofstream(cluster) << "name: mine\nstack: torchtitan\ngpu: h100-sxm-80g\nservers: 8\n"
                            "gpus_per_server: 8\nnvlink: {domain_gpus: 8, kind: switch, "
                            "links_per_gpu: 18, gbps_per_link: 25}\n"
                            "network: {nics_per_server: 8, nic_gbits: 400}\n";
  const Run from_file = trident("plan --cluster " + cluster.string() +
                                " --model llama3-8b --global-batch 64 --format json --top 1");
  REQUIRE(from_file.code == 0);
  CHECK(nlohmann::json::parse(from_file.out).at("stack") == "torchtitan");
  const Run flag =
      trident("plan --cluster " + cluster.string() +
              " --model llama3-8b --global-batch 64 --stack fsdp --format json --top 1");
  REQUIRE(flag.code == 0);
  CHECK(nlohmann::json::parse(flag.out).at("stack") == "fsdp");
  CHECK_FALSE(nlohmann::json::parse(flag.out).contains("stack_file"));  // a preset: no file

  const auto stack = dir.path / "s.yaml";
  std::ofstream(stack) << "name: my-stack\nattention: unfused\ntp_overlap: none\nzero_stages: [0]\n"
                          "recompute: [full]\n";
  const Run custom = trident(kSmall + " --stack " + stack.string() + " --format json --top 2");
  REQUIRE(custom.code == 0);
  const auto doc = nlohmann::json::parse(custom.out);
  CHECK(doc.at("stack") == "my-stack");
  CHECK(doc.at("stack_file") == stack.string());
  for (const auto& plan : doc.at("plans")) {
    CHECK(plan.at("recompute") == "full");
    CHECK(plan.at("zero") == 0);
  }
  // A file may take a preset's name: the text and the JSON name the file beside it.
  std::ofstream(stack) << "name: torchtitan\nbase: megatron-core\n";
  const Run named = trident(kSmall + " --stack " + stack.string() + " --top 1");
  REQUIRE(named.code == 0);
  CHECK(named.out.find("# stack torchtitan (from --stack, file " + stack.string() +
                       "): attention cudnn") != std::string::npos);
  std::ofstream(stack) << "name: bad\nattention: flash\ntp_overlap: sometimes\n";
  const Run bad = trident(kSmall + " --stack " + stack.string());
  CHECK(bad.code == 2);
  CHECK(bad.err.find("s.yaml:3: tp_overlap: expected none|backward|userbuffers, got 'sometimes'") !=
        std::string::npos);
}

TEST_CASE("a stack file's Adam step bytes reach the plan; a bad value is one line", "[cli_stack]") {
  TempDir dir;
  const auto stack = dir.path / "opt.yaml";
  const std::string pins =
      " --tp 1 --pp 1 --dp 64 --dp-shard 64 --micro-batch 1 --zero 3 --recompute full --format json"
      " --top 1";
  std::ofstream(stack) << "name: fused\nbase: fsdp\nadam_step_bytes: 34\n";
  const Run fused = trident(kSmall + " --stack " + stack.string() + pins);
  REQUIRE(fused.code == 0);
  std::ofstream(stack) << "name: unfused\nbase: fsdp\nadam_step_bytes: 92\n";
  const Run unfused = trident(kSmall + " --stack " + stack.string() + pins);
  REQUIRE(unfused.code == 0);
  // The same split (every knob pinned, the sharding too); only the optimizer step differs, by 92/34
  // (memory bound over the same 8.03e9 / 64 local parameters).
  const auto time_of = [](const Run& run) {
    return nlohmann::json::parse(run.out).at("plans").at(0).at("time");
  };
  const double fused_s = time_of(fused).at("optimizer_s").get<double>();
  // Llama 3 8B's 8,030,261,248 parameters / 64 = 125,472,832 a GPU x 34 bytes = 4.266e9 bytes
  // at H100's 3350 GB/s x 0.85 achievable = 1.49818 ms.
  CHECK(fused_s == Approx(125472832.0 * 34.0 / (3350e9 * 0.85)).epsilon(1e-4));
  CHECK(time_of(unfused).at("optimizer_s").get<double>() == Approx(fused_s * 92.0 / 34.0));
  std::ofstream(stack) << "name: bad\nbase: fsdp\nadam_step_bytes: 500\n";
  const Run bad = trident(kSmall + " --stack " + stack.string());
  CHECK(bad.code == 2);
  CHECK(bad.err.find("opt.yaml:3: adam_step_bytes: expected at most 256") != std::string::npos);
}

TEST_CASE("the optimizer step's parts: update, FP8 casts, the main-grad buffer's passes",
          "[cli_stack]") {
  // One pinned plan (TP 1, PP 1, DP 64, ZeRO 1: every GPU holds a whole fp32 main-grad buffer)
  // under megatron-core and under stack files that turn its DDP's passes off one by one. The
  // buffer's passes a step: zeroing 1, the NaN check's norm 1, the 1/DP scaling 2 (read and
  // write), each 4 bytes a gradient: 4 x 4 -> 2 x 4 (no scaling) -> 1 x 4 (zeroing only), so
  // grad_buffer_s halves, then halves again; the update and the step's other parts stay.
  TempDir dir;
  const auto stack = dir.path / "ddp.yaml";
  const std::string pins =
      " --tp 1 --pp 1 --dp 64 --micro-batch 1 --zero 1 --recompute full --format json --top 1";
  const auto time_of = [&](const std::string& file) {
    const Run run = trident(kSmall + " --stack " + file + pins);
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.out).at("plans").at(0).at("time");
  };
  const auto core = time_of("megatron-core");
  std::ofstream(stack) << "name: no-scale\nbase: megatron-core\ngrad_prescale: false\n";
  const auto checked = time_of(stack.string());
  std::ofstream(stack) << "name: bare\nbase: megatron-core\ngrad_prescale: false\n"
                          "grad_nan_check: false\n";
  const auto bare = time_of(stack.string());
  const double all = core.at("grad_buffer_s").get<double>();
  CHECK(all > 0.0);
  CHECK(checked.at("grad_buffer_s").get<double>() == Approx(all / 2.0));
  CHECK(bare.at("grad_buffer_s").get<double>() == Approx(all / 4.0));
  CHECK(bare.at("optimizer_update_s").get<double>() ==
        Approx(core.at("optimizer_update_s").get<double>()));
  for (const auto& time : {core, checked, bare}) {
    CHECK(time.at("fp8_weight_cast_s").get<double>() == 0.0);  // bf16
    CHECK(time.at("optimizer_s").get<double>() ==
          Approx(time.at("optimizer_update_s").get<double>() +
                 time.at("grad_buffer_s").get<double>()));
  }
  // --explain lists the parts under the optimizer step's line.
  const Run explain = trident(kSmall +
                              " --stack megatron-core --tp 1 --pp 1 --dp 64 "
                              "--micro-batch 1 --zero 1 --recompute full --explain");
  REQUIRE(explain.code == 0);
  CHECK(explain.out.find("    = update ") != std::string::npos);
  CHECK(explain.out.find(" + main-grad buffer passes ") != std::string::npos);
  CHECK(explain.out.find("(its zeroing, NaN check and 1/DP scaling)\n") != std::string::npos);
  // It names the passes priced, no more: without the scaling (a stack file), or at DP 1.
  const Run no_scale = trident(kSmall + " --stack " + stack.string() +
                               " --tp 1 --pp 1 --dp 64 --micro-batch 1 --zero 1 --recompute full"
                               " --explain");
  REQUIRE(no_scale.code == 0);
  CHECK(no_scale.out.find("(its zeroing)\n") != std::string::npos);  // the bare file above
  const Run one = trident(
      "plan --gpus 8 --model llama3-8b --global-batch 64 --stack megatron-core --tp 8 --pp 1 "
      "--dp 1 --micro-batch 1 --zero 1 --recompute full --explain");
  REQUIRE(one.code == 0);
  CHECK(one.out.find("(its zeroing and NaN check)\n") != std::string::npos);
}

TEST_CASE("attention: flash_triton plans where the GPU has its curve, and is refused elsewhere",
          "[cli_stack]") {
  TempDir dir;
  const auto stack = dir.path / "triton.yaml";
  std::ofstream(stack) << "name: mpt-2023\nbase: fsdp\nattention: flash_triton\n";
  const std::string plan = "plan --gpus 64 --model llama2-7b --global-batch 64 --stack " +
                           stack.string() + " --tp 1 --pp 1 --dp 64 --dp-shard 64 --zero 3" +
                           " --micro-batch 1 --recompute full --top 1";
  const Run a100 = trident(plan + " --cluster dgx-a100");
  REQUIRE(a100.code == 0);
  CHECK(a100.out.find("attention flash_triton") != std::string::npos);
  // The same split under FlashAttention-2 (the fsdp preset) is faster: the Triton kernel runs
  // at 0.42-0.51 of its rate (docs/cost_model.md#attention-curves).
  const auto step_of = [](const Run& run) {
    return nlohmann::json::parse(run.out).at("plans").at(0).at("step_time_s").get<double>();
  };
  const Run triton_json = trident(plan + " --cluster dgx-a100 --format json");
  const Run fa2_json = trident(
      "plan --gpus 64 --model llama2-7b --global-batch 64 --stack fsdp"
      " --tp 1 --pp 1 --dp 64 --dp-shard 64 --zero 3 --micro-batch 1"
      " --recompute full --top 1 --cluster dgx-a100 --format json");
  REQUIRE(triton_json.code == 0);
  REQUIRE(fa2_json.code == 0);
  CHECK(step_of(triton_json) > step_of(fa2_json));
  const Run b200 = trident(plan + " --cluster dgx-b200");
  CHECK(b200.code == 2);
  CHECK(b200.out.empty());
  // The file and line that chose the kernel (line 3 of the stack file).
  CHECK(b200.err.find("triton.yaml:3: attention: flash_triton has no measured rate on b200") !=
        std::string::npos);
}

TEST_CASE("trident presets lists the stacks", "[cli_stack]") {
  const Run run = trident("presets");
  REQUIRE(run.code == 0);
  for (const char* name :
       {"megatron-core ", "megatron-2021 ", "deepspeed-megatron ", "fsdp ", "torchtitan "}) {
    CHECK(run.out.find(std::string("stack    ") + name) != std::string::npos);
  }
}

TEST_CASE("presets --format json lists what the table lists; --show prints a preset's file",
          "[cli_stack]") {
  const Run table = trident("presets");
  const Run json = trident("presets --format json");
  REQUIRE(json.code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  const auto rows = static_cast<std::size_t>(std::count(table.out.begin(), table.out.end(), '\n'));
  REQUIRE(doc["presets"].size() == rows);
  const auto& first = doc["presets"][0];
  CHECK(first["kind"] == "gpu");
  CHECK(table.out.rfind("gpu      " + first["name"].get<std::string>() + " ", 0) == 0);
  CHECK(first["source"] == "configs/gpus/" + first["name"].get<std::string>() + ".yaml");
  // The file --show prints loads as a cluster file and plans as the preset does.
  TempDir dir;
  const Run shown = trident("presets --show dgx-h100");
  REQUIRE(shown.code == 0);
  CHECK(shown.out.rfind("# configs/clusters/dgx-h100.yaml\n", 0) == 0);
  const auto path = dir.path / "mine.yaml";
  std::ofstream(path) << shown.out;
  const std::string plan = "plan --gpus 64 --model llama2-7b --top 1 --format json --cluster ";
  const auto preset = nlohmann::json::parse(trident(plan + "dgx-h100").out);
  const auto copied = nlohmann::json::parse(trident(plan + path.string()).out);
  CHECK(copied["plans"][0]["step_time_s"] == preset["plans"][0]["step_time_s"]);
  const Run missing = trident("presets --show nope");
  CHECK(missing.code == 2);
  CHECK(missing.err.rfind("trident: error: --show nope: no built-in GPU, cluster, model or "
                          "stack of that name; known: a100-pcie-80g, ",
                          0) == 0);
  CHECK(trident("presets --show fsdp --format json").code == 2);
}

TEST_CASE("FP8 runs: the recipe in the assumptions, refused by a stack without FP8",
          "[cli_stack]") {
  TempDir dir;
  const auto path = dir.path / "fp8.yaml";
  std::ofstream(path) << "name: fp8-model\nlayers: 4\nhidden: 1024\nheads: 8\nvocab: 32000\n"
                         "seq_len: 2048\ntraining:\n  global_batch: 64\n  dtype: fp8\n"
                         "  fp8: {recipe: current}\n";
  const std::string plan = "plan --gpus 8 --servers 1 --model " + path.string();
  const Run ok = trident(plan + " --top 1");
  CHECK(ok.code == 0);
  CHECK(ok.out.find("fp8 current scaling (linear GEMMs, TP all-gathers in FP8; output layer, "
                    "activations, attention in bf16)") != std::string::npos);
  const Run old = trident(plan + " --stack megatron-2021");
  CHECK(old.code == 2);
  // The model file's line of the recipe (it named no place before the twentieth session).
  CHECK(old.err == "trident: error: " + path.string() +
                       ":10: training.fp8.recipe: stack megatron-2021 has no FP8 training "
                       "(current)\n");
  const Run titan = trident(plan + " --stack torchtitan --top 1");
  CHECK(titan.code == 0);  // torchao's dynamic (current) scaling
  std::ofstream(path) << "name: fp8-model\nlayers: 4\nhidden: 1024\nheads: 8\nvocab: 32000\n"
                         "seq_len: 2048\ntraining:\n  global_batch: 64\n  dtype: fp8\n";
  const Run delayed = trident(plan + " --stack torchtitan");
  CHECK(delayed.code == 2);
  // No recipe given: the default's place is training.dtype's line.
  CHECK(delayed.err == "trident: error: " + path.string() +
                           ":9: training.dtype: stack torchtitan does not run this FP8 recipe "
                           "(delayed)\n");
  // MXFP8 needs Blackwell: on the H100 cluster one line at the recipe's own line, exit 2; the
  // same file plans on B200.
  std::ofstream(path) << "name: fp8-model\nlayers: 4\nhidden: 1024\nheads: 8\nvocab: 32000\n"
                         "seq_len: 2048\ntraining:\n  global_batch: 64\n  dtype: fp8\n  fp8:\n"
                         "    recipe: mxfp8\n";
  const Run mx = trident(plan);
  CHECK(mx.code == 2);
  CHECK(mx.err == "trident: error: " + path.string() +
                      ":11: training.fp8.recipe: mxfp8 runs on compute capability 10.0-11.x "
                      "(Blackwell's block-scaled tensor cores; Transformer Engine refuses it "
                      "elsewhere); h100-sxm-80g is 9.0: use recipe current or delayed\n");
  const Run blackwell = trident(plan + " --cluster dgx-b200 --top 1 --explain");
  CHECK(blackwell.code == 0);
  CHECK(blackwell.out.find("fp8 mxfp8") != std::string::npos);
  // Its GEMMs at MXFP8's kernel rate (Transformer Engine's B300 benchmark, 6.812 / 7.161 ms):
  // 4500 x 0.763 x 0.840 x 0.946 (the slowest of 8 B200s) x 0.951 = 2594.7 TFLOP/s.
  CHECK(blackwell.out.find("  GEMM ceiling 2595 TFLOP/s  (fp8 peak 4500 x 0.763 best measured x "
                           "0.840 sustained clock x 0.946 the slowest of 8 GPUs x 0.951 MXFP8's "
                           "block-scaled kernels; before tile and wave losses)") !=
        std::string::npos);
  // The JSON's per-GEMM rate is the tensor-scaled kernel's (what validate times), the recipe's
  // share of it beside: 0.951 for the linear GEMMs, 1 for the 16-bit logits.
  const Run mx_json = trident(plan + " --cluster dgx-b200 --top 1 --format json");
  REQUIRE(mx_json.code == 0);
  const auto gemms = nlohmann::json::parse(mx_json.out)["plans"][0]["gemms"];
  REQUIRE(gemms.size() == 5);
  CHECK(gemms[0]["name"] == "qkv");
  CHECK(gemms[0]["kernel_rate_ratio"].get<double>() == Approx(6.812 / 7.161));
  CHECK(gemms[4]["name"] == "logits");
  CHECK(gemms[4]["kernel_rate_ratio"].get<double>() == 1.0);
  // FP8 attention where the stack's attention kernel has no FP8 path (PyTorch SDPA's
  // FlashAttention-2 under torchtitan): refused at the key's line, not priced as FP8.
  std::ofstream(path) << "name: fp8-model\nlayers: 4\nhidden: 1024\nheads: 8\nvocab: 32000\n"
                         "seq_len: 2048\ntraining:\n  global_batch: 64\n  dtype: fp8\n  fp8:\n"
                         "    recipe: current\n    attention: true\n";
  const Run attention = trident(plan + " --stack torchtitan");
  CHECK(attention.code == 2);
  CHECK(attention.err == "trident: error: " + path.string() +
                             ":12: training.fp8.attention: stack torchtitan's attention kernel "
                             "(flash) has no FP8 path (Transformer Engine's cuDNN attention has "
                             "one: --stack megatron-core); set attention: false\n");
  const Run cudnn = trident(plan + " --top 1");
  CHECK(cudnn.code == 0);  // Megatron-Core: Transformer Engine's cuDNN attention
  const Run emitted = trident(plan + " --top 1 --emit megatron");
  CHECK(emitted.code == 2);
  CHECK(emitted.err.find("--emit does not write FP8 attention yet") != std::string::npos);
  // --dtype fp8 on a model that is not FP8: no file place to name, the flag's words.
  const Run flag = trident(
      "plan --gpus 8 --servers 1 --model llama3-8b --dtype fp8 --stack "
      "megatron-2021");
  CHECK(flag.code == 2);
}

TEST_CASE("presets: a stack without PP says so, a GPU its FP8 ceiling", "[cli_stack]") {
  const Run presets = trident("presets");
  CHECK(presets.code == 0);
  CHECK(presets.out.find("grad reduce fp32, ZeRO 0/2/3 (no PP), recompute none/full") !=
        std::string::npos);                                                  // fsdp
  CHECK(presets.out.find("ZeRO 0/1/3 (with PP 0/1)") != std::string::npos);  // megatron-core
  // H100: MAMF float8_e4m3fn 1402.6 of 1979 = 70.9%.
  CHECK(presets.out.find("GEMM ceiling 80% (fp8 71% of 1979), PCIe 50 GB/s") != std::string::npos);
}

TEST_CASE("--dp-shard: HSDP in the table, the JSON and --explain; refused where it cannot run",
          "[cli_stack]") {
  // 64 GPUs, TP 1: DP 64 split into shard groups of 8 (one server, NVLink) x 8 replicas.
  const std::string hsdp = kSmall + " --stack torchtitan --tp 1 --pp 1 --dp-shard 8";
  const Run table = trident(hsdp + " --top 2 --explain");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("ZeRO      HSDP  SP") != std::string::npos);
  CHECK(table.out.find("      8x8 ") != std::string::npos);
  CHECK(table.out.find("none/none/nvlink+network") != std::string::npos);
  CHECK(table.out.find("hybrid sharding (HSDP): the 8 ranks above are one shard group") !=
        std::string::npos);
  CHECK(table.out.find("all-reduced over 8 replicas") != std::string::npos);

  const Run run = trident(hsdp + " --format json --top 1");
  REQUIRE(run.code == 0);
  const auto plan = nlohmann::json::parse(run.out).at("plans")[0];
  CHECK(plan.at("zero") == 3);
  CHECK(plan.at("dp_shard") == 8);
  CHECK(plan.at("dp_replicate") == 8);
  CHECK(plan.at("links").at("dp_shard") == "nvlink");
  CHECK(plan.at("links").at("dp_replicate") == "network");
  const auto& replicate = plan.at("comm").at("dp_replicate");
  CHECK(replicate.at("ranks") == 8);
  // Each unit's gradient shard: the fp32 reduce-scatter's bytes / 8.
  CHECK(replicate.at("bytes_per_call").get<double>() ==
        Approx(plan.at("comm").at("dp").at("bytes_per_call").get<double>() / 8));

  // Plain plans say how they shard too: ZeRO-1 over all of DP, ZeRO 0 not at all.
  const Run plain = trident(kSmall + " --tp 1 --pp 1 --zero 1 --format json --top 1");
  REQUIRE(plain.code == 0);
  const auto zero1 = nlohmann::json::parse(plain.out).at("plans")[0];
  CHECK(zero1.at("dp_shard") == 64);
  CHECK(zero1.at("dp_replicate") == 1);

  const Run megatron = trident(kSmall + " --dp-shard 8");
  CHECK(megatron.code == 2);
  CHECK(megatron.err ==
        "trident: error: --dp-shard 8: stack megatron-core has no hybrid sharding (HSDP); drop "
        "--dp-shard or use --stack fsdp or torchtitan\n");
  // A stack file of ZeRO 0/1 only: nothing is sharded per unit, so nothing to shard hybrid
  // (it planned "DP = 8" with ZeRO 0/1 and said "HSDP shard 8 pinned").
  TempDir dir;
  const auto unsharded = dir.path / "h2.yaml";
  std::ofstream(unsharded) << "name: h2\nbase: torchtitan\nzero_stages: [0, 1]\n";
  const Run no_units = trident(kSmall + " --stack " + unsharded.string() + " --dp-shard 8");
  CHECK(no_units.code == 2);
  CHECK(no_units.err ==
        "trident: error: --dp-shard 8: stack h2 runs no ZeRO stage sharded per unit (ZeRO-3, or "
        "a per-unit ZeRO-2), the state --dp-shard shards; use another --stack or drop "
        "--dp-shard\n");
  const Run uneven = trident(kSmall + " --stack fsdp --dp 64 --dp-shard 3");
  CHECK(uneven.code == 2);
  CHECK(uneven.err.find("--dp-shard 3: must divide --dp 64") != std::string::npos);
  // An HSDP plan with PP that Megatron-LM cannot write: its nearest plan is ZeRO-1 (Megatron
  // has no ZeRO-3 under PP), with nothing left to shard, so no --dp-shard is pinned; torchtitan
  // has no ZeRO-1, so the message says so and names the stack that plans it, which takes the
  // pins. The search was pinned to HSDP, so none of its plans runs under Megatron-LM either.
  const Run refused = trident(
      "plan --gpus 128 --servers 16 --model llama3-70b --global-batch 128 --stack torchtitan "
      "--tp 8 --pp 4 --dp-shard 2 --top 1 --emit megatron");
  REQUIRE(refused.code == 2);
  const std::string note =
      " (--zero 1: stack torchtitan does not run ZeRO-1; plan it with --stack megatron-core); no "
      "plan of the search that fits runs there\n";
  CHECK(
      refused.err.ends_with("nearest plan it can run: --tp 8 --pp 4 --dp 4 --micro-batch 1 "
                            "--vp 1 --recompute none --zero 1 --sequence-parallel on" +
                            note));
  const Run rerun = trident(
      "plan --gpus 128 --servers 16 --model llama3-70b --global-batch 128 --stack megatron-core "
      "--top 1 --tp 8 --pp 4 --dp 4 --micro-batch 1 --vp 1 --recompute none --zero 1 "
      "--sequence-parallel on");
  CHECK(rerun.code == 0);
  const Run one = trident(kSmall + " --stack fsdp --dp-shard 1");
  CHECK(one.code == 2);
  CHECK(one.err.find("--dp-shard 1: expected at least 2") != std::string::npos);
  const Run moe =
      trident("plan --gpus 256 --servers 32 --model mixtral-8x7b --stack fsdp --dp-shard 8");
  CHECK(moe.code == 2);
  CHECK(moe.err.find("--dp-shard 8: MoE models shard over all of DP") != std::string::npos);
  // Under a stack without HSDP the MoE refusal comes first: the stack's fix (--stack fsdp)
  // would be refused next.
  const Run moe_core = trident("plan --gpus 256 --servers 32 --model mixtral-8x7b --dp-shard 8");
  CHECK(moe_core.code == 2);
  CHECK(moe_core.err.find("--dp-shard 8: MoE models shard over all of DP") != std::string::npos);
  const Run zero0 = trident(kSmall + " --stack fsdp --zero 0 --dp-shard 8");
  CHECK(zero0.code == 2);
  CHECK(zero0.err.find("--dp-shard 8 with --zero 0: stack fsdp shards hybrid only") !=
        std::string::npos);
}

TEST_CASE("--explain says whether the stack overlaps the DP reduction", "[cli_stack]") {
  // 64 GPUs, TP 8 PP 2 DP 4: the DP group crosses servers either way.
  const std::string pinned = kSmall + " --tp 8 --pp 2 --dp 4 --zero 1 --explain";
  const Run overlapped = trident(pinned + " --stack megatron-core");
  REQUIRE(overlapped.code == 0);
  CHECK(overlapped.out.find("why: gradients once per step, overlapped with backward") !=
        std::string::npos);
  // DeepSpeed's pipeline engine reduces once after the last micro-batch (runtime/pipe/engine.py
  // _exec_reduce_grads): nothing of it hides behind backward.
  const Run apart = trident(pinned + " --stack deepspeed-megatron --sequence-parallel off");
  REQUIRE(apart.code == 0);
  CHECK(apart.out.find("this stack does not overlap the reduction, so all of it is exposed") !=
        std::string::npos);
  CHECK(apart.out.find("overlapped with backward") == std::string::npos);
}

TEST_CASE("a stack file's base: another stack file, read relative to it", "[cli_stack]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "releases");
  // releases/common.yaml: a release's block on top of megatron-core; releases/variant.yaml:
  // one key on top of that; the CLI names the variant from another directory.
  std::ofstream(dir.path / "releases" / "common.yaml")
      << "name: common\nbase: megatron-core\nattention: flash\nzero_stages: [0, 1]\n";
  std::ofstream(dir.path / "releases" / "variant.yaml")
      << "name: variant\nbase: common.yaml\nrecompute: [full]\n";
  const Run run = trident(kSmall + " --stack " + (dir.path / "releases" / "variant.yaml").string() +
                          " --format json --top 3");
  REQUIRE(run.code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc.at("stack") == "variant");
  for (const auto& plan : doc.at("plans")) {
    CHECK(plan.at("recompute") == "full");   // the variant's own key
    CHECK(plan.at("zero").get<int>() <= 1);  // common.yaml's
  }
  const Run table = trident(kSmall + " --stack " +
                            (dir.path / "releases" / "variant.yaml").string() + " --top 1");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("attention flash") != std::string::npos);  // common.yaml's, over the preset

  // A base that cannot be read, and a cycle: one line each naming the file, line and key.
  std::ofstream(dir.path / "releases" / "variant.yaml")
      << "name: variant\nrecompute: [full]\nbase: missing.yaml\n";
  const Run missing =
      trident(kSmall + " --stack " + (dir.path / "releases" / "variant.yaml").string());
  CHECK(missing.code == 2);
  // The base is read beside the file naming it, not in the working directory.
  CHECK(missing.err.find("variant.yaml:3: base '" +
                         (dir.path / "releases" / "missing.yaml").string() +
                         "': cannot read the file") != std::string::npos);
  std::ofstream(dir.path / "releases" / "common.yaml") << "name: common\nbase: variant.yaml\n";
  std::ofstream(dir.path / "releases" / "variant.yaml") << "name: variant\nbase: common.yaml\n";
  const Run cycle =
      trident(kSmall + " --stack " + (dir.path / "releases" / "variant.yaml").string());
  CHECK(cycle.code == 2);
  CHECK(cycle.err.find("common.yaml:2: base: 'variant.yaml' is already in the chain of bases "
                       "(a cycle)") != std::string::npos);
  // A file naming itself through "./": the same cycle (it read as "more than 8 stack files
  // chained" through ever longer "./././self.yaml").
  std::ofstream(dir.path / "releases" / "self.yaml") << "name: self\nbase: ./self.yaml\n";
  const Run self = trident(kSmall + " --stack " + (dir.path / "releases" / "self.yaml").string());
  CHECK(self.code == 2);
  CHECK(self.err.find("self.yaml:2: base: './self.yaml' is already in the chain of bases (a "
                      "cycle)") != std::string::npos);
  // Through "..": the file system's path, not the spelling, is compared (it read as "more than
  // 8 stack files chained" through ever longer "../releases/../releases/self.yaml").
  std::ofstream(dir.path / "releases" / "up.yaml") << "name: up\nbase: ../releases/up.yaml\n";
  const Run up = trident(kSmall + " --stack " + (dir.path / "releases" / "up.yaml").string());
  CHECK(up.code == 2);
  CHECK(up.err.find("up.yaml:2: base: '../releases/up.yaml' is already in the chain of bases "
                    "(a cycle)") != std::string::npos);
  // Partial recompute is full recompute of some layers: a file setting it without full in its
  // recompute list is refused at the key; one inheriting it says which list lacks what.
  std::ofstream(dir.path / "partial.yaml")
      << "name: partial\nbase: megatron-core\nrecompute: [none]\npartial_recompute: block\n";
  const Run partial = trident(kSmall + " --stack " + (dir.path / "partial.yaml").string());
  CHECK(partial.code == 2);
  CHECK(partial.err.find("partial.yaml:4: partial_recompute: partial recompute needs full in the "
                         "stack's recompute list") != std::string::npos);
  std::ofstream(dir.path / "inherits.yaml")
      << "name: inherits\nbase: megatron-core\nrecompute: [none]\n";
  const Run inherits = trident(kSmall + " --stack " + (dir.path / "inherits.yaml").string() +
                               " --recompute-layers 2");
  CHECK(inherits.code == 2);
  CHECK(inherits.err ==
        "trident: error: --recompute-layers 2: stack inherits has no full recompute (its "
        "recompute list), of which partial recompute is part; drop --recompute-layers or use "
        "--stack megatron-core or torchtitan\n");
}

TEST_CASE("a stack's base: file and a cluster file's stack: file are inputs no output replaces",
          "[cli_stack]") {
  TempDir dir;
  const std::string common = (dir.path / "common.yaml").string();
  const std::string variant = (dir.path / "variant.yaml").string();
  const std::string cluster = (dir.path / "c.yaml").string();
  const std::string stack_text = "name: common\nbase: megatron-core\nattention: flash\n";
  std::ofstream(common) << stack_text;
  std::ofstream(variant) << "name: variant\nbase: common.yaml\n";
  std::ofstream(cluster) << "name: c\ngpu: h100-sxm-80g\nservers: 8\ngpus_per_server: 8\n"
                            "stack: "
                         << variant
                         << "\nnvlink: {kind: switch, domain_gpus: 8, links_per_gpu: 18, "
                            "gbps_per_link: 25}\nnetwork: {nics_per_server: 8, nic_gbits: 400}\n";
  const auto unchanged = [&] {
    std::ifstream in(common);
    return std::string(std::istreambuf_iterator<char>(in), {}) == stack_text;
  };
  // Until 2026-12-04 each of these wrote the plan over common.yaml, and the next run failed.
  const Run base = trident(kSmall + " --stack " + variant + " --output " + common);
  CHECK(base.code == 2);
  CHECK(base.err == "trident: error: --output '" + common + "': is the input " + variant +
                        ":2: base '" + common + "'; refusing to overwrite an input\n");
  CHECK(trident(kSmall + " --stack " + variant + " --svg " + common).code == 2);
  const Run via_cluster = trident("plan --model llama3-8b --global-batch 64 --cluster " + cluster +
                                  " --output " + variant);
  CHECK(via_cluster.code == 2);
  // The cluster file's line that named it (line 5, after name, gpu, servers, gpus_per_server).
  CHECK(via_cluster.err.find("is the input " + cluster + ":5: stack '" + variant + "'") !=
        std::string::npos);
  CHECK(trident("plan --model llama3-8b --global-batch 64 --cluster " + cluster + " --output " +
                common)
            .code == 2);
  CHECK(unchanged());
  CHECK(
      trident("plan --model llama3-8b --global-batch 64 --cluster " + cluster + " --top 1").code ==
      0);
}

TEST_CASE("selective: mla_up_proj prices MLA models and refuses the others", "[cli_stack]") {
  TempDir dir;
  std::ofstream(dir.path / "up.yaml") << "name: up\nbase: megatron-core\nselective: mla_up_proj\n";
  const std::string stack = " --stack " + (dir.path / "up.yaml").string();
  // A multi-head model: the pin refused in one line, exit 2; free, selective never tried.
  const Run pinned = trident(kSmall + stack + " --recompute selective");
  CHECK(pinned.code == 2);
  CHECK(pinned.err ==
        "trident: error: --recompute selective: stack up recomputes multi-latent attention's "
        "up-projections (selective: mla_up_proj) and model llama3-8b has no MLA; use "
        "--recompute none|full or another --stack\n");
  const Run free = trident(kSmall + stack + " --format json --top 50");
  REQUIRE(free.code == 0);
  const auto free_doc = nlohmann::json::parse(free.out);
  for (const auto& plan : free_doc.at("plans")) {
    CHECK(plan.at("recompute") != "selective");
  }
  // DeepSeek-V3 (MLA): selective plans, said in the stack line; recompute costs time there.
  const std::string dsv3 =
      "plan --gpus 512 --model deepseek-v3 --global-batch 4096 --tp 2 --pp 8 --dp 32 --ep 64 "
      "--micro-batch 1 --vp 1 --sequence-parallel on" +
      stack;
  const Run up = trident(dsv3 + " --recompute selective --format json --top 1");
  const Run none = trident(dsv3 + " --recompute none --format json --top 1");
  REQUIRE(up.code == 0);
  REQUIRE(none.code == 0);
  const auto up_doc = nlohmann::json::parse(up.out);
  const auto none_doc = nlohmann::json::parse(none.out);
  CHECK(up_doc.at("plans")[0].at("step_time_s").get<double>() >
        none_doc.at("plans")[0].at("step_time_s").get<double>());
  const Run table = trident(dsv3 + " --recompute selective --top 1");
  CHECK(table.out.find("recompute none/selective(mla_up_proj)/full") != std::string::npos);
}

TEST_CASE("torchtitan's pipeline buffers in --explain and the JSON; Megatron's none",
          "[cli_stack]") {
  const std::string pinned = kSmall +
                             " --tp 2 --pp 2 --dp 16 --micro-batch 1 --vp 1 --zero 3"
                             " --recompute full --top 1";
  const Run json = trident(pinned + " --stack torchtitan --format json");
  REQUIRE(json.code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  const auto& memory = doc.at("plans")[0].at("memory_gib");
  // Llama 3 8B, m = 64 / (16 x 1) = 4; one boundary activation 2 x 8192 x 4096 / 2 (SP) bytes
  // = 1/32 GiB. The peak is the last stage (its loss): 1 micro-batch in flight, so 3 of its 4
  // input buffers are idle = 3/32 GiB; it holds the logits of the micro-batch in its backward,
  // 2 x 8192 x 128256 / 2 bytes = 0.978515625 GiB.
  CHECK(memory.at("pp_buffers").get<double>() == Approx(3.0 / 32.0));
  CHECK(memory.at("pp_outputs").get<double>() == Approx(0.978515625));
  const Run explain = trident(pinned + " --stack torchtitan --explain");
  REQUIRE(explain.code == 0);
  CHECK(explain.out.find("PP receive buffers") != std::string::npos);
  CHECK(explain.out.find("stage outputs kept") != std::string::npos);
  // Megatron-Core (ZeRO-1 here) frees each output once sent and receives into a new tensor.
  const Run megatron =
      trident(kSmall + " --tp 2 --pp 2 --dp 16 --micro-batch 1 --vp 1 --zero 1 --top 1 --explain");
  REQUIRE(megatron.code == 0);
  CHECK(megatron.out.find("PP receive buffers") == std::string::npos);
}

TEST_CASE("DeepSpeed's ZeRO-1 plan says all-reduce+all-gather; torchtitan's PP ZeRO-3 its pools",
          "[cli_stack]") {
  // Llama 3 8B on 64 GPUs, every knob pinned: DP 64 with ZeRO-1 under deepspeed-megatron.
  const Run ds = trident(kSmall +
                         " --stack deepspeed-megatron --tp 1 --pp 1 --dp 64 --micro-batch 1 "
                         "--zero 1 --recompute full --format json --top 1");
  REQUIRE(ds.code == 0);
  const auto plan = nlohmann::json::parse(ds.out).at("plans").at(0);
  CHECK(plan.at("collectives").at("dp") == "all-reduce+all-gather");
  CHECK(plan.at("comm").at("dp").at("collective") == "all-reduce+all-gather");
  CHECK(plan.at("memory_gib").at("stream_pools").get<double>() == 0.0);
  const Run text = trident(kSmall +
                           " --stack deepspeed-megatron --tp 1 --pp 1 --dp 64 --micro-batch 1 "
                           "--zero 1 --recompute full --explain");
  REQUIRE(text.code == 0);
  // The ZeRO optimizer's 16-bit gradients all-reduced (communication_data_type: fp16 under any
  // ZeRO stage at DeepSpeed v0.7.0, bf16 since; BF16_Optimizer's fp32 is ZeRO-0's and PP's),
  // 16-bit weights all-gathered: 8.03B x 2 bytes each, so one size for the two.
  CHECK(text.out.find("  DP: all-reduce+all-gather of 16.06 GB per call") != std::string::npos);
  // Under PP 2 the bf16 optimizer sharding (BF16_Optimizer) all-reduces fp32 gradients: a
  // stage's ~4.0B parameters x 4 = 16.06 GB against 8.03 GB of 16-bit weights, named apart.
  const Run piped = trident(kSmall +
                            " --stack deepspeed-megatron --tp 1 --pp 2 --dp 32 --micro-batch 1 "
                            "--zero 1 --recompute full --explain");
  REQUIRE(piped.code == 0);
  CHECK(piped.out.find("  DP: all-reduce of 16.06 GB + all-gather of 8.03 GB per call") !=
        std::string::npos);
  // (ZeRO-0's fp32 all-reduce: test_costmodel_data_parallel.cpp.)
  // torchtitan, ZeRO-3 under PP 2: the side streams' pools are reserved, not allocated.
  const Run tt = trident(kSmall +
                         " --stack torchtitan --tp 1 --pp 2 --dp 32 --micro-batch 1 --zero 3 "
                         "--recompute full --format json --top 1");
  REQUIRE(tt.code == 0);
  const auto mem = nlohmann::json::parse(tt.out).at("plans").at(0).at("memory_gib");
  CHECK(mem.at("stream_pools").get<double>() > 0.0);
  CHECK(mem.at("reserved").get<double>() ==
        Approx(mem.at("allocated").get<double>() + mem.at("fragmentation").get<double>() +
               mem.at("stream_pools").get<double>()));
  CHECK(mem.at("reduce_scatter_kept").get<double>() == 0.0);  // the preset's newer torch
}

TEST_CASE("FP8 parameters gathered by FSDP: the gathered FP8 is the first copy on every GPU",
          "[cli_stack]") {
  // Llama 3 8B with FP8 parameters under ZeRO-3 on one server: each gathered unit (a layer)
  // holds its 218,103,808 linear parameters (q, o 4096^2, k, v 4096 x 1024, three 4096 x 14336)
  // as gathered FP8, 1 byte. torchao (torchtitan) frees its column-major copy after the GEMM:
  // the same on H100 and B200. Transformer Engine (fsdp) keeps the transpose beside it on
  // Hopper only: 2 units x 218,103,808 x 1 byte = 0.40625 GiB more on H100, never less on B200.
  TempDir dir;
  const auto model_file = dir.path / "m.yaml";
  const auto plan = [&](const std::string& stack, const std::string& recipe,
                        const std::string& gpu) {
    std::ofstream(model_file) << "name: l8-fp8-params\nlayers: 32\nhidden: 4096\nheads: 32\n"
                                 "kv_heads: 8\nffn_hidden: 14336\nffn: swiglu\nvocab: 128256\n"
                                 "seq_len: 8192\ntied_embeddings: false\nnorm: rmsnorm\n"
                                 "bias: false\nposition_embedding: rope\ntraining:\n  dtype: fp8\n"
                                 "  global_batch: 64\n  fp8:\n    recipe: "
                              << recipe << "\n    params: true\n";
    const Run run = trident("plan --cluster dgx-b200 --gpus 8 --gpu " + gpu + " --model " +
                            model_file.string() + " --stack " + stack +
                            " --tp 1 --pp 1 --zero 3 --micro-batch 1 --recompute full"
                            " --format json --top 1");
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.out)
        .at("plans")[0]
        .at("memory_gib")
        .at("layer_units")
        .get<double>();
  };
  const double titan_h100 = plan("torchtitan", "current", "h100-sxm-80g");
  CHECK(plan("torchtitan", "current", "b200") == Approx(titan_h100));
  const double te_h100 = plan("fsdp", "delayed", "h100-sxm-80g");
  const double te_b200 = plan("fsdp", "delayed", "b200");
  CHECK(te_b200 == Approx(titan_h100));
  CHECK(te_h100 - te_b200 == Approx(2.0 * 218103808.0 / 1073741824.0));
}

TEST_CASE("FP8 parameters under Megatron-Core: a sharded optimizer, never ZeRO-0", "[cli_stack]") {
  // Megatron-LM asserts --fp8-param-gather only with the distributed optimizer or Megatron-FSDP
  // (arguments.py L1060-1062 @core_v0.19.0). At DP 1 the search keeps one ZeRO stage (all are
  // the same plan): ZeRO-1 here, which the launch writes as --use-distributed-optimizer.
  const std::string fp8 = "plan --gpus 8 --servers 1 --model " + std::string(TRIDENT_SOURCE_DIR) +
                          "/docs/examples/llama3-8b-fp8.yaml";
  const Run dp1 = trident(fp8 + " --dp 1 --emit megatron");
  REQUIRE(dp1.code == 0);
  CHECK(dp1.out.find("ZeRO-1 SP") != std::string::npos);
  CHECK(dp1.out.find("--fp8-param-gather") != std::string::npos);
  CHECK(dp1.out.find("--use-distributed-optimizer") != std::string::npos);
  // The search line says why ZeRO-0 is not among the stages tried.
  CHECK(trident(fp8 + " --top 1")
            .out.find("ZeRO (1 or more: FP8 parameters need the distributed optimizer)") !=
        std::string::npos);
  const Run zero0 = trident(fp8 + " --zero 0");
  CHECK(zero0.code == 2);
  CHECK(zero0.err ==
        "trident: error: --zero 0: model llama3-8b-fp8 keeps FP8 parameters "
        "(training.fp8.params), and stack megatron-core gathers FP8 parameters only from a "
        "sharded optimizer (Megatron-LM: --fp8-param-gather needs --use-distributed-optimizer or "
        "Megatron-FSDP); use --zero 1 or 3, or set training.fp8.params false\n");
  // A stack file whose only ZeRO stage is 0 (with PP: --pp 2) leaves nothing to plan: said at
  // the model's key, with the way out the stack has.
  TempDir dir;
  const auto z0 = dir.path / "z0.yaml";
  std::ofstream(z0) << "name: z0\nbase: megatron-core\nzero_stages: [0]\n"
                       "zero_stages_with_pp: [0]\n";
  const Run none = trident(fp8 + " --stack " + z0.string());
  CHECK(none.code == 2);
  CHECK(none.err.find("training.fp8.params: stack z0 gathers FP8 parameters only from a sharded "
                      "optimizer") != std::string::npos);
  CHECK(none.err.find("runs no ZeRO stage above 0; plan with a stack that has a distributed "
                      "optimizer, or set it false") != std::string::npos);
  const auto z0pp = dir.path / "z0pp.yaml";
  std::ofstream(z0pp) << "name: z0pp\nbase: megatron-core\nzero_stages_with_pp: [0]\n";
  const Run pp = trident(fp8 + " --stack " + z0pp.string() + " --pp 2");
  CHECK(pp.code == 2);
  CHECK(pp.err.find("with PP above 1; plan without PP and use --zero 1 or 3") != std::string::npos);
  // The free search ranks no ZeRO-0 plan.
  const Run free = trident(fp8 + " --format json --top 50");
  REQUIRE(free.code == 0);
  const auto ranked = nlohmann::json::parse(free.out);  // kept: the loop reads into it
  for (const auto& plan : ranked.at("plans")) {
    CHECK(plan.at("zero").get<int>() > 0);
  }
}

TEST_CASE("--dtype fp8 takes the stack's recipe that the GPU runs, else names --dtype",
          "[cli_stack]") {
  TempDir dir;
  const auto stack = dir.path / "mx.yaml";
  // A stack that runs MXFP8 alone on H100 (compute capability 9.0): no recipe to adopt.
  std::ofstream(stack) << "name: mx-only\nbase: megatron-core\nfp8_recipes: [mxfp8]\n";
  const Run h100 = trident(kSmall + " --stack " + stack.string() + " --dtype fp8");
  CHECK(h100.code == 2);
  CHECK(h100.err ==
        "trident: error: --dtype fp8: stack mx-only runs only mxfp8, which needs compute "
        "capability 10.0-11.x (h100-sxm-80g is 9.0): plan with a stack that runs current or "
        "delayed scaling, or on a Blackwell GPU\n");
  // On B200 it is adopted and planned.
  CHECK(trident(kSmall + " --stack " + stack.string() + " --dtype fp8 --cluster dgx-b200").code ==
        0);
  // A stack with mxfp8 first and current scaling beside it: current on H100.
  std::ofstream(stack) << "name: mx-first\nbase: megatron-core\nfp8_recipes: [mxfp8, current]\n";
  const Run both = trident(kSmall + " --stack " + stack.string() + " --dtype fp8 --top 1");
  CHECK(both.code == 0);
  CHECK(both.out.find("current") != std::string::npos);
}

TEST_CASE(
    "MLA's 192/128 heads on GB200: cuDNN under a TE that trains them, unfused under one "
    "that does not, said in the assumptions and the JSON",
    "[cli_stack]") {
  const std::string plan =
      "plan --gpus 128 --cluster gb200-nvl72 --model deepseek-v3 --global-batch 1024 --tp 2 "
      "--pp 4 --dp 16 --ep 32 --micro-batch 1 --recompute selective --top 1";
  const Run current = trident(plan);  // megatron-core: TE v2.5+ with cuDNN 9.11+ train 192/128
  REQUIRE(current.code == 0);
  CHECK(current.out.find("Transformer Engine's fallback") == std::string::npos);
  TempDir dir;
  const auto old_te = dir.path / "nemo-2504.yaml";
  std::ofstream(old_te) << "name: nemo-2504\nbase: megatron-core\ncudnn_blackwell_heads: []\n";
  const Run fallback = trident(plan + " --stack " + old_te.string());
  REQUIRE(fallback.code == 0);
  CHECK(fallback.out.find("# attention: unfused for this model's 192/128 heads (Q/K, V) on gb200, "
                          "Transformer Engine's fallback where its cuDNN fused attention does not "
                          "train them") != std::string::npos);
  // Priced as the unfused attention: the same step as a stack stating it, slower than cuDNN's.
  const auto step_of = [](const Run& run) {
    const auto first = nlohmann::json::parse(run.out).at("plans").at(0);
    return std::make_pair(first.at("step_time_s").get<double>(),
                          first.at("attention").get<std::string>());
  };
  const Run json = trident(plan + " --stack " + old_te.string() + " --format json");
  REQUIRE(json.code == 0);
  const auto stated_file = dir.path / "unfused.yaml";
  std::ofstream(stated_file) << "name: nemo-2504\nbase: megatron-core\nattention: unfused\n";
  const Run stated = trident(plan + " --stack " + stated_file.string() + " --format json");
  REQUIRE(stated.code == 0);
  const Run fused = trident(plan + " --format json");
  REQUIRE(fused.code == 0);
  CHECK(step_of(json).second == "unfused");
  CHECK(step_of(fused).second == "cudnn");
  CHECK(step_of(json).first == step_of(stated).first);
  CHECK(step_of(json).first > step_of(fused).first);
  // The CSV's attention column names it too (before the stage split's two columns).
  const Run csv = trident(plan + " --stack " + old_te.string() + " --format csv");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.find(",attention,first_stage_layers,last_stage_layers\n") != std::string::npos);
  CHECK(csv.out.find(",unfused,") != std::string::npos);
  // A launch writes the attention that runs: Megatron-LM's --attention-backend unfused.
  const Run emit = trident(plan + " --stack " + old_te.string() + " --emit megatron");
  REQUIRE(emit.code == 0);
  CHECK(emit.out.find("--attention-backend unfused") != std::string::npos);
}

TEST_CASE(
    "TE's unfused fallback takes no context parallelism, and only core-attention recompute "
    "frees its scores",
    "[cli_stack]") {
  TempDir dir;
  const auto old_te = dir.path / "old.yaml";
  std::ofstream(old_te) << "name: old\nbase: megatron-core\ncudnn_blackwell_heads: []\n";
  // TE's UnfusedDotProductAttention refuses context parallelism (utils.py L535-538 @v2.2.1):
  // pinned CP is refused naming why; the free search keeps CP at 1.
  const std::string gb200 =
      "plan --gpus 128 --cluster gb200-nvl72 --model deepseek-v3 --global-batch 1024 --tp 2 "
      "--pp 4 --ep 32 --stack " +
      old_te.string();
  const Run cp = trident(gb200 + " --cp 2");
  CHECK(cp.code == 2);
  CHECK(cp.err ==
        "trident: error: --cp 2: model deepseek-v3's 192/128 heads run Transformer Engine's "
        "unfused attention on this GPU under stack old (its cuDNN does not train them, "
        "docs/cost_model.md#attention-on-blackwell), which takes no context parallelism; use "
        "--cp 1\n");
  const Run min_cp = trident(gb200 + " --min-cp 2");
  CHECK(min_cp.code == 2);
  CHECK(min_cp.err.find("--min-cp 2: model deepseek-v3's 192/128 heads run") != std::string::npos);
  // At 32,768 tokens the free search would try CP: the search line says it does not, and
  // --cp-comm, which would change nothing, is refused with the same reason.
  const std::string long_seq =
      "plan --gpus 512 --cluster gb200-nvl72 --model deepseek-v3 --global-batch 256 --seq-len "
      "32768 --ep 64 --top 1 --stack " +
      old_te.string();
  const Run searched = trident(long_seq);
  REQUIRE(searched.code == 0);
  CHECK(searched.out.find("# context parallel not searched: the unfused attention above takes "
                          "none; expert parallel pinned at 64") != std::string::npos);
  const Run comm = trident(long_seq + " --cp-comm a2a");
  CHECK(comm.code == 2);
  CHECK(comm.err.find("--cp-comm a2a: model deepseek-v3's 192/128 heads run Transformer "
                      "Engine's unfused attention") != std::string::npos);
  CHECK(comm.err.find("; drop --cp-comm\n") != std::string::npos);
  // A stack stating Transformer Engine's unfused attention runs no CP either.
  const std::string stated =
      "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 --seq-len 32768 --stack " +
      std::string(TRIDENT_SOURCE_DIR) + "/docs/examples/megatron-core-unfused.yaml";
  const Run stated_free = trident(stated + " --top 1");
  REQUIRE(stated_free.code == 0);
  CHECK(stated_free.out.find("# context parallel not searched: Transformer Engine's unfused "
                             "attention takes none") != std::string::npos);
  const Run stated_cp = trident(stated + " --cp 2");
  CHECK(stated_cp.code == 2);
  CHECK(stated_cp.err ==
        "trident: error: --cp 2: stack megatron-core-unfused runs Transformer Engine's unfused "
        "attention (attention: unfused), which takes no context parallelism "
        "(docs/cost_model.md#unfused-attention); use --cp 1\n");
  // The scores of the unfused attention (b x heads/t x s^2 x 2 bytes a layer) stay unless the
  // recompute repeats the core attention: mla_up_proj repeats the up-projections only.
  const auto up = dir.path / "old-up.yaml";
  std::ofstream(up) << "name: old-up\nbase: old.yaml\nselective: mla_up_proj\n";
  const std::string split =
      " --dp 16 --micro-batch 1 --recompute selective --top 1 "
      "--format json --show-infeasible";
  const auto memory_of = [](const Run& run) {
    const auto doc = nlohmann::json::parse(run.out);
    const auto& plans = doc.at("plans").empty() ? doc.at("infeasible") : doc.at("plans");
    return plans.at(0).at("memory_gib_per_gpu").get<double>();
  };
  const Run core_attn = trident(gb200 + split);
  const Run up_proj = trident(
      "plan --gpus 128 --cluster gb200-nvl72 --model deepseek-v3 "
      "--global-batch 1024 --tp 2 --pp 4 --ep 32 --stack " +
      up.string() + split);
  REQUIRE(core_attn.code == 0);
  REQUIRE(up_proj.code == 0);
  // Stage 0's 15 layers keep 4 micro-batches' scores (1F1B, PP 4): 64 heads x 4096^2 x 2 bytes
  // = 2 GiB a layer and micro-batch, 120 GiB, less what core-attention recompute keeps that
  // up-projection recompute does not (the attention's inputs): about 99 GiB apart.
  CHECK(memory_of(up_proj) - memory_of(core_attn) > 90.0);
}

TEST_CASE("the stack as written is checked before its attention resolves", "[cli_stack]") {
  TempDir dir;
  // Llama 3 8B with heads of 100 (cuDNN and FlashAttention 2 take multiples of 8: TE's unfused
  // attention runs them), and with FP8 attention on heads of 192.
  const std::string body =
      "layers: 4\nhidden: 4096\nheads: 32\nkv_heads: 8\nffn_hidden: 14336\nffn: swiglu\n"
      "vocab: 128256\nseq_len: 8192\n";
  const auto odd = dir.path / "odd.yaml";
  std::ofstream(odd) << "name: odd\n" << body << "head_dim: 100\ntraining:\n  global_batch: 64\n";
  const auto fp8 = dir.path / "fp8.yaml";
  std::ofstream(fp8) << "name: f8\n"
                     << body << "head_dim: 192\ntraining:\n  global_batch: 64\n"
                     << "  dtype: fp8\n  fp8:\n    attention: true\n";  // line 15
  // NeMo's Hydra file builds Transformer Engine's layers and asks for TE's unfused attention
  // (its default transformer_engine: false would build Megatron-Core's local attention).
  const Run hydra = trident("plan --gpus 16 --servers 2 --emit nemo-hydra --model " + odd.string());
  REQUIRE(hydra.code == 0);
  CHECK(hydra.out.find("  transformer_engine: true\n  attention_backend: unfused\n") !=
        std::string::npos);
  // A V100 has no fused attention at all: the cudnn stack is refused, whatever the heads.
  const Run v100 = trident("plan --cluster dgx1-v100 --dtype fp16 --top 1 --model " + odd.string());
  CHECK(v100.code == 2);
  CHECK(v100.err.find("stack megatron-core: attention: cudnn needs a GPU of compute capability "
                      "8.0 or more") != std::string::npos);
  // FP8 attention has no fallback: its own refusal, not the stack's.
  const Run b200 =
      trident("plan --cluster dgx-b200 --gpus 64 --servers 8 --top 1 --model " + fp8.string());
  CHECK(b200.code == 2);
  CHECK(b200.err.find("fp8.yaml:15: training.fp8.attention: cuDNN's FP8 attention, the only one "
                      "Transformer Engine has, trains no 192/192 heads on b200") !=
        std::string::npos);
}

TEST_CASE("a MoE model under torchtitan: the search line says DP alone and why", "[cli_stack]") {
  // torchtitan: ZeRO 0 and 3, its ZeRO-0 DDP over the whole job; MoE models: ZeRO 0-2. What is
  // left is DP over every GPU at ZeRO-0, and the line says so (it listed TP x PP x DP splits,
  // interleaving and HSDP shards as free).
  const Run run =
      trident("plan --model mixtral-8x7b --stack torchtitan --servers 4 --show-infeasible");
  REQUIRE(run.code == 0);
  CHECK(run.out.find("# search: DP over every GPU, ZeRO-0 (DDP): model mixtral-8x7b is MoE, "
                     "planned with ZeRO 0-2 (experts are not sharded per unit), and stack "
                     "torchtitan has no ZeRO-1 or 2 and runs ZeRO-0 with TP, PP and CP 1; "
                     "micro-batch and recompute free (--stack megatron-core plans MoE splits)\n") !=
        std::string::npos);
  // Pins say themselves; the forced ones (TP, PP, DP, ZeRO 0) are not listed as free.
  const Run pinned = trident(
      "plan --model mixtral-8x7b --stack torchtitan --servers 4 --show-infeasible --micro-batch 1 "
      "--dp 32 --zero 0");
  REQUIRE(pinned.code == 0);
  CHECK(pinned.out.find("CP 1; micro-batch 1 pinned, recompute free (--stack megatron-core "
                        "plans MoE splits)\n") != std::string::npos);
  // Under megatron-core the same model's line lists no HSDP shard (MoE refuses --dp-shard).
  const Run core = trident("plan --model mixtral-8x7b --servers 4 --top 1");
  REQUIRE(core.code == 0);
  CHECK(core.out.find("# search: every TP x PP x DP split") != std::string::npos);
  CHECK(core.out.find("HSDP") == std::string::npos);
}

TEST_CASE("--explain's DP line: reductions and gathers counted apart where they run apart",
          "[cli_stack]") {
  // DeepSpeed ZeRO-2 reduce-scatters every micro-batch and all-gathers once: the line said "128
  // calls per step" at a per-call time (the pair) that multiplied to twice the total.
  // Global batch 256 over DP 64 at micro-batch 1: 4 micro-batches.
  const Run ds = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 256 --stack "
      "deepspeed-megatron --tp 1 --pp 1 --dp 64 --micro-batch 1 --zero 2 --recompute full "
      "--explain");
  REQUIRE(ds.code == 0);
  CHECK(ds.out.find("  DP: reduce-scatter of 16.06 GB each micro-batch (4 per step) and one "
                    "all-gather of 16.06 GB per step, 64 ranks\n") != std::string::npos);
  CHECK(ds.out.find(" ms a reduce-scatter, ") != std::string::npos);
  CHECK(ds.out.find("why: gradients reduce-scattered after every micro-batch's backward") !=
        std::string::npos);
  CHECK(ds.out.find("gradients once per step") == std::string::npos);
  // Sharded data parallel: per unit, the counts on the per-unit line.
  const Run z3 = trident(kSmall + " --tp 1 --pp 1 --dp 64 --micro-batch 1 --zero 3 --explain");
  REQUIRE(z3.code == 0);
  CHECK(z3.out.find("  DP: per unit (one layer) reduce-scatter of ") != std::string::npos);
  CHECK(z3.out.find(" ms a unit's reduce-scatter, ") != std::string::npos);
  CHECK(z3.out.find("per call, ") == std::string::npos);
  // The JSON's call is the pair validate times: time_per_call_s = scatter + gather.
  const auto plan =
      nlohmann::json::parse(
          trident(kSmall + " --tp 1 --pp 1 --dp 64 --micro-batch 1 --zero 3 --format json").out)
          .at("plans")
          .at(0)
          .at("comm")
          .at("dp");
  CHECK(plan.at("time_per_call_s").get<double>() ==
        Approx(plan.at("unit_scatter_s").get<double>() + plan.at("unit_gather_s").get<double>()));
  CHECK(plan.at("gather_time_per_call_s").get<double>() ==
        Approx(plan.at("unit_gather_s").get<double>()));
}

TEST_CASE("explain and JSON name what the totals hold: the edge unit, FP8 gathers, CP's order",
          "[cli_stack]") {
  // A review's audit (2026-12-07). FSDP's root unit (llm-foundry's auto-wrapped root: the
  // embedding, the final norm and the untied output layer) was in the DP totals but in no line:
  // Llama 3 8B's 128,256 x 4,096 embedding and output layer and 4,096 norm weights =
  // 2 x 525,336,576 + 4,096 = 1,050,677,248 parameters, gathered once a forward and
  // reduce-scattered once a backward, every micro-batch (512 / 64 = 8 at micro-batch 1).
  const std::string fsdp =
      "plan --cluster dgx-h100 --servers 8 --model llama3-8b --global-batch 512 --stack fsdp "
      "--zero 3 --tp 1 --pp 1 --dp 64 --micro-batch 1 --recompute none";
  const Run text = trident(fsdp + " --explain");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("and the unit beside the layers (1,050,677,248 parameters gathered") !=
        std::string::npos);
  const auto dp = nlohmann::json::parse(trident(fsdp + " --format json").out)
                      .at("plans")
                      .at(0)
                      .at("comm")
                      .at("dp");
  CHECK(dp.at("edge_unit_parameters").get<double>() == 1050677248.0);
  CHECK(dp.at("edge_gathers_per_step").get<double>() == 8.0);
  CHECK(dp.at("edge_scatters_per_step").get<double>() == 8.0);
  // The total is the units' calls and the edge unit's: nothing else.
  CHECK(
      dp.at("total_s").get<double>() ==
      Approx(dp.at("unit_gathers_per_step").get<double>() * dp.at("unit_gather_s").get<double>() +
             dp.at("unit_scatters_per_step").get<double>() * dp.at("unit_scatter_s").get<double>() +
             8.0 * (dp.at("edge_gather_s").get<double>() + dp.at("edge_scatter_s").get<double>())));
  // FP8 gathers TP's 8-bit copy: the all-gather half of the call is half the reduce-scatter's
  // 16-bit bytes (b s h x 2 = 1 x 8192 x 8192 x 2 = 134,217,728 for Llama 3 70B).
  const auto tp =
      nlohmann::json::parse(trident("plan --cluster dgx-h100 --servers 64 --model llama3-70b "
                                    "--global-batch 1024 --dtype fp8 --tp 2 --pp 1 --micro-batch 1 "
                                    "--sequence-parallel on --format json")
                                .out)
          .at("plans")
          .at(0)
          .at("comm")
          .at("tp");
  CHECK(tp.at("bytes_per_call").get<double>() == 134217728.0);
  CHECK(tp.at("gather_bytes_per_call").get<double>() == 67108864.0);
  // CP sits beside TP in the order the explain names (the JSON keeps the two orders' names).
  const std::string cp =
      "plan --cluster dgx-h100 --servers 16 --model llama3-70b --seq-len 65536 --global-batch 64 "
      "--cp 2 --top 1";
  CHECK(trident(cp + " --explain").out.find("(rank order tp-cp-dp-pp,") != std::string::npos);
  CHECK(nlohmann::json::parse(trident(cp + " --format json").out)
            .at("plans")
            .at(0)
            .at("rank_order") == "tp-dp-pp");
  // A stack without the bucketed overlap still overlaps ZeRO-3 per unit: its line says which.
  CHECK(trident("plan --cluster dgx-a100 --servers 2 --model llama2-7b --stack deepspeed-megatron "
                "--top 1")
            .out.find("DP overlap off (bucketed ZeRO; ZeRO-3 overlaps per unit)") !=
        std::string::npos);
}

TEST_CASE("SGD under megatron-core: ZeRO-0, a pinned ZeRO-1 and FP8 parameters refused",
          "[cli_stack]") {
  // The DistributedOptimizer is Adam's only (distrib_optimizer.py L688-695 @core_v0.19.0).
  TempDir dir;
  const auto sgd = dir.path / "sgd.yaml";
  std::ofstream(sgd) << "name: sgd-model\nlayers: 24\nhidden: 2048\nheads: 16\nffn_hidden: 8192\n"
                        "ffn: gelu\nvocab: 50000\nseq_len: 2048\ntraining:\n  global_batch: 64\n"
                        "  optimizer: sgd\n";
  const std::string plan = "plan --gpus 16 --servers 2 --model " + sgd.string();
  const Run free = trident(plan + " --top 1");
  REQUIRE(free.code == 0);
  CHECK(free.out.find("ZeRO (0 only: the stack shards Adam's optimizer only, and the model "
                      "trains with SGD)") != std::string::npos);
  const Run pinned = trident(plan + " --zero 1");
  CHECK(pinned.code == 2);
  CHECK(pinned.err ==
        "trident: error: --zero 1: stack megatron-core shards the optimizer only for Adam "
        "(Megatron-Core's DistributedOptimizer asserts it), and model sgd-model trains with SGD "
        "(training.optimizer); use --zero 0\n");
  // torchtitan's FSDP2 shards it.
  CHECK(trident(plan + " --zero 3 --stack torchtitan --top 1").code == 0);
  const auto fp8 = dir.path / "sgd-fp8.yaml";
  std::ofstream(fp8) << "name: sgd-fp8\nlayers: 24\nhidden: 2048\nheads: 16\nffn_hidden: 8192\n"
                        "ffn: gelu\nvocab: 50000\nseq_len: 2048\ntraining:\n  global_batch: 64\n"
                        "  optimizer: sgd\n  dtype: fp8\n  fp8: {recipe: delayed, params: true}\n";
  const Run both = trident("plan --gpus 16 --servers 2 --model " + fp8.string());
  CHECK(both.code == 2);
  CHECK(both.err.find("stack megatron-core gathers FP8 parameters only from a sharded optimizer "
                      "and shards it only for Adam, and model sgd-fp8 trains with SGD "
                      "(training.optimizer): no ZeRO stage runs both; set it false, or train "
                      "with adam\n") != std::string::npos);
}
