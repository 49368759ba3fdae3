#pragma once
/// Impossible pins and limits (planner/option_check.h's OptionProblem) as one line naming the
/// flag a user wrote, and the checks that throw it before any search, what-if or emit.
#include <string>

#include "planner/option_check.h"
#include "planner/search.h"

namespace trident::cli {

/// The flag that sets a knob ("--tp", "--min-tp", "--global-batch"...).
[[nodiscard]] const char* flag_of(Knob knob);

/// The one-line message for an impossible pin or limit, naming its flag: "--tp 3: must divide
/// the model's heads (4) and kv_heads (2)", "--zero 1: stack megatron-2021 does not run ZeRO-1".
[[nodiscard]] std::string describe(const OptionProblem& problem, const Model& model,
                                   const Stack& stack);

/// What the unfused attention fallback cannot do, in one sentence (the --cp / --min-cp pins and
/// --cp-comm refusals): the model's heads, the stack, why and where it is documented.
[[nodiscard]] std::string unfused_takes_no_cp(const Model& model, const Stack& stack);

/// --cp-comm under options resolved to Transformer Engine's unfused attention (resolve_attention),
/// which runs no context parallelism: the flag changes nothing, so it is refused.
void check_cp_comm_runs(const std::string& cp_comm, const Model& model,
                        const SearchOptions& options);

/// Throws InputError with describe()'s line when the pins and limits cannot run (checked
/// before any search, what-if or emit).
void check_options(const Model& model, const SearchOptions& options);

}  // namespace trident::cli
