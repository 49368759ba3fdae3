// trident plan with context and expert parallelism end to end: the CP and EP columns, the JSON
// keys (cp, ep, links.cp/ep, collectives.cp/ep), the MoE presets, pins and refusals.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace {

using cli_test::Run;

Run trident(const std::string& args) {
  Run run = cli_test::run_trident(args);
  REQUIRE(run.code != -1);
  return run;
}

}  // namespace

TEST_CASE("dense short-sequence plans keep the table without CP/EP columns", "[cli_cpmoe]") {
  const Run run = trident("plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 --top 3");
  REQUIRE(run.code == 0);
  CHECK(run.out.find(" CP  EP ") == std::string::npos);
  CHECK(run.out.find("link TP/PP/DP\n") != std::string::npos);
  const Run json = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 --top 1 --format json");
  REQUIRE(json.code == 0);
  const auto plan = nlohmann::json::parse(json.out).at("plans")[0];
  CHECK(plan.at("cp") == 1);
  CHECK(plan.at("ep") == 1);
  CHECK(plan.at("links").at("cp") == "none");
  CHECK(plan.at("collectives").at("ep") == "none");
}

TEST_CASE("MoE preset: a ranked EP x PP x DP table naming the all-to-all's link", "[cli_cpmoe]") {
  const Run run = trident("plan --gpus 2048 --servers 256 --model deepseek-v3 --top 3");
  REQUIRE(run.code == 0);
  CHECK(run.out.find(" CP  EP ") != std::string::npos);
  CHECK(run.out.find("link TP/PP/DP/CP/EP") != std::string::npos);
  CHECK(run.out.find("FLOPs and MFU count active parameters") != std::string::npos);
  // The search line says which ZeRO stages a MoE model is tried at.
  CHECK(run.out.find("ZeRO (0 to 2: MoE experts are not sharded per unit)") != std::string::npos);
  const Run json =
      trident("plan --gpus 2048 --servers 256 --model deepseek-v3 --top 1 --format json");
  REQUIRE(json.code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc.at("model").at("active_parameters").get<double>() == Approx(37.55e9).epsilon(0.01));
  const auto& plan = doc.at("plans")[0];
  CHECK(plan.at("ep").get<int>() > 1);
  CHECK(plan.at("collectives").at("ep") == "all-to-all");
  CHECK(plan.at("links").at("ep") != "none");
  CHECK(plan.at("comm").at("ep").at("bytes_per_call").get<double>() > 0.0);
  CHECK(plan.at("flops_basis") == "active_parameters");
  // The experts' gradients under ZeRO-1: fp32 reduce-scatter, then the 16-bit all-gather
  // (labelled "all-reduce" until 2026-12-05, a review's find).
  REQUIRE(plan.at("zero") == 1);
  const auto& expert_dp = plan.at("comm").at("expert_dp");
  CHECK(expert_dp.at("collective") == "reduce-scatter+all-gather");
  CHECK(expert_dp.at("bytes_per_call").get<double>() ==
        Approx(2.0 * expert_dp.at("gather_bytes_per_call").get<double>()));
}

TEST_CASE("pinned CP on a 128k-token Llama: the ring's link and collective", "[cli_cpmoe]") {
  const std::string base =
      "plan --gpus 512 --servers 64 --model llama3-70b --seq-len 131072 --global-batch 32 ";
  const Run json = trident(base + "--cp 8 --tp 8 --top 1 --format json");
  REQUIRE(json.code == 0);
  const auto plan = nlohmann::json::parse(json.out).at("plans")[0];
  CHECK(plan.at("cp") == 8);
  CHECK(plan.at("links").at("cp") == "network");  // TP 8 fills the server: CP crosses
  CHECK(plan.at("collectives").at("cp") == "send-recv");
  CHECK(plan.at("cp_comm_type") == "p2p");
  // Ring chunk: 1 x 131072 / 8 tokens x 2 x 1024 (K, V: 8 KV heads x 128) / tp 8 x 2 bytes.
  CHECK(plan.at("comm").at("cp").at("bytes_per_call").get<double>() ==
        16384.0 * 2048.0 / 8.0 * 2.0);
  // DP 1 at CP 2: the gradients still reduce over the 2 CP ranks, so DP's collective is named
  // (it read "none" beside a 2-rank comm.dp, which validate refused as an unknown collective).
  const Run dp1 = trident(
      "plan --model llama3-8b --gpus 8 --servers 1 --cp 2 --dp 1 --zero 1 "
      "--top 1 --format json");
  REQUIRE(dp1.code == 0);
  const auto cp2 = nlohmann::json::parse(dp1.out).at("plans")[0];
  CHECK(cp2.at("comm").at("dp").at("ranks") == 2);
  CHECK(cp2.at("collectives").at("dp") == "reduce-scatter+all-gather");
  CHECK(cp2.at("comm").at("dp").at("collective") == "reduce-scatter+all-gather");
  const Run searched = trident(base + "--top 3");
  REQUIRE(searched.code == 0);
  CHECK(searched.out.find("context parallel searched") != std::string::npos);
  CHECK(searched.out.find(" CP  EP ") != std::string::npos);
}

