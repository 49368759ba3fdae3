#pragma once
/// Context parallelism: each sequence split over cp GPUs. Ring attention (TE `p2p`): every
/// GPU keeps its queries and passes its K/V chunk round the ring, cp - 1 steps per attention
/// forward (and cp - 1 sends of K/V plus cp - 1 of their gradients backward), each step's
/// send overlapped with the attention of the chunk in hand; Ulysses (TE `a2a`): Q, K, V
/// all-to-all from sequence- to head-sharded before attention, the output back after.
/// Derivation and sources: docs/cost_model.md#context-parallel.
#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"

namespace trident {

/// What one GPU of a context-parallel split computes, as a dense split: each sequence's cp
/// chunks behave like cp sequences of seq_len / cp tokens (linear layers, norms, TP and PP
/// traffic, activations), and the gradients reduce over DP x CP (Megatron's
/// data_parallel_group_with_cp), so cp folds into dp. The global batch grows by cp so the
/// micro-batch count stays B / (dp x b). Only attention differs: add_cp_attention.
struct CpView {
  Model model;
  ParallelConfig config;
};
[[nodiscard]] CpView cp_local_view(const Model& model, const ParallelConfig& config);

/// Attention of the local queries against the whole sequence: the view's layer time holds
/// the causal half of one (s/cp)^2 block per head; with causal load balancing (the sequence
/// in 2 cp chunks, rank r holding chunks r and 2cp - 1 - r: Megatron get_batch_on_this_cp_rank)
/// every ring step computes the same half block, cp steps in all: attention x cp.
void add_cp_attention(LayerTime& layer, int cp, Recompute recompute, SelectiveKind selective);

/// Elements per token of the tensors the ring passes: K and V as the attention call sees them
/// (2 h_kv; MLA: heads x (qk + v) head dims; `repeated_kv`, a stack that repeats GQA's K/V to
/// every query head before the call (ElementwiseBytes::gqa_repeat_kv): 2 heads x head dim).
[[nodiscard]] double kv_elements_per_token(const Model& model, bool repeated_kv = false);

/// Bytes of one ring step's K/V chunk on one GPU: b x (s / cp) x kv_elements / tp x dtype.
[[nodiscard]] double cp_kv_chunk_bytes(const Model& model, const ParallelConfig& config,
                                       bool repeated_kv = false);

/// What the all-gather rotater holds while one layer's attention runs backward (torch 2.6
/// _attention.py L600-760): the K/V gathered from every rank (cp chunks), the fp32 dK/dV
/// accumulated, sent and received (3 x 2 chunks) and the fp32 dQ of the local tokens.
[[nodiscard]] double cp_allgather_working_bytes(const Model& model, const ParallelConfig& config,
                                                bool repeated_kv = false);

/// Whether Ulysses can split this config's heads: heads / tp and kv_heads / tp divisible by cp.
[[nodiscard]] bool cp_a2a_possible(const Model& model, const ParallelConfig& config);
/// The stack runs Ulysses and the split's heads allow it.
[[nodiscard]] bool cp_a2a_runs(const Stack& stack, const Model& model,
                               const ParallelConfig& config);

/// CP traffic of one micro-batch through `layers` layers of one GPU: the stack's kinds priced,
/// the faster kept (`kind`). `layer` is the view's layer time before add_cp_attention
/// (one ring step's attention: what each p2p step hides behind).
struct CpComm {
  CpKind kind = CpKind::p2p;
  CommDetail detail;  ///< per micro-batch: calls, total and exposed
};
/// The faster kind the stack runs: ring p2p or Ulysses a2a. `a2a_compute_s` is what a2a's
/// attention adds to (or, negative, takes from) one micro-batch through the stage against the
/// ring's: its one causal call over the whole sequence runs at another share of peak than the
/// ring's mostly full blocks (kernels.h attention_shares).
[[nodiscard]] CpComm cp_comm(const Model& model, const ParallelConfig& config,
                             const GroupLink& link, const LayerTime& layer, double layers,
                             const Stack& stack, const Calibration* calibration,
                             double a2a_compute_s = 0.0);

}  // namespace trident
