#include "costmodel/unfused_attention.h"

#include <algorithm>

namespace trident {

namespace {

/// Transformer Engine v2.2.1-v2.18 softmax.py is_kernel_available (v2.2.1 L177-210): sk in
/// (16, 16384), sk % 8 == 0; Megatron-Core's (fusions/fused_softmax.py L150-170 @core_v0.12.0)
/// and Megatron-DeepSpeed's (megatron/model/fused_softmax.py L152-172): sk in (16, 4096].
constexpr long long kTeFusedSoftmaxBelowSeq = 16384;
constexpr long long kMegatronFusedSoftmaxMaxSeq = 4096;
constexpr long long kFusedSoftmaxAboveSeq = 16;
constexpr double kMaskBytes = 1.0;  ///< dropout's bool mask, a byte an element
constexpr double kFp32Bytes = 4.0;

/// Dropout over the probabilities (torch native_dropout, 0 < p < 1): keeps its bool mask and
/// its output (saved by the second batched GEMM); forward reads e, writes e and the mask;
/// backward reads the gradient and the mask and writes e.
UnfusedScoreBytes with_dropout(UnfusedScoreBytes b, double e) {
  b.kept += e + kMaskBytes;
  b.peak += e + kMaskBytes;
  b.forward_moved += 2.0 * e + kMaskBytes;
  b.backward_moved += 2.0 * e + kMaskBytes;
  return b;
}

}  // namespace

bool fused_softmax_runs(UnfusedSoftmax softmax, const Model& model, const ParallelConfig& config,
                        double element_bytes) {
  const long long s = model.seq_len;
  const long long attention_batches =
      static_cast<long long>(config.micro_batch) * (model.heads / config.tp);
  const bool length = softmax == UnfusedSoftmax::transformer_engine
                          ? s < kTeFusedSoftmaxBelowSeq && s % 8 == 0
                          : s <= kMegatronFusedSoftmaxMaxSeq;
  return element_bytes == 2.0 && s > kFusedSoftmaxAboveSeq && length && s % 4 == 0 &&
         attention_batches % 4 == 0;
}

UnfusedScoreBytes unfused_score_bytes(UnfusedSoftmax softmax, const Model& model,
                                      const ParallelConfig& config, double element_bytes) {
  const double e = element_bytes;
  const bool dropout = model.dropout > 0.0;
  if (fused_softmax_runs(softmax, model, config, element_bytes)) {
    // Scores (e) and the softmax output (e, the one tensor the kernel saves) alive together;
    // backward: the saved output and the incoming gradient, the gradient rewritten in place.
    const UnfusedScoreBytes b{
        .kept = e, .peak = 2.0 * e, .forward_moved = 2.0 * e, .backward_moved = 3.0 * e};
    return dropout ? with_dropout(b, e) : b;
  }
  // PyTorch's softmax in fp32: Transformer Engine builds its softmax with softmax_in_fp32
  // (attention.py L3789 @v2.2.1); Megatron's core attention turns it on with query-key layer
  // scaling, on by default (--no-query-key-layer-scaling: Megatron-LM@40becfc9
  // megatron/arguments.py L569-575, model/transformer.py L119-122; Megatron-DeepSpeed@f4157bea
  // arguments.py L1129-1135, transformer.py L245-248), and multiplies the fp32 copy by the
  // layer's scale (fused_softmax.py forward_torch_softmax): r4 w4 more each way.
  const double scale_moved = softmax == UnfusedSoftmax::megatron ? 2.0 * kFp32Bytes : 0.0;
  UnfusedScoreBytes b;
  if (e < kFp32Bytes) {
    // 16-bit scores: forward the scores (e), the fp32 copy (4), the fp32 softmax (4, saved)
    // and its 16-bit cast (e, saved unless dropout's output replaces it) at once; backward the
    // saved fp32 softmax, the gradient cast to fp32 and softmax's fp32 gradient (12).
    // Moved, forward: the cast r e w4, the in-place mask r4 w4, the softmax r4 w4, the cast
    // back r4 w e; backward: the cast r e w4, softmax's backward r4 r4 w4, the mask's r4 w4,
    // the cast r4 w e.
    b = {.kept = kFp32Bytes + e,
         .peak = std::max(2.0 * e + 2.0 * kFp32Bytes, 3.0 * kFp32Bytes),
         .forward_moved = 2.0 * e + 6.0 * kFp32Bytes + scale_moved,
         .backward_moved = 2.0 * e + 7.0 * kFp32Bytes + scale_moved};
    if (!dropout) return b;
    const double peak = b.peak;  // dropout's tensors come after the cast's copies are freed
    b = with_dropout(b, e);
    b.kept -= e;
    b.peak = peak;
    return b;
  }
  // fp32 scores (tf32/fp32 training): no casts; the in-place mask and the softmax forward,
  // backward softmax's (r e, r e, w e) and the mask's out of place (r e, w e), three tensors at
  // its peak (the saved output, the incoming gradient and softmax's input gradient).
  b = {.kept = e,
       .peak = 3.0 * e,
       .forward_moved = 4.0 * e + scale_moved,
       .backward_moved = 5.0 * e + scale_moved};
  if (!dropout) return b;
  const double peak = b.peak;
  b = with_dropout(b, e);
  b.peak = std::max(peak, 2.0 * e + e + kMaskBytes);
  return b;
}

}  // namespace trident
