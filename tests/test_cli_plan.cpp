// trident plan end to end: runs the binary (TRIDENT_BINARY) and checks what a user gets.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.h"

namespace {

using cli_test::Run;
using cli_test::slurp;
using cli_test::TempDir;

Run trident(const std::string& args) {
  Run run = cli_test::run_trident(args);
  REQUIRE(run.code != -1);
  return run;
}

int lines(const std::string& text) {
  int count = 0;
  for (const char c : text) count += c == '\n' ? 1 : 0;
  return count;
}

const std::string kSeed = "plan --gpus 512 --servers 64 --min-tp 4";

}  // namespace

TEST_CASE("plan JSON has the DESIGN keys with their types", "[cli_plan]") {
  const Run run = trident(kSeed + " --format json --top 5");
  REQUIRE(run.code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc.at("cluster").at("name").is_string());
  CHECK(doc.at("cluster").at("gpus") == 512);
  CHECK(doc.at("cluster").at("servers") == 64);
  CHECK(doc.at("cluster").at("gpu").is_string());
  CHECK(doc.at("cluster").at("gpus_per_server").is_number_integer());
  CHECK(doc.at("cluster").at("domain_gpus").is_number_integer());
  CHECK(doc.at("cluster").at("rack_domain_gpus") == doc.at("cluster").at("domain_gpus"));
  CHECK(doc.at("model").at("name").is_string());
  CHECK(doc.at("model").at("parameters").is_number());
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len",
                          "global_batch"}) {
    CHECK(doc.at("model").at(key).is_number_integer());
  }
  CHECK(doc.at("model").at("ffn").is_string());
  CHECK(doc.at("model").at("dtype").is_string());
  CHECK(doc.at("failures").is_array());
  const auto& plans = doc.at("plans");
  REQUIRE(plans.size() == 5u);
  for (const auto& plan : plans) {
    for (const char* key :
         {"tp", "pp", "dp", "micro_batch", "num_micro_batches", "virtual_stages", "zero"}) {
      CHECK(plan.at(key).is_number_integer());
    }
    for (const char* key :
         {"step_time_s", "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu",
          "memory_gib_per_gpu", "bubble_fraction"}) {
      CHECK(plan.at(key).is_number());
    }
    CHECK(plan.at("recompute").is_string());
    CHECK(plan.at("sequence_parallel").is_boolean());
    CHECK(plan.at("fits").is_boolean());
    for (const char* key :
         {"compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "bubble_s", "exposed_comm_s"}) {
      CHECK(plan.at("time").at(key).is_number());
    }
    for (const char* key : {"weights", "gradients", "optimizer", "activations", "other",
                            "transient", "allocated", "reserved", "cuda_context", "nccl_buffers",
                            "total", "reduce_scatter_kept", "stream_pools"}) {
      CHECK(plan.at("memory_gib").at(key).is_number());
    }
    for (const char* dim : {"tp", "pp", "dp"}) {
      CHECK(plan.at("links").at(dim).is_string());
      CHECK(plan.at("collectives").at(dim).is_string());
      const auto& comm = plan.at("comm").at(dim);
      for (const char* key : {"bytes_per_call", "calls_per_step", "ranks", "gbps",
                              "time_per_call_s", "total_s", "exposed_s"}) {
        CHECK(comm.at(key).is_number());
      }
      CHECK(comm.at("collective").is_string());
      CHECK(comm.at("tier").is_string());
    }
    const std::string order = plan.at("rank_order");
    CHECK((order == "tp-dp-pp" || order == "tp-pp-dp"));
    REQUIRE(plan.at("gemms").is_array());
    REQUIRE_FALSE(plan.at("gemms").empty());
    for (const auto& gemm : plan.at("gemms")) {
      CHECK(gemm.at("name").is_string());
      CHECK(gemm.at("m").is_number_integer());
      CHECK(gemm.at("n").is_number_integer());
      CHECK(gemm.at("k").is_number_integer());
      CHECK(gemm.at("calls_per_step").is_number());
      CHECK(gemm.at("predicted_tflops").is_number());
    }
  }
}