TEST_CASE("--cp-comm pins the context-parallel kind; one the stack lacks is refused",
          "[cli_cpmoe]") {
  const std::string base =
      "plan --gpus 512 --servers 64 --model llama3-70b --seq-len 131072 --global-batch 32 "
      "--cp 8 --tp 8 --top 1 --format json ";
  const Run ring = trident(base + "--cp-comm p2p");
  REQUIRE(ring.code == 0);
  CHECK(nlohmann::json::parse(ring.out).at("plans")[0].at("cp_comm_type") == "p2p");
  // Ulysses splits the heads: 8 KV heads over TP 8 leave one per rank, nothing for CP 8.
  const Run heads = trident(base + "--cp-comm a2a");
  CHECK(heads.code == 2);
  CHECK(heads.err.find("cp divides the heads and kv_heads per TP rank (all-to-all CP)") !=
        std::string::npos);
  // TP 2 x CP 4: 64 query heads -> 32 -> 8, 8 KV heads -> 4 -> 1 per rank; one causal call
  // over the whole 131072 tokens.
  const Run ulysses = trident(
      "plan --gpus 512 --servers 64 --model llama3-70b --seq-len 131072 --global-batch 32 "
      "--cp 4 --tp 2 --top 1 --format json --cp-comm a2a");
  REQUIRE(ulysses.code == 0);
  const auto plan = nlohmann::json::parse(ulysses.out).at("plans")[0];
  CHECK(plan.at("cp_comm_type") == "a2a");
  CHECK(plan.at("collectives").at("cp") == "all-to-all");
  const Run lacking = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 "
      "--stack " +
      std::string(TRIDENT_SOURCE_DIR) + "/bench/data/stacks/nemo-2403.yaml --cp 2 --cp-comm a2a");
  CHECK(lacking.code == 2);
  CHECK(lacking.err ==
        "trident: error: --cp-comm a2a: stack nemo-2403 does not run all-to-all (Ulysses) "
        "context parallelism\n");
  const Run word = trident("plan --gpus 8 --model llama3-8b --cp-comm ring");
  CHECK(word.code == 2);
  // Where no plan can have CP > 1 the pin changed nothing (exit 0): refused, naming the way.
  const Run short_seq = trident("plan --gpus 8 --model llama3-8b --cp-comm a2a");
  CHECK(short_seq.code == 2);
  CHECK(short_seq.err ==
        "trident: error: --cp-comm a2a: context parallelism is searched from 16384 tokens and "
        "model llama3-8b has 8192; give --cp N or --min-cp N as well, or drop --cp-comm\n");
  CHECK(trident("plan --gpus 8 --model llama3-8b --cp-comm p2p --cp 1").code == 2);
  CHECK(trident("plan --gpus 8 --model llama3-8b --cp-comm p2p --min-cp 2 --top 1").code == 0);
  // Pins or limits that leave no room for CP: the same (TP 8 takes all 8 GPUs; --max-cp 1).
  const Run full = trident("plan --gpus 8 --model llama3-8b --seq-len 32768 --tp 8 --cp-comm a2a");
  CHECK(full.code == 2);
  CHECK(full.err ==
        "trident: error: --cp-comm a2a: no split of the 8 GPUs has context parallelism under the "
        "pins and limits (--tp, --pp, --dp, --max-cp, ...); loosen them or drop --cp-comm\n");
  CHECK(trident("plan --gpus 64 --model llama3-8b --seq-len 32768 --max-cp 1 --cp-comm a2a").code ==
        2);
  // Lower limits nothing can meet, each by its flag (they gave the generic no-split line).
  CHECK(trident("plan --model mixtral-8x7b --min-ep 16").err ==
        "trident: error: --min-ep 16: more than model mixtral-8x7b's 8 experts\n");
  // Between 1 and the experts, but no EP size the search tries (powers of two dividing them)
  // from there up (8 experts: --max-ep 7 leaves out 8).
  CHECK(trident("plan --model mixtral-8x7b --min-ep 5 --max-ep 7").err ==
        "trident: error: --min-ep 5: no expert parallel size from 5 up (a power of two, as the "
        "search tries) divides the model's 8 experts\n");
  CHECK(trident("plan --model mixtral-8x7b --min-ep 5 --top 1").code == 0);  // EP 8
  CHECK(trident("plan --model mixtral-8x7b --stack fsdp --min-ep 2").err ==
        "trident: error: --min-ep 2: stack fsdp has no expert parallelism; drop --min-ep or use "
        "--stack megatron-core\n");
  CHECK(trident("plan --gpus 4 --servers 1 --model llama3-8b --min-tp 8").err ==
        "trident: error: --min-tp 8: more than the cluster's 4 GPUs\n");
}

