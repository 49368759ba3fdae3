#pragma once
/// The unfused attention's b x heads x s x s scores as its framework runs them: which softmax
/// kernel takes them (a fused masked softmax, or PyTorch's in 16 bits or in fp32), what the
/// layer keeps of them for its backward, what is alive at once at its peak and what the softmax
/// and dropout kernels move (docs/cost_model.md#unfused-attention).
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"

namespace trident {

/// Whose unfused attention runs (Stack::unfused_softmax): Transformer Engine's
/// UnfusedDotProductAttention (Megatron-Core's TE layers, `--attention-backend unfused` and TE's
/// fallback) or Megatron's own core attention with query-key layer scaling (Megatron-LM's of
/// 2021-2022, Megatron-DeepSpeed's CoreAttention). Both run PyTorch's softmax in fp32 where
/// their fused kernel does not take the shape; Megatron's also scales the fp32 copy.
enum class UnfusedSoftmax { transformer_engine, megatron };

/// Bytes per score element (one of a layer's micro-batch x heads/t x s x s on one GPU).
struct UnfusedScoreBytes {
  double kept = 0.0;            ///< saved by the forward for the backward
  double peak = 0.0;            ///< alive at once at the forward's or the backward's peak
  double forward_moved = 0.0;   ///< HBM bytes of the forward's softmax (and dropout) kernels
  double backward_moved = 0.0;  ///< HBM bytes of their backward
};

/// The fused masked softmax takes the scores: 16-bit scores (element_bytes 2), 16 < s and
/// s < 16384 with s % 8 == 0 (Transformer Engine) or s <= 4096 (Megatron's), s % 4 == 0 and
/// micro-batch x heads/t a multiple of 4; otherwise PyTorch's softmax runs.
[[nodiscard]] bool fused_softmax_runs(UnfusedSoftmax softmax, const Model& model,
                                      const ParallelConfig& config, double element_bytes);

/// The bytes above for `model`'s scores under `config` (element_bytes: 2, or 4 under tf32/fp32
/// training), with the model's attention dropout where it has one.
[[nodiscard]] UnfusedScoreBytes unfused_score_bytes(UnfusedSoftmax softmax, const Model& model,
                                                    const ParallelConfig& config,
                                                    double element_bytes);

}  // namespace trident
