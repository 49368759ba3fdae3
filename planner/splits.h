#pragma once
/// The splits a search walks (planner-internal): TP x PP x DP x CP x EP that divide the GPUs,
/// the heads, the layers and the global batch, within the options' pins and limits and what
/// the stack runs; and the HSDP shard sizes a split's knobs try.
#include <optional>
#include <vector>

#include "costmodel/model.h"
#include "costmodel/pipeline.h"
#include "planner/search.h"

namespace trident {

/// No pin, or the pinned value.
[[nodiscard]] inline bool allowed(const std::optional<int>& pin, int value) {
  return !pin || *pin == value;
}

struct Split {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
  int ep = 1;
};

/// The largest TP the model's shape takes: TP divides the heads, the KV heads and the FFN width
/// the column-parallel layer splits (Megatron ColumnParallelLinear: divide(output_size,
/// world_size) asserts; experts run at expert TP 1), so every TP divides gcd of the three.
[[nodiscard]] int largest_tp(const Model& model);

/// The FFN width tensor parallelism splits: ffn_hidden where a layer has a dense FFN, the shared
/// experts' (shared x expert_ffn_hidden, Megatron's SharedExpertMLP column-parallel) where
/// every layer is MoE, 0 where no FFN is split over TP (all-MoE without shared experts: the
/// routed experts run at expert TP 1).
[[nodiscard]] int tp_split_ffn_width(const Model& model);

/// Sequence parallelism is the only way TP runs: MoE layers (Megatron moe_layer.py L636
/// refuses TP without it), a stack that shards that way unconditionally (torchtitan), or the
/// --sequence-parallel on pin.
[[nodiscard]] bool sp_required(const Model& model, const SearchOptions& options, int tp);

/// Sequence parallelism splits each CP rank's seq_len / cp tokens over the TP ranks: they must
/// divide (Megatron scatter_to_sequence_parallel_region asserts dim 0 % world_size == 0).
[[nodiscard]] bool sp_divides_sequence(const Model& model, int tp, int cp);

/// Every split of `gpus` GPUs, TP ascending, then CP, then PP ascending.
[[nodiscard]] std::vector<Split> splits(int gpus, const Model& model, const SearchOptions& options);

/// HSDP shard group sizes for a ZeRO stage: 0 (shard over all of DP) and, where the stack
/// shards this stage per unit with hybrid sharding, powers of two from 2 below dp that divide
/// it. A pin (N < dp) is the only size tried and leaves out the stages that cannot shard
/// hybrid; a pin equal to dp means all of DP.
[[nodiscard]] std::vector<int> shard_candidates(const SearchOptions& options, int zero, int dp,
                                                bool moe);

/// The splits with lighter ends a stack that sets end stages tries beside the default split
/// of `pp` stages: lighter_ends and lightest_last (pipeline.h), those the stack writes
/// (stage_ends_problem: equal middle stages unless Stack::runs_unequal_middles); none for a
/// stack that sets no end stages.
[[nodiscard]] std::vector<StageLayers> lighter_candidates(const Model& model, const Stack& stack,
                                                          int pp);
/// The end stages a search of `pp` stages tries, as ParallelConfig::first_stage_layers and
/// last_stage_layers: the pinned ones; else the default split (both 0) and lighter_candidates,
/// as --lighter-ends allows.
[[nodiscard]] std::vector<StageLayers> end_stage_candidates(const Model& model,
                                                            const SearchOptions& options, int pp);
/// Whether a stack that shortens only the end stages (Stack::uneven_stages_ends_only) writes
/// one of those candidates at `vp` virtual stages (ends_only_split); true for other stacks.
[[nodiscard]] bool ends_only_writable(const Model& model, const SearchOptions& options, int pp,
                                      int vp);

}  // namespace trident
