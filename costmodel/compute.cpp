#include "costmodel/compute.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "costmodel/kernels.h"
#include "costmodel/precision.h"

namespace trident {

namespace {

/// Useful share of the padded extent when `extent` is cut into `tile`-sized pieces.
double tile_fill(double extent, double tile) {
  if (extent <= 0.0) return 1.0;
  return extent / (std::ceil(extent / tile) * tile);
}

/// Bytes of the non-GEMM work of one layer's forward pass on one GPU (docs/cost_model.md):
/// two norms (read + write), two bias-dropout-residual adds (read 2 + 2, write 2, and the
/// 1-byte mask where the model has dropout) and the FFN activation. An unfused attention's
/// softmax and dropout are the attention's (attention_core_time, unfused_score_bytes).
double layer_elementwise_forward_bytes(const Model& model, const ParallelConfig& config,
                                       const ElementwiseBytes& ops) {
  const double tp = config.tp;
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len;
  const double hidden_elems = tokens * model.hidden / (config.sequence_parallel ? tp : 1.0);
  const double ffn_elems = tokens * model.ffn_hidden / tp;
  const bool dropout = model.dropout > 0.0;
  const double norm_bytes = model.norm == NormKind::rmsnorm ? ops.rmsnorm : 2.0 + 2.0;
  const double norms = 2.0 * norm_bytes * hidden_elems;
  const double residuals = 2.0 * (2.0 * 2.0 + 2.0 + (dropout ? 1.0 : 0.0)) * hidden_elems;
  const double activation = (is_gated(model.ffn) ? ops.glu : 4.0) * ffn_elems;
  return norms + residuals + activation;
}

/// Backward of the same ops: read the saved input and the incoming gradient, write the
/// gradient: twice the forward bytes.
double layer_elementwise_backward_bytes(const Model& model, const ParallelConfig& config,
                                        const ElementwiseBytes& ops) {
  return 2.0 * layer_elementwise_forward_bytes(model, config, ops);
}

/// Rotary position embedding of Q and K (models without learned positions): `bytes` per
/// element; fused (the default 4) reads and writes each 16-bit element once (Megatron's fused
/// RoPE, on by default: --no-rope-fusion turns it off; TE fused_apply_rotary_pos_emb), forward
/// and again backward on the gradients.
double rope_bytes(const Model& model, const ParallelConfig& config, const ElementwiseBytes& ops) {
  if (model.learned_positions) return 0.0;
  if (model.attention == AttentionKind::mla) return ops.mla_rope * mla_rope_elements(model, config);
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len;
  return ops.rope * tokens * (model.q_hidden() + model.kv_hidden()) / config.tp;
}

}  // namespace

double mla_rope_elements(const Model& model, const ParallelConfig& config) {
  if (model.attention != AttentionKind::mla) return 0.0;
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len;
  const double heads = static_cast<double>(model.heads) / config.tp;
  return tokens * (heads + 1.0) * model.mla.qk_rope_head_dim;
}

double mla_qkv_copy_bytes(const Model& model, const ParallelConfig& config) {
  if (model.attention != AttentionKind::mla) return 0.0;
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len;
  const double heads = static_cast<double>(model.heads) / config.tp;
  return (2.0 + 2.0) * tokens * heads * (2.0 * model.qk_head_dim() + model.v_head_dim());
}

double gqa_repeat_bytes(const Model& model, const ParallelConfig& config) {
  if (model.kv_heads >= model.heads) return 0.0;
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len;
  const double repeated = tokens * model.q_hidden() / config.tp;  // K or V at every query head
  return 2.0 * (2.0 + 2.0 * model.kv_heads / model.heads) * repeated;
}

double dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp8:
      return 1.0;
    case Dtype::tf32:
    case Dtype::fp32:
      return 4.0;
    case Dtype::bf16:
    case Dtype::fp16:
      return 2.0;
  }
  return 2.0;
}

double gemm_shape_efficiency(const GemmShape& shape) {
  return tile_fill(shape.m, kGemmTile) * tile_fill(shape.n, kGemmTile) * shape.k /
         (shape.k + kGemmKFill);
}

double gemm_shape_efficiency(const GemmShape& shape, int sm_count, double k_fill_elems) {
  if (sm_count <= 0) return gemm_shape_efficiency(shape);
  const double k_fill = shape.k / (shape.k + k_fill_elems);
  if (shape.m <= 0.0 || shape.n <= 0.0) return k_fill;  // no output tile: nothing to fill
  // 128x256 output tiles in the better orientation; all tiles of the batch share the waves.
  // Both orientations' tiles cover 128 x 256 elements, so useful / padded work is
  // m n b / (128 x 256 x tiles) x wave_efficiency(tiles) = m n b / (128 x 256 x SMs x waves):
  // the better orientation is the one with fewer tiles (fewer waves).
  const double batch = std::max(1.0, shape.batch);
  const double tall = std::ceil(shape.m / kGemmTileLong) * std::ceil(shape.n / kGemmTileShort);
  const double wide = std::ceil(shape.m / kGemmTileShort) * std::ceil(shape.n / kGemmTileLong);
  const double tiles = std::min(tall, wide) * batch;
  const double fill = shape.m * shape.n * batch / (kGemmTileShort * kGemmTileLong * tiles);
  return fill * wave_efficiency(tiles, sm_count) * k_fill;
}