TEST_CASE("the seed question: sorted, whole, fitting plans with TP inside a server", "[cli_plan]") {
  const Run run = trident(kSeed + " --format json --top 10");
  REQUIRE(run.code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  const int gpus = doc.at("cluster").at("gpus");
  const int per_server = doc.at("cluster").at("gpus_per_server");
  const auto& plans = doc.at("plans");
  REQUIRE_FALSE(plans.empty());
  double previous = 0.0;
  for (const auto& plan : plans) {
    const int tp = plan.at("tp");
    const int pp = plan.at("pp");
    const int dp = plan.at("dp");
    CHECK(tp * pp * dp == gpus);
    CHECK(tp >= 4);
    CHECK(plan.at("fits") == true);
    const double step = plan.at("step_time_s");
    CHECK(step >= previous);
    previous = step;
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(3, plans.size()); ++i) {
    CHECK(plans[i].at("tp").get<int>() <= per_server);
    CHECK(plans[i].at("links").at("tp") == "nvlink");
  }
}

TEST_CASE("the fit count is the ranking's: partial-recompute probes and HSDP sizes aside",
          "[cli_plan]") {
  // Llama 3 70B on 64 H100s searches partial recompute (a binary search of probes per split)
  // and, under fsdp, HSDP shard sizes of which only the fastest is ranked: neither the probes
  // nor the slower sizes are plans that fit, so `feasible` and `tight` count the ranked plans
  // (before, 940 fit (195 tight) against 687 ranked (43 tight)).
  for (const std::string stack : {"megatron-core", "fsdp"}) {
    const Run run = trident("plan --gpus 64 --servers 8 --model llama3-70b --top 100000 --stack " +
                            stack + " --format json");
    REQUIRE(run.code == 0);
    const auto doc = nlohmann::json::parse(run.out);
    const auto& plans = doc.at("plans");
    long long tight = 0;
    for (const auto& plan : plans) tight += plan.at("memory_tight").get<bool>() ? 1 : 0;
    CHECK(doc.at("search").at("feasible").get<long long>() == static_cast<long long>(plans.size()));
    CHECK(doc.at("search").at("tight").get<long long>() == tight);
    // The configurations searched = ranked + do not fit + the trials of the partial-recompute
    // and HSDP searches: none negative, the ranked and unfit within the searched.
    const long long unfit = doc.at("search").at("does_not_fit").get<long long>();
    CHECK(unfit > 0);
    CHECK(unfit + static_cast<long long>(plans.size()) <=
          doc.at("search").at("configurations_searched").get<long long>());
    CHECK(doc.at("search").at("configurations_searched").get<long long>() >
          static_cast<long long>(plans.size()));
  }
}

TEST_CASE("the band line and the tied key read the same ties", "[cli_plan]") {
  // One plan shown: the band is still printed, and says where the ties are listed.
  const Run one = trident(kSeed + " --top 1");
  REQUIRE(one.code == 0);
  CHECK(one.out.find("# band: ") != std::string::npos);
  CHECK(one.out.find("; --top 2 or more shows which plans are tied with it\n") !=
        std::string::npos);
  // Every plan shown tied, more ranked: said, not "plans 1-2 are tied" as if that were all.
  const Run two = trident(kSeed + " --top 2");
  CHECK(two.out.find("; plans 1-2 (every plan shown) are tied within the model's error; --top "
                     "shows more\n") != std::string::npos);
  // Every knob pinned: one configuration, the only plan.
  const Run pinned = trident(
      "plan --gpus 512 --servers 64 --tp 8 --pp 8 --dp 8 --micro-batch 1 --vp 12 --recompute "
      "selective --zero 1 --sequence-parallel on");
  CHECK(pinned.out.find("measured error); the only plan\n") != std::string::npos);
  // JSON: `tied` is the band line's predicate (inside the leader's band, on its side of the
  // tight verdict); infeasible plans carry the key, false.
  const Run json = trident(
      "plan --gpus 64 --servers 8 --model llama3-70b --top 100000 --show-infeasible --format "
      "json");
  REQUIRE(json.code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  const auto& plans = doc.at("plans");
  const auto& lead = plans.at(0);
  bool tight_seen = false;
  for (const auto& plan : plans) {
    const bool same_side = plan.at("memory_tight") == lead.at("memory_tight");
    tight_seen = tight_seen || !same_side;
    CHECK(plan.at("tied").get<bool>() ==
          (same_side &&
           plan.at("step_time_s").get<double>() <= lead.at("step_time_s_high").get<double>()));
  }
  CHECK(tight_seen);
  for (const auto& plan : doc.at("infeasible")) CHECK(plan.at("tied") == false);
}

TEST_CASE("a pin that rules out every configuration is named with its rule", "[cli_plan]") {
  // gpt3-175b, global batch 1536, on 64 GPUs: each pin alone leaves no configuration, and
  // without it there are; said with the rule it breaks (it was the whole rule list).
  const Run mb = trident("plan --gpus 64 --micro-batch 7");
  CHECK(mb.code == 2);
  CHECK(mb.err ==
        "trident: error: --micro-batch 7: no configuration of 64 GPUs takes it: the micro-batch "
        "divides the global batch 1536 / DP (without --micro-batch there are configurations)\n");
  // 96 layers over the PPs 64 GPUs take (1-64): the largest stage 96, 48, 24, 12, 6, 3, 2, or
  // with lighter ends 49, 25, 13, 7, 4, 3: 9 divides none, with --pp 2 or without.
  const Run vp = trident("plan --gpus 64 --pp 2 --vp 9");
  CHECK(vp.err.rfind("trident: error: --vp 9: no configuration of 64 GPUs takes it: VP divides a "
                     "stage's layers",
                     0) == 0);
  // Clearing --dp leaves --dp-shard 8 contradicting the search (an input error of its own):
  // the micro-batch is still the one named (it was "impossible search option").
  const Run shard = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --dp 8 --dp-shard 8 --zero 3 --micro-batch 7");
  CHECK(shard.err.rfind("trident: error: --micro-batch 7: no configuration of 64 GPUs takes it",
                        0) == 0);
  // Under --fail-link the same words (the healthy cluster's search).
  const Run failed = trident("plan --gpus 64 --micro-batch 7 --fail-link nvlink:1/1");
  CHECK(failed.err.rfind("trident: error: --micro-batch 7: no configuration of 64 GPUs takes it",
                         0) == 0);
  // Two pins that each run alone but not together: 1536 / DP 64 = 24 sequences, which a
  // micro-batch of 16 does not divide (DP 32 and micro-batch 16 run, so do DP 64 and 8).
  const Run both = trident("plan --gpus 64 --dp 64 --micro-batch 16");
  CHECK(both.code == 2);
  CHECK(both.err.rfind("trident: error: --dp 64, --micro-batch 16 together: no configuration of "
                       "64 GPUs takes them all",
                       0) == 0);
  // Two pins that each fail alone: clearing one still leaves the other, so neither "takes it"
  // line applies; each is named with its rule. PP 5 divides no 64 / (TP x DP); a micro-batch
  // of 7 divides no 1536 / DP (1536 = 2^9 x 3).
  const Run each = trident("plan --gpus 64 --pp 5 --micro-batch 7");
  CHECK(each.code == 2);
  CHECK(each.err ==
        "trident: error: --pp 5 (PP at most the layers 96 and divides the GPUs over TP x CP x DP); "
        "--micro-batch 7 (the micro-batch divides the global batch 1536 / DP): each leaves no "
        "configuration of 64 GPUs even with the other pins cleared\n");
  // A PP that keeps its own rule (4 <= 32 layers, 4 divides 96) is refused for the 24 GPUs it
  // leaves: DP divides 256, so DP 1, 2, 4 or 8 and TP 24, 12, 6 or 3, none dividing 32 heads
  // (a review's find: the line cited PP's own rule, which 4 keeps).
  const Run leaves = trident("plan --model mixtral-8x7b --gpus 96 --servers 12 --pp 4");
  CHECK(leaves.code == 2);
  CHECK(leaves.err ==
        "trident: error: --pp 4: no configuration of 96 GPUs takes it: PP 4 leaves 24 GPUs for "
        "TP x CP x DP, and none of their splits has TP dividing heads 32 and kv_heads 8 and DP "
        "the global batch 256 (without --pp there are configurations)\n");
}

TEST_CASE("pins and limits are obeyed", "[cli_plan]") {
  const Run pinned = trident(kSeed + " --tp 8 --pp 8 --recompute selective --format json");
  REQUIRE(pinned.code == 0);
  const auto pinned_doc = nlohmann::json::parse(pinned.out);  // outlives the loop (ASan)
  for (const auto& plan : pinned_doc.at("plans")) {
    CHECK(plan.at("tp") == 8);
    CHECK(plan.at("pp") == 8);
    CHECK(plan.at("recompute") == "selective");
  }
  const Run limited = trident("plan --gpus 512 --servers 64 --max-tp 2 --format json");
  REQUIRE(limited.code == 0);
  const auto limited_doc = nlohmann::json::parse(limited.out);
  for (const auto& plan : limited_doc.at("plans")) {
    CHECK(plan.at("tp").get<int>() <= 2);
  }
  const Run one = trident(kSeed +
                          " --tp 8 --pp 8 --dp 8 --micro-batch 1 --vp 2 "
                          "--recompute selective --zero 1 --sequence-parallel on "
                          "--format json");
  REQUIRE(one.code == 0);
  const auto doc = nlohmann::json::parse(one.out);
  CHECK(doc.at("search").at("configurations_searched") == 1);
  // The assumption line says what is pinned and what the search leaves free (it said "free"
  // for every knob whatever was pinned).
  const Run table = trident(kSeed + " --tp 8 --pp 8 --recompute selective --top 1");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("# search: TP 8, PP 8 and recompute selective pinned; DP, micro-batch, "
                       "VP, ZeRO and sequence parallel free\n") != std::string::npos);
  // Under a stack that shards hybrid the HSDP shard size is a knob too (it was searched while
  // the line said "nothing else free").
  const std::string fsdp_pins =
      "plan --model llama3-8b --stack fsdp --tp 1 --pp 1 --dp 256 --micro-batch 1 --vp 1 "
      "--recompute none --zero 3 --sequence-parallel off";
  const Run hsdp = trident(fsdp_pins + " --top 1");
  REQUIRE(hsdp.code == 0);
  CHECK(hsdp.out.find("sequence parallel off pinned; HSDP shard free\n") != std::string::npos);
  const Run shard = trident(fsdp_pins + " --dp-shard 8 --top 1");
  REQUIRE(shard.code == 0);
  CHECK(shard.out.find("and HSDP shard 8 pinned; nothing else free\n") != std::string::npos);
  // Unpinned: the knobs the stack has (fsdp: no PP, interleaving or sequence parallel).
  const Run open = trident("plan --model llama3-8b --stack fsdp --top 1");
  REQUIRE(open.code == 0);
  CHECK(open.out.find("# search: every TP x DP split with micro-batch, recompute, ZeRO and HSDP "
                      "shard free; narrow with --min-tp/--max-tp or pin --tp --dp --micro-batch "
                      "--recompute --zero --dp-shard\n") != std::string::npos);
}

TEST_CASE("table, CSV, explain and emit", "[cli_plan]") {
  const Run table = trident(kSeed);
  REQUIRE(table.code == 0);
  CHECK(table.out.rfind("# ", 0) == 0);  // starts with what was assumed
  CHECK(table.out.find("link TP/PP/DP") != std::string::npos);
  const Run csv = trident(kSeed + " --format csv --top 3");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.rfind("rank,tp,pp,dp,", 0) == 0);
  CHECK(lines(csv.out) == 4);
  // Numbers at full precision, as the JSON (six significant digits wrote two million tokens/s
  // as 2.08032e+06): each cell reads back to the JSON's double.
  const Run json = trident(kSeed + " --format json --top 1");
  REQUIRE(json.code == 0);
  const auto parsed = nlohmann::json::parse(json.out);
  const std::string second_line = csv.out.substr(csv.out.find('\n') + 1);
  std::vector<std::string> cells;
  std::stringstream fields(second_line.substr(0, second_line.find('\n')));
  for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
  REQUIRE(cells.size() > 12);
  CHECK(std::stod(cells[10]) == parsed["plans"][0]["step_time_s"].get<double>());
  CHECK(std::stod(cells[11]) == parsed["plans"][0]["tokens_per_s"].get<double>());
  CHECK(cells[11].find('e') == std::string::npos);
  const Run explain = trident(kSeed + " --explain");
  REQUIRE(explain.code == 0);
  CHECK(explain.out.find("Plan #1:") != std::string::npos);
  CHECK(explain.out.find("The three numbers") != std::string::npos);
  CHECK(explain.out.find("If TP crossed two servers") != std::string::npos);
  CHECK(explain.out.find("(p-1)/(v*m)") != std::string::npos);
  // The GEMM ceiling and its factors: H100 989 x 0.80 (MAMF) x 0.849 (sustained) x the slowest
  // of 512 GPUs: 0.979 at 8, spread 0.0104, z(512) = Φ⁻¹(1 - 0.625 / 512.25) = 3.0307, z(8) =
  // 1.4342: 0.979 x (1 - 0.0104 x 3.0307) / (1 - 0.0104 x 1.4342) = 0.96250 -> 646.5 TFLOP/s.
  CHECK(explain.out.find("  GEMM ceiling 647 TFLOP/s  (bf16 peak 989 x 0.800 best measured x 0.849 "
                         "sustained clock x 0.962 the slowest of 512 GPUs;") != std::string::npos);
  // A job of one GPU waits for no sibling: 989 x 0.80 x 0.849 x 1 = 671.7.
  const Run alone = trident(
      "plan --gpus 1 --servers 1 --gpus-per-server 1 --gpu h200-sxm-141g --model llama2-7b "
      "--global-batch 8 --seq-len 1024 --explain");
  REQUIRE(alone.code == 0);
  CHECK(alone.out.find("  GEMM ceiling 672 TFLOP/s  (bf16 peak 989 x 0.800 best measured x 0.849 "
                       "sustained clock x 1.000 the slowest of 1 GPU;") != std::string::npos);
  // PP inside one server rides NVLink: its "why" says nothing of the network.
  const Run boxed =
      trident("plan --gpus 8 --servers 1 --model llama3-8b --tp 2 --pp 4 --vp 1 --explain");
  REQUIRE(boxed.code == 0);
  CHECK(boxed.out.find("      why: one activation per micro-batch per stage boundary: small "
                       "bursts\n") != std::string::npos);
  CHECK(boxed.out.find("tolerates the network") == std::string::npos);
  // The pipeline's default split of the layers: 32 over PP 7 is ceil 5, 3 short: 2 off the
  // last, 1 off the first, 4 | 5 x5 | 3 (the lighter splits aside: --lighter-ends off).
  const Run uneven =
      trident("plan --model llama3-8b --gpus 56 --servers 7 --pp 7 --lighter-ends off --explain");
  REQUIRE(uneven.code == 0);
  CHECK(uneven.out.find("Pipeline bubble\n  stages: 4 | 5 x5 | 3 decoder layers (first | middle "
                        "| last)\n") != std::string::npos);
  // Executed FLOPs are "with recomputation" only where the plan recomputes.
  const Run kept = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --recompute none "
      "--explain");
  REQUIRE(kept.code == 0);
  CHECK(kept.out.find(" TFLOP/s executed)\n") != std::string::npos);
  const Run recomputed = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --recompute full "
      "--explain");
  REQUIRE(recomputed.code == 0);
  CHECK(recomputed.out.find(" TFLOP/s executed with recomputation)\n") != std::string::npos);
  // Executed FLOPs count the causal half a fused kernel runs, its backward at 2.5x the
  // forward: Llama 3 8B at 128k tokens is 71.5% MFU by Megatron's count (708 TFLOP/s), 42.2%
  // causal; a GPU whose GEMMs top out at 651 TFLOP/s (the slowest of 64) executes 466, not 708.
  const Run longctx =
      trident("plan --model llama3-8b --gpus 64 --seq-len 131072 --global-batch 64 --explain");
  REQUIRE(longctx.code == 0);
  CHECK(longctx.out.find("  MFU          71.5%  (708 model TFLOP/s per GPU of 989 dense peak; 466 "
                         "TFLOP/s executed)\n  MFU causal   42.2%  (attention's masked half not "
                         "counted)\n") != std::string::npos);
  // The unfused attention computes every score, masked or not: without recomputation it
  // executes the model's FLOPs exactly (Megatron's count does not halve the core either).
  const Run unfused_run = trident(
      "plan --model llama3-8b --gpus 64 --stack megatron-2021 --recompute none --top 1 "
      "--format json");
  REQUIRE(unfused_run.code == 0);
  const auto unfused_doc = nlohmann::json::parse(unfused_run.out);
  const auto& unfused_plan = unfused_doc["plans"][0];
  CHECK(unfused_plan["hardware_tflops_per_gpu"].get<double>() ==
        Approx(unfused_plan["model_tflops_per_gpu"].get<double>()));
  // Without NVLink a group's domain is its server; where crossing servers reads 1.1% faster
  // (PCIe's hidden TP traffic holds more SMs than the network's), the term that moved is shown
  // and the verdict is a tie within the stack's error, not "TP stays inside the box".
  const Run pcie = trident("plan --cluster pcie-8gpu --model llama3-8b --tp 4 --explain");
  REQUIRE(pcie.code == 0);
  CHECK(pcie.out.find("      link: pcie at 24 GB/s per GPU inside one server\n") !=
        std::string::npos);
  CHECK(pcie.out.find("NVLink domain") == std::string::npos);
  CHECK(pcie.out.find("  also      overlap SM contention ") != std::string::npos);
  CHECK(pcie.out.find("  so crossing reads the same here, within the model's error (+/-5.4%): "
                      "the search keeps each TP group inside one server\n") != std::string::npos);
  CHECK(explain.out.find("  so TP stays inside the box: its all-reduces sit on every layer's "
                         "critical path\n") != std::string::npos);
  const Run second = trident(kSeed + " --explain 2");
  REQUIRE(second.code == 0);
  CHECK(second.out.find("Plan #2:") != std::string::npos);
  const Run emit = trident(kSeed + " --emit megatron");
  REQUIRE(emit.code == 0);
  CHECK(emit.out.rfind("# Megatron-LM core_v0.19.0 (github.com/NVIDIA/Megatron-LM commit ", 0) ==
        0);
  CHECK(emit.out.find("\n  --tensor-model-parallel-size ") != std::string::npos);
}