TEST_CASE("pins that leave no split only under --cp-comm name --cp-comm", "[cli_cpmoe]") {
  // Ulysses splits the heads over CP: CP 16 does not divide Llama 3 8B's 8 KV heads, TP 4 x
  // CP 4 leaves 2 a TP rank for 4 CP ranks. The ring runs both, so --cp-comm is the pin.
  const std::string llama =
      "plan --model llama3-8b --gpus 64 --servers 8 --seq-len 65536 --global-batch 64 ";
  for (const std::string pins : {"--cp 16", "--tp 4 --cp 4"}) {
    REQUIRE(trident(llama + pins).code == 0);
    const Run a2a = trident(llama + pins + " --cp-comm a2a");
    CHECK(a2a.code == 2);
    CHECK(a2a.err.rfind("trident: error: --cp-comm a2a: no configuration of 64 GPUs takes it "
                        "with the other pins (without it there are; the rules: ",
                        0) == 0);
    CHECK(a2a.err.find("cp divides the heads and kv_heads per TP rank (all-to-all CP)") !=
          std::string::npos);
  }
}

TEST_CASE("the CP search line names the ways the stack runs CP", "[cli_cpmoe]") {
  const std::string base =
      "plan --gpus 64 --servers 8 --model llama3-8b --seq-len 65536 --global-batch 16 --top 1";
  CHECK(trident(base).out.find("seq 65536 (ring p2p / all-to-all, the faster; --cp") !=
        std::string::npos);
  // torchtitan runs PyTorch's all-gather rotater only (it said "ring p2p / all-to-all").
  CHECK(trident(base + " --stack torchtitan").out.find("seq 65536 (all-gather; --cp") !=
        std::string::npos);
}

TEST_CASE("CP and EP pins refused where they cannot run", "[cli_cpmoe]") {
  const Run stack = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 "
      "--stack megatron-2021 --cp 2");
  CHECK(stack.code == 2);
  CHECK(stack.err.find("--cp 2: stack megatron-2021 has no context parallelism") !=
        std::string::npos);
  const Run dense =
      trident("plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 --ep 2");
  CHECK(dense.code == 2);
  CHECK(dense.err.find("--ep 2: model llama3-8b has no experts") != std::string::npos);
  const Run experts = trident("plan --gpus 64 --servers 8 --model mixtral-8x7b --ep 16");
  CHECK(experts.code == 2);
  CHECK(experts.err.find("must divide the model's 8 experts") != std::string::npos);
  const Run seq = trident("plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 --cp 3");
  CHECK(seq.code == 2);
  CHECK(seq.err.find("2 x cp must divide the sequence length 8192") != std::string::npos);
  const Run sp =
      trident("plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --sequence-parallel off");
  CHECK(sp.code == 2);
  CHECK(sp.err.find("MoE layers with tensor parallelism run sequence parallel") !=
        std::string::npos);
  const Run limits = trident("plan --gpus 64 --servers 8 --model llama3-8b --min-cp 4 --max-cp 2");
  CHECK(limits.code == 2);
  CHECK(limits.err.find("--min-cp 4 is above --max-cp 2") != std::string::npos);
}

