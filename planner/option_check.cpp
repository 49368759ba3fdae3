#include "planner/option_check.h"

#include "planner/search.h"

namespace trident {

namespace {

std::optional<OptionProblem> not_positive(Knob knob, const std::optional<int>& pin) {
  if (pin && *pin < 1) return OptionProblem{knob, OptionIssue::not_positive, *pin, 0};
  return std::nullopt;
}

/// Limits and pins that are wrong whatever the stack and the model.
std::optional<OptionProblem> range_problem(const SearchOptions& o) {
  for (const auto& [knob, pin] :
       {std::pair{Knob::tp, o.tp}, std::pair{Knob::pp, o.pp}, std::pair{Knob::dp, o.dp},
        std::pair{Knob::micro_batch, o.micro_batch}, std::pair{Knob::vp, o.vp}}) {
    if (auto problem = not_positive(knob, pin)) return problem;
  }
  if (o.min_tp < 1) return OptionProblem{Knob::min_tp, OptionIssue::not_positive, o.min_tp, 0};
  if (o.max_tp < 0) return OptionProblem{Knob::max_tp, OptionIssue::not_positive, o.max_tp, 0};
  if (o.max_tp > 0 && o.min_tp > o.max_tp) {
    return OptionProblem{Knob::min_tp, OptionIssue::min_above_max, o.min_tp, o.max_tp};
  }
  if (o.zero && (*o.zero < 0 || *o.zero > 3)) {
    return OptionProblem{Knob::zero, OptionIssue::out_of_range, *o.zero, 0};
  }
  return std::nullopt;
}

/// Pins the stack cannot run.
std::optional<OptionProblem> stack_problem(const SearchOptions& o) {
  const Stack& stack = o.stack;
  if (o.zero && !stack.supports_zero(*o.zero, 1)) {
    return OptionProblem{Knob::zero, OptionIssue::stack_lacks, *o.zero, 0};
  }
  if (o.pp && *o.pp > 1 && !stack.pipelines()) {
    return OptionProblem{Knob::pp, OptionIssue::stack_lacks, *o.pp, 0};
  }
  if (o.zero && o.pp && *o.pp > 1 && !stack.supports_zero(*o.zero, *o.pp)) {
    return OptionProblem{Knob::zero, OptionIssue::stack_lacks_with_pp, *o.zero, *o.pp};
  }
  if (o.recompute && !stack.supports(*o.recompute)) {
    return OptionProblem{Knob::recompute, OptionIssue::stack_lacks,
                         static_cast<long long>(*o.recompute), 0};
  }
  if (o.sequence_parallel && *o.sequence_parallel && !stack.sequence_parallel) {
    return OptionProblem{Knob::sequence_parallel, OptionIssue::stack_lacks, 1, 0};
  }
  if (o.vp && *o.vp > 1 && !stack.interleaved_pipeline) {
    return OptionProblem{Knob::vp, OptionIssue::stack_lacks, *o.vp, 0};
  }
  return std::nullopt;
}

/// Pins the model cannot take, and what the model asks of the stack.
std::optional<OptionProblem> model_problem(const Model& model, const SearchOptions& o) {
  if (o.tp && (model.heads % *o.tp != 0 || model.kv_heads % *o.tp != 0)) {
    return OptionProblem{Knob::tp, OptionIssue::not_dividing_heads, *o.tp, 0};
  }
  if (o.pp && model.layers % *o.pp != 0 && !o.stack.uneven_stages) {
    return OptionProblem{Knob::pp, OptionIssue::not_dividing_layers, *o.pp, 0};
  }
  if (o.pp && *o.pp > model.layers) {
    return OptionProblem{Knob::pp, OptionIssue::more_than_layers, *o.pp, 0};
  }
  if (model.training.dtype == Dtype::fp8 && !o.stack.supports(model.training.fp8.recipe)) {
    return OptionProblem{Knob::fp8_recipe, OptionIssue::stack_lacks,
                         static_cast<long long>(model.training.fp8.recipe), 0};
  }
  if (model.training.global_batch < 1) {
    return OptionProblem{Knob::global_batch, OptionIssue::missing, 0, 0};
  }
  return std::nullopt;
}

}  // namespace

std::optional<OptionProblem> find_option_problem(const Model& model, const SearchOptions& options) {
  if (auto problem = range_problem(options)) return problem;
  if (auto problem = stack_problem(options)) return problem;
  return model_problem(model, options);
}

}  // namespace trident
