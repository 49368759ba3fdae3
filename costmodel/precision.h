#pragma once
/// Precision per tensor, not per run: which GEMMs of a layer run in which dtype, what the
/// activations, messages and weights are stored in, and the kernels an FP8 recipe adds (casts,
/// transposes, amax passes). Sources: docs/cost_model.md#precision.
#include "costmodel/calibration.h"
#include "costmodel/gemms.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "topology/gpu.h"
#include "topology/link_tier.h"

namespace trident {

struct Precision {
  Dtype linear_gemm = Dtype::bf16;   ///< QKV, output projection, FFN (TE modules)
  Dtype attention = Dtype::bf16;     ///< fused attention's batched GEMMs
  Dtype output_gemm = Dtype::bf16;   ///< the output layer (not a TE module: never FP8)
  double activation_bytes = 2.0;     ///< activations, TP/PP messages, saved tensors
  double tp_gather_bytes = 2.0;      ///< an element of a TP all-gather
  double weight_gather_bytes = 2.0;  ///< an element of a ZeRO-3/FSDP weight all-gather
  double weight_bytes = 2.0;         ///< the model's weights as the optimizer writes them
  bool fp8_params = false;  ///< FP8 weights replace the 16-bit copy (Megatron fp8-param-gather)
  bool fp8 = false;
  Fp8Recipe recipe = Fp8Recipe::delayed;
  /// Tensor-scaled FP8 GEMMs on this GPU take TN operands only, so each quantized tensor keeps
  /// a transposed copy for its other GEMM (Hopper); Blackwell reads FP8 column-wise and keeps
  /// one copy (Transformer Engine's nvte_is_non_tn_fp8_gemm_supported). True unless the GPU
  /// is known (precision_of with a Gpu).
  bool fp8_transposes = true;
  /// The linear GEMMs' kernel rate against the dtype's tensor-scaled kernel at the same shape:
  /// kMxfp8GemmRateRatio under mxfp8 (Blackwell's block-scaled tensor cores), 1 otherwise.
  double linear_gemm_rate_ratio = 1.0;
};

/// MXFP8's GEMM kernels run at this share of tensor-scaled FP8's rate at the same shapes:
/// Transformer Engine's own GEMM benchmark, pre-quantized inputs (the kernels alone), one layer
/// of a 5B model (hidden 4096, FFN 16384, 15,872 tokens; all twelve GEMMs) on a B300:
/// FP8 current scaling 6.812 ms, MXFP8 7.161 ms (NVIDIA/TransformerEngine@d0067d0
/// docs/examples/gemm_profiling/gemm_profiling.rst, "Autocast vs Pre-quantized";
/// docs/cost_model.md#fp8-layout). Measured on Blackwell Ultra (SM 10.3), the only
/// measurement published; B200/GB200 (SM 10.0) take it: same block-scaled MMA.
inline constexpr double kMxfp8GemmRateRatio = 6.812 / 7.161;

/// The precision of each tensor class for a run's training section. bf16/fp16: everything in
/// that dtype. fp32/tf32: GEMMs tf32, 4-byte tensors. fp8: the linear GEMMs in FP8, the rest
/// bf16 unless `fp8.attention` / `fp8.communication` (Transformer Engine's fp8_autocast).
[[nodiscard]] Precision precision_of(const Training& training);
/// The same on a given GPU: whether tensor-scaled FP8 keeps transposed copies there.
/// `gpu_layout` (Stack::fp8_follows_gpu_layout): the FP8 linears are Transformer Engine's
/// (v2.0 on), whose GEMMs read any layout where the GPU does (fp8_gemm_needs_transpose); false:
/// torchao's Float8Linear, whose torch._scaled_mm takes a row-major first and a column-major
/// second operand on every GPU (pytorch torch/_meta_registrations.py _check_scaled_mm_sizes:
/// "self must be row_major", "mat2 must be col_major"), or Transformer Engine 1.x, whose
/// linears transpose on every GPU (Stack::fp8_tn_only), so their column-major copies stay on
/// Blackwell too.
[[nodiscard]] Precision precision_of(const Training& training, const Gpu& gpu,
                                     bool gpu_layout = true);

/// Transformer Engine keeps a transposed copy of a tensor-scaled FP8 tensor unless the GPU's
/// FP8 GEMMs read any layout: compute capability 10.0 to 11.x and 13.0 on (transformer_engine.cpp
/// nvte_is_non_tn_fp8_gemm_supported, TE v2.3 to v2.18; v2.0-v2.2 skipped it from 10.0 on, 12.x
/// included, pytorch/csrc/extensions/util.cpp non_tn_fp8_gemm_supported). An unknown
/// capability (0) keeps the transpose, Hopper's behaviour.
[[nodiscard]] bool fp8_gemm_needs_transpose(const Gpu& gpu);

/// Bytes one element of a quantized FP8 activation or gradient keeps: the FP8 copy, plus the
/// transposed copy where tensor-scaled GEMMs need it, or, for the block-scaled recipes, the
/// column-wise copy and both copies' block scales (MXFP8: 1 byte per 32 elements; blockwise:
/// 4 per 128). Weights: the same, but blockwise weights' 128x128 blocks (4 bytes per 16,384).
[[nodiscard]] double fp8_copy_bytes(const Precision& precision);

/// Bytes the FP8 cast kernels of one layer's forward move for one micro-batch on one GPU
/// (after the TP split): each linear GEMM's input is cast to FP8 and transposed for the
/// weight gradient (TE cast_transpose: read 2, write 1 + 1); the two inputs that follow a
/// norm (QKV, FFN up) come out of the fused LayerNormLinear in FP8, leaving the transpose
/// (read 1, write 1). Current scaling reads each tensor once more for its amax. 0 without FP8.
/// `saves_fp8_inputs` false (torchao): each input is only cast (read 2, write 1), no norm
/// fusion, no transpose kept.
[[nodiscard]] double fp8_cast_forward_bytes(const Model& model, const ParallelConfig& config,
                                            const Precision& precision,
                                            bool saves_fp8_inputs = true);

/// The same for the backward: each linear GEMM's output gradient cast and transposed (read 2,
/// write 1 + 1), plus current scaling's amax pass. 0 without FP8.
/// `saves_fp8_inputs` false (torchao): the 16-bit inputs are cast again for the weight
/// gradient (read 2, write 1 each).
[[nodiscard]] double fp8_cast_backward_bytes(const Model& model, const ParallelConfig& config,
                                             const Precision& precision,
                                             bool saves_fp8_inputs = true);

/// Bytes the FP8 casts of one GEMM without a norm before it move, forward: its input cast to
/// FP8 and transposed for the weight gradient (TE cast_transpose: read 2, write 1 + 1; a plain
/// cast, read 2 write 1, when the stack does not keep FP8 inputs), plus current scaling's amax
/// pass; backward: its output gradient cast and transposed, plus the input cast again when the
/// stack does not keep it. A GEMM with no work (a zero dimension) casts nothing. 0 without FP8.
[[nodiscard]] double fp8_input_cast_bytes(const GemmShape& shape, const Precision& precision,
                                          bool saves_fp8_inputs = true);
[[nodiscard]] double fp8_gradient_cast_bytes(const GemmShape& shape, const Precision& precision,
                                             bool saves_fp8_inputs = true);

/// Bytes per parameter of the weights a GPU holds for compute: the 16-bit weights (2, fp32
/// runs 4); an FP8 run adds its FP8 copies (fp8_copy_bytes: data and transpose, 1 + 1, on
/// Hopper) when the stack caches them over the micro-batches (TE Float8Tensor data +
/// transpose), and FP8 parameters hold only those (no 16-bit copy).
[[nodiscard]] double weight_memory_bytes_per_parameter(const Precision& precision,
                                                       bool fp8_weight_cache);

/// Bytes per local parameter of the FP8 weight cast (read 2, write fp8_copy_bytes; current
/// scaling reads the weight once more for its amax) done once per step when the stack caches
/// FP8 weights over micro-batches (Megatron passes is_first_microbatch to TE), else on every
/// micro-batch. 0 without FP8.
[[nodiscard]] double fp8_weight_cast_bytes_per_parameter(const Precision& precision);

/// Delayed scaling's amax all-reduces (Transformer Engine): one at the exit of the outermost
/// fp8_autocast, which Megatron-Core opens once per model chunk and micro-batch around the
/// TransformerBlock's layers, and one at the end of that chunk's backward; each a blocking
/// all-reduce (async_op=False) of the chunk's amaxes over the amax reduction group. Latency-
/// sized, on the critical path. Zero without FP8 or with another recipe (current scaling keeps
/// its amaxes local). Sources: docs/cost_model.md#precision.
struct AmaxReductions {
  double bytes_per_call = 0.0;
  double calls_per_step = 0.0;
  double time_per_call_s = 0.0;
  [[nodiscard]] double total_s() const { return calls_per_step * time_per_call_s; }
};
/// True when a run all-reduces amaxes (FP8 with delayed scaling).
[[nodiscard]] bool reduces_amax(const Training& training);
/// FP8 current scaling's amax all-reduces under sequence parallelism (Transformer Engine >= 2.2):
/// each tensor quantized locally before an FP8 TP all-gather (the QKV and FFN-up inputs in
/// forward, the projection's and FFN-down's output gradients in backward) first all-reduces its
/// one fp32 amax (MAX) over the TP group and waits for it: 4 blocking calls per dense layer and
/// micro-batch, 2 more per layer full recompute repeats. A MoE layer's routed experts have no TP
/// (Megatron's grouped linears run with parallel_mode None), so its FFN reduces none:
/// `tp_ffn_share` is the share of the stage's layers whose FFN is a TP linear pair (dense, or
/// shared experts on the TP path). Zero without TP > 1 and sequence parallelism, or with another
/// recipe. `layers`: the stage's; `link`: the TP group. Sources: docs/cost_model.md#precision.
[[nodiscard]] AmaxReductions fp8_current_amax_reductions(
    const ParallelConfig& config, const Precision& precision, double layers, double tp_ffn_share,
    long long micro_batches, const GroupLink& link, const Calibration* calibration = nullptr);
/// Blocking amax all-reduces per layer and micro-batch under current scaling, each direction:
/// the attention's one (QKV input forward, projection output gradient backward) and the TP
/// FFN's one (FFN-up input forward, FFN-down output gradient backward).
inline constexpr double kCurrentAmaxAttentionCallsPerPass = 1.0;
inline constexpr double kCurrentAmaxFfnCallsPerPass = 1.0;
/// `layers`: the stage's layers; `micro_batches`: per step; `link`: the amax reduction group.
[[nodiscard]] AmaxReductions fp8_amax_reductions(const ParallelConfig& config,
                                                 const Precision& precision, double layers,
                                                 long long micro_batches, const GroupLink& link,
                                                 const Calibration* calibration = nullptr);

/// Amaxes a linear layer's FP8 metadata holds for the forward (input, weight, output: TE's
/// scaling_fwd) and the linear layers of a transformer layer (QKV, projection, FFN up, down).
inline constexpr double kAmaxesPerLinear = 3.0;
inline constexpr double kLinearsPerLayer = 4.0;

}  // namespace trident