TEST_CASE("--explain names the CP and EP links and times", "[cli_cpmoe]") {
  const Run ep = trident("plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --ep 8 --explain");
  REQUIRE(ep.code == 0);
  CHECK(ep.out.find("EP 8 (expert TP 1)") != std::string::npos);
  CHECK(ep.out.find("EP all-to-all (exposed)") != std::string::npos);
  CHECK(ep.out.find("  EP: all-to-all of ") != std::string::npos);
  CHECK(ep.out.find("  expert DP: ") != std::string::npos);
  CHECK(ep.out.find("FLOPs and MFU count active parameters") != std::string::npos);
  CHECK(ep.out.find("forward and backward, exposed; the group sits inside one NVLink domain") !=
        std::string::npos);
  // A stack that runs the shared experts beside the all-to-alls (NeMo's DeepSeek-V3 config):
  // DeepSeek-V3's one shared expert hides part of the exchange, and --explain says so.
  const cli_test::TempDir dir;
  const std::string stack = (dir.path / "shared.yaml").string();
  std::ofstream(stack) << "name: shared\nbase: megatron-core\nmoe_shared_expert_overlap: true\n";
  const std::string dsv3 =
      "plan --gpus 1024 --servers 128 --model deepseek-v3 --global-batch 8192 --tp 2 --pp 16 "
      "--dp 32 --micro-batch 1 --ep 64";
  const auto exposed_s = [&](const std::string& extra) {
    const Run run = trident(dsv3 + " --top 1 --format json" + extra);
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.out).at("plans")[0].at("time").at("ep_comm_s").get<double>();
  };
  CHECK(exposed_s(" --stack " + stack) < exposed_s(""));
  const Run shared = trident(dsv3 + " --explain --stack " + stack);
  REQUIRE(shared.code == 0);
  CHECK(shared.out.find("exposed but what the shared experts on their side stream hide; this "
                        "group is wider than the NVLink domain") != std::string::npos);
  // DeepSeek-V3 is untied: the end stages' all-reduce is of the input embedding and the copy
  // its MTP layer embeds with, not of a tied output layer.
  CHECK(shared.out.find("  shared embedding: all-reduce of ") != std::string::npos);
  CHECK(shared.out.find("tied embedding") == std::string::npos);
  const Run cp = trident(
      "plan --gpus 256 --servers 32 --model llama3-8b --seq-len 65536 --global-batch 64 --cp 8 "
      "--tp 1 --explain");
  REQUIRE(cp.code == 0);
  CHECK(cp.out.find("CP 8 (") != std::string::npos);
  CHECK(cp.out.find("CP communication (exposed)") != std::string::npos);
  CHECK(cp.out.find("  CP: ") != std::string::npos);
}

TEST_CASE("a stack with the combined 1F1B: EP time hidden where it runs, and said", "[cli_cpmoe]") {
  const cli_test::TempDir dir;
  const std::string stack = (dir.path / "combined.yaml").string();
  std::ofstream(stack) << "name: combined\nbase: megatron-core\nep_overlap: true\n"
                          "ep_overlap_delay_wgrad: true\n";
  const std::string mixtral =
      "plan --gpus 64 --servers 8 --model mixtral-8x7b --global-batch 256 --tp 2 --ep 8 "
      "--micro-batch 1 --top 1 --format json";
  const auto ep_of = [&](const std::string& extra) {
    const Run run = trident(mixtral + extra);
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.out).at("plans")[0].at("comm").at("ep");
  };
  const auto plain = ep_of(" --dp 32");
  const auto combined = ep_of(" --dp 32 --stack " + stack);
  CHECK(plain.at("overlap") == "none");
  CHECK(combined.at("overlap") == "combined_1f1b");
  CHECK(combined.at("total_s").get<double>() == Approx(plain.at("total_s").get<double>()));
  CHECK(combined.at("exposed_s").get<double>() < plain.at("exposed_s").get<double>());
  // PP 2 without interleaving: Megatron-Core asserts virtual stages, so the all-to-alls stay
  // exposed there.
  CHECK(ep_of(" --stack " + stack + " --pp 2 --vp 1 --dp 16").at("overlap") == "none");
  const Run off = trident(mixtral.substr(0, mixtral.find(" --top")) +
                          " --pp 2 --vp 1 --dp 16 --explain --stack " + stack);
  REQUIRE(off.code == 0);
  CHECK(off.out.find("exposed (the stack's combined 1F1B does not run here: it needs "
                     "interleaving (--vp) with PP)") != std::string::npos);
  const Run explain = trident(
      "plan --gpus 64 --servers 8 --model mixtral-8x7b --global-batch 256 --tp 2 --ep 8 --dp 32 "
      "--micro-batch 1 --explain --stack " +
      stack);
  REQUIRE(explain.code == 0);
  CHECK(explain.out.find("beside another micro-batch's compute (combined 1F1B") !=
        std::string::npos);
  // The assumptions line says what the stack overlaps.
  CHECK(explain.out.find(", EP all-to-alls beside another micro-batch (combined 1F1B, delayed "
                         "weight gradients)") != std::string::npos);
  // Megatron-Core refuses the pair: one line naming the file, the line and the key.
  const std::string both = (dir.path / "both.yaml").string();
  std::ofstream(both) << "name: both\nbase: megatron-core\nep_overlap: true\n"
                         "moe_shared_expert_overlap: true\n";
  const Run refused = trident("plan --gpus 64 --model mixtral-8x7b --stack " + both);
  CHECK(refused.code == 2);
  CHECK(refused.err.find("both.yaml:3: ep_overlap") != std::string::npos);
}