double gemm_k_fill(const Gpu& gpu, Dtype dtype, int sm_count) {
  if (sm_count <= 0) return kGemmKFill;
  const double per_sm_tflops = gpu.peak_tflops(dtype) / sm_count;
  return kGemmKFill * per_sm_tflops / kGemmKFillReferenceSmTflops;
}

double gemm_ceiling_tflops(const Gpu& gpu, Dtype dtype, const KernelProfile& profile) {
  return gpu.peak_tflops(dtype) * gpu.gemm_efficiency(dtype) * profile.training_clock_ratio();
}

double gemm_rate_tflops(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                        const GemmShape& shape) {
  return gemm_ceiling_tflops(gpu, dtype, profile) *
         gemm_shape_efficiency(shape, profile.sm_count, gemm_k_fill(gpu, dtype, profile.sm_count));
}

double gemm_time_s(const Gpu& gpu, Dtype dtype, const GemmShape& shape,
                   const Calibration* calibration) {
  return gemm_time_s(gpu, dtype, kernel_profile(gpu), shape, calibration);
}

namespace {

/// gemm_time_s with the compute rate (modelled or calibrated) times `rate_ratio`: a kernel
/// slower than the dtype's tensor-scaled one at the same shape (kMxfp8GemmRateRatio).
double gemm_time_at_s(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                      const GemmShape& shape, const Calibration* calibration, double rate_ratio) {
  if (shape.flops() <= 0.0) return 0.0;
  double tflops = gemm_rate_tflops(gpu, dtype, profile, shape);
  if (calibration != nullptr) {
    const auto measured = calibration->gemm_tflops(std::llround(shape.m), std::llround(shape.n),
                                                   std::llround(shape.k), dtype);
    if (measured) tflops = *measured;
  }
  const double bytes = dtype_bytes(dtype) * shape.batch *
                       (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n);
  return std::max(shape.flops() / (tflops * rate_ratio * 1e12), hbm_time_s(gpu, bytes));
}

}  // namespace

double gemm_time_s(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                   const GemmShape& shape, const Calibration* calibration) {
  return gemm_time_at_s(gpu, dtype, profile, shape, calibration, 1.0);
}

double linear_gemm_time_s(const Gpu& gpu, const Precision& precision, const KernelProfile& profile,
                          const GemmShape& shape, const Calibration* calibration) {
  return gemm_time_at_s(gpu, precision.linear_gemm, profile, shape, calibration,
                        precision.linear_gemm_rate_ratio);
}

double linear_gemm_backward_time_s(const Gpu& gpu, const Precision& precision,
                                   const KernelProfile& profile, const GemmShape& shape,
                                   const Calibration* calibration) {
  return linear_gemm_time_s(gpu, precision, profile, shape.input_gradient(), calibration) +
         linear_gemm_time_s(gpu, precision, profile, shape.weight_gradient(), calibration);
}

double gemm_backward_time_s(const Gpu& gpu, Dtype dtype, const GemmShape& shape,
                            const Calibration* calibration) {
  return gemm_backward_time_s(gpu, dtype, kernel_profile(gpu), shape, calibration);
}

double gemm_backward_time_s(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                            const GemmShape& shape, const Calibration* calibration) {
  return gemm_time_s(gpu, dtype, profile, shape.input_gradient(), calibration) +
         gemm_time_s(gpu, dtype, profile, shape.weight_gradient(), calibration);
}

double hbm_time_s(const Gpu& gpu, double bytes) {
  if (gpu.memory_gbps <= 0.0) return 0.0;
  return bytes / (gpu.memory_gbps * kHbmAchievableFraction * 1e9);
}

