// Planner speed: a search with every knob free, on one core.
//   GPT-3 175B on 4,096 DGX H100 GPUs (512 servers), global batch 1536 (the preset's).
//   Llama 3 405B on 131,072 DGX H100 GPUs (16,384 servers) and on 129,600 GB200 NVL72 GPUs
//   (1,800 racks of 72). The preset's 2,048 sequences cannot be split over 8,192+ data
//   parallel replicas (TP <= 8, PP | 126 layers), so these two use one sequence per GPU at
//   full data parallelism: global batch = GPU count, which every DP degree divides.
//   Context parallel free: Llama 3 405B at 131,072 tokens on 131,072 H100s, global batch 128
//   sequences (16M tokens, the Llama 3 paper's long-context stage, §3.4.2). MoE: DeepSeek-V3
//   (its preset: batch 15,360 of 4,096 tokens) on 16,384 H100s, EP free.
//   A failure: Llama 3 8B on 1,048,576 H100s (batch = GPUs) with GPU 0 dead, every option
//   (what_if): the cordon-server option sets servers aside until a split exists, 511 of them.
//   A failure on GB200 NVL72, whose domains span servers: DeepSeek-V3 at 32,768 tokens.
// Counters: configurations searched, cost-model evaluations per second, placements.
#include <benchmark/benchmark.h>

#include <optional>

#include "configs/presets.h"
#include "costmodel/model_loader.h"
#include "costmodel/stack.h"
#include "planner/search.h"
#include "planner/whatif.h"
#include "topology/cluster_loader.h"
#include "topology/failure.h"