TEST_CASE("--fail-link reports the EP and CP groups a broken link hits", "[cli_cpmoe]") {
  const Run run = trident(
      "plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --ep 8 --top 1 "
      "--fail-link nvlink:0/1 --format json");
  REQUIRE(run.code == 0);
  bool ep_hit = false;
  const auto doc = nlohmann::json::parse(run.out);
  for (const auto& hit : doc.at("impact").at("groups_hit")) {
    ep_hit = ep_hit || hit.at("dimension") == "ep";
  }
  CHECK(ep_hit);
  const Run cp = trident(
      "plan --gpus 256 --servers 32 --model llama3-8b --seq-len 65536 --global-batch 64 --cp 8 "
      "--tp 1 --top 1 --fail-link nvlink:0/1");
  REQUIRE(cp.code == 0);
  CHECK(cp.out.find("  cp [") != std::string::npos);
}

TEST_CASE("--emit writes CP as each target runs it, refuses it elsewhere and MoE models",
          "[cli_cpmoe]") {
  const std::string base =
      "plan --gpus 256 --servers 32 --model llama3-8b --seq-len 65536 --global-batch 256 --cp 8 "
      "--tp 1 --emit ";
  const Run megatron = trident(base + "megatron");
  REQUIRE(megatron.code == 0);
  CHECK(megatron.out.find("--context-parallel-size 8 \\\n  --cp-comm-type p2p") !=
        std::string::npos);
  const Run nemo = trident(base + "nemo");
  REQUIRE(nemo.code == 0);
  CHECK(nemo.out.find("recipe.trainer.strategy.context_parallel_size = 8") != std::string::npos);
  CHECK(nemo.out.find("recipe.model.config.cp_comm_type = \"p2p\"") != std::string::npos);
  // A ring-priced plan is not what torchtitan runs (PyTorch's all-gather rotater): folded.
  const Run cp = trident(base + "torchtitan");
  CHECK(cp.code == 2);
  CHECK(cp.err.find("--emit writes context parallelism (CP 8) as the plan priced it") !=
        std::string::npos);
  CHECK(cp.err.find("nearest plan it can run: --tp 1 --pp 1 --dp 256") != std::string::npos);
  // Priced under the torchtitan stack, the all-gather rotater is written.
  const Run titan = trident(base + "torchtitan --stack torchtitan --zero 3");
  REQUIRE(titan.code == 0);
  CHECK(titan.out.find("context_parallel_degree = 8\ncontext_parallel_rotate_method = "
                       "\"allgather\"") != std::string::npos);
  // MoE: Megatron-LM gets the expert flags as trident priced them; the other targets refuse.
  const Run moe =
      trident("plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --ep 8 --emit megatron");
  REQUIRE(moe.code == 0);
  CHECK(
      moe.out.find("--num-experts 8 \\\n  --moe-router-topk 2 \\\n  --moe-ffn-hidden-size 14336") !=
      std::string::npos);
  CHECK(moe.out.find("--moe-token-dispatcher-type alltoall \\\n  --expert-model-parallel-size 8 "
                     "\\\n  --expert-tensor-parallel-size 1") != std::string::npos);
  CHECK(moe.out.find("--overlap-moe-expert-parallel-comm") == std::string::npos);
  // NeMo: its Mixtral 8x7B recipe with EP and the dispatcher as priced; NeMo Hydra refuses.
  const Run moe_nemo =
      trident("plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --ep 8 --emit nemo");
  REQUIRE(moe_nemo.code == 0);
  for (const char* expected :
       {"recipe = llm.mixtral_8x7b.pretrain_recipe(name=\"trident\", num_nodes=8, "
        "num_gpus_per_node=8)\n",
        "recipe.trainer.strategy.expert_model_parallel_size = 8\n"
        "recipe.trainer.strategy.expert_tensor_parallel_size = 1\n"
        "recipe.model.config.moe_token_dispatcher_type = \"alltoall\"\n"
        "recipe.model.config.moe_grouped_gemm = True\n",
        "c.__fn_or_cls__.__name__ not in (\"DeepEPCallback\", \"MegatronCommOverlapCallback\")"}) {
    INFO(expected);
    CHECK(moe_nemo.out.find(expected) != std::string::npos);
  }
  const Run moe_hydra =
      trident("plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --ep 8 --emit nemo-hydra");
  CHECK(moe_hydra.code == 2);
  CHECK(moe_hydra.err.find("has experts (--emit megatron writes MoE, --emit nemo its recipes' "
                           "MoE models)") != std::string::npos);
  // DeepSeek-V3: MLA's ranks, the dense first three layers, the sigmoid router, MTP, and the
  // combined 1F1B of a stack that runs it (with 32 device connections where TP asks for 1).
  cli_test::TempDir dir;
  const std::string combined = (dir.path / "combined.yaml").string();
  std::ofstream(combined) << "name: combined\nbase: megatron-core\nep_overlap: true\n"
                             "ep_overlap_delay_wgrad: true\n";
  const Run dsv3 = trident(
      "plan --gpus 1024 --servers 128 --model deepseek-v3 --global-batch 8192 --tp 2 --pp 16 "
      "--vp 1 --dp 32 --micro-batch 1 --ep 64 --recompute selective --lighter-ends off --emit "
      "megatron --stack " +
      combined);
  REQUIRE(dsv3.code == 0);
  for (const char* expected :
       {"--multi-latent-attention", "--qk-layernorm", "--q-lora-rank 1536", "--kv-lora-rank 512",
        "--qk-head-dim 128", "--qk-pos-emb-head-dim 64", "--v-head-dim 128", "--mtp-num-layers 1",
        "--moe-shared-expert-intermediate-size 2048", "--moe-layer-freq '([0]*3+[1]*58)'",
        "--moe-router-score-function sigmoid", "--decoder-first-pipeline-num-layers 3",
        "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun"}) {
    INFO(expected);
    CHECK(dsv3.out.find(expected) != std::string::npos);
  }
  // PP 16 without interleaving: Megatron-Core asserts virtual stages for the combined 1F1B,
  // so it is not written (nor priced). PP 1: written, with 32 device connections where TP asks
  // for 1.
  CHECK(dsv3.out.find("--overlap-moe-expert-parallel-comm") == std::string::npos);
  // NeMo's DeepSeek-V3 recipe: MTP (use_mtp), the uneven stages, MLA's selective recompute
  // where the stack's is theirs (megatron-core's is core attention), the shared expert.
  const std::string dsv3_pins =
      "plan --gpus 1024 --servers 128 --model deepseek-v3 --global-batch 8192 --tp 2 --pp 16 "
      "--vp 1 --dp 32 --micro-batch 1 --ep 64 --recompute selective --lighter-ends off --emit nemo";
  const Run dsv3_nemo = trident(dsv3_pins);
  REQUIRE(dsv3_nemo.code == 0);
  const char* with_mtp =
      "llm.deepseek_v3.pretrain_recipe(name=\"trident\", num_nodes=128, num_gpus_per_node=8, "
      "use_mtp=True)";
  for (const char* expected :
       {with_mtp, "recipe.trainer.strategy.num_layers_in_first_pipeline_stage = 3\n",
        "recipe.model.config.recompute_modules = [\"core_attn\"]\n",
        "recipe.trainer.strategy.expert_model_parallel_size = 64\n",
        "recipe.model.config.moe_shared_expert_overlap = False\n"}) {
    INFO(expected);
    CHECK(dsv3_nemo.out.find(expected) != std::string::npos);
  }
  // A plan priced with the combined 1F1B (PP 1) cannot run there: NeMo v2.4.0 has no switch.
  const Run combined_nemo = trident(
      "plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --pp 1 --ep 8 --recompute "
      "selective --emit nemo --stack " +
      combined);
  CHECK(combined_nemo.code == 2);
  CHECK(combined_nemo.err.find("has no combined 1F1B") != std::string::npos);
  CHECK(combined_nemo.err.find("--emit megatron, or plan with a stack without ep_overlap") !=
        std::string::npos);
  // A plan priced with HybridEP's exchange: both MoE targets write the alltoall dispatcher, so
  // neither launch would run what was priced.
  const std::string hybrid = (dir.path / "hybrid.yaml").string();
  std::ofstream(hybrid) << "name: hybrid\nbase: megatron-core\nmoe_dispatcher: hybridep\n";
  for (const char* target : {"nemo", "megatron"}) {
    const Run refused =
        trident(std::string("plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --pp 1 --ep 8 "
                            "--recompute selective --emit ") +
                target + " --stack " + hybrid);
    INFO(target);
    CHECK(refused.code == 2);
    CHECK(refused.err.find("priced with HybridEP's exchange (stack moe_dispatcher: hybridep)") !=
          std::string::npos);
    CHECK(refused.err.find("plan with a stack without moe_dispatcher: hybridep") !=
          std::string::npos);
  }
  // --explain says what HybridEP moves, not the all-to-all's bytes: Qwen3-235B at EP 32 over 4
  // DGX H100 servers, 4096 tokens of hidden 4096 a GPU = 33,554,432 bytes; 3 remote domains
  // reached with p = 1 - C(96,8)/C(128,8) = 0.907253: 91.3 MB over the network; 4 domains x 7
  // other ranks x (1 - C(124,8)/C(128,8) = 0.229980): 216.1 MB over NVLink.
  const Run explained = trident(
      "plan --gpus 256 --model qwen3-235b-a22b --ep 32 --tp 1 --pp 8 --micro-batch 1 --top 1 "
      "--explain --stack " +
      hybrid);
  REQUIRE(explained.code == 0);
  CHECK(explained.out.find("HybridEP (the stack's dispatcher) moves 91.3 MB over the network and "
                           "216.1 MB over NVLink per GPU and call") != std::string::npos);
  const Run mixtral = trident(
      "plan --gpus 64 --servers 8 --model mixtral-8x7b --tp 2 --pp 1 --ep 8 --recompute selective "
      "--emit megatron "
      "--stack " +
      combined);
  REQUIRE(mixtral.code == 0);
  for (const char* expected : {"--overlap-moe-expert-parallel-comm \\\n  --delay-wgrad-compute",
                               "CUDA_DEVICE_MAX_CONNECTIONS=32 torchrun"}) {
    INFO(expected);
    CHECK(mixtral.out.find(expected) != std::string::npos);
  }
  // A dense model with multi-latent attention: Megatron-LM writes it, NeMo refuses.
  std::ofstream(dir.path / "latent.yaml")
      << "name: latent\nlayers: 8\nhidden: 1024\nheads: 8\nffn_hidden: 4096\nvocab: 32000\n"
         "seq_len: 2048\nattention: mla\nmla:\n  q_lora_rank: 256\n  kv_lora_rank: 128\n"
         "  qk_nope_head_dim: 64\n  qk_rope_head_dim: 32\n  v_head_dim: 64\n"
         "training:\n  global_batch: 64\n";
  const Run mla =
      trident("plan --gpus 8 --model " + (dir.path / "latent.yaml").string() + " --emit megatron");
  REQUIRE(mla.code == 0);
  CHECK(mla.out.find("--multi-latent-attention \\\n  --qk-layernorm \\\n  --q-lora-rank 256 \\\n  "
                     "--kv-lora-rank 128") != std::string::npos);
  // Without q_lora_rank the queries are projected directly (DeepSeek-V2-Lite): the model line
  // says so, and Megatron's --q-lora-rank is left at its default (None: no compression).
  std::ofstream(dir.path / "direct.yaml")
      << "name: direct\nlayers: 8\nhidden: 1024\nheads: 8\nffn_hidden: 4096\nvocab: 32000\n"
         "seq_len: 2048\nattention: mla\nmla:\n  kv_lora_rank: 128\n"
         "  qk_nope_head_dim: 64\n  qk_rope_head_dim: 32\n  v_head_dim: 64\n"
         "training:\n  global_batch: 64\n";
  const Run direct =
      trident("plan --gpus 8 --model " + (dir.path / "direct.yaml").string() + " --emit megatron");
  REQUIRE(direct.code == 0);
  CHECK(direct.out.find("--multi-latent-attention") != std::string::npos);
  CHECK(direct.out.find("--q-lora-rank") == std::string::npos);
  const Run direct_plan =
      trident("plan --gpus 8 --top 1 --model " + (dir.path / "direct.yaml").string());
  REQUIRE(direct_plan.code == 0);
  CHECK(direct_plan.out.find(", multi-head latent attention (queries not compressed)\n") !=
        std::string::npos);
  const Run latent_plan =
      trident("plan --gpus 8 --top 1 --model " + (dir.path / "latent.yaml").string());
  REQUIRE(latent_plan.code == 0);
  CHECK(latent_plan.out.find(", multi-head latent attention\n") != std::string::npos);
  // NeMo: no recipe has its shape (DeepSeek-V3's is the one with MLA); Hydra has no MLA.
  const Run mla_nemo =
      trident("plan --gpus 8 --model " + (dir.path / "latent.yaml").string() + " --emit nemo");
  CHECK(mla_nemo.code == 2);
  CHECK(mla_nemo.err.find("none has latent's shape") != std::string::npos);
  CHECK(mla_nemo.err.find("deepseek-v3, or --emit megatron") != std::string::npos);
  const Run mla_hydra = trident("plan --gpus 8 --model " + (dir.path / "latent.yaml").string() +
                                " --emit nemo-hydra");
  CHECK(mla_hydra.code == 2);
  CHECK(mla_hydra.err.find("is written for multi-head attention only: model latent has "
                           "multi-latent attention (--emit megatron writes MLA, --emit nemo its "
                           "DeepSeek-V3 recipe)") != std::string::npos);
}