namespace {

struct CoreTime {
  double forward_s = 0.0;
  double backward_s = 0.0;
};

/// Megatron-Core's `mla_up_proj` recompute (multi_latent_attention.py
/// qkv_up_proj_and_rope_apply, L444-510 @core_r0.12.0): the two up-projection GEMMs again, the
/// RoPE of Q's and K's rotary parts and the copies that build the attention's inputs
/// (mla_qkv_copy_bytes). Nothing without multi-latent attention.
double mla_up_recompute_s(const Gpu& gpu, const Precision& precision, const KernelProfile& profile,
                          const Model& model, const ParallelConfig& config,
                          const ElementwiseBytes& ops, const Calibration* calibration) {
  if (model.attention != AttentionKind::mla) return 0.0;
  double gemms_s = 0.0;
  for (const NamedGemm& gemm : mla_up_gemms(model, config.micro_batch, config.tp)) {
    gemms_s += linear_gemm_time_s(gpu, precision, profile, gemm.shape, calibration);
  }
  return gemms_s +
         hbm_time_s(gpu, rope_bytes(model, config, ops) + mla_qkv_copy_bytes(model, config));
}

/// Fused (flash) attention: the causal half of the scores and context work at the GPU's
/// measured kernel share of peak (forward and backward apart), backward 2.5x the forward
/// FLOPs (5 GEMMs against 2, Dao 2023). Without a published share: the GEMM tile model.
/// Unfused (2021): the batched GEMMs plus the memory-bound softmax and dropout.
CoreTime attention_core_time(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                             const Model& model, const ParallelConfig& config,
                             const ComputeFeatures& features, const Calibration* calibration) {
  AttentionGemms core = attention_gemms(model, config.micro_batch, config.tp);
  CoreTime time;
  if (features.fused_attention()) {
    core.scores.batch *= kFusedCausalShare;
    core.context.batch *= kFusedCausalShare;
    const AttentionShares shares =
        attention_shares(profile, features.attention, model.seq_len, features.cp, features.ulysses);
    if (shares.forward > 0.0 && shares.backward > 0.0) {
      const double flops = core.scores.flops() + core.context.flops();
      const double rate =
          gpu.peak_tflops(dtype) * 1e12 * attention_clock_ratio(profile, features.attention);
      time.forward_s = flops / (rate * shares.forward);
      time.backward_s = kFusedBackwardRatio * flops / (rate * shares.backward);
      return time;
    }
    time.forward_s = gemm_time_s(gpu, dtype, profile, core.scores, calibration) +
                     gemm_time_s(gpu, dtype, profile, core.context, calibration);
    time.backward_s = kFusedBackwardRatio * time.forward_s;
    return time;
  }
  // The softmax (and dropout) over the b x heads/t x s x s scores as the stack's unfused
  // attention runs them (unfused_score_bytes).
  const double scores = core.scores.m * core.scores.n * core.scores.batch;
  const UnfusedScoreBytes moved =
      unfused_score_bytes(features.unfused_softmax, model, config, dtype_bytes(dtype));
  time.forward_s = gemm_time_s(gpu, dtype, profile, core.scores, calibration) +
                   gemm_time_s(gpu, dtype, profile, core.context, calibration) +
                   hbm_time_s(gpu, moved.forward_moved * scores);
  time.backward_s = gemm_backward_time_s(gpu, dtype, profile, core.scores, calibration) +
                    gemm_backward_time_s(gpu, dtype, profile, core.context, calibration) +
                    hbm_time_s(gpu, moved.backward_moved * scores);
  return time;
}

}  // namespace

LinearGemmTimes linear_gemm_times(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                                  const Calibration* calibration) {
  const Precision precision = precision_of(model.training);
  const KernelProfile profile = kernel_profile(gpu);
  const auto linear = layer_linear_gemms(model, config.micro_batch, config.tp);
  LinearGemmTimes time;
  for (std::size_t i = 0; i < linear.size(); ++i) {
    const GemmShape& shape = linear[i].shape;
    time.fprop_s[i] = linear_gemm_time_s(gpu, precision, profile, shape, calibration);
    time.dgrad_s[i] =
        linear_gemm_time_s(gpu, precision, profile, shape.input_gradient(), calibration);
    time.wgrad_s[i] =
        linear_gemm_time_s(gpu, precision, profile, shape.weight_gradient(), calibration);
    time.forward_s += time.fprop_s[i];
    time.backward_s += time.dgrad_s[i] + time.wgrad_s[i];
  }
  return time;
}

LayerTime layer_time(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                     const ComputeFeatures& features, const Calibration* calibration) {
  return layer_time(gpu, model, config, features,
                    linear_gemm_times(gpu, model, config, calibration), calibration);
}