TEST_CASE("--emit megatron-deepspeed: BLOOM's TP 4 x PP 12 as Megatron-DeepSpeed launches it",
          "[cli_plan]") {
  // GPT-3 175B on 48 servers, TP 4 PP 12 as BLOOM ran under --stack deepspeed-megatron: its
  // fastest plan runs ZeRO-0 with fp32 gradients, which DeepSpeed has no bf16 optimizer for.
  const std::string bloom =
      "plan --gpus 384 --servers 48 --model gpt3-175b --stack deepspeed-megatron --tp 4 --pp 12 "
      "--global-batch 2048";
  const Run zero0 = trident(bloom + " --emit megatron-deepspeed");
  CHECK(zero0.code == 2);
  CHECK(lines(zero0.err) == 1);
  CHECK(zero0.err.find("cannot run there: the plan reduces bf16 gradients in fp32, which "
                       "DeepSpeed keeps only in its BF16_Optimizer at ZeRO-1") !=
        std::string::npos);
  CHECK(zero0.err.find("--zero 1 --sequence-parallel off") != std::string::npos);
  const Run zero1 = trident(bloom + " --zero 1 --emit megatron-deepspeed@f4157bea");
  REQUIRE(zero1.code == 0);
  CHECK(zero1.out.rfind("# Megatron-DeepSpeed f4157bea (github.com/microsoft/Megatron-DeepSpeed "
                        "commit f4157bea69f3df8c6cb66f2ebcda66ba03d1288e)",
                        0) == 0);
  // 2048 = 2 x 128 x 8: micro-batch 2, 128 accumulation steps, DP 8.
  CHECK(zero1.out.find("  \"gradient_accumulation_steps\": 128,\n") != std::string::npos);
  CHECK(zero1.out.find("  --deepspeed_config ds_config.json \\\n  --zero-stage 1\n") !=
        std::string::npos);
  // Its NullTokenizer adds the end-of-document token to --vocab-size: 51199 + 1 = GPT-3's 51200,
  // a multiple of 128 x TP 4 = 512, so nothing is padded and no padding note is written.
  CHECK(zero1.out.find("  --vocab-size 51199 \\\n") != std::string::npos);
  CHECK(zero1.out.find("# vocabulary:") == std::string::npos);
  // Two obstacles, the second without a knob to turn: the plan's CP 2 (fixed by CP 1), then a
  // geglu FFN Megatron-DeepSpeed has no flag for. The line names both, so the change it offers
  // answers a reason it gave (a review's find: it gave the CP reason with the FFN's change).
  TempDir dir;
  const auto geglu = dir.path / "geglu.yaml";
  std::ofstream(geglu) << "name: geglu-model\nlayers: 24\nhidden: 2048\nheads: 16\n"
                          "ffn_hidden: 8192\nffn: geglu\nvocab: 32000\nseq_len: 32768\n"
                          "training:\n  global_batch: 64\n";
  const Run two = trident("plan --model " + geglu.string() +
                          " --gpus 32 --servers 4 --cp 2 --emit megatron-deepspeed");
  CHECK(two.code == 2);
  CHECK(lines(two.err) == 1);
  CHECK(two.err.find("cannot run there: --emit writes context parallelism (CP 2) as the plan "
                     "priced it") != std::string::npos);
  CHECK(two.err.find("; with that changed, Megatron-DeepSpeed has no flag for a geglu FFN (GeLU "
                     "by default, --swiglu, --squared-relu); nearest it can run: ffn gelu, "
                     "swiglu or relu2 in the model file\n") != std::string::npos);
  // Llama 3's 128,256 at TP 8: pretrain_gpt.py pads to ceil(128256 / 1024) x 1024 = 129,024.
  const Run padded = trident(
      "plan --model llama3-70b --gpus 64 --tp 8 --stack deepspeed-megatron --emit "
      "megatron-deepspeed");
  REQUIRE(padded.code == 0);
  CHECK(padded.out.find("# vocabulary: pretrain_gpt.py pads 128256 to 129024 (a multiple of 128 "
                        "x TP 8, --make-vocab-size-divisible-by); trident priced 128256\n") !=
        std::string::npos);
}

