#pragma once
/// The one list of a transformer layer's GEMMs, as one GPU runs them for one micro-batch after
/// the TP split. Compute time (compute.h), FLOPs (flops.h), the plan JSON's `gemms` and
/// validate's measurements all read it, so what is priced is what is counted and measured.
#include <array>

#include "costmodel/model.h"

namespace trident {

/// One GEMM C[m x n] = A[m x k] B[k x n], repeated `batch` times (batched attention GEMMs).
struct GemmShape {
  double m = 0.0;
  double n = 0.0;
  double k = 0.0;
  double batch = 1.0;
  [[nodiscard]] double flops() const { return 2.0 * m * n * k * batch; }
  /// Backward runs the forward GEMM [m x n x k] twice more: the input gradient [m x k x n]
  /// and the weight gradient [k x n x m].
  [[nodiscard]] GemmShape input_gradient() const { return {m, k, n, batch}; }
  [[nodiscard]] GemmShape weight_gradient() const { return {k, n, m, batch}; }
};

struct NamedGemm {
  const char* name;  ///< "qkv", "attention_out", "ffn_up", "ffn_down", "logits"
  GemmShape shape;
};

/// The four linear GEMMs of one layer, forward, for `sequences` sequences on one of `tp` GPUs:
/// QKV [b*s x (h + 2 h_kv)/t x h], attention output [b*s x h x h/t], FFN up (and gate when
/// gated) [b*s x (1|2) f/t x h], FFN down [b*s x h x f/t]. Backward runs each twice more
/// (input gradient m x k x n, weight gradient k x n x m).
[[nodiscard]] std::array<NamedGemm, 4> layer_linear_gemms(const Model& model, double sequences,
                                                          int tp);

/// The attention core, forward: scores Q K^T [s x s x d] and context [s x d x s], each batched
/// over the sequences' heads on this GPU (sequences x heads / t). Not halved for the causal
/// mask: the caller decides (flash kernels skip the masked half).
struct AttentionGemms {
  GemmShape scores;
  GemmShape context;
};
[[nodiscard]] AttentionGemms attention_gemms(const Model& model, double sequences, int tp);

/// Multi-latent attention's two up-projections, forward: Q [b*s x heads*(nope+rope)/t x
/// q_lora] (from h when q_lora_rank is 0: Q's only projection) and KV [b*s x heads*(nope+v)/t x
/// kv_lora], column-parallel over the whole sequence. Part of the QKV GEMM's FLOPs; what
/// Megatron-Core's `mla_up_proj` selective recompute repeats. Zero shapes without MLA.
[[nodiscard]] std::array<NamedGemm, 2> mla_up_gemms(const Model& model, double sequences, int tp);

/// The output layer (logits) on the last stage: [b*s x V/t x h].
[[nodiscard]] NamedGemm logits_gemm(const Model& model, double sequences, int tp);

/// A multi-token-prediction module's projection of [normed hidden; normed next-token
/// embedding] back to h (DeepSeek-V3 M_k, Megatron-Core eh_proj, column-parallel):
/// [b*s x h/t x 2h].
[[nodiscard]] NamedGemm mtp_projection_gemm(const Model& model, double sequences, int tp);

}  // namespace trident