LayerTime layer_time(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                     const ComputeFeatures& features, const LinearGemmTimes& linear,
                     const Calibration* calibration) {
  const Precision precision = precision_of(model.training, gpu, features.fp8_gpu_layout);
  const KernelProfile profile = kernel_profile(gpu);
  LayerTime time;
  time.gemm_fprop_s = linear.fprop_s;
  time.gemm_dgrad_s = linear.dgrad_s;
  time.gemm_wgrad_s = linear.wgrad_s;
  time.gemm_forward_s = linear.forward_s;
  const double linear_backward_s = linear.backward_s;
  const CoreTime core =
      attention_core_time(gpu, precision.attention, profile, model, config, features, calibration);
  time.attention_forward_s = core.forward_s;
  time.attention_backward_s = core.backward_s;
  const ElementwiseBytes& ops = features.elementwise;
  // RoPE, and MLA's copies into Q, K and V (their gradients are copies again, backward).
  const double rope = rope_bytes(model, config, ops) + mla_qkv_copy_bytes(model, config);
  const double repeat = ops.gqa_repeat_kv ? gqa_repeat_bytes(model, config) : 0.0;
  const double fwd_bytes =
      layer_elementwise_forward_bytes(model, config, ops) + rope + repeat +
      fp8_cast_forward_bytes(model, config, precision, features.fp8_saves_fp8_inputs);
  time.forward_s = time.gemm_forward_s + core.forward_s + hbm_time_s(gpu, fwd_bytes);
  time.backward_s =
      linear_backward_s + core.backward_s +
      hbm_time_s(gpu, layer_elementwise_backward_bytes(model, config, ops) + rope + repeat +
                          fp8_cast_backward_bytes(model, config, precision,
                                                  features.fp8_saves_fp8_inputs));
  switch (config.recompute) {
    case Recompute::none:
      break;
    case Recompute::selective:
      // Megatron: core attention again. torchtitan per-op: every other linear GEMM and the
      // memory-bound ops (norms, activation, RoPE); SDPA's output is kept. Megatron-Core's
      // mla_up_proj: MLA's up-projections and the copies into Q, K and V.
      switch (features.selective) {
        case SelectiveKind::attention:
          time.recompute_s = core.forward_s;
          break;
        case SelectiveKind::per_op:
          time.recompute_s = 0.5 * time.gemm_forward_s + hbm_time_s(gpu, fwd_bytes);
          break;
        case SelectiveKind::mla_up_proj:
          time.recompute_s =
              mla_up_recompute_s(gpu, precision, profile, model, config, ops, calibration);
          break;
      }
      break;
    case Recompute::full:
      time.recompute_s = time.forward_s;
      break;
  }
  return time;
}

LayerTime logits_time(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                      const Calibration* calibration, const LossBytes& loss) {
  const Dtype dtype = precision_of(model.training).output_gemm;
  const double tokens = static_cast<double>(config.micro_batch) * model.seq_len;
  const GemmShape logits = logits_gemm(model, config.micro_batch, config.tp).shape;
  // The loss over the vocabulary: `loss` bytes per logit element (the stack's kernels).
  const double logit_elems = tokens * model.vocab / config.tp;
  LayerTime time;
  time.gemm_forward_s = gemm_time_s(gpu, dtype, logits, calibration);
  time.forward_s = time.gemm_forward_s + hbm_time_s(gpu, loss.forward * logit_elems);
  time.backward_s = gemm_backward_time_s(gpu, dtype, logits, calibration) +
                    hbm_time_s(gpu, loss.backward * logit_elems);
  time.output_wgrad_s = gemm_time_s(gpu, dtype, logits.weight_gradient(), calibration);
  return time;
}

LayerTime output_head_time(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                           const Calibration* calibration, const LossBytes& loss) {
  LayerTime head = logits_time(gpu, model, config, calibration, loss);
  if (model.mtp_layers <= 0) return head;
  // Each MTP module runs the shared output head and its loss once more, and its projection.
  const double passes = 1.0 + model.mtp_layers;
  const Precision precision = precision_of(model.training);
  const KernelProfile profile = kernel_profile(gpu);
  const GemmShape projection = mtp_projection_gemm(model, config.micro_batch, config.tp).shape;
  head.gemm_forward_s *= passes;
  head.output_wgrad_s *= passes;
  head.forward_s =
      passes * head.forward_s +
      model.mtp_layers * linear_gemm_time_s(gpu, precision, profile, projection, calibration);
  head.backward_s = passes * head.backward_s +
                    model.mtp_layers * linear_gemm_backward_time_s(gpu, precision, profile,
                                                                   projection, calibration);
  return head;
}

double optimizer_time_s(const Gpu& gpu, Optimizer optimizer, double parameters,
                        double adam_step_bytes) {
  const double per_parameter =
      optimizer == Optimizer::adam ? adam_step_bytes : kSgdBytesPerParameter;
  return hbm_time_s(gpu, per_parameter * parameters);
}

double fp8_weight_cast_time_s(const Gpu& gpu, const Precision& precision, double casts_per_step,
                              double parameters) {
  if (!precision.fp8) return 0.0;
  return casts_per_step *
         hbm_time_s(gpu, fp8_weight_cast_bytes_per_parameter(precision) * parameters);
}

}  // namespace trident
