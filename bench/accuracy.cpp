// bench/accuracy: predicts every run of bench/data/published_runs.yaml and compares with the
// published throughput in each source's FLOP convention. Pins tp/pp/dp as published and
// searches what the source did not publish (micro-batch, virtual stages, recompute where
// unknown), keeping the fastest configuration that fits in memory.
//   usage: accuracy [published_runs.yaml]
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/estimate.h"
#include "costmodel/placement.h"
#include "topology/cluster_loader.h"

namespace {

using namespace trident;

struct Run {
  std::string source;
  double params_b = 0.0;
  int heads = 0, hidden = 0, layers = 0, tp = 1, pp = 1, dp = 1, gpus = 0;
  long long batch = 0;
  double tflops_per_gpu = 0.0;
};

/// What each source used and how it counts FLOPs (bench/data/published_runs.yaml, sources).
struct Source {
  std::string cluster;  ///< preset
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = true;
  EstimateOptions options;
  int zero = 0;
  bool sequence_parallel = false;
  std::vector<Recompute> recompute;  ///< searched when not published
};

Source source_of(const std::string& name) {
  Source source;
  if (name == "narayanan-2021") {
    // Selene, 2021 Megatron-LM: no flash attention (2022) nor sequence parallelism (2022);
    // gradients all-reduced after backward (DDP "local"), p2p not overlapped; full recompute.
    source.cluster = "dgx-a100";
    source.vocab = 51200;
    source.seq_len = 2048;
    source.tied_embeddings = true;
    source.options.fused_attention = false;
    source.options.overlap_dp_comm = false;
    source.recompute = {Recompute::full};
    return source;
  }
  // Megatron-Core r0.8 on DGX H100: TE flash attention, distributed optimizer with
  // --overlap-grad-reduce --overlap-param-gather, --tp-comm-overlap, PP overlap.
  source.cluster = "dgx-h100";
  source.vocab = 131072;
  source.seq_len = 4096;
  source.tied_embeddings = false;
  source.options.overlap_tp_comm = true;
  source.options.overlap_pp_comm = true;
  source.zero = 1;
  source.sequence_parallel = true;
  source.recompute = {Recompute::none, Recompute::selective, Recompute::full};
  return source;
}

Model model_of(const Run& run, const Source& source) {
  Model model;
  model.name = fmt::format("{}-{}b", run.source, run.params_b);
  model.layers = run.layers;
  model.hidden = run.hidden;
  model.heads = run.heads;
  model.kv_heads = run.heads;
  model.ffn_hidden = 4 * run.hidden;  // FFN 4h (neither source publishes it)
  model.vocab = source.vocab;
  model.seq_len = source.seq_len;
  model.tied_embeddings = source.tied_embeddings;
  model.training.global_batch = run.batch;
  return model;
}

/// Narayanan et al. 2021 eq. 3: hardware FLOPs with full recomputation, per step.
double narayanan_flops(const Model& model) {
  const double b = static_cast<double>(model.training.global_batch);
  const double s = model.seq_len;
  const double l = model.layers;
  const double h = model.hidden;
  const double v = model.vocab;
  return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
}

struct Prediction {
  ParallelConfig config;
  Estimate estimate;
};

/// The fastest configuration that fits, over the unpublished knobs.
std::optional<Prediction> best(const Run& run, const Source& source, const Cluster& cluster,
                               const Model& model) {
  std::optional<Prediction> found;
  const long long per_replica = run.batch / run.dp;
  for (int b = 1; b <= per_replica; b *= 2) {
    if (per_replica % b != 0) continue;
    for (int v = 1; v <= 8; ++v) {
      if (v > 1 && (run.pp == 1 || (run.layers / run.pp) % v != 0 ||
                    (per_replica / b) % run.pp != 0)) {
        continue;
      }
      for (const Recompute recompute : source.recompute) {
        const ParallelConfig config{run.tp, run.pp, run.dp, b, v, recompute, source.zero,
                                    source.sequence_parallel && run.tp > 1};
        const Estimate e = estimate(cluster, model, config, default_placement(cluster, config),
                                    nullptr, source.options);
        if (!e.memory.fits) continue;
        if (!found || e.time.step_s < found->estimate.time.step_s) found = Prediction{config, e};
      }
    }
  }
  return found;
}

std::vector<Run> load_runs(const std::string& path) {
  const YAML::Node root = YAML::LoadFile(path);
  std::vector<Run> runs;
  for (const auto& node : root["runs"]) {
    Run run;
    run.source = node["source"].as<std::string>();
    run.params_b = node["params_b"].as<double>();
    run.heads = node["heads"].as<int>();
    run.hidden = node["hidden"].as<int>();
    run.layers = node["layers"].as<int>();
    run.tp = node["tp"].as<int>();
    run.pp = node["pp"].as<int>();
    run.dp = node["dp"].as<int>();
    run.gpus = node["gpus"].as<int>();
    run.batch = node["batch"].as<long long>();
    run.tflops_per_gpu = node["tflops_per_gpu"].as<double>();
    runs.push_back(run);
  }
  return runs;
}

/// Predicted TFLOP/s per GPU in the source's convention.
double predicted_tflops(const Run& run, const Model& model, const Estimate& e) {
  if (run.source == "narayanan-2021") {
    return narayanan_flops(model) / (run.gpus * e.time.step_s) / 1e12;
  }
  return e.model_tflops_per_gpu;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : std::string(TRIDENT_SOURCE_DIR) + "/bench/data/published_runs.yaml";
  const std::vector<Run> runs = load_runs(path);
  fmt::print("{:<20} {:>7} {:>3} {:>3} {:>3} {:>5} | {:>2} {:>2} {:>9} | {:>9} {:>9} {:>7} | "
             "{:>6} {:>6} {:>6} {:>6} {:>5}\n",
             "source", "params", "tp", "pp", "dp", "gpus", "b", "v", "recompute", "published",
             "predicted", "err%", "step_s", "tp_s", "dp_s", "bubble", "GiB");
  double sum_abs = 0.0;
  double max_abs = 0.0;
  for (const Run& run : runs) {
    const Source source = source_of(run.source);
    Cluster cluster = cluster_preset(source.cluster);
    cluster.servers = run.gpus / cluster.gpus_per_server;
    const Model model = model_of(run, source);
    const auto prediction = best(run, source, cluster, model);
    if (!prediction) {
      fmt::print("{:<20} {:>7} no configuration fits\n", run.source, run.params_b);
      return 1;
    }
    const Estimate& e = prediction->estimate;
    const double predicted = predicted_tflops(run, model, e);
    const double error = (predicted - run.tflops_per_gpu) / run.tflops_per_gpu * 100.0;
    sum_abs += std::abs(error);
    max_abs = std::max(max_abs, std::abs(error));
    const ParallelConfig& c = prediction->config;
    fmt::print("{:<20} {:>6}B {:>3} {:>3} {:>3} {:>5} | {:>2} {:>2} {:>9} | {:>9.1f} {:>9.1f} "
               "{:>+7.1f} | {:>6.2f} {:>6.2f} {:>6.2f} {:>6.2f} {:>5.1f}\n",
               run.source, run.params_b, run.tp, run.pp, run.dp, run.gpus, c.micro_batch,
               c.virtual_stages, to_string(c.recompute), run.tflops_per_gpu, predicted, error,
               e.time.step_s, e.time.tp_comm_s, e.time.dp_comm_s, e.time.bubble_s,
               e.memory.total_bytes / (1024.0 * 1024.0 * 1024.0));
  }
  fmt::print("runs {}  mean |error| {:.1f}%  max |error| {:.1f}%\n", runs.size(),
             sum_abs / static_cast<double>(runs.size()), max_abs);
  return 0;
}