TEST_CASE("the plan's GEMMs: a CP rank's chunk, MoE grouped expert GEMMs", "[cli_cpmoe]") {
  const Run moe = trident(
      "plan --gpus 64 --servers 8 --model mixtral-8x7b --ep 8 --tp 1 --micro-batch 1 --top 1 "
      "--format json");
  REQUIRE(moe.code == 0);
  const auto plan = nlohmann::json::parse(moe.out).at("plans")[0];
  bool expert_up = false;
  for (const auto& gemm : plan.at("gemms")) {
    CHECK(gemm.at("name") != "ffn_up");  // no dense FFN in Mixtral: only experts
    if (gemm.at("name") == "expert_up") {
      expert_up = true;
      // 4096 tokens x top-2 x ep 8 / 8 experts = 8192 rows; gate + up 2 x 14336; h 4096.
      CHECK(gemm.at("m") == 8192);
      CHECK(gemm.at("n") == 28672);
      CHECK(gemm.at("k") == 4096);
    }
  }
  CHECK(expert_up);
  const Run cp = trident(
      "plan --gpus 512 --servers 64 --model llama3-70b --seq-len 131072 --global-batch 32 "
      "--cp 8 --tp 8 --micro-batch 1 --top 1 --format json");
  REQUIRE(cp.code == 0);
  // Each CP rank's GEMMs see 131072 / 8 = 16384 tokens of a sequence.
  CHECK(nlohmann::json::parse(cp.out).at("plans")[0].at("gemms")[0].at("m") == 16384);
}