TEST_CASE("--emit NAME@VERSION: a release's config, or one line naming the nearest plan",
          "[cli_plan]") {
  const std::string llama = "plan --model llama3-8b --gpus 64 --servers 8 ";
  const Run titan = trident(llama + "--stack torchtitan --emit torchtitan@v0.2.2");
  REQUIRE(titan.code == 0);
  CHECK(titan.out.rfind("# torchtitan v0.2.2 (github.com/pytorch/torchtitan commit "
                        "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce)",
                        0) == 0);
  CHECK(titan.out.find("\nflavor = \"8B\"\n") != std::string::npos);
  // GPT-3 175B has no torchtitan flavor: exit 2, one line, what to change.
  const Run gpt = trident(kSeed + " --emit torchtitan");
  CHECK(gpt.code == 2);
  CHECK(lines(gpt.err) == 1);
  CHECK(gpt.out.empty());
  CHECK(gpt.err.find("nearest it can run: --model llama3-8b, llama3-70b or llama3-405b") !=
        std::string::npos);
  // DeepSpeed has no interleaving and AutoTP no pipeline axis: pins of the nearest plan.
  const Run ds = trident(kSeed + " --emit deepspeed@0.19.3");
  CHECK(ds.code == 2);
  CHECK(lines(ds.err) == 1);
  CHECK(ds.err.find("--emit deepspeed@v0.19.3: plan 1 (") != std::string::npos);
  CHECK(ds.err.find("nearest plan it can run: --tp 1 ") != std::string::npos);
  // That fix folds TP into DP, below the seed's --min-tp 4: said, and the best plan of the
  // whole search (none of the top 10 runs there) is named with the flags that emit it.
  CHECK(ds.err.find("--sequence-parallel off, but its TP 1 is below --min-tp 4; the best plan "
                    "of the search it runs is plan ") != std::string::npos);
  const std::string top = "--top ";
  const auto top_at = ds.err.find(top);
  REQUIRE(top_at != std::string::npos);
  const std::string n = ds.err.substr(top_at + top.size(),
                                      ds.err.find(' ', top_at + top.size()) - top_at - top.size());
  const Run best = trident(kSeed + " --top " + n + " --explain " + n + " --emit deepspeed@0.19.3");
  REQUIRE(best.code == 0);
  const std::string autotp = "\"autotp_size\": ";
  const auto tp_at = best.out.find(autotp);
  REQUIRE(tp_at != std::string::npos);
  CHECK(std::stoi(best.out.substr(tp_at + autotp.size())) >= 4);  // --min-tp 4 kept
  // Under --fail-link the option's nearest plan is checked the same way.
  const Run option = trident(kSeed + " --fail-link server:3 --emit deepspeed");
  CHECK(option.code == 2);
  CHECK(option.err.find("option 1 ") != std::string::npos);
  CHECK(option.err.find(", but its TP 1 is below --min-tp 4") != std::string::npos);
  // A pin the fix changes is named (a CP plan under a release that does not write CP: the
  // nearest folds CP into DP); nothing in the search runs there, no "no configuration" line.
  const Run cp = trident("plan --gpus 512 --servers 64 --model llama3-8b --cp 2 --emit deepspeed");
  CHECK(cp.code == 2);
  CHECK(cp.err.find(", but it changes the pinned --cp 2 to 1; no plan of the search that fits "
                    "runs there") != std::string::npos);
  // A pinned partial recompute the fix drops (DeepSpeed's activation checkpointing has no
  // per-layer count here): named, so the suggested pins are not added beside it.
  const Run partial = trident(
      "plan --model llama3-70b --gpus 64 --servers 8 --recompute-layers 2 --emit deepspeed");
  CHECK(partial.code == 2);
  CHECK(partial.err.find(", but it drops the pinned --recompute-layers 2 (recompute full of "
                         "every layer)") != std::string::npos);
  // A pin of at least a chunk's layers is plain full recompute: the nearest plan keeps it.
  const Run whole = trident(
      "plan --model llama3-8b --gpus 64 --servers 8 --recompute full --recompute-layers 100 "
      "--micro-batch 2 --emit torchtitan");
  CHECK(whole.code == 2);
  CHECK(whole.err.find("--recompute-layers") == std::string::npos);
  // A model the release refuses (MoE): no whole-search fallback (it cost 10 s at 16,384 GPUs).
  const Run moe = trident("plan --gpus 512 --servers 64 --model mixtral-8x7b --emit deepspeed");
  CHECK(moe.code == 2);
  CHECK(moe.err.find("has experts") != std::string::npos);
  CHECK(moe.err.find("of the search") == std::string::npos);
  // Without --min-tp the same fix does not fit 175B in memory: said, not suggested silently.
  const Run unfit = trident("plan --gpus 512 --servers 64 --emit deepspeed");
  CHECK(unfit.code == 2);
  CHECK(unfit.err.find("--sequence-parallel off, but it does not fit in GPU memory; the best "
                       "plan of the search it runs is plan ") != std::string::npos);
  // The refusal also names the best-ranked plan the release runs, and that command emits.
  const std::string llama70 = "plan --model llama3-70b --gpus 64 --servers 8 --top 40 ";
  const Run refused = trident(llama70 + "--emit deepspeed");
  REQUIRE(refused.code == 2);
  const std::string hint = "the best plan of this ranking it runs is plan ";
  const auto at = refused.err.find(hint);
  REQUIRE(at != std::string::npos);
  const std::size_t from = at + hint.size();
  const std::string rank = refused.err.substr(from, refused.err.find(' ', from) - from);
  const Run runs = trident(llama70 + "--explain " + rank + " --emit deepspeed@v0.19.5");
  CHECK(runs.code == 0);
  CHECK(runs.out.rfind("# DeepSpeed v0.19.5 ", 0) == 0);
  const Run old = trident(llama + "--emit megatron@core_v0.18.0");
  CHECK(old.code == 2);
  CHECK(old.err.find("--emit 'megatron@core_v0.18.0': expected") != std::string::npos);
}

TEST_CASE("bad flags give one line on stderr and exit 2", "[cli_plan]") {
  for (const char* args :
       {"plan --bogus", "plan --format xml", "plan --recompute maybe", "plan --tp 5",
        "plan --min-tp 8 --max-tp 4", "plan --zero 7", "plan --sequence-parallel yes",
        "plan --emit jax", "plan --gpus 512 --servers 64 --dp 3"}) {
    INFO(args);
    const Run run = trident(args);
    CHECK(run.code == 2);
    CHECK(lines(run.err) == 1);
    CHECK(run.out.empty());
  }
  CHECK(trident("plan --tp 5").err ==
        "trident: error: --tp 5: must divide the model's heads (96), kv_heads (96) and "
        "ffn_hidden (49152)\n");
}

