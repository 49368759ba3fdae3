// Checks on the planner's answer before it is reported (cli/plan_checks.h).
#include "cli/plan_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "topology/errors.h"
#include "topology/failure.h"

namespace trident::cli {

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
  const std::string why = what_if.options.empty() ? "" : ": " + what_if.options.front().detail;
  throw PlanError("--fail-link: no plan can run under the failures" + why);
}

void check_finite(const WhatIf& what_if) {
  check_plan(what_if.baseline, "the healthy plan");
  for (const auto& option : what_if.options) {
    if (option.plan) check_plan(*option.plan, "a plan under the failure");
  }
}

}  // namespace trident::cli