namespace {

using trident::Cluster;
using trident::Model;

Cluster sized(const std::string& preset, int servers) {
  Cluster cluster = trident::cluster_preset(preset);
  cluster.servers = servers;
  return cluster;
}

Model with_batch(const std::string& preset, long long global_batch) {
  Model model = trident::model_preset(preset);
  if (global_batch > 0) model.training.global_batch = global_batch;
  return model;
}

void run_search(benchmark::State& state, const Cluster& cluster, const Model& model,
                const std::string& stack = "megatron-core") {
  trident::SearchOptions options;  // every knob free
  options.stack = trident::stack_preset(stack);
  long long evaluations = 0;
  long long configurations = 0;
  long long placements = 0;
  for (auto _ : state) {
    const auto result = trident::search(cluster, model, options);
    benchmark::DoNotOptimize(result.plans.data());
    evaluations += result.evaluations;
    configurations = result.configurations_searched;
    placements = result.placements;
  }
  state.counters["configs"] = static_cast<double>(configurations);
  state.counters["placements"] = static_cast<double>(placements);
  state.counters["evals/s"] =
      benchmark::Counter(static_cast<double>(evaluations), benchmark::Counter::kIsRate);
}

void BM_plan_gpt3_175b_4096_h100(benchmark::State& state) {
  run_search(state, sized("dgx-h100", 512), with_batch("gpt3-175b", 0));
}

void BM_plan_llama3_405b_131072_h100(benchmark::State& state) {
  run_search(state, sized("dgx-h100", 16384), with_batch("llama3-405b", 131072));
}

void BM_plan_llama3_405b_131072_h100_fp8(benchmark::State& state) {
  // FP8 with delayed scaling: every placement also prices the amax reduction group.
  Model model = with_batch("llama3-405b", 131072);
  model.training.dtype = trident::Dtype::fp8;
  model.training.fp8.recipe = trident::Fp8Recipe::delayed;
  run_search(state, sized("dgx-h100", 16384), model);
}

void BM_plan_llama3_405b_129600_gb200(benchmark::State& state) {
  // 1,800 NVL72 racks x 18 trays of 4 GPUs
  run_search(state, sized("gb200-nvl72", 1800 * 18), with_batch("llama3-405b", 129600));
}

void BM_plan_llama3_405b_128k_cp_131072_h100(benchmark::State& state) {
  Model model = with_batch("llama3-405b", 128);
  model.seq_len = 131072;
  run_search(state, sized("dgx-h100", 16384), model);
}

void BM_plan_deepseek_v3_16384_h100(benchmark::State& state) {
  run_search(state, sized("dgx-h100", 2048), with_batch("deepseek-v3", 0));
}

/// DeepSeek-V3 at 32,768 tokens on 1,024 H100s, CP and EP free: 785,368 configurations, 91%
/// of which do not fit. 2.19 s (the CLI, one core) when each was priced whole; 0.68 s once
/// the search decides those on their memory alone (may_fit, 2026-12-05); 1.55 s as the model's
/// terms grew, 0.82 s once no micro-batch above one at which nothing fitted is priced
/// (run_micro_batches, 2026-12-07).
void BM_plan_deepseek_v3_32k_tokens_1024_h100(benchmark::State& state) {
  Model model = with_batch("deepseek-v3", 0);
  model.seq_len = 32768;
  run_search(state, sized("dgx-h100", 128), model);
}

/// Times what_if() under megatron-core.
void time_what_if(benchmark::State& state, const Cluster& cluster, const Model& model,
                  const std::vector<trident::Failure>& failures, std::optional<int> tp) {
  trident::SearchOptions options;
  options.stack = trident::stack_preset("megatron-core");
  options.tp = tp;
  for (auto _ : state) {
    const auto w = trident::what_if(cluster, model, failures, options, nullptr);
    benchmark::DoNotOptimize(w.options.data());
  }
}

/// A what-if of one dead GPU on 2^20 GPUs: 1.6 s on 131,072 GPUs and over a minute on 2^20
/// before the search listed the live GPUs once and cordon-server skipped server counts
/// without a split (2026-12-03); 0.06 s and 0.36 s after (the CLI, one core). Since
/// cordon-server searches server counts down to half (below) 0.5 s: 3.765 s a step on the
/// most servers with a split became 1.485 s on 114,688 servers.
void BM_what_if_gpu_down_llama3_8b_1048576_h100(benchmark::State& state) {
  time_what_if(state, sized("dgx-h100", 131072), with_batch("llama3-8b", 1048576),
               {trident::parse_failure("gpu:0/0")}, std::nullopt);
}

/// Many failures on 131,072 H100s (16,384 servers), Llama 3 70B: 800 dead servers took 5.3 s
/// (the dead GPUs were listed again for every group a failure reached); 100 GPUs with every
/// NVLink down under TP 2 took 7.4 s, then 31.8 s once every group a failure reaches was
/// priced on the degraded cluster (re-place tried every regrouping of every bad server, where
/// on an NVSwitch none can help). 0.14 s and 0.05 s after (2026-12-03, the CLI, one core).
void run_what_if(benchmark::State& state, const std::vector<trident::Failure>& failures,
                 std::optional<int> tp) {
  time_what_if(state, sized("dgx-h100", 16384), with_batch("llama3-70b", 0), failures, tp);
}

void BM_what_if_800_dead_servers_llama3_70b_131072_h100(benchmark::State& state) {
  std::vector<trident::Failure> failures;
  for (int server = 0; server < 2400; server += 3) {
    failures.push_back(trident::parse_failure("server:" + std::to_string(server)));
  }
  run_what_if(state, failures, std::nullopt);
}

void BM_what_if_100_gpus_nvlink_all_tp2_llama3_70b_131072_h100(benchmark::State& state) {
  std::vector<trident::Failure> failures;
  for (int server = 0; server < 10000; server += 100) {
    failures.push_back(trident::parse_failure("nvlink:" + std::to_string(server) + "/0:all"));
  }
  run_what_if(state, failures, 2);
}

/// One dead server of 16,384, Llama 3 405B (batch 2048): cordon-server searches the server
/// counts with a split below the first that runs (16 at most, down to half the servers); on
/// the cluster with the servers set aside each search walked every group around the gaps
/// (2.5 s for 64 counts), on the same number of healthy servers one period per group: 28 ms
/// here (2026-12-03, one core).
void BM_what_if_server_down_llama3_405b_131072_h100(benchmark::State& state) {
  time_what_if(state, sized("dgx-h100", 16384), with_batch("llama3-405b", 0),
               {trident::parse_failure("server:0")}, std::nullopt);
}

/// A dead GPU on 36,864 GB200 NVL72 GPUs (512 racks), DeepSeek-V3 at 32,768 tokens, global
/// batch 2,048, CP and EP free. The 72-GPU domains span 18 servers, so a server count
/// cordon-server tries is priced as it is (a rack short of a tray) and every dimension of
/// every placement walked each group around the gap: 15.6 s (the CLI, one core; 30 s on
/// 73,728 GPUs) until the search's Placer walked each (size, stride) of a dimension once:
/// 2.0 s (2.2 s on 73,728; 2026-12-05).
void BM_what_if_gpu_down_deepseek_v3_32k_tokens_36864_gb200(benchmark::State& state) {
  Model model = with_batch("deepseek-v3", 2048);
  model.seq_len = 32768;
  time_what_if(state, sized("gb200-nvl72", 9216), model, {trident::parse_failure("gpu:10/1")},
               std::nullopt);
}

}  // namespace

BENCHMARK(BM_what_if_gpu_down_llama3_8b_1048576_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_what_if_server_down_llama3_405b_131072_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_what_if_800_dead_servers_llama3_70b_131072_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_what_if_100_gpus_nvlink_all_tp2_llama3_70b_131072_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_what_if_gpu_down_deepseek_v3_32k_tokens_36864_gb200)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plan_llama3_405b_128k_cp_131072_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plan_deepseek_v3_16384_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plan_deepseek_v3_32k_tokens_1024_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plan_gpt3_175b_4096_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plan_llama3_405b_131072_h100)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plan_llama3_405b_131072_h100_fp8)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plan_llama3_405b_129600_gb200)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  // Llama 3 405B on 131,072 H100s under every built-in stack (target: < 0.2 s each).
  for (const auto& stack : trident::preset_names(trident::PresetKind::stack)) {
    benchmark::RegisterBenchmark(("BM_plan_llama3_405b_131072_h100/" + stack).c_str(),
                                 [stack](benchmark::State& state) {
                                   run_search(state, sized("dgx-h100", 16384),
                                              with_batch("llama3-405b", 131072), stack);
                                 })
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
