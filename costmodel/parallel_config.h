#pragma once
/// One point of the search: the split and the memory/compute knobs.
#include <string>

namespace trident {

enum class Recompute { none, selective, full };
[[nodiscard]] const char* to_string(Recompute recompute);

struct ParallelConfig {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int micro_batch = 1;     ///< sequences per micro-batch
  int virtual_stages = 1;  ///< interleaved 1F1B model chunks per GPU; 1 = plain 1F1B
  Recompute recompute = Recompute::none;
  /// Partial full recompute: under Recompute::full, the layers of each model chunk (a stage's
  /// layers / virtual_stages) that are recomputed, the rest keeping every activation
  /// (Megatron-Core --recompute-method block --recompute-num-layers N; torchtitan's
  /// selective_ac_option k recomputes every k-th block). 0 = every layer.
  int recompute_layers = 0;
  int zero = 0;  ///< 0..3
  bool sequence_parallel = false;
  /// Context parallel: each sequence split over cp GPUs (ring attention or all-to-all).
  int cp = 1;
  /// Expert parallel: a MoE layer's experts spread over ep GPUs carved out of tp x cp x dp
  /// (Megatron-Core: expert TP 1, ep x expert-DP = tp x cp x dp); no GPUs of its own.
  int ep = 1;
  /// Hybrid sharded data parallel (HSDP; FSDP HYBRID_SHARD, torchtitan's dp_shard x
  /// dp_replicate): ZeRO-3 state sharded over dp_shard consecutive DP ranks and replicated
  /// across the dp / dp_shard such groups. 0 = sharded over all of DP.
  int dp_shard = 0;
  /// Decoder layers of the first and the last pipeline stage, pinned (Megatron-Core
  /// --decoder-first/last-pipeline-num-layers, NeMo num_layers_in_first/last_pipeline_stage,
  /// torchtitan first/last_stage_less_layers); the p - 2 middle stages share the rest equally.
  /// Both 0: the framework's default split (pipeline.h stage_layers).
  int first_stage_layers = 0;
  int last_stage_layers = 0;

  [[nodiscard]] int gpus() const { return tp * cp * pp * dp; }
  /// DP ranks the ZeRO-sharded state is split over: dp_shard for HSDP, else all of DP.
  [[nodiscard]] int shard_ranks() const { return dp_shard > 0 ? dp_shard : dp; }
  /// DP ranks the ZeRO state is split over: shard_ranks() under ZeRO 1-3, 1 under ZeRO 0.
  [[nodiscard]] int zero_shard_ranks() const { return zero >= 1 ? shard_ranks() : 1; }
  /// Sharded over part of DP and replicated across the rest.
  [[nodiscard]] bool hybrid_shard() const { return dp_shard > 0 && dp_shard < dp; }
  /// The end stages' layers are pinned (first_stage_layers, last_stage_layers).
  [[nodiscard]] bool pinned_stage_ends() const { return first_stage_layers > 0; }
  /// Layers of a stage holding `stage_layers` that full recompute repeats: all of them, or
  /// recompute_layers per chunk; 0 without full recompute.
  [[nodiscard]] double recomputed_layers(double stage_layers) const;
  /// recomputed_layers / stage_layers: the share of a stage's layers recomputed in full.
  [[nodiscard]] double full_recompute_share(double stage_layers) const;
  /// m = global_batch / (dp * micro_batch); caller guarantees divisibility.
  [[nodiscard]] long long num_micro_batches(long long global_batch) const {
    return global_batch / (static_cast<long long>(dp) * micro_batch);
  }
};

}  // namespace trident