TEST_CASE("a flag given twice and words no flag takes, in the project's wording", "[cli_plan]") {
  const Run twice = trident("plan --gpus 64 --top 2 --top 3");
  CHECK(twice.code == 2);
  CHECK(twice.err == "trident: error: --top: given 2 times; give it once (see --help)\n");
  const Run unknown = trident("plan --gpus 64 --bogus 1");
  CHECK(unknown.code == 2);
  CHECK(unknown.err.rfind("trident: error: not a flag or value of this command: ", 0) == 0);
  CHECK(unknown.err.find("--bogus") != std::string::npos);
  const Run word = trident("plan --gpus 64 extra");
  CHECK(word.err == "trident: error: not a flag or value of this command: extra (see --help)\n");
}

TEST_CASE("--output writes the whole file or nothing", "[cli_plan]") {
  TempDir dir;
  const std::string path = (dir.path / "plan.json").string();
  const Run ok = trident(kSeed + " --format json --output " + path);
  REQUIRE(ok.code == 0);
  CHECK(ok.out.empty());
  CHECK(nlohmann::json::parse(slurp(path)).at("plans").is_array());
  const std::string failed = (dir.path / "failed.json").string();
  const Run bad = trident(kSeed + " --tp 5 --format json --output " + failed);
  CHECK(bad.code == 2);
  CHECK_FALSE(std::filesystem::exists(failed));
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);  // plan.json only: no temporary left behind
  const Run nowhere = trident(kSeed + " --output " + (dir.path / "no/such/dir.txt").string());
  CHECK(nowhere.code == 2);
  CHECK(lines(nowhere.err) == 1);
}

TEST_CASE("GB200 racks partly filled: 128 GPUs plan and topo says so", "[cli_plan]") {
  // 128 GPUs = 32 trays of NVL72 racks: the job takes them in two 16-tray segments (the
  // largest count up to 18 dividing 32), so two 64-GPU domains; the assumptions line says why.
  const Run topo = trident("topo show --cluster gb200-nvl72 --gpus 128");
  REQUIRE(topo.code == 0);
  CHECK(topo.out.find("2 domains of 64 GPUs (each spans 16 servers; the job's segments of 16 "
                      "servers in 72-GPU racks, nvlink.job_segments)") != std::string::npos);
  // 76 GPUs = 19 trays: 1-tray segments, so NVLink ends at the tray, and both outputs say so.
  const Run trays = trident("topo show --cluster gb200-nvl72 --gpus 76");
  CHECK(trays.out.find("19 domains of 4 GPUs (one per server; the job's segments of 1 server in "
                       "72-GPU racks, nvlink.job_segments)") != std::string::npos);
  const Run tray_plan = trident("plan --cluster gb200-nvl72 --gpus 76 --model llama3-8b --top 1");
  CHECK(tray_plan.out.find("in 4-GPU domains (the job's segments of 1 server in 72-GPU racks)") !=
        std::string::npos);
  const Run plan = trident("plan --cluster gb200-nvl72 --gpus 128 --model llama3-70b --top 1");
  CHECK(plan.code == 0);
  CHECK(plan.err.empty());
  CHECK(plan.out.find("in 64-GPU domains (the job's segments of 16 servers in 72-GPU racks)") !=
        std::string::npos);
  const Run json =
      trident("plan --cluster gb200-nvl72 --gpus 128 --model llama3-70b --top 1 --format json");
  REQUIRE(json.code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc.at("cluster").at("domain_gpus") == 64);
  CHECK(doc.at("cluster").at("rack_domain_gpus") == 72);
  // Without job segments (a cluster file saying job_segments: false) the job fills racks in
  // order: one rack of 72 and 56 GPUs of the next (was refused before partial domains).
  TempDir racks;
  const auto filled = (racks.path / "nvl72-filled.yaml").string();
  std::ofstream(filled) << "name: nvl72-filled\ngpu: gb200\nservers: 32\ngpus_per_server: 4\n"
                           "nvlink:\n  kind: switch\n  domain_gpus: 72\n  links_per_gpu: 18\n"
                           "  gbps_per_link: 50\n  job_segments: false\nnetwork:\n"
                           "  nics_per_server: 4\n  nic_gbits: 400\n";
  const Run in_order = trident("topo show --cluster " + filled);
  REQUIRE(in_order.code == 0);
  CHECK(in_order.out.find("2 domains of 72 GPUs (each spans 18 servers; the last holds 56)") !=
        std::string::npos);
  const Run part = trident("topo show --cluster " + filled + " --gpus 8");
  CHECK(part.out.find("1 domain: 8 GPUs of a 72-GPU domain") != std::string::npos);
  CHECK(trident("plan --cluster " + filled + " --model llama3-70b --top 1").code == 0);
  // The network row's latency is the network's (14 us), for racks of servers as for domains
  // inside a server: two 4-GPU domains per 8-GPU server read PCIe's 5.7 us (the pair it
  // measured, GPUs 0 and 4, shares a server).
  CHECK(topo.out.find("  network       50 GB/s    14 us  across domains") != std::string::npos);
  TempDir dir;
  const auto file = (dir.path / "d4.yaml").string();
  std::ofstream(file) << "name: d4\ngpu: h100-sxm-80g\nservers: 4\ngpus_per_server: 8\n"
                         "nvlink:\n  kind: switch\n  domain_gpus: 4\n  links_per_gpu: 18\n"
                         "  gbps_per_link: 25\nnetwork:\n  nics_per_server: 8\n  nic_gbits: 400\n";
  const Run halves = trident("topo show --cluster " + file);
  REQUIRE(halves.code == 0);
  CHECK(halves.out.find("  network       50 GB/s    14 us  across domains") != std::string::npos);
}

TEST_CASE("--dtype overrides the model's precision", "[cli_plan]") {
  // A V100 has no bf16 peak: every built-in model (bf16) was refused on dgx1-v100.
  const std::string base = "plan --cluster dgx1-v100 --model llama2-7b --top 1";
  const Run bf16 = trident(base);
  CHECK(bf16.code == 2);
  // llama2-7b's preset sets no dtype: the default is named as such.
  CHECK(bf16.err ==
        "trident: error: model llama2-7b (training.dtype bf16 by default): v100-sxm-32g has no "
        "bf16 peak; give --dtype fp16 (or set training.dtype in the model file)\n");
  // The suggestion is a dtype the stack runs too: torchtitan has no fp16, a V100 no bf16.
  const Run titan_v100 = trident(base + " --stack torchtitan");
  CHECK(titan_v100.err.find("v100-sxm-32g has no bf16 peak; give --dtype fp32 (") !=
        std::string::npos);
  // A model file that sets fp8 on an A100: its file and line, and bf16, what A100s train in.
  const Run fp8 = trident("plan --cluster dgx-a100 --gpus 64 --model " +
                          std::string(TRIDENT_SOURCE_DIR) + "/docs/examples/llama3-8b-fp8.yaml");
  CHECK(fp8.code == 2);
  CHECK(fp8.err.find("llama3-8b-fp8.yaml:20: training.dtype: a100-sxm-80g has no fp8 peak; give "
                     "--dtype bf16") != std::string::npos);
  // fp16, but the default stack's cuDNN attention needs sm80: refused, naming the way out.
  const Run cudnn = trident(base + " --dtype fp16");
  CHECK(cudnn.code == 2);
  CHECK(cudnn.err.find("stack megatron-core: attention: cudnn needs a GPU of "
                       "compute capability 8.0 or more") != std::string::npos);
  const Run fp16 = trident(base + " --dtype fp16 --stack megatron-2021 --format json");
  INFO(fp16.err);
  REQUIRE(fp16.code == 0);
  const auto doc = nlohmann::json::parse(fp16.out);
  CHECK(doc["assumptions"].dump().find("fp16") != std::string::npos);
  // FP8 on H100 from the bf16 preset: faster than bf16, slower than 2x (attention, the output
  // layer and the non-GEMM kernels stay 16-bit).
  const std::string h100 = "plan --gpus 64 --model llama3-8b --top 1 --format json";
  const auto b = nlohmann::json::parse(trident(h100).out)["plans"][0]["step_time_s"].get<double>();
  const auto f =
      nlohmann::json::parse(trident(h100 + " --dtype fp8").out)["plans"][0]["step_time_s"]
          .get<double>();
  CHECK(f < b);
  CHECK(f > b / 2);
  CHECK(trident(h100 + " --dtype fp4").code == 2);
  // Refusals name the flag, not model-file keys the user did not write.
  const Run a100 = trident("plan --cluster dgx-a100 --model llama2-7b --dtype fp8");
  CHECK(a100.err ==
        "trident: error: --dtype fp8: a100-sxm-80g has no fp8 peak (it runs bf16, fp16, tf32, "
        "fp32)\n");
  const Run ds = trident(h100 + " --dtype fp8 --stack deepspeed-megatron");
  CHECK(ds.err == "trident: error: --dtype fp8: stack deepspeed-megatron has no FP8 training\n");
  // A bf16 model made FP8 by the flag takes the stack's own recipe where the default
  // (delayed) is not one it runs: torchtitan's current scaling, said in the model line.
  const Run titan = trident(h100 + " --dtype fp8 --stack torchtitan");
  INFO(titan.err);
  REQUIRE(titan.code == 0);
  CHECK(titan.out.find("fp8 current scaling") != std::string::npos);
}

