#pragma once
/// Compute time on one GPU: GEMMs from a shape-aware roofline, memory-bound work (norms,
/// activations, dropout, softmax when not fused, the optimizer step) as bytes over HBM
/// bandwidth. Derivation and sources: docs/cost_model.md#compute.
#include <array>

#include "costmodel/calibration.h"
#include "costmodel/gemms.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/stack.h"
#include "topology/gpu.h"

namespace trident {

/// Output tile edge of the GEMM kernels (cuBLAS/CUTLASS 128x128 tiles on A100/H100).
inline constexpr double kGemmTile = 128.0;
/// Inner-dimension length equivalent to a tile's fixed cost (pipeline fill + epilogue):
/// two 32-deep k-stages of the software pipeline.
inline constexpr double kGemmKFill = 64.0;
/// Share of the HBM bandwidth a streaming kernel reaches (H100: 2.8 of 3.35 TB/s coalesced,
/// Nsight Compute measurements; A100 80GB: ~1.7 of 2.0 TB/s).
inline constexpr double kHbmAchievableFraction = 0.85;

/// Tile quantisation of a GEMM: useful / padded work with kGemmTile tiles along m and n, times
/// k / (k + kGemmKFill) for the per-tile fixed cost. 1 for large multiples of the tile.
[[nodiscard]] double gemm_shape_efficiency(const GemmShape& shape);

struct KernelProfile;
struct Precision;

/// With the GPU's SM count (> 0): 128x256 output tiles in the better orientation, their
/// fill, wave quantisation over the SMs (tiles / (SMs x ceil(tiles / SMs)), NVIDIA "Matrix
/// Multiplication Background User's Guide"), and k / (k + k_fill_elems). sm_count 0: as above.
[[nodiscard]] double gemm_shape_efficiency(const GemmShape& shape, int sm_count,
                                           double k_fill_elems);

/// Per-SM tensor rate (TFLOP/s) at which kGemmKFill holds: A100, 312 / 108 SMs.
inline constexpr double kGemmKFillReferenceSmTflops = 312.0 / 108.0;
/// A tile's fixed cost (pipeline fill, epilogue) is a fixed time; in k-elements it grows
/// with the SM's tensor rate: kGemmKFill x (peak / SMs) / kGemmKFillReferenceSmTflops
/// (H100: 64 x 7.49 / 2.89 = 166). kGemmKFill when the SM count is unknown.
[[nodiscard]] double gemm_k_fill(const Gpu& gpu, Dtype dtype, int sm_count);

/// The GEMM ceiling in a training job, before tile and wave losses: peak x matmul_efficiency x
/// profile.training_clock_ratio() (docs/cost_model.md#compute, #kernels).
[[nodiscard]] double gemm_ceiling_tflops(const Gpu& gpu, Dtype dtype, const KernelProfile& profile);

/// Sustained compute rate of one GEMM: gemm_ceiling_tflops x shape efficiency
/// (docs/cost_model.md#compute).
[[nodiscard]] double gemm_rate_tflops(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                                      const GemmShape& shape);

/// Seconds for one GEMM: roofline of peak x matmul_efficiency x shape efficiency against
/// bytes (A, B, C once each) over achievable HBM bandwidth. A calibration sample of a
/// nearby shape replaces the compute rate.
[[nodiscard]] double gemm_time_s(const Gpu& gpu, Dtype dtype, const GemmShape& shape,
                                 const Calibration* calibration = nullptr);
/// Same with the GPU's kernel profile looked up once by the caller.
[[nodiscard]] double gemm_time_s(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                                 const GemmShape& shape, const Calibration* calibration);
/// Forward GEMM time plus its two backward GEMMs (dA: m x k x n, dB: k x n x m).
[[nodiscard]] double gemm_backward_time_s(const Gpu& gpu, Dtype dtype, const GemmShape& shape,
                                          const Calibration* calibration = nullptr);
[[nodiscard]] double gemm_backward_time_s(const Gpu& gpu, Dtype dtype, const KernelProfile& profile,
                                          const GemmShape& shape, const Calibration* calibration);

/// Seconds for one of the linear layers' GEMMs (Transformer Engine's modules: QKV, the
/// projections, the FFN, the experts, MLA's up-projections) in the run's precision:
/// gemm_time_s in precision.linear_gemm with the compute rate (calibrated or not) times
/// precision.linear_gemm_rate_ratio (MXFP8's block-scaled kernels).
[[nodiscard]] double linear_gemm_time_s(const Gpu& gpu, const Precision& precision,
                                        const KernelProfile& profile, const GemmShape& shape,
                                        const Calibration* calibration);
/// The same for the two backward GEMMs (input and weight gradient).
[[nodiscard]] double linear_gemm_backward_time_s(const Gpu& gpu, const Precision& precision,
                                                 const KernelProfile& profile,
                                                 const GemmShape& shape,
                                                 const Calibration* calibration);

/// Seconds to stream `bytes` through HBM at the achievable fraction.
[[nodiscard]] double hbm_time_s(const Gpu& gpu, double bytes);

/// Bytes per element of a dtype (bf16/fp16 2, fp8 1, tf32/fp32 4).
[[nodiscard]] double dtype_bytes(Dtype dtype);

/// Software features of the training framework that change the compute.
struct ComputeFeatures {
  /// The stack's attention kernel (is_fused: flash-style, no s^2 tensors).
  AttentionKernel attention = AttentionKernel::cudnn;
  SelectiveKind selective = SelectiveKind::attention;  ///< what selective recompute repeats
  bool fp8_saves_fp8_inputs = true;  ///< FP8: inputs kept as their FP8 copy (TE), not recast
  /// Context-parallel ranks of the split (the layer is priced on its local sequence): with
  /// CP > 1 most of the attention runs as full, unmasked blocks (kernels.h attention_shares).
  int cp = 1;
  /// CP by all-to-all (Ulysses): one causal call over the whole sequence with heads / cp.
  bool ulysses = false;
  /// Bytes of the elementwise ops as the stack's code runs them (Stack::elementwise).
  ElementwiseBytes elementwise{};
  /// Whose unfused attention runs where `attention` is unfused (Stack::unfused_softmax).
  UnfusedSoftmax unfused_softmax = UnfusedSoftmax::transformer_engine;
  /// FP8: the linears' copies follow the GPU's layout rule (Stack::fp8_follows_gpu_layout);
  /// false: a transposed copy on every GPU, Blackwell too (torchao, Transformer Engine 1.x).
  bool fp8_gpu_layout = true;
  [[nodiscard]] bool fused_attention() const { return is_fused(attention); }
};

/// GQA's K and V repeated to every query head before the attention call (PyTorch eager Llama
/// code: ibm-fms attention.py L196-202 expand + flatten, torchtitan repeat_kv): per full-head
/// element of K and of V, a 2-byte write and a read of 2·kv_heads/heads, forward; the backward
/// sums the gradients back, the same bytes again. 0 for MHA.
[[nodiscard]] double gqa_repeat_bytes(const Model& model, const ParallelConfig& config);

/// Elements of multi-latent attention's rotary parts one GPU rotates per micro-batch: Q's
/// heads/tp x qk_rope_head_dim and K's one shared qk_rope_head_dim per token (k_pos_emb,
/// gathered whole under sequence parallelism, multi_latent_attention.py L413-420, L475-488
/// @core_v0.12.0). 0 without MLA.
[[nodiscard]] double mla_rope_elements(const Model& model, const ParallelConfig& config);

/// HBM bytes of the copies that build multi-latent attention's inputs, one micro-batch, one
/// layer, forward (the same again backward): torch.cat of Q's plain and rotary parts, of K's
/// plain part and the expanded K rope, and V's .contiguous() (multi_latent_attention.py
/// L491-499 @core_v0.12.0): Q and K (heads x (nope + rope)) and V (heads x v), each read and
/// written once in 16 bits. 0 without MLA.
[[nodiscard]] double mla_qkv_copy_bytes(const Model& model, const ParallelConfig& config);

/// One micro-batch through one transformer layer on one GPU (after the TP split).
struct LayerTime {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double recompute_s = 0.0;     ///< extra forward work of the recompute mode
  double gemm_forward_s = 0.0;  ///< the linear-layer GEMMs alone (what TP overlap can hide)
  /// The attention core (scores, softmax, context) alone, forward and backward: what a
  /// context-parallel ring step hides behind (costmodel/context_parallel.h).
  double attention_forward_s = 0.0;
  double attention_backward_s = 0.0;
  /// Each linear GEMM (QKV, output projection, FFN up, FFN down): forward, input gradient,
  /// weight gradient — what each TP collective overlaps with (Transformer Engine userbuffers).
  std::array<double, 4> gemm_fprop_s{};
  std::array<double, 4> gemm_dgrad_s{};
  std::array<double, 4> gemm_wgrad_s{};
  /// The output layer's weight-gradient GEMM, in backward_s (each MTP pass's too): what
  /// Megatron-Core's defer_embedding_wgrad_compute moves to the pipeline's flush (output_head_time
  /// sets it; 0 in a decoder layer).
  double output_wgrad_s = 0.0;
};

[[nodiscard]] LayerTime layer_time(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                                   const ComputeFeatures& features,
                                   const Calibration* calibration = nullptr);

/// A layer's linear GEMMs, one micro-batch (layer_linear_gemms): each one's forward, input
/// gradient and weight gradient, and their sums. They do not depend on how attention runs, so
/// a caller pricing the same layer under two attention schedules prices them once.
struct LinearGemmTimes {
  std::array<double, 4> fprop_s{};
  std::array<double, 4> dgrad_s{};
  std::array<double, 4> wgrad_s{};
  double forward_s = 0.0;   ///< the fprop times summed
  double backward_s = 0.0;  ///< the dgrad and wgrad times summed
};

[[nodiscard]] LinearGemmTimes linear_gemm_times(const Gpu& gpu, const Model& model,
                                                const ParallelConfig& config,
                                                const Calibration* calibration = nullptr);

/// layer_time with the linear GEMMs already priced (linear_gemm_times of the same layer).
[[nodiscard]] LayerTime layer_time(const Gpu& gpu, const Model& model, const ParallelConfig& config,
                                   const ComputeFeatures& features, const LinearGemmTimes& linear,
                                   const Calibration* calibration = nullptr);

/// HBM bytes per logit element of the loss's kernels (the stack's cross-entropy).
struct LossBytes {
  double forward = kCrossEntropyForwardBytesPerLogit;
  double backward = kCrossEntropyBackwardBytesPerLogit;
};

/// One micro-batch through the output layer and the cross-entropy loss (last stage).
[[nodiscard]] LayerTime logits_time(const Gpu& gpu, const Model& model,
                                    const ParallelConfig& config,
                                    const Calibration* calibration = nullptr,
                                    const LossBytes& loss = {});

/// Everything past the last layer on the last stage, one micro-batch: the output layer and
/// loss, and for each multi-token-prediction module its projection and another pass through
/// the shared output layer and loss (its transformer layer is counted with the stage's layers,
/// pipeline.h model_stage_layers).
[[nodiscard]] LayerTime output_head_time(const Gpu& gpu, const Model& model,
                                         const ParallelConfig& config,
                                         const Calibration* calibration = nullptr,
                                         const LossBytes& loss = {});

/// SGD with momentum: read master, grad, momentum (12), write master, momentum (8), weight (2).
inline constexpr double kSgdBytesPerParameter = 22.0;

/// Seconds of the optimizer step over `parameters` local parameters (memory bound): Adam
/// streams the stack's `adam_step_bytes` per parameter (Stack::adam_step_bytes), SGD 22.
[[nodiscard]] double optimizer_time_s(const Gpu& gpu, Optimizer optimizer, double parameters,
                                      double adam_step_bytes);

struct Precision;
/// Seconds per step of an FP8 run's weight casts: fp8_weight_cast_bytes_per_parameter over the
/// `parameters` local weights, `casts_per_step` times (1 when the stack caches the FP8 copy
/// over the micro-batches, else once per micro-batch). 0 without FP8.
[[nodiscard]] double fp8_weight_cast_time_s(const Gpu& gpu, const Precision& precision,
                                            double casts_per_step, double parameters);

}  // namespace trident
