#include "costmodel/precision.h"

#include <algorithm>
#include <cstddef>

#include "costmodel/collective.h"
#include "costmodel/gemms.h"

namespace trident {

namespace {

/// A cast from the 16-bit tensor reads it once (2 bytes an element).
constexpr double kSixteenBitReadBytes = 2.0;
/// An FP8 copy of an element.
constexpr double kFp8Bytes = 1.0;
/// Block scales per element: MXFP8's one E8M0 byte per 32 elements; blockwise's fp32 scale per
/// 128 (1x128 blocks of activations and gradients) is the same 1/32.
constexpr double kBlockScaleBytesPerElement = 1.0 / 32.0;
/// Blockwise weights take 128x128 blocks (TE Float8BlockQuantizer block_scaling_dim 2): one
/// fp32 scale per 16,384 elements.
constexpr double kBlockwiseWeightScaleBytesPerElement = 4.0 / (128.0 * 128.0);
/// Current scaling computes the tensor's amax before the cast: one more read of the
/// 16-bit tensor (TE Float8CurrentScaling; torchao tensorwise dynamic scaling).
constexpr double kCurrentScalingAmaxBytes = 2.0;
/// A plain cast (torchao's hp_tensor_to_float8_dynamic): read 2, write 1.
constexpr double kCastBytes = kSixteenBitReadBytes + kFp8Bytes;
/// Capabilities whose FP8 GEMMs read any operand layout (TE nvte_is_non_tn_fp8_gemm_supported:
/// 10.0 to 11.x, and 13.0 on; 12.x is not).
constexpr double kNonTnFp8FirstCapability = 10.0;
constexpr double kNonTnFp8GapFrom = 12.0;
constexpr double kNonTnFp8GapTo = 13.0;

double amax_pass_bytes(const Precision& precision) {
  return precision.recipe == Fp8Recipe::current ? kCurrentScalingAmaxBytes : 0.0;
}

/// Transformer Engine's quantize of a 16-bit tensor with both usages: read it, write its
/// copies (fp8_copy_bytes), plus current scaling's amax pass.
double quantize_bytes(const Precision& precision) {
  return kSixteenBitReadBytes + fp8_copy_bytes(precision) + amax_pass_bytes(precision);
}

/// The input of the GEMM after a norm (QKV, FFN up), beyond the 16-bit norm already priced
/// (TE normalization.cpp, layernorm_fwd / rmsnorm_fwd, v2.8 on):
/// - delayed scaling: the norm kernel writes FP8 itself (1 byte instead of 2: -1), and where
///   the GEMMs need it a transpose reads that copy and writes another (+1 +1);
/// - current scaling: the norm writes 16 bits and its amax (FUSED_NORM_AMAX_FP8), then the
///   quantize reads it and writes the copies: no separate amax pass;
/// - MXFP8 and blockwise: the norm writes 16 bits (UNFUSED unless NVTE_NORM_FWD_USE_CUDNN),
///   then the quantize.
double after_norm_cast_bytes(const Precision& precision) {
  if (precision.recipe == Fp8Recipe::delayed) {
    return -1.0 + (precision.fp8_transposes ? 2.0 * kFp8Bytes : 0.0);
  }
  return kSixteenBitReadBytes + fp8_copy_bytes(precision);
}

}  // namespace

Precision precision_of(const Training& training) {
  Precision p;
  switch (training.dtype) {
    case Dtype::bf16:
    case Dtype::fp16:
      p.linear_gemm = p.attention = p.output_gemm = training.dtype;
      break;
    case Dtype::tf32:
    case Dtype::fp32:
      p.linear_gemm = p.attention = p.output_gemm = training.dtype;
      p.activation_bytes = p.tp_gather_bytes = p.weight_gather_bytes = p.weight_bytes = 4.0;
      break;
    case Dtype::fp8:
      p.fp8 = true;
      p.recipe = training.fp8.recipe;
      p.linear_gemm = Dtype::fp8;
      p.attention = training.fp8.attention ? Dtype::fp8 : Dtype::bf16;
      p.output_gemm = Dtype::bf16;
      p.fp8_params = training.fp8.params;
      p.linear_gemm_rate_ratio =
          training.fp8.recipe == Fp8Recipe::mxfp8 ? kMxfp8GemmRateRatio : 1.0;
      if (training.fp8.communication) p.tp_gather_bytes = 1.0;
      // FP8 parameters are gathered in FP8, but MXFP8 ones in 16 bits: Megatron-Core gathers
      // them through the gradient buffer it shares with the reduce-scatter ("For MXFP8 param:
      // Create a shared buffer for param AG and grad RS", param_and_grad_buffer.py @core_v0.15.0;
      // bf16, half an fp32 buffer) and quantizes after the gather; Megatron-Bridge's
      // bf16_with_mxfp8_mixed asserts that path (reuse_grad_buf_for_mxfp8_param_ag).
      if (training.fp8.params) {
        p.weight_gather_bytes = training.fp8.recipe == Fp8Recipe::mxfp8 ? 2.0 : 1.0;
      }
      break;
  }
  return p;
}

bool fp8_gemm_needs_transpose(const Gpu& gpu) {
  const double cc = gpu.compute_capability;
  const bool any_layout =
      cc >= kNonTnFp8FirstCapability && (cc < kNonTnFp8GapFrom || cc >= kNonTnFp8GapTo);
  return !any_layout;
}

Precision precision_of(const Training& training, const Gpu& gpu, bool gpu_layout) {
  Precision p = precision_of(training);
  p.fp8_transposes = !gpu_layout || fp8_gemm_needs_transpose(gpu);
  return p;
}

double fp8_copy_bytes(const Precision& precision) {
  if (is_block_scaled(precision.recipe)) return 2.0 * (kFp8Bytes + kBlockScaleBytesPerElement);
  return precision.fp8_transposes ? 2.0 * kFp8Bytes : kFp8Bytes;
}

namespace {

/// The FP8 copies of a weight element: fp8_copy_bytes, but blockwise weights' 128x128 blocks
/// keep far fewer scales than its activations' 1x128.
double weight_copy_bytes(const Precision& precision) {
  if (precision.recipe == Fp8Recipe::blockwise) {
    return 2.0 * (kFp8Bytes + kBlockwiseWeightScaleBytesPerElement);
  }
  return fp8_copy_bytes(precision);
}

}  // namespace

double weight_memory_bytes_per_parameter(const Precision& precision, bool fp8_weight_cache) {
  if (!precision.fp8) return precision.weight_bytes;
  if (precision.fp8_params) return weight_copy_bytes(precision);
  return precision.weight_bytes + (fp8_weight_cache ? weight_copy_bytes(precision) : 0.0);
}

double fp8_weight_cast_bytes_per_parameter(const Precision& precision) {
  if (!precision.fp8) return 0.0;
  return kSixteenBitReadBytes + weight_copy_bytes(precision) + amax_pass_bytes(precision);
}

namespace {

/// A GEMM with a zero dimension (a layer's FFN where every MoE layer's is routed): no kernel.
bool has_work(const GemmShape& shape) {
  return shape.m > 0.0 && shape.n > 0.0 && shape.k > 0.0 && shape.batch > 0.0;
}

/// One GEMM's input cast at `per_element` bytes.
double input_cast_bytes(const GemmShape& shape, const Precision& precision, double per_element) {
  if (!precision.fp8 || !has_work(shape)) return 0.0;
  return shape.m * shape.k * shape.batch * per_element;
}

/// A row-wise-only cast (read 2, write 1) with current scaling's amax pass: torchao's, and
/// Transformer Engine's under SP before the FP8 gather.
double plain_cast_bytes(const Precision& precision) {
  return kCastBytes + amax_pass_bytes(precision);
}

/// The input cast of a GEMM after a norm (QKV, FFN up), `sp` the sequence-parallel split of
/// its tokens (sp_split). Without SP: the GEMM's input at after_norm_cast_bytes. With SP the
/// norm runs on the local tokens (1/sp of the GEMM's) and Transformer Engine quantizes there,
/// before the FP8 all-gather (transformer_engine/pytorch/distributed.py @v2.8): a tensor-scaled
/// recipe writes the row-wise copy only (delayed: the norm's own FP8 write, -1; current: read
/// 2, write 1; the transpose is made in the backward, gathered_transpose_bytes); a
/// block-scaled one quantizes both usages locally and gathers them (_all_gather_mxfp8 L1449,
/// _all_gather_fp8_blockwise L1057).
double after_norm_input_cast_bytes(const GemmShape& shape, const Precision& precision, double sp) {
  if (!precision.fp8 || !has_work(shape)) return 0.0;
  const double gathered = shape.m * shape.k * shape.batch;
  if (sp <= 1.0) return gathered * after_norm_cast_bytes(precision);
  const double local = gathered / sp;
  if (is_block_scaled(precision.recipe)) return local * after_norm_cast_bytes(precision);
  const double rowwise = precision.recipe == Fp8Recipe::delayed ? -1.0 : kCastBytes;
  return local * rowwise;
}

/// Under SP a tensor-scaled tensor gathered in FP8 gets its transpose on the gathered copy
/// (_all_gather_fp8 L903-985: "we cannot directly gather the transposed fp8 tensor",
/// _create_transpose: read 1, write 1), where the GEMMs need one; for a layer's input that is
/// in the backward, which gathers it again for the weight gradient.
double gathered_transpose_bytes(double gathered, const Precision& precision, double sp) {
  if (sp <= 1.0 || is_block_scaled(precision.recipe) || !precision.fp8_transposes) return 0.0;
  return gathered * 2.0 * kFp8Bytes;
}

/// A row-parallel layer's output gradient under SP: Transformer Engine casts the local part
/// and all-gathers it in FP8 (row-wise: read 2, write 1, + current scaling's amax read), then
/// transposes the gathered tensor for the weight gradient; block-scaled recipes quantize both
/// usages locally. Without SP: quantize_bytes on the whole.
double row_parallel_gradient_cast_bytes(const GemmShape& shape, const Precision& precision,
                                        double sp) {
  if (!precision.fp8 || !has_work(shape)) return 0.0;
  const double gathered = shape.m * shape.n * shape.batch;
  if (sp <= 1.0) return gathered * quantize_bytes(precision);
  const double local = gathered / sp;
  if (is_block_scaled(precision.recipe)) return local * quantize_bytes(precision);
  return local * plain_cast_bytes(precision) + gathered_transpose_bytes(gathered, precision, sp);
}

/// The sequence-parallel split of the TP all-gathers' FP8 tensors: the TP size with SP and FP8
/// TP all-gathers (training.fp8.communication); 1 when the all-gather carries 16 bits and the
/// casts run on the gathered tensor.
double sp_split(const ParallelConfig& config, const Precision& precision) {
  const bool fp8_gathers = precision.tp_gather_bytes < precision.activation_bytes;
  return config.sequence_parallel && config.tp > 1 && fp8_gathers ? config.tp : 1.0;
}

}  // namespace

double fp8_input_cast_bytes(const GemmShape& shape, const Precision& precision,
                            bool saves_fp8_inputs) {
  return input_cast_bytes(
      shape, precision, saves_fp8_inputs ? quantize_bytes(precision) : plain_cast_bytes(precision));
}

double fp8_gradient_cast_bytes(const GemmShape& shape, const Precision& precision,
                               bool saves_fp8_inputs) {
  if (!precision.fp8 || !has_work(shape)) return 0.0;
  double bytes = shape.m * shape.n * shape.batch * quantize_bytes(precision);
  if (!saves_fp8_inputs) bytes += input_cast_bytes(shape, precision, plain_cast_bytes(precision));
  return bytes;
}

double fp8_cast_forward_bytes(const Model& model, const ParallelConfig& config,
                              const Precision& precision, bool saves_fp8_inputs) {
  if (!precision.fp8) return 0.0;
  const auto gemms = layer_linear_gemms(model, config.micro_batch, config.tp);
  const double sp = sp_split(config, precision);
  double bytes = 0.0;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const GemmShape& shape = gemms[i].shape;
    const bool after_norm = i == 0 || i == 2;  // qkv and ffn_up follow the two norms
    bytes += saves_fp8_inputs && after_norm
                 ? after_norm_input_cast_bytes(shape, precision, sp)
                 : fp8_input_cast_bytes(shape, precision, saves_fp8_inputs);
  }
  return bytes;
}

