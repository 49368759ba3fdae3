// bench/accuracy: predicts every run of bench/data/published_runs.yaml through exactly what
// `trident plan` runs: the real loaders (model text, cluster preset, stack preset or file) and
// search() with the published knobs pinned and the unpublished ones free, best plan first.
// Compares the predicted step time with the measured one and reports per stack and per half
// (tuning / checking) the mean |error|, max |error| and mean signed error; then the ranking:
// for rows that answer one question (same stack, GPUs, model, batch, precision), how many pairs
// of splits are predicted in the measured order.
// Error = measured step / predicted step - 1: positive = trident is optimistic (too fast).
// Then the memory check (bench/data/published_memory.yaml): the published peak per GPU against
// the predicted one for the same pinned plan (error = predicted / published - 1), and every
// published run that ran but is predicted not to fit.
//   usage: accuracy [published_runs.yaml [published_memory.yaml]]
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "configs/presets.h"
#include "costmodel/flops.h"
#include "costmodel/model_loader.h"
#include "costmodel/stack.h"
#include "planner/option_check.h"
#include "planner/search.h"
#include "topology/cluster_loader.h"

namespace {

using namespace trident;

struct Row {
  std::string id, stack, family, half, precision;
  Cluster cluster;
  Model model;
  SearchOptions options;
  std::string measure;
  double measured = 0.0;
};

/// The whole file; `where` prefixes the error when it cannot be opened.
std::string read_text(const std::string& path, const std::string& where) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(where + ": cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The row's model as a model file would say it, through the real loader.
/// An FP8 row's `fp8` mapping (recipe, params, ...) goes to the loader as training.fp8.
Model model_of(const YAML::Node& node, const std::string& id, const std::string& precision,
               const YAML::Node& fp8, long long batch) {
  YAML::Node doc;
  if (node["preset"]) {
    const std::string name = node["preset"].as<std::string>();
    const auto text = preset_text(PresetKind::model, name);
    if (!text) throw std::runtime_error(id + ": unknown model preset " + name);
    doc = YAML::Load(std::string(*text));
    if (node["seq_len"]) doc["seq_len"] = node["seq_len"];  // as --seq-len over a preset
    // Any other key beside a preset would be ignored (a row's mtp_layers: 0 was, once): a row
    // that changes a preset writes the model out whole.
    for (const auto& key : node) {
      const auto name_of = key.first.as<std::string>();
      if (name_of != "preset" && name_of != "seq_len") {
        std::string message = id;
        message.append(": model key ").append(name_of).append(" beside a preset is not read");
        throw std::runtime_error(message);
      }
    }
  } else {
    doc = YAML::Clone(node);
    doc["name"] = id;
  }
  doc["training"]["dtype"] = precision == "fp8" ? "fp8" : precision == "fp16" ? "fp16" : "bf16";
  if (precision == "fp8" && fp8) doc["training"]["fp8"] = fp8;
  Model model = load_model(YAML::Dump(doc), id);
  model.training.global_batch = batch;
  return model;
}

Cluster cluster_of(const YAML::Node& row, int gpus) {
  Cluster cluster = cluster_preset(row["cluster"].as<std::string>());
  if (row["gpu"]) cluster = with_gpu(cluster, gpu_preset(row["gpu"].as<std::string>()));
  if (row["nics_per_server"]) cluster.network.nics_per_server = row["nics_per_server"].as<int>();
  if (row["nic_gbits"]) cluster.network.nic_gbits = row["nic_gbits"].as<double>();
  if (row["links_per_gpu"]) cluster.nvlink.links_per_gpu = row["links_per_gpu"].as<int>();
  // Part of one server (4 of a DGX's 8 GPUs), as `--gpus-per-server 4` would say it.
  if (row["gpus_per_server"]) cluster.gpus_per_server = row["gpus_per_server"].as<int>();
  cluster.servers = gpus / cluster.gpus_per_server;
  // As `trident plan --cluster NAME --gpus N` would: refuse what the CLI refuses.
  check_cluster(cluster, fmt::format("{} GPUs of {}", gpus, cluster.name));
  return in_job_segments(cluster);
}

/// The recompute column: the mode, "full:N" for partial recompute of N layers per chunk.
std::string recompute_cell(const ParallelConfig& c) {
  if (c.recompute == Recompute::full && c.recompute_layers > 0) {
    return fmt::format("full:{}", c.recompute_layers);
  }
  return to_string(c.recompute);
}

Recompute recompute_of(const std::string& name) {
  return name == "none"        ? Recompute::none
         : name == "selective" ? Recompute::selective
                               : Recompute::full;
}

SearchOptions options_of(const YAML::Node& pins, const Stack& stack) {
  SearchOptions o;
  o.stack = stack;
  o.keep = 1;
  if (pins["tp"]) o.tp = pins["tp"].as<int>();
  if (pins["pp"]) o.pp = pins["pp"].as<int>();
  if (pins["dp"]) o.dp = pins["dp"].as<int>();
  if (pins["micro_batch"]) o.micro_batch = pins["micro_batch"].as<int>();
  if (pins["vp"]) o.vp = pins["vp"].as<int>();
  if (pins["zero"]) o.zero = pins["zero"].as<int>();
  if (pins["cp"]) o.cp = pins["cp"].as<int>();
  if (pins["ep"]) o.ep = pins["ep"].as<int>();
  // Every public row that shards per unit published how: FULL_SHARD over all of DP (llm-foundry
  // sharding_strategy FULL_SHARD, torchtitan data_parallel_shard_degree -1, "FSDP N"), so a row
  // without dp_shard pins sharding over all of DP; HSDP rows say dp_shard.
  if (pins["dp_shard"]) {
    o.dp_shard = pins["dp_shard"].as<int>();
  } else if (o.dp && *o.dp >= 2 && o.zero && *o.zero >= 2) {
    o.dp_shard = *o.dp;  // (DP 1 has no DP-only shard group: FSDP shards over CP alone)
  }
  // The published runs split their layers as their framework does by default unless a row
  // pins the end stages (--first/last-stage-layers): as --lighter-ends off.
  if (pins["first_stage_layers"] || pins["last_stage_layers"]) {
    o.first_stage_layers = pins["first_stage_layers"].as<int>();
    o.last_stage_layers = pins["last_stage_layers"].as<int>();
  } else {
    o.lighter_ends = false;
  }
  if (pins["recompute"]) o.recompute = recompute_of(pins["recompute"].as<std::string>());
  if (pins["recompute_layers"]) o.recompute_layers = pins["recompute_layers"].as<int>();
  if (pins["sequence_parallel"])
    o.sequence_parallel = pins["sequence_parallel"].as<std::string>() == "on";
  // As --cp-comm would: only that context-parallel kind (the stack runs it: the data say so).
  if (pins["cp_comm"] && !o.stack.keep_only(cp_kind_of(pins["cp_comm"].as<std::string>()))) {
    throw std::runtime_error("cp_comm pin the stack does not run");
  }
  return o;
}

/// A row's stack and the preset it belongs to: a preset is its own; a stack file (a variant
/// that says only what its release ran differently) belongs to its `base:`, else to itself.
struct RowStack {
  Stack stack;
  std::string family;
};

RowStack stack_of(const std::string& name, const std::string& data_dir) {
  if (name.find('/') == std::string::npos) return {stack_preset(name), name};
  const std::string path = data_dir + "/" + name;
  // A `base:` naming a stack file is read relative to the file that names it, as the CLI reads
  // it. The family is the root of the chain load_stack walks: the preset the last base names,
  // else the last file (the row's own without a base).
  std::string family = name;
  const StackFileReader read_base = [&family](const std::string& base, const std::string& from,
                                              const std::string& where) {
    if (base.find('/') == std::string::npos && !base.ends_with(".yaml")) {
      family = base;
      return std::optional<StackText>{};
    }
    const std::string file = from.substr(0, from.find_last_of('/') + 1) + base;
    family = file;
    return std::optional<StackText>{StackText{read_text(file, where), file, ""}};
  };
  const Stack stack = load_stack(read_text(path, "stack " + name), path, read_base);
  return {stack, family};
}

std::vector<Row> load_rows(const std::string& path) {
  const std::string dir = path.substr(0, path.find_last_of('/'));
  std::vector<Row> rows;
  for (const auto& node : YAML::LoadFile(path)["runs"]) {
    Row row;
    row.id = node["id"].as<std::string>();
    row.stack = node["stack"].as<std::string>();
    const RowStack stack = stack_of(row.stack, dir);
    row.family = stack.family;
    row.half = node["half"].as<std::string>();
    row.precision = node["precision"].as<std::string>();
    const int gpus = node["gpus"].as<int>();
    row.cluster = cluster_of(node, gpus);
    row.model = model_of(node["model"], row.id, row.precision, node["fp8"],
                         node["global_batch"].as<long long>());
    row.options = options_of(node["pins"], stack.stack);
    const auto measured = *node["measured"].begin();
    row.measure = measured.first.as<std::string>();
    row.measured = measured.second.as<double>();
    rows.push_back(row);
  }
  return rows;
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

/// GPT-NeoX's own logged FLOPs per step (megatron/logging.py `get_flops`, unchanged from
/// EleutherAI/gpt-neox@d8a19580 (2021-05) to 29080c3a (2024-12)): per token 6 x the model's
/// parameters + 60·s·h·l, no recomputation factor; the figure GPT-NeoX-20B's paper reports.
double gpt_neox_logged_flops(const Model& model) {
  const double tokens = static_cast<double>(model.training.global_batch) * model.seq_len;
  const double attention = 60.0 * model.seq_len * model.hidden * model.layers;
  return tokens * (6.0 * count_parameters(model).total + attention);
}

/// The measured step time in seconds, whatever the source published.
double measured_step_s(const Row& row) {
  const double gpus = row.cluster.gpus();
  const Model& m = row.model;
  const double tokens = static_cast<double>(m.training.global_batch) * m.seq_len;
  if (row.measure == "step_time_s") return row.measured;
  if (row.measure == "tokens_per_s_per_gpu") return tokens / (row.measured * gpus);
  if (row.measure == "narayanan_tflops_per_gpu")
    return narayanan_flops(m) / (gpus * row.measured * 1e12);
  if (row.measure == "gpt_neox_tflops_per_gpu")
    return gpt_neox_logged_flops(m) / (gpus * row.measured * 1e12);
  const double model_flops =
      step_flops(m, static_cast<double>(m.training.global_batch), Recompute::none).model;
  if (row.measure == "model_tflops_per_gpu") return model_flops / (gpus * row.measured * 1e12);
  if (row.measure != "mfu")
    throw std::runtime_error(row.id + ": unknown measured key " + row.measure);
  return model_flops / (gpus * row.cluster.gpu.peak_tflops(m.training.dtype) * 1e12 * row.measured);
}

struct Stats {
  int n = 0;
  double sum_abs = 0.0, max_abs = 0.0, sum_signed = 0.0;
  void add(double e) {
    ++n;
    sum_abs += std::abs(e);
    max_abs = std::max(max_abs, std::abs(e));
    sum_signed += e;
  }
  [[nodiscard]] std::string text() const {
    if (n == 0) return "no rows";
    return fmt::format(
        "rows {:>2}  mean |error| {:>5.1f}%  max |error| {:>5.1f}%  mean signed {:>+6.1f}%", n,
        sum_abs / n, max_abs, sum_signed / n);
  }
};

/// A published peak-memory figure and the run it belongs to.
struct MemoryRow {
  std::string id, stack, conditions, measure;
  Cluster cluster;
  Model model;
  SearchOptions options;
  double published_gib = 0.0;
};

std::vector<MemoryRow> load_memory_rows(const std::string& path) {
  const std::string dir = path.substr(0, path.find_last_of('/'));
  std::vector<MemoryRow> rows;
  for (const auto& node : YAML::LoadFile(path)["memory"]) {
    MemoryRow row;
    row.id = node["id"].as<std::string>();
    row.stack = node["stack"].as<std::string>();
    row.cluster = cluster_of(node, node["gpus"].as<int>());
    if (node["gpu_memory_gib"]) row.cluster.gpu.memory_gib = node["gpu_memory_gib"].as<double>();
    row.model = model_of(node["model"], row.id, node["precision"].as<std::string>(), node["fp8"],
                         node["global_batch"].as<long long>());
    row.options = options_of(node["pins"], stack_of(row.stack, dir).stack);
    row.options.show_infeasible = true;
    if (node["conditions"]) row.conditions = node["conditions"].as<std::string>();
    const auto published = *node["published"].begin();
    row.measure = published.first.as<std::string>();
    row.published_gib = published.second.as<double>();
    rows.push_back(row);
  }
  return rows;
}

/// The pinned plan, fitting or not.
std::optional<PlanResult> pinned_plan(const Cluster& cluster, const Model& model,
                                      const SearchOptions& options) {
  const SearchResult result = search(cluster, model, options);
  if (!result.plans.empty()) return result.plans.front();
  if (!result.infeasible.empty()) return result.infeasible.front();
  return std::nullopt;
}

/// Prints predicted vs published peak per row; returns the rows that ran but do not fit.
int memory_check(const std::vector<MemoryRow>& rows) {
  constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
  fmt::print("\nPeak memory per GPU (GiB): published vs predicted for the pinned plan\n");
  fmt::print("{:<40} {:<12} {:>9} {:>9} {:>7} {:>9} {:>6}  {}\n", "run", "reads", "published",
             "predicted", "err%", "total", "fits", "not priced");
  Stats priced, unpriced;
  int not_fitting = 0;
  for (const MemoryRow& row : rows) {
    std::optional<PlanResult> plan;
    try {
      plan = pinned_plan(row.cluster, row.model, row.options);
    } catch (const OptionError& e) {
      fmt::print("{:<40} error: impossible pin (knob {}, issue {}, value {})\n", row.id,
                 static_cast<int>(e.problem().knob), static_cast<int>(e.problem().issue),
                 e.problem().value);
      ++not_fitting;
      continue;
    } catch (const std::exception& e) {
      fmt::print("{:<40} error: {}\n", row.id, e.what());
      ++not_fitting;
      continue;
    }
    if (!plan) {
      fmt::print("{:<40} no plan with these pins\n", row.id);
      ++not_fitting;
      continue;
    }
    const MemoryBreakdown& m = plan->estimate.memory;
    // reserved_gib reads the caching allocator; ran_on_gib says only that it ran.
    const bool reserved = row.measure == "reserved_gib";
    const double predicted = (reserved ? m.reserved_bytes : m.total_bytes) / kGib;
    const double error = reserved ? (predicted / row.published_gib - 1.0) * 100.0 : 0.0;
    if (reserved) (row.conditions.empty() ? priced : unpriced).add(error);
    if (!m.fits) ++not_fitting;
    const std::string error_text = reserved ? fmt::format("{:+.1f}", error) : std::string("-");
    fmt::print("{:<40} {:<12} {:>9.1f} {:>9.1f} {:>7} {:>9.1f} {:>6}  {}\n", row.id, row.measure,
               row.published_gib, predicted, error_text, m.total_bytes / kGib,
               m.tight  ? "tight"
               : m.fits ? "yes"
                        : "NO",
               row.conditions.empty() ? "-" : row.conditions);
  }
  fmt::print("memory, all priced          {}\n", priced.text());
  fmt::print("memory, with unpriced parts {}\n", unpriced.text());
  return not_fitting;
}

/// One planned row, kept for the ranking check.
struct Outcome {
  std::string id, question;
  double measured_s = 0.0, predicted_s = 0.0;
  double high_s = 0.0;  ///< the predicted step plus the stack's measured error
};

/// The question a row answers: one model, GPU count, batch, precision and stack. Rows that
/// share it are splits a user would have chosen between, so their order is the planner's product.
std::string question_of(const Row& row) {
  const Model& m = row.model;
  return fmt::format("{} | {} x {} | L{} h{} s{} B{} {}", row.stack, row.cluster.gpus(),
                     row.cluster.gpu.name, m.layers, m.hidden, m.seq_len, m.training.global_batch,
                     row.precision);
}

/// Per question with two or more rows: how many pairs of splits trident orders as measured
/// (the same split measured twice is not a pair), how many of those it calls apart (the slower
/// beyond the faster's error band: not tied, as `trident plan` marks ties) and orders right,
/// and whether the measured fastest is predicted fastest. Prints each pair ordered the other
/// way with both gaps.
void ranking_check(const std::vector<Outcome>& outcomes) {
  // One split measured twice: the same prediction.
  const auto same_split = [](const Outcome& x, const Outcome& y) {
    return std::abs(x.predicted_s - y.predicted_s) <= 1e-9 * x.predicted_s;
  };
  std::map<std::string, std::vector<const Outcome*>> by_question;
  for (const Outcome& o : outcomes) by_question[o.question].push_back(&o);
  fmt::print(
      "\nRanking: splits of one question (stack, GPUs, model, batch, precision) in the order "
      "measured\n");
  int pairs = 0, agree = 0, questions = 0, best_agree = 0, apart = 0, apart_agree = 0;
  for (const auto& [question, rows] : by_question) {
    if (rows.size() < 2) continue;
    int q_pairs = 0, q_agree = 0;
    std::vector<std::string> swapped;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j = i + 1; j < rows.size(); ++j) {
        const Outcome& a = *rows[i];
        const Outcome& b = *rows[j];
        if (same_split(a, b)) continue;
        ++q_pairs;
        const bool right = (a.measured_s < b.measured_s) == (a.predicted_s < b.predicted_s);
        const Outcome& fast = a.predicted_s < b.predicted_s ? a : b;
        const Outcome& slow = a.predicted_s < b.predicted_s ? b : a;
        if (slow.predicted_s > fast.high_s) {  // not tied, as tied_with_leader says
          ++apart;
          apart_agree += right ? 1 : 0;
        }
        if (right) {
          ++q_agree;
          continue;
        }
        swapped.push_back(fmt::format("    {} vs {}: measured {:+.1f}%, predicted {:+.1f}%", a.id,
                                      b.id, (a.measured_s / b.measured_s - 1.0) * 100.0,
                                      (a.predicted_s / b.predicted_s - 1.0) * 100.0));
      }
    }
    if (q_pairs == 0) continue;
    const auto by_measured = [](const Outcome* x, const Outcome* y) {
      return x->measured_s < y->measured_s;
    };
    const auto by_predicted = [](const Outcome* x, const Outcome* y) {
      return x->predicted_s < y->predicted_s;
    };
    const Outcome* fastest = *std::min_element(rows.begin(), rows.end(), by_measured);
    const Outcome* picked = *std::min_element(rows.begin(), rows.end(), by_predicted);
    const bool best = same_split(*picked, *fastest);
    ++questions;
    best_agree += best ? 1 : 0;
    pairs += q_pairs;
    agree += q_agree;
    fmt::print("  {}: {} rows, {} of {} pairs in the measured order, fastest {}\n", question,
               rows.size(), q_agree, q_pairs,
               best ? "predicted fastest" : fmt::format("predicted {}", picked->id));
    for (const std::string& line : swapped) fmt::print("{}\n", line);
  }
  fmt::print(
      "ranking: {} of {} pairs in the measured order ({} of the {} not tied within the "
      "faster's error band); the measured fastest is predicted fastest in {} of {} questions\n",
      agree, pairs, apart_agree, apart, best_agree, questions);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : std::string(TRIDENT_SOURCE_DIR) + "/bench/data/published_runs.yaml";
  const std::string memory_path =
      argc > 2 ? argv[2] : std::string(TRIDENT_SOURCE_DIR) + "/bench/data/published_memory.yaml";
  std::vector<Row> rows;
  std::vector<MemoryRow> memory_rows;
  std::string reading = path;
  try {
    rows = load_rows(path);
    reading = memory_path;
    memory_rows = load_memory_rows(memory_path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "accuracy: {}: {}\n", reading, e.what());
    return 2;
  }
  fmt::print(
      "{:<36} {:<20} {:<8} | {:>3} {:>3} {:>4} {:>3} {:>3} {:>9} {:>2} {:>2} {:>2} {:>2} | {:>9} "
      "{:>9} {:>7}\n",
      "run", "stack", "half", "tp", "pp", "dp", "mb", "vp", "recompute", "z", "sp", "cp", "ep",
      "measured", "predicted", "err%");
  Stats all;
  std::map<std::string, Stats> by_half, by_stack, by_family;
  std::vector<Outcome> outcomes;
  int failed = 0;
  int tight = 0;  // planned, but fit only below the mean fragmentation
  for (const Row& row : rows) {
    try {
      const SearchResult result = search(row.cluster, row.model, row.options);
      if (result.plans.empty()) {
        fmt::print("{:<36} {:<20} {:<8} | no configuration fits in memory\n", row.id, row.stack,
                   row.half);
        ++failed;
        continue;
      }
      const PlanResult& plan = result.plans.front();
      const ParallelConfig& c = plan.config;
      const double measured = measured_step_s(row);
      const double predicted = plan.estimate.time.step_s;
      const double error = (measured / predicted - 1.0) * 100.0;
      all.add(error);
      by_half[row.half].add(error);
      by_stack[row.stack].add(error);
      by_family[row.family].add(error);
      outcomes.push_back(
          {row.id, question_of(row), measured, predicted, plan.estimate.step_s_high});
      fmt::print(
          "{:<36} {:<20} {:<8} | {:>3} {:>3} {:>4} {:>3} {:>3} {:>9} {:>2} {:>2} {:>2} {:>2} | "
          "{:>8.2f}s {:>8.2f}s {:>+7.1f}{}\n",
          row.id, row.stack, row.half, c.tp, c.pp, c.dp, c.micro_batch, c.virtual_stages,
          recompute_cell(c), c.zero, c.sequence_parallel ? "on" : "-", c.cp, c.ep, measured,
          predicted, error, plan.estimate.memory.tight ? "  tight" : "");
      if (plan.estimate.memory.tight) ++tight;
    } catch (const std::exception& e) {
      fmt::print("{:<36} {:<20} {:<8} | error: {}\n", row.id, row.stack, row.half, e.what());
      ++failed;
    }
  }
  fmt::print("\nall        {}\n", all.text());
  for (const auto& [half, stats] : by_half) fmt::print("{:<10} {}\n", half, stats.text());
  for (const auto& [stack, stats] : by_stack) fmt::print("{:<22} {}\n", stack, stats.text());
  fmt::print("per preset, its stack files (base:) included\n");
  for (const auto& [family, stats] : by_family) fmt::print("{:<22} {}\n", family, stats.text());
  if (failed > 0) fmt::print("{} run(s) could not be planned\n", failed);
  if (tight > 0) {
    fmt::print("{} run(s) fit only if the allocator fragments less than its mean (tight)\n", tight);
  }
  ranking_check(outcomes);
  const int not_fitting = memory_check(memory_rows);
  fmt::print("published runs predicted not to fit: {} (step-time rows) + {} (memory rows)\n",
             failed, not_fitting);
  return failed + not_fitting > 0 ? 1 : 0;
}