TEST_CASE("topo show rounds the network share as it rounds the tiers", "[cli_plan]") {
  TempDir dir;
  const auto file = dir.path / "six.yaml";
  // `topo show` of 4 servers of 6 H100s on an NVSwitch of 18 links at `link_gbps` a link.
  const auto shown = [&](const std::string& link_gbps, const std::string& network) {
    std::ofstream(file) << "name: six\ngpu: h100-sxm-80g\nservers: 4\ngpus_per_server: 6\n"
                           "nvlink: {domain_gpus: 6, kind: switch, links_per_gpu: 18, "
                           "gbps_per_link: "
                        << link_gbps << "}\nnetwork: {nics_per_server: 2, " << network << "}\n";
    const Run topo = trident("topo show --cluster " + file.string());
    REQUIRE(topo.code == 0);
    return topo.out;
  };
  // 2 NICs x 400 Gb/s / 8 bits / 6 GPUs = 16.666... GB/s a GPU: printed to 4 figures (it was
  // 16.666666666666668).
  CHECK(shown("25", "nic_gbits: 400")
            .find("network: 2 NICs x 400 Gb/s per server = 16.67 GB/s per GPU,") !=
        std::string::npos);
  // Unround NIC speeds and tapers to 4 figures; a tier above 1000 GB/s whole, not 1.543e+05.
  const std::string odd =
      shown("8572.2", "nic_gbits: 133.33333333, oversubscription: 1.3333333333");
  CHECK(odd.find("network: 2 NICs x 133.3 Gb/s per server = 5.556 GB/s per GPU, "
                 "rail-optimised, oversubscription 1.333\n") != std::string::npos);
  CHECK(odd.find("  nvlink    154300 GB/s") != std::string::npos);
  const std::string tiny = shown("16.666666666666668", "nic_gbits: 0.001");
  CHECK(tiny.find("18 links x 16.67 GB/s per GPU") != std::string::npos);
  CHECK(tiny.find("e-0") == std::string::npos);  // never in exponent form
  // DGX A100: 8 x 200 Gb/s / 8 / 8 = 25 GB/s of NIC, capped at its PCIe Gen4 24: both said.
  const Run a100 = trident("topo show --cluster dgx-a100");
  REQUIRE(a100.code == 0);
  CHECK(a100.out.find("= 24 GB/s per GPU (its PCIe link),") != std::string::npos);
  CHECK(a100.out.find("8 NICs x 200 Gb/s / 8 / 8 GPUs = 25, capped at PCIe 24 / "
                      "oversubscription 1") != std::string::npos);
}

TEST_CASE("a plan that fits only below the mean fragmentation is marked tight, not refused",
          "[cli_plan]") {
  // NeMo 2022's GPT-3 5B on 8 A100-80GB (TP 1, micro-batch 2, unfused attention, no
  // recompute, ZeRO-1) ran; allocated + CUDA context + NCCL buffers fit 80 GiB, the mean
  // fragmentation (15% of what churns) does not.
  TempDir dir;
  const auto model = dir.path / "gpt3-5b.yaml";
  std::ofstream(model) << "name: gpt3-5b\nlayers: 24\nhidden: 4096\nheads: 32\n"
                          "ffn_hidden: 16384\nffn: gelu\nvocab: 50304\nseq_len: 2048\n"
                          "tied_embeddings: true\ntraining: {global_batch: 2048, dtype: bf16}\n";
  const auto stack = dir.path / "unfused.yaml";
  std::ofstream(stack) << "name: unfused\nbase: megatron-core\nattention: unfused\n";
  const std::string pinned = "plan --cluster dgx-a100 --gpus 8 --model " + model.string() +
                             " --stack " + stack.string() +
                             " --tp 1 --pp 1 --dp 8 --micro-batch 2 --recompute none --zero 1";
  const Run table = trident(pinned + " --explain");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("1 fit in memory (1 of them tight)") != std::string::npos);
  CHECK(table.out.find(" GiB*") != std::string::npos);
  CHECK(table.out.find("# * tight: fits only if the caching allocator fragments less than the "
                       "15% it averages (--explain N says") != std::string::npos);
  CHECK(table.out.find(": TIGHT\n") != std::string::npos);
  // A tight plan with ZeRO-3's side-stream pools (torchtitan's FSDP2, Llama 3 8B on 8 GPUs, HSDP 4
  // x 2): the footnote names the pools as the explain line does.
  const Run pools = trident(
      "plan --gpus 8 --servers 1 --model llama3-8b --stack torchtitan --tp 1 --pp 1 "
      "--dp 8 --dp-shard 4 --micro-batch 1 --recompute none --zero 3");
  REQUIRE(pools.code == 0);
  CHECK(pools.out.find(" GiB*") != std::string::npos);
  CHECK(pools.out.find("averages and caches less on ZeRO-3's side streams than priced") !=
        std::string::npos);
  CHECK(table.out.find("  tight: it fits only if the allocator fragments less than") !=
        std::string::npos);
  const Run json = trident(pinned + " --format json");
  REQUIRE(json.code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  const auto& plan = doc.at("plans").at(0);
  CHECK(plan.at("fits").get<bool>());
  CHECK(plan.at("memory_tight").get<bool>());
  CHECK(doc.at("search").at("tight").get<long long>() == 1);
  // Allocated below the 80 GiB, the total with fragmentation above it.
  CHECK(plan.at("memory_gib").at("allocated").get<double>() < 80.0);
  CHECK(plan.at("memory_gib").at("total").get<double>() > 80.0);
  // Free recompute: selective, full and partial full recompute (the fewest of the 24 layers
  // that fit outright) fit and rank first; the tight plan, though faster, comes after them
  // and the band line says it set them aside.
  const std::string free_recompute = "plan --cluster dgx-a100 --gpus 8 --model " + model.string() +
                                     " --stack " + stack.string() +
                                     " --tp 1 --pp 1 --dp 8 --micro-batch 2 --zero 1";
  const Run ranked = trident(free_recompute + " --format json");
  REQUIRE(ranked.code == 0);
  const auto plans = nlohmann::json::parse(ranked.out).at("plans");
  REQUIRE(plans.size() == 4u);
  for (std::size_t i = 0; i < 3; ++i) CHECK_FALSE(plans.at(i).at("memory_tight").get<bool>());
  CHECK(plans.at(3).at("memory_tight").get<bool>());
  CHECK(plans.at(3).at("recompute").get<std::string>() == "none");
  CHECK(plans.at(3).at("step_time_s").get<double>() < plans.at(0).at("step_time_s").get<double>());
  int partial = 0;
  for (const auto& p : plans) {
    const int layers = p.at("recompute_layers").get<int>();
    if (layers == 0) continue;
    ++partial;
    CHECK(p.at("recompute").get<std::string>() == "full");
    CHECK(layers < 24);
  }
  CHECK(partial == 1);
  const Run ranked_table = trident(free_recompute);
  CHECK(ranked_table.out.find("(the tight plans aside)") != std::string::npos);
}