TEST_CASE("CSV gains cp,ep,link_cp,link_ep only when a row uses them", "[cli_cpmoe]") {
  const Run moe =
      trident("plan --gpus 64 --servers 8 --model mixtral-8x7b --ep 8 --top 1 --format csv");
  REQUIRE(moe.code == 0);
  CHECK(moe.out.find(
            "rank_order,reason,cp,ep,link_cp,link_ep,memory_tight,recompute_layers,attention,"
            "first_stage_layers,last_stage_layers\n") != std::string::npos);
  CHECK(moe.out.find(",1,8,none,nvlink,false,0,cudnn,16,16\n") !=
        std::string::npos);  // EP 8 inside the server
  const Run dense = trident(
      "plan --gpus 64 --servers 8 --model llama3-8b --global-batch 64 --top 1 --format csv");
  REQUIRE(dense.code == 0);
  CHECK(dense.out.find("rank_order,reason,memory_tight,recompute_layers,attention,"
                       "first_stage_layers,last_stage_layers\n") != std::string::npos);
}

TEST_CASE(
    "DeepSeek-V3 over 20 stages: a layout with its MTP layer for Megatron-LM, refused by "
    "NeMo v2.4.0",
    "[cli_cpmoe]") {
  // 61 layers over 20 stages: ceil 4, 19 short: 3 off each end, 13 middle stages one short:
  // 1 | 4 x 5, 3 x 13 | 1 (1 + 20 + 39 + 1 = 61), the MTP layer after the last one.
  const std::string plan =
      "plan --gpus 640 --servers 80 --model deepseek-v3 --pp 20 --vp 1 --emit ";
  const Run mlm = trident(plan + "megatron");
  REQUIRE(mlm.code == 0);
  CHECK(mlm.out.find("  --pipeline-model-parallel-layout \"Et|t*4|t*4|t*4|t*4|t*4|t*3|t*3|t*3|"
                     "t*3|t*3|t*3|t*3|t*3|t*3|t*3|t*3|t*3|t*3|tmL\" \\\n") != std::string::npos);
  // NeMo v2.4.0's Megatron-Core (core_r0.13.0) raises on an MTP layer in a layout.
  const Run nemo = trident(plan + "nemo");
  CHECK(nemo.code == 2);
  CHECK(nemo.err.find("NeMo v2.4.0's Megatron-Core (core_r0.13.0) takes no MTP layer in one") !=
        std::string::npos);
}

TEST_CASE("DeepSeek-V3 interleaved over uneven stages: NeMo's refusal names the MTP layer",
          "[cli_cpmoe]") {
  // 61 layers over PP 16 at VP 4: 3 | 4 x14 | 2, interleaved only as a layout, which NeMo
  // v2.4.0's Megatron-Core refuses with an MTP layer (the line said only that the split is
  // written without interleaving, as if an uneven split never interleaved: a review's find).
  const Run nemo =
      trident("plan --gpus 256 --servers 32 --model deepseek-v3 --pp 16 --vp 4 --ep 8 --emit nemo");
  CHECK(nemo.code == 2);
  CHECK(nemo.err.find("; interleaved it needs a pipeline layout, which this release's "
                      "Megatron-Core refuses with MTP layers (\"MTP layer is not supported for "
                      "flexible pipeline layout\"; --emit megatron writes it), so it runs without "
                      "interleaving only; nearest plan it can run: ") != std::string::npos);
}
