#pragma once
/// Why a framework release cannot run a plan, in words: the --emit refusal's reason (citing
/// where in the release's source the rule comes from) and what to change instead, with the
/// flags and model-file keys to change. planner/export.h returns the data.
#include <string>

#include "costmodel/model.h"
#include "costmodel/stack.h"
#include "planner/export.h"

namespace trident::cli {

/// "AutoTP has no Megatron-style sequence parallelism": what `release` cannot run. `model`
/// is the model of the refused plan.
[[nodiscard]] std::string refusal_reason(const Obstacle& obstacle, const Release& release,
                                         const Model& model);

/// What to change when no knob of the split gets past the refusal ("training.dtype bf16 in
/// the model file", "--model llama3-8b, llama3-70b or llama3-405b"); empty when there is
/// nothing to say.
[[nodiscard]] std::string refusal_change(const Refusal& refusal, const Release& release,
                                         const Stack& stack);

}  // namespace trident::cli