TEST_CASE("--recompute-layers pins partial full recompute; stacks without it refuse",
          "[cli_plan]") {
  const std::string base =
      "plan --gpus 64 --servers 8 --model llama3-70b --global-batch 64 "
      "--tp 8 --pp 4 --recompute-layers 3";
  const Run table = trident(base + " --top 2 --explain");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("    full:3 ") != std::string::npos);
  CHECK(table.out.find("recompute full on 3 layers of each model chunk") != std::string::npos);
  const Run json = trident(base + " --top 1 --format json");
  REQUIRE(json.code == 0);
  const auto plan = nlohmann::json::parse(json.out).at("plans").at(0);
  CHECK(plan.at("recompute").get<std::string>() == "full");
  CHECK(plan.at("recompute_layers").get<int>() == 3);
  const Run emitted = trident(base + " --emit megatron");
  REQUIRE(emitted.code == 0);
  CHECK(emitted.out.find("--recompute-method block \\\n  --recompute-num-layers 3") !=
        std::string::npos);
  const Run fsdp = trident(
      "plan --gpus 64 --servers 8 --model llama3-70b --global-batch 64 --recompute-layers 3 "
      "--stack fsdp");
  CHECK(fsdp.code == 2);
  CHECK(fsdp.err ==
        "trident: error: --recompute-layers 3: stack fsdp has no partial recompute; drop "
        "--recompute-layers or use --stack megatron-core or torchtitan\n");
  // torchtitan recomputes every k-th block: 3 of 32 layers is no k's, and with PP 1 no split
  // is left; the rules say why.
  const Run titan = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 --stack torchtitan "
      "--recompute-layers 3 --pp 1");
  CHECK(titan.code == 2);
  CHECK(titan.err.find(", --recompute-layers 3 divides the layers per chunk (every k-th block) "
                       "on equal stages, or is at least the chunk)") != std::string::npos);
  const Run selective = trident(base + " --recompute selective");
  CHECK(selective.code == 2);
  CHECK(selective.err.find("--recompute-layers 3 with --recompute selective") != std::string::npos);
}

TEST_CASE("a GPU file without its measured rates says they are defaults", "[cli_plan]") {
  // A new user's find (2026-12-07): an H200 written from its datasheet priced 22% faster than
  // the preset (GEMM ceiling 989 x 0.8 x 1 x 1 = 791 TFLOP/s against the preset's 989 x 0.8 x
  // 0.849 x 0.972 = 653), its explain calling the default 0.8 "best measured".
  TempDir dir;
  std::ofstream(dir.path / "g.yaml")
      << "name: my-gpu\npeak_tflops: {bf16: 989}\nmemory_gib: 141\nmemory_gbps: 4800\n";
  const Run own =
      trident("plan --cluster dgx-h100 --servers 4 --gpu " + (dir.path / "g.yaml").string() +
              " --model llama3-8b --top 1 --explain 1");
  REQUIRE(own.code == 0);
  CHECK(own.out.find("# gpu my-gpu: its file leaves out matmul_efficiency 0.8, "
                     "sustained_clock_ratio 1, ensemble_clock_ratio 1, clock_spread 0 (a job of "
                     "any size at the ratio of 8 GPUs): priced at these defaults, "
                     "not measurements") != std::string::npos);
  CHECK(own.out.find("GEMM ceiling 791 TFLOP/s  (bf16 peak 989 x 0.800 default (not measured) x "
                     "1.000 sustained clock (default) x 1.000 the slowest of 32 GPUs (default)") !=
        std::string::npos);
  const Run preset = trident(
      "plan --cluster dgx-h100 --servers 4 --model llama3-8b --top 1 "
      "--explain 1");
  REQUIRE(preset.code == 0);
  CHECK(preset.out.find("# gpu ") == std::string::npos);
  CHECK(preset.out.find("x 0.800 best measured x 0.849 sustained clock x 0.972 the slowest of "
                        "32 GPUs") != std::string::npos);
  // The preset without its spread (round thirty-three: 2.2% faster at 16,384 GPUs, nothing
  // said): 32 GPUs at the ratio of 8, 0.979, marked a default, and the line names the key.
  std::ifstream h100(std::string(TRIDENT_SOURCE_DIR) + "/configs/gpus/h100-sxm-80g.yaml");
  std::ofstream spreadless(dir.path / "h.yaml");
  for (std::string line; std::getline(h100, line);) {
    if (!line.starts_with("clock_spread:")) spreadless << line << "\n";
  }
  spreadless.close();
  const Run no_spread =
      trident("plan --cluster dgx-h100 --servers 4 --gpu " + (dir.path / "h.yaml").string() +
              " --model llama3-8b --top 1 --explain 1");
  REQUIRE(no_spread.code == 0);
  CHECK(no_spread.out.find("its file leaves out clock_spread 0 (a job of any size at the ratio "
                           "of 8 GPUs)") != std::string::npos);
  CHECK(no_spread.out.find("x 0.979 the slowest of 32 GPUs (default)") != std::string::npos);
}

TEST_CASE("a model whose every layer is MoE shows no dense FFN width", "[cli_plan]") {
  // Mixtral's 32 layers are all MoE: its ffn_hidden (14336, also the experts' width) sized no
  // dense FFN, yet the model line said "swiglu 14336" as of a dense layer (a new user's find,
  // 2026-12-07, with ffn_hidden 99999 shown and emitted while nothing priced it).
  const Run r = trident("plan --cluster dgx-h100 --servers 4 --model mixtral-8x7b --top 1");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("32/8 heads, swiglu (no dense FFN layer), seq 4096") != std::string::npos);
  CHECK(r.out.find("MoE: 32 of 32 layers, 8 experts of ffn 14336 (top-2)") != std::string::npos);
}

TEST_CASE("a calibration says whether plan 1 is priced with any of its fits", "[cli_plan]") {
  // A helper's find (2026-12-07): a calibration of the TP all-gather and reduce-scatter alone
  // moved the search to sequence parallelism off, whose all-reduces it did not measure, and
  // nothing said that plan 1 used none of it. The test log: an all-gather over 8 ranks on 2
  // hosts (the network tier).
  TempDir dir;
  const std::string cal = (dir.path / "c.json").string();
  REQUIRE(trident("calibrate --nccl-tests " + std::string(TRIDENT_SOURCE_DIR) +
                  "/tests/data/nccl_tests/all_gather_new.txt --output " + cal)
              .code == 0);
  const std::string plan = "plan --cluster dgx-h100 --servers 2 --model llama3-8b --top 1 ";
  // TP 8 x DP 2 at ZeRO-1: the weights' all-gather crosses the servers.
  CHECK(trident(plan + "--tp 8 --pp 1 --zero 1 --calibration " + cal)
            .out.find("# calibration: plan 1 is priced with 1 of the 1 collective fit(s)\n") !=
        std::string::npos);
  // TP 8 x PP 2: TP inside the server, PP's send/recv across: no all-gather over the network.
  CHECK(trident(plan + "--tp 8 --pp 2 --calibration " + cal)
            .out.find("# calibration: plan 1 runs none of the measured collectives on their "
                      "tiers") != std::string::npos);
}