double fp8_cast_backward_bytes(const Model& model, const ParallelConfig& config,
                               const Precision& precision, bool saves_fp8_inputs) {
  if (!precision.fp8) return 0.0;
  const auto gemms = layer_linear_gemms(model, config.micro_batch, config.tp);
  // Transformer Engine under SP (sp_split): the inputs after a norm gathered again and
  // transposed; the row-parallel layers' (out, down) output gradients cast locally.
  const double sp = saves_fp8_inputs ? sp_split(config, precision) : 1.0;
  double bytes = 0.0;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const GemmShape& shape = gemms[i].shape;
    const bool after_norm = i == 0 || i == 2;  // qkv, ffn_up: column-parallel, SP-gathered input
    if (sp > 1.0 && !after_norm) {
      bytes += row_parallel_gradient_cast_bytes(shape, precision, sp);
      continue;
    }
    bytes += fp8_gradient_cast_bytes(shape, precision, saves_fp8_inputs);
    if (sp > 1.0 && has_work(shape)) {
      bytes += gathered_transpose_bytes(shape.m * shape.k * shape.batch, precision, sp);
    }
  }
  return bytes;
}

namespace {

/// FP8 with delayed scaling: the recipe whose amaxes are all-reduced.
bool delayed_fp8(const Precision& precision) {
  return precision.fp8 && precision.recipe == Fp8Recipe::delayed;
}

}  // namespace

