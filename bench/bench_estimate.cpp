// bench_estimate: nanoseconds per estimate() for a GPT-3 175B split on 1,024 H100s (target:
// <= 2 us per call, pure arithmetic).
#include <benchmark/benchmark.h>

#include "costmodel/estimate.h"
#include "costmodel/kernels.h"
#include "costmodel/placement.h"
#include "topology/cluster_loader.h"

namespace {

using namespace trident;

Model gpt3() {
  Model model;
  model.name = "gpt3-175b";
  model.layers = 96;
  model.hidden = 12288;
  model.heads = 96;
  model.kv_heads = 96;
  model.ffn_hidden = 49152;
  model.vocab = 51200;
  model.seq_len = 2048;
  model.training.global_batch = 1536;
  return model;
}

void BM_Estimate(benchmark::State& state) {
  Cluster cluster = cluster_preset("dgx-h100");
  cluster.servers = 128;
  const Model model = gpt3();
  const ParallelConfig config{8, 8, 16, 1, 2, Recompute::selective, 1, true};
  const Placement placement = default_placement(cluster, config);
  // As search() does once for its GPUs: the pace of the slowest of the job's 1,024 (without it
  // every estimate() would price on a copy of the cluster resolved for them).
  cluster.gpu = gpu_for_job(cluster.gpu, config.gpus());
  for (auto _ : state) {
    benchmark::DoNotOptimize(estimate(cluster, model, config, placement));
  }
}
BENCHMARK(BM_Estimate);

}  // namespace

BENCHMARK_MAIN();
