#pragma once
/// FLOPs of a transformer, GEMM by GEMM. A GEMM of (m x k) by (k x n) costs 2mnk FLOPs;
/// backward costs 2x forward (input and weight gradients). Counts are for the whole layer
/// (all TP ranks together); divide by tp for one GPU. Derivation: docs/cost_model.md#flops.
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/stack.h"

namespace trident {

/// Forward FLOPs of one transformer layer for `sequences` sequences of model.seq_len tokens.
/// Attention scores and context are NOT halved for the causal mask (Megatron convention).
struct LayerFlops {
  double qkv = 0.0;       ///< 2*b*s*h*(h + 2*h_kv): grouped-query attention shrinks K and V
  double scores = 0.0;    ///< Q K^T: 2*b*s^2*h
  double context = 0.0;   ///< softmax(QK^T) V: 2*b*s^2*h
  double out_proj = 0.0;  ///< 2*b*s*h^2
  double ffn = 0.0;       ///< 2*b*s*h*f per matrix, 2 matrices (3 when gated)
  double mla_up = 0.0;    ///< MLA's up-projections (part of qkv; 0 without MLA)
  [[nodiscard]] double attention_core() const { return scores + context; }
  [[nodiscard]] double total() const { return qkv + scores + context + out_proj + ffn; }
};

[[nodiscard]] LayerFlops layer_forward_flops(const Model& model, double sequences);

/// Forward FLOPs of the output layer (logits): 2*b*s*h*V.
[[nodiscard]] double logits_forward_flops(const Model& model, double sequences);

/// Extra forward FLOPs per layer that recomputation adds: none 0, selective the attention
/// core (scores + context, Korthikanti 2022 section 5), full the whole layer forward.
/// torchtitan's per-op selective recompute repeats every other linear GEMM instead;
/// Megatron-Core's mla_up_proj the up-projections of multi-latent attention.
[[nodiscard]] double recompute_forward_flops(const LayerFlops& layer, Recompute recompute,
                                             SelectiveKind selective = SelectiveKind::attention);

/// FLOPs of one training step of the whole job (global_batch sequences).
struct StepFlops {
  double model = 0.0;         ///< fwd + bwd = 3x forward, no recompute, attention not halved
  double model_causal = 0.0;  ///< same with the attention core halved for the causal mask
  /// What the GPUs execute: model + recomputation, with the attention core as the kernel runs
  /// it: whole, forward and backward 2x, where it computes every score (unfused); where it is
  /// fused, the causal share (kFusedCausalShare) with a backward of kFusedBackwardRatio times
  /// the forward (its scores recomputed).
  double hardware = 0.0;
};

/// `full_share`: the share of the layers full recompute repeats (partial recompute), 1 = all.
/// `fused`: the attention kernel is fused (is_fused: flash, cuDNN; not unfused).
[[nodiscard]] StepFlops step_flops(const Model& model, double global_batch, Recompute recompute,
                                   SelectiveKind selective = SelectiveKind::attention,
                                   double full_share = 1.0, bool fused = false);

}  // namespace trident