bool reduces_amax(const Training& training) { return delayed_fp8(precision_of(training)); }

AmaxReductions fp8_amax_reductions(const ParallelConfig& config, const Precision& precision,
                                   double layers, long long micro_batches, const GroupLink& link,
                                   const Calibration* calibration) {
  AmaxReductions out;
  if (!delayed_fp8(precision) || link.ranks <= 1) return out;
  const double chunks = std::max(1, config.virtual_stages);
  const double fp32_bytes = 4.0;
  out.bytes_per_call = fp32_bytes * kAmaxesPerLinear * kLinearsPerLayer * layers / chunks;
  out.calls_per_step = 2.0 * chunks * static_cast<double>(micro_batches);
  out.time_per_call_s =
      collective_time_s(Collective::all_reduce, out.bytes_per_call, link, calibration);
  return out;
}

AmaxReductions fp8_current_amax_reductions(const ParallelConfig& config, const Precision& precision,
                                           double layers, double tp_ffn_share,
                                           long long micro_batches, const GroupLink& link,
                                           const Calibration* calibration) {
  AmaxReductions out;
  if (!precision.fp8 || precision.recipe != Fp8Recipe::current || !config.sequence_parallel ||
      link.ranks <= 1) {
    return out;
  }
  const double per_pass =
      kCurrentAmaxAttentionCallsPerPass + kCurrentAmaxFfnCallsPerPass * tp_ffn_share;
  const double forward_calls = per_pass * (layers + config.recomputed_layers(layers));
  const double backward_calls = per_pass * layers;
  const double fp32_bytes = 4.0;
  out.bytes_per_call = fp32_bytes;
  out.calls_per_step = (forward_calls + backward_calls) * static_cast<double>(micro_batches);
  out.time_per_call_s =
      collective_time_s(Collective::all_reduce, out.bytes_per_call, link, calibration);
  return out;
}

}  // namespace trident
