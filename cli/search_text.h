#pragma once
/// What a search says in words: why a plan does not fit in memory, and the rules no split of
/// the GPUs obeyed. planner/search.h returns the numbers.
#include <string>

#include "planner/search.h"

namespace trident::cli {

/// "needs 93.20 GiB per GPU (CUDA context and NCCL buffers included), 79.20 GiB usable
/// (2 GiB kept free)".
[[nodiscard]] std::string shortfall_text(const MemoryShortfall& shortfall);

/// shortfall_text of the plan's shortfall; empty when the plan fits.
[[nodiscard]] std::string shortfall_text(const PlanResult& plan);

/// "no configuration of 64 GPUs obeys the rules and pins (tp divides heads 32 and kv_heads 8,
/// pp divides layers 32, ...)".
[[nodiscard]] std::string no_split_text(const SplitRules& rules);
/// The rules of no_split_text alone: "tp divides heads 32, kv_heads 8 and ffn_hidden ...".
[[nodiscard]] std::string rules_text(const SplitRules& rules);

/// --cp-comm as given (`text`, empty when not) and the context-parallel kinds the stack ran
/// before it kept only that one (Stack::cp_kinds).
struct CpCommPin {
  std::string text;
  unsigned stack_kinds = 0;
};

/// no_split_text, led by the pins that rule out every configuration by themselves: each pin
/// cleared in turn (a search on the error path only), "--micro-batch 7: no configuration of
/// 64 GPUs takes it (...)"; pins that only do it together are named together. --cp-comm first:
/// where the stack's other kinds leave configurations, it is the pin named.
[[nodiscard]] std::string no_split_message(const Cluster& cluster, const Model& model,
                                           const SearchOptions& options, const SplitRules& rules,
                                           const CpCommPin& cp_comm = {});

/// The "# search:" line: what the pins fix and what the search leaves free, among the knobs
/// the stack has (no PP or interleaving under fsdp; the HSDP shard where it shards hybrid;
/// ZeRO from 1 where the model has FP8 parameters the stack gathers only through its sharded
/// optimizer, ZeRO 0-2 for a MoE model).
[[nodiscard]] std::string describe_search(const SearchOptions& options, const Model& model);

}  // namespace trident::cli
