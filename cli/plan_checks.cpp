// Checks on the planner's answer before it is reported (cli/plan_checks.h).
#include "cli/plan_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "cli/whatif_text.h"
#include "topology/errors.h"

namespace trident::cli {

namespace {

/// The FP8 recipes a stack runs: "current, blockwise".
std::string fp8_recipes_text(const Stack& stack) {
  std::string out;
  for (const Fp8Recipe r : stack.fp8_recipes_run()) {
    out += std::string(out.empty() ? "" : ", ") + to_string(r);
  }
  return out;
}

}  // namespace

namespace {

/// Where the model's dtype comes from: the file's line, the preset, or the default.
std::string dtype_where(const Model& model) {
  if (!model.training.dtype_from.empty()) return model.training.dtype_from;
  return "model " + model.name + " (training.dtype bf16 by default)";
}

/// The dtypes both the GPU (a peak) and the stack run, in the order a user would pick them.
std::vector<Dtype> dtypes_run(const Gpu& gpu, const Stack& stack) {
  std::vector<Dtype> out;
  for (const Dtype d : kDtypes) {
    if (gpu.peak_tflops(d) > 0.0 && stack.runs_dtype(d)) out.push_back(d);
  }
  return out;
}

}  // namespace

void check_dtype_flag(const std::string& given, const Model& model, const Gpu& gpu,
                      const Stack& stack) {
  const Dtype dtype = model.training.dtype;
  const bool gpu_runs = gpu.peak_tflops(dtype) > 0.0;
  if (!gpu_runs || !stack.runs_dtype(dtype)) {
    if (given.empty()) {
      // What to give instead: the first dtype both the GPU and the stack run (bf16 first).
      const std::vector<Dtype> both = dtypes_run(gpu, stack);
      const std::string lacks =
          !gpu_runs ? fmt::format("{} has no {} peak", gpu.name, to_string(dtype))
                    : fmt::format("stack {} does not train in {}", stack.name, to_string(dtype));
      throw InputError(fmt::format(
          "{}: {}; {}", dtype_where(model), lacks,
          both.empty() ? std::string("the GPU and the stack share no dtype: another --stack")
                       : fmt::format("give --dtype {} (or set training.dtype in the model file)",
                                     to_string(both.front()))));
    }
    std::string runs;
    for (const Dtype d : kDtypes) {
      const bool ok = !gpu_runs ? gpu.peak_tflops(d) > 0.0 : stack.runs_dtype(d);
      if (ok) runs += std::string(runs.empty() ? "" : ", ") + to_string(d);
    }
    throw InputError(!gpu_runs
                         ? fmt::format("--dtype {}: {} has no {} peak (it runs {})", given,
                                       gpu.name, given, runs)
                         : fmt::format("--dtype {}: stack {} does not train in it (it runs {})",
                                       given, stack.name, runs));
  }
  if (!given.empty() && dtype == Dtype::fp8 && !stack.supports(model.training.fp8.recipe)) {
    throw InputError(fmt::format(
        "--dtype fp8: stack {} {}", stack.name,
        stack.fp8_recipes == 0
            ? std::string("has no FP8 training")
            : fmt::format("does not run the FP8 recipe {} (the model "
                          "file's, or the default); an FP8 model file "
                          "sets training.fp8.recipe to one it runs ({})",
                          to_string(model.training.fp8.recipe), fp8_recipes_text(stack))));
  }
}

void check_pinned_within_cluster(const Cluster& cluster, const SearchOptions& options) {
  const long long gpus = cluster.gpus();
  const long long product = pinned_product(options);
  if (product <= gpus) return;
  std::string named;
  for (const auto& [flag, pin] : {std::pair{"--tp", options.tp}, std::pair{"--pp", options.pp},
                                  std::pair{"--dp", options.dp}, std::pair{"--cp", options.cp}}) {
    if (pin) named += fmt::format("{}{} {}", named.empty() ? "" : " x ", flag, *pin);
  }
  const std::string total =
      product == kPinnedGpusOverflow ? std::string("more than 2^63") : std::to_string(product);
  throw InputError(fmt::format("{} = {} GPUs; the cluster has {}", named, total, gpus));
}

void check_pinned_gpus(const Cluster& cluster, const SearchOptions& options) {
  const long long gpus = cluster.gpus();
  // A lower limit beyond the cluster leaves no split (the generic no-configuration line).
  for (const auto& [flag, least] :
       {std::pair{"--min-tp", options.min_tp}, std::pair{"--min-cp", options.min_cp},
        std::pair{"--min-ep", options.min_ep}}) {
    if (least > gpus) {
      throw InputError(fmt::format("{} {}: more than the cluster's {} GPUs", flag, least, gpus));
    }
  }
  // After check_pinned_within_cluster the product is at most the GPUs: only all four pinned
  // can fall short (a free CP may make up the rest).
  const std::optional<long long> product = pinned_gpus(options);
  if (!product || !options.cp || *product == gpus) return;
  throw InputError(
      fmt::format("--tp {} x --pp {} x --dp {} x --cp {} = {} GPUs; the cluster has {}",
                  *options.tp, *options.pp, *options.dp, *options.cp, *product, gpus));
}

void check_gpus_left(const Cluster& cluster, const std::vector<std::string>& specs) {
  if (specs.empty()) return;
  const std::size_t dead = dead_gpu_ids(cluster).size();
  if (dead >= static_cast<std::size_t>(cluster.gpus())) {
    throw PlanError(
        fmt::format("--fail-link: all {} GPUs of the cluster have failed; nothing is "
                    "left to run on",
                    cluster.gpus()));
  }
}

namespace {

void check_plan(const PlanResult& plan, const std::string& label) {
  const Estimate& e = plan.estimate;
  const std::pair<const char*, double> values[] = {
      {"step_s", e.time.step_s},
      {"forward_s", e.time.forward_s},
      {"backward_s", e.time.backward_s},
      {"recompute_s", e.time.recompute_s},
      {"tp_comm_s", e.time.tp_comm_s},
      {"pp_comm_s", e.time.pp_comm_s},
      {"dp_comm_s", e.time.dp_comm_s},
      {"bubble_s", e.time.bubble_s},
      {"optimizer_s", e.time.optimizer_s},
      {"tokens_per_s", e.tokens_per_s},
      {"mfu", e.mfu},
      {"model_tflops_per_gpu", e.model_tflops_per_gpu},
      {"hardware_tflops_per_gpu", e.hardware_tflops_per_gpu},
      {"memory total_bytes", e.memory.total_bytes},
      {"bubble_fraction", e.bubble_fraction},
  };
  for (const auto& [name, value] : values) {
    if (!std::isfinite(value)) {
      throw PlanError(
          fmt::format("{} (tp {}, pp {}, dp {}): {} is not a finite number ({}); an "
                      "input rate or size is too extreme to price",
                      label, plan.config.tp, plan.config.pp, plan.config.dp, name, value));
    }
  }
}

}  // namespace

void check_finite(const SearchResult& result) {
  for (std::size_t i = 0; i < result.plans.size(); ++i) {
    check_plan(result.plans[i], fmt::format("plan {}", i + 1));
  }
  for (const auto& plan : result.infeasible) check_plan(plan, "a plan that does not fit");
}

void check_something_runs(const WhatIf& what_if) {
  for (const auto& option : what_if.options) {
    if (option.available) return;
  }
  // Each option's reason: the first alone hid why cordoning failed (pins that fix the GPU
  // count leave no server count to re-plan on).
  std::string why;
  for (const auto& option : what_if.options) {
    why += (why.empty() ? ": " : "; ") + std::string(to_string(option.kind)) + ": " +
           option_text(option, what_if);
  }
  throw PlanError("--fail-link: no plan can run under the failures" + why);
}

void check_finite(const WhatIf& what_if) {
  check_plan(what_if.baseline, "the healthy plan");
  for (const auto& option : what_if.options) {
    if (option.plan) check_plan(*option.plan, "a plan under the failure");
  }
}

}  // namespace trident::cli
