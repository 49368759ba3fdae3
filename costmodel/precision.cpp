#include "costmodel/precision.h"

#include <algorithm>
#include <cstddef>

#include "costmodel/collective.h"
#include "costmodel/gemms.h"

namespace trident {

namespace {

/// Transformer Engine's cast_transpose: read the 16-bit tensor, write its FP8 copy and the
/// FP8 transpose (Hopper's FP8 GEMMs take TN operands only, so the weight gradient needs it).
constexpr double kCastTransposeBytes = 2.0 + 1.0 + 1.0;
/// After a fused LayerNormLinear the norm writes its output in FP8 (1 byte instead of the 2
/// already priced with the norm: -1), and a transpose reads that copy and writes the
/// transposed one (+1 +1).
constexpr double kNormFusedCastBytes = -1.0 + 1.0 + 1.0;
/// Current scaling computes the tensor's amax before the cast: one more read of the
/// 16-bit tensor (TE Float8CurrentScaling; torchao tensorwise dynamic scaling).
constexpr double kCurrentScalingAmaxBytes = 2.0;
/// A plain cast (torchao's hp_tensor_to_float8_dynamic): read 2, write 1.
constexpr double kCastBytes = 2.0 + 1.0;

double amax_pass_bytes(const Precision& precision) {
  return precision.recipe == Fp8Recipe::current ? kCurrentScalingAmaxBytes : 0.0;
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
      if (training.fp8.communication) p.tp_gather_bytes = 1.0;
      if (training.fp8.params) p.weight_gather_bytes = 1.0;
      break;
  }
  return p;
}

double weight_memory_bytes_per_parameter(const Precision& precision, bool fp8_weight_cache) {
  constexpr double kFp8CopyAndTransposeBytes = 1.0 + 1.0;
  if (!precision.fp8) return precision.weight_bytes;
  if (precision.fp8_params) return kFp8CopyAndTransposeBytes;
  return precision.weight_bytes + (fp8_weight_cache ? kFp8CopyAndTransposeBytes : 0.0);
}

namespace {

/// A GEMM with a zero dimension (a layer's FFN where every MoE layer's is routed): no kernel.
bool has_work(const GemmShape& shape) {
  return shape.m > 0.0 && shape.n > 0.0 && shape.k > 0.0 && shape.batch > 0.0;
}

/// One GEMM's input cast at `per_element` bytes, plus current scaling's amax pass.
double input_cast_bytes(const GemmShape& shape, const Precision& precision, double per_element) {
  if (!precision.fp8 || !has_work(shape)) return 0.0;
  return shape.m * shape.k * shape.batch * (per_element + amax_pass_bytes(precision));
}

}  // namespace

double fp8_input_cast_bytes(const GemmShape& shape, const Precision& precision,
                            bool saves_fp8_inputs) {
  return input_cast_bytes(shape, precision, saves_fp8_inputs ? kCastTransposeBytes : kCastBytes);
}

double fp8_gradient_cast_bytes(const GemmShape& shape, const Precision& precision,
                               bool saves_fp8_inputs) {
  if (!precision.fp8 || !has_work(shape)) return 0.0;
  double bytes =
      shape.m * shape.n * shape.batch * (kCastTransposeBytes + amax_pass_bytes(precision));
  if (!saves_fp8_inputs) bytes += input_cast_bytes(shape, precision, kCastBytes);
  return bytes;
}

double fp8_cast_forward_bytes(const Model& model, const ParallelConfig& config,
                              const Precision& precision, bool saves_fp8_inputs) {
  if (!precision.fp8) return 0.0;
  const auto gemms = layer_linear_gemms(model, config.micro_batch, config.tp);
  double bytes = 0.0;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const GemmShape& shape = gemms[i].shape;
    const bool after_norm = i == 0 || i == 2;  // qkv and ffn_up follow the two norms
    bytes += saves_fp8_inputs && after_norm
                 ? input_cast_bytes(shape, precision, kNormFusedCastBytes)
                 : fp8_input_cast_bytes(shape, precision, saves_fp8_inputs);
  }
  return bytes;
}

double fp8_cast_backward_bytes(const Model& model, const ParallelConfig& config,
                               const Precision& precision, bool saves_fp8_inputs) {
  double bytes = 0.0;
  for (const NamedGemm& gemm : layer_linear_gemms(model, config.micro_batch, config.tp)) {
    bytes += fp8_gradient_cast_bytes(gemm.shape, precision, saves_fp8_inputs);
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

}  // namespace trident
