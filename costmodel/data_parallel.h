#pragma once
/// Data parallel communication as the stack runs it: bucketed gradient reduction (ZeRO 0-2,
/// Megatron/DeepSpeed) or per-unit gathers and reduce-scatters (ZeRO-3/FSDP), over all of DP
/// or, with hybrid sharding (HSDP), inside a shard group with the gradient shards all-reduced
/// across the replicas. Derivations: docs/cost_model.md#data-parallel.
#include "costmodel/calibration.h"
#include "costmodel/estimate.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/stack.h"

namespace trident {

/// The compute DP traffic can hide behind: one micro-batch through the bottleneck stage, and
/// one unit (transformer layer) of it.
struct DpWindow {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double layers = 0.0;           ///< units on the stage
  double unit_forward_s = 0.0;   ///< one unit's forward
  double unit_backward_s = 0.0;  ///< one unit's backward with its recomputation
  /// Parameters of the tensor the first stage reduces last and gathers first: its embedding
  /// (0: none). A bucket closes only after the tensor that fills it, so the last bucket holds
  /// at least this (docs/cost_model.md#data-parallel).
  double edge_parameters = 0.0;
  /// Sharded per unit: one unit's parameters on this GPU where they are not a dense layer's
  /// (0: count_parameters' per_layer / TP); a unit of routed experts (one MoE layer's experts
  /// on this GPU, `layers` then the stage's MoE layers) has no edge unit beside it.
  double unit_parameters = 0.0;
};

/// The links DP traffic rides: the DP (x CP) group; with HSDP the shard group (gathers and
/// reduce-scatters) and the replication group (the gradient shards' all-reduce).
struct DpLinks {
  GroupLink dp;
  GroupLink shard;
  GroupLink replicate;
};

/// The part of `comm_s` that overlapping with `window_s` of compute cannot hide; at least
/// `floor_s` (the last bucket's share).
[[nodiscard]] double unhidden_s(double comm_s, double window_s, double floor_s);

/// The part of a step's DP `comm_s` the interleaved schedule's per-chunk sync leaves exposed
/// (Stack::dp_sync_per_chunk), `stage_window_s` one micro-batch of the whole first stage's
/// compute (its `vp` chunks'): the first chunk's share `first_share` behind one chunk's
/// micro-batch, at least `floor_s` (the last bucket); and no less than what one stream cannot
/// fit in the (vp - 1) x pp + 1 chunk slots by which the other chunks' syncs start ahead of the
/// step's edge (chunk k's, k x pp slots: the cool-down runs pp micro-batches a chunk).
[[nodiscard]] double per_chunk_unhidden_s(double comm_s, double stage_window_s, double floor_s,
                                          double first_share, int pp, int vp);

/// Reduce-scatter passes per unit and step of per-unit sharding: every micro-batch, or once
/// where the stack defers it (no reduce per micro-batch; PP keeping the gathered weights).
[[nodiscard]] double unit_scatter_passes(const ParallelConfig& config, const Stack& stack,
                                         long long m);

/// ZeRO-3's all-gathers of each unit a step: before every forward pass (once a step where PP
/// keeps the gathered weights) and again before each backward where the stack reshards after
/// forward.
struct UnitGatherPasses {
  double forward = 0.0;
  double backward = 0.0;
};
[[nodiscard]] UnitGatherPasses unit_gather_passes(const ParallelConfig& config, const Stack& stack,
                                                  long long m);

/// Bytes the compute stream moves a step beside sharded data parallel's collectives, forward
/// and backward (docs/cost_model.md#sharded): FSDP2 copies each all-gather's output into the
/// unit's unsharded parameters (Stack::zero3_gather_copy_out: read and write the gathered
/// bytes); FSDP1's autograd builds each unit's flat gradient as the backward of the split that
/// made its parameters' views, a cat (Stack::zero3_gradient_cat: read and write the 16-bit
/// gradients, every backward). `units`: the stage's layer units; the units outside the layers
/// (Stack::edge_unit; torchtitan's [norm, output] beside its embedding unit, kept gathered
/// through backward, its embedding gathered again there) are copied with each of their gathers
/// and each backward too. `experts`: the stage's routed-expert parameters on this GPU, in the
/// layers' flat parameters (FSDP1's cat) and, where `experts_sharded` (an expert data-parallel
/// group above one), gathered with their layers (FSDP2's copy-out). 0 where the stack does
/// neither or does not shard per unit.
struct ShardedCopyBytes {
  double forward = 0.0;
  double backward = 0.0;
};
[[nodiscard]] ShardedCopyBytes sharded_copy_bytes(const Model& model, const ParallelConfig& config,
                                                  const Stack& stack, long long m, double units,
                                                  double experts, bool experts_sharded);

/// A tied embedding's gradient all-reduce between the first and the last pipeline stage, which
/// each hold a copy of the word embedding (the input embedding and the output layer): once per
/// step after the backward, before the optimizer, on the critical path; vocab/tp x h gradients
/// in the stack's gradient-buffer dtype over the two ranks (Megatron-LM 2021 training.py
/// train_step, Megatron-Core finalize_model_grads.py _allreduce_word_embedding_grads, DeepSpeed
/// pipe/engine.py _exec_reduce_tied_grads); also untied with multi-token prediction, whose
/// block on the last stage embeds with the word embedding. None at PP 1 or without either.
/// `pp_link`: the pipeline's group, whose tier the two end stages' ranks share.
[[nodiscard]] CommDetail tied_embedding_grads(const Model& model, const ParallelConfig& config,
                                              const Stack& stack, const GroupLink& pp_link,
                                              const Calibration* calibration);

/// DP traffic of one step: `parameters` the stage's parameters on this GPU, `m` micro-batches.
/// `model` / `config`: the per-GPU dense view (CP folded into DP). `moe_layers`: the model
/// has MoE layers (DeepSpeed's ZeRO-1 then keeps contiguous gradients and reduce-scatters;
/// Stack::zero1_all_reduces_gradients applies to dense models only).
[[nodiscard]] CommDetail dp_comm(const Model& model, const ParallelConfig& config,
                                 const DpLinks& links, double parameters, long long m,
                                 const DpWindow& window, const Stack& stack,
                                 const Calibration* calibration, bool moe_layers = false);

}  // namespace trident