TEST_CASE("end stages: pinned, lighter, refused with their rule", "[cli_plan]") {
  const std::string llama = "plan --model llama3-8b --gpus 64 --servers 8 --tp 1 --pp 8 ";
  // Pinned 1 | 5 x 6 | 1: the table shows the split, the JSON its ends, Megatron its flags.
  const Run pinned =
      trident(llama + "--first-stage-layers 1 --last-stage-layers 1 --top 1 --format json");
  REQUIRE(pinned.code == 0);
  CHECK(pinned.out.find("\"first_stage_layers\": 1,") != std::string::npos);
  CHECK(pinned.out.find("\"last_stage_layers\": 1,") != std::string::npos);
  const Run table = trident(llama + "--lighter-ends on --top 1 --explain");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("  1|5|1 ") != std::string::npos);
  CHECK(table.out.find("stages: 1 | 5 x6 | 1 decoder layers (first | middle | last)") !=
        std::string::npos);
  CHECK(table.out.find("; end stages set (--first-stage-layers 1 --last-stage-layers 1), the "
                       "default split 4 each\n") != std::string::npos);
  // Without interleaving Megatron's first/last counts write it; interleaved, a layout.
  const Run megatron = trident(llama + "--lighter-ends on --vp 1 --emit megatron");
  REQUIRE(megatron.code == 0);
  CHECK(megatron.out.find("--decoder-first-pipeline-num-layers 1 \\\n") != std::string::npos);
  CHECK(megatron.out.find("--decoder-last-pipeline-num-layers 1 \\\n") != std::string::npos);
  // Off: the default split only, no stages column.
  const Run off = trident(llama + "--lighter-ends off --top 3");
  REQUIRE(off.code == 0);
  CHECK(off.out.find("stages") == std::string::npos);
  // Refusals, one line each, exit 2.
  const auto refused = [](const std::string& args, const std::string& want) {
    const Run run = trident(args);
    INFO(args << "\n" << run.err);
    CHECK(run.code == 2);
    CHECK(run.err == "trident: error: " + want + "\n");
  };
  refused(llama + "--first-stage-layers 1",
          "--first-stage-layers 1: needs --last-stage-layers too (the middle stages share the "
          "rest)");
  refused("plan --model llama3-8b --gpus 64 --first-stage-layers 1 --last-stage-layers 1",
          "--first-stage-layers 1: end stages need a pinned --pp");
  refused(llama + "--first-stage-layers 1 --last-stage-layers 1 --lighter-ends on",
          "--lighter-ends on with --first-stage-layers: the ends are pinned already; drop one");
  // 32 - 2 - 1 = 29 over 6 middle stages does not divide: Megatron-Core runs it as a layout
  // (5 x5 and 4), torchtitan's counts cannot write it.
  const Run layout = trident(llama + "--first-stage-layers 2 --last-stage-layers 1 --vp 1 --top 1");
  REQUIRE(layout.code == 0);
  CHECK(layout.out.find("  2|5/4|1 ") != std::string::npos);
  const Run written =
      trident(llama + "--first-stage-layers 2 --last-stage-layers 1 --vp 1 --emit megatron");
  REQUIRE(written.code == 0);
  CHECK(written.out.find("--pipeline-model-parallel-layout \"Et*2|t*5|t*5|t*5|t*5|t*5|t*4|tL\"") !=
        std::string::npos);
  refused(
      "plan --model llama3-8b --gpus 32 --servers 4 --pp 8 --stack torchtitan "
      "--first-stage-layers 2 --last-stage-layers 1",
      "--first-stage-layers 2: the 29 layers the ends leave of the model's 32 must divide "
      "equally over the middle stages (stack torchtitan sets the ends' counts only, no "
      "per-stage layout)");
  refused(llama + "--first-stage-layers 20 --last-stage-layers 20",
          "--first-stage-layers 20: the ends take 20 + 20 of the model's 32 layers and leave the "
          "middle stages none");
  // VP divides the largest stage of the set ends (1 | 5 x6 | 1: 5).
  refused(llama + "--first-stage-layers 1 --last-stage-layers 1 --vp 4",
          "--vp 4: VP divides the largest stage's layers, 5 with these end stages; use --vp 1 or "
          "a divisor of 5");
  refused(llama + "--lighter-ends on --vp 4",
          "--vp 4: VP divides the largest stage's layers, 5 with these end stages; use --vp 1 or "
          "a divisor of 5");
  // Where lighter candidates differ in their largest stage, the advice names each: DeepSeek-V3's
  // 61 layers over 16 stages (1 | 5/4 x14 | 1 with unequal middles: 5; 4 | 4 x14 | 1: 4), so
  // --vp 3 fits neither, and --vp 4 (the second) and --vp 5 (the first) both plan.
  const std::string dsv3 =
      "plan --model deepseek-v3 --gpus 1024 --global-batch 4096 --seq-len 4096 --pp 16 "
      "--lighter-ends on --top 1 ";
  refused(dsv3 + "--vp 3",
          "--vp 3: VP divides the largest stage's layers, 5 or 4 with the lighter end stages; use "
          "--vp 1 or a divisor of 5 or of 4");
  CHECK(trident(dsv3 + "--vp 4").code == 0);
  CHECK(trident(dsv3 + "--vp 5").code == 0);
  // torchtitan's counts only shorten the ends: 10 | 6 x2 | 10 is not written (it would launch
  // 8 x4), nor 4 | 3 x8 | 4.
  refused(
      "plan --model llama3-8b --gpus 32 --servers 4 --pp 4 --stack torchtitan "
      "--first-stage-layers 10 --last-stage-layers 10",
      "--first-stage-layers 10: stack torchtitan's counts only shorten the first and the last "
      "(virtual) stage, and these ends are heavier than the middle stages or short of them by "
      "more than a chunk; use another --vp or other end stages");
  // Interleaved lighter ends torchtitan writes: 30 | 33 x2 | 30 at VP 3 (chunks of 11, each
  // end 3 short): layers_per_stage 11, 3 less at each end.
  const Run titan = trident(
      "plan --model llama3-405b --gpus 1024 --servers 128 --gpu b200 --seq-len 4096 --pp 4 "
      "--stack torchtitan --first-stage-layers 30 --last-stage-layers 30 --vp 3 --emit "
      "torchtitan");
  REQUIRE(titan.code == 0);
  CHECK(titan.out.find("pipeline_parallel_layers_per_stage = 11\n"
                       "pipeline_parallel_first_stage_less_layers = 3\n"
                       "pipeline_parallel_last_stage_less_layers = 3\n") != std::string::npos);
  refused(
      "plan --model llama3-8b --gpus 64 --servers 8 --pp 2 --first-stage-layers 17 "
      "--last-stage-layers 16",
      "--first-stage-layers 17: with --pp 2 the first and the last stage hold all 32 layers "
      "(--first-stage-layers + --last-stage-layers = 32)");
  refused(llama + "--first-stage-layers 1 --last-stage-layers 1 --stack deepspeed-megatron",
          "--first-stage-layers 1: stack deepspeed-megatron sets no end stage's layers (its "
          "partition_method balances its own way); pin the default split, drop "
          "--first-stage-layers and --last-stage-layers, or use --stack megatron-core or "
          "torchtitan");
  refused(llama + "--lighter-ends on --stack deepspeed-megatron",
          "--lighter-ends on: stack deepspeed-megatron sets no end stage's layers; drop "
          "--lighter-ends or use --stack megatron-core or torchtitan");
  // 32 over 16 under torchtitan: middles of 3 would leave the ends nothing, and 16 divides 32
  // (no shortfall to move onto the last stage).
  refused(
      "plan --model llama3-8b --gpus 64 --servers 8 --pp 16 --stack torchtitan "
      "--lighter-ends on",
      "--lighter-ends on: --pp 16 leaves no lighter ends for model llama3-8b's 32 layers "
      "(every middle stage one layer more must leave each end a layer, and the default "
      "split is not two or more layers short of ceil(L/PP) a stage to move onto the last); "
      "use --lighter-ends off or another --pp");
  // 126 over 16: ceil 8, 2 short, by default one off each end (7 | 8 x14 | 7); the lighter
  // splits take both off the last (8 | 8 x14 | 6) or, with Megatron-Core's layout, keep ends
  // of one layer (1 | 9 x12, 8 x2 | 1); the ranking takes 8 | 8 x14 | 6.
  CHECK(trident("plan --model llama3-405b --gpus 1024 --servers 128 --pp 16 --lighter-ends on "
                "--top 1")
            .out.find("  8|8|6 ") != std::string::npos);
  // GPT-3's 96 over 64 is 1 | 2 x32,
  // 1 x30 | 1 by default (ceil 2, 32 short: one off each end, 30 off middle stages), and its
  // middle stages of at most 3 take 94 as 2 x32, 1 x30 again: none lighter.
  refused("plan --model gpt3-175b --gpus 512 --servers 64 --pp 64 --lighter-ends on",
          "--lighter-ends on: --pp 64 leaves no lighter ends for model gpt3-175b's 96 layers "
          "(its default split gives each end stage one layer already); use --lighter-ends off "
          "or another --pp");
  refused(llama + "--lighter-ends maybe",
          "--lighter-ends: expected on|off, got 'maybe' (see --help)");
  // The default split pinned is accepted where the stack sets no ends.
  const Run standard = trident(llama +
                               "--first-stage-layers 4 --last-stage-layers 4 --stack "
                               "deepspeed-megatron --top 1");
  CHECK(standard.code == 0);
}
