#pragma once
/// What the GPU's kernels reach in a training run, per GPU type, each number with its source
/// (docs/cost_model.md#kernels): SM count (wave quantisation), sustained clock under a
/// training load (power-capped) against the boost-clock GEMM ceiling, fused attention's
/// share of peak. Also the dtype check that keeps a dtype without a peak out of the model.
#include <optional>
#include <string>

#include "costmodel/model.h"
#include "topology/gpu.h"

namespace trident {

/// Kernel facts of one GPU type. Zeros mean "not published": the model then falls back to
/// the tile model without waves, a sustained ratio of 1 and the GEMM tile model for attention.
struct KernelProfile {
  int sm_count = 0;                   ///< streaming multiprocessors (wave quantisation)
  double sustained_ratio = 1.0;       ///< MSMF / MAMF: saturated-clock GEMM over boost burst
  double ensemble_ratio = 1.0;        ///< slowest GPU of the busy job over one GPU alone
  double flash_forward_share = 0.0;   ///< fused attention forward, share of dense peak
  double flash_backward_share = 0.0;  ///< fused attention backward, share of dense peak
  /// FlashAttention-2's shares where they differ (Hopper); 0 = the fused shares above.
  double flash2_forward_share = 0.0;
  double flash2_backward_share = 0.0;
  /// The fused (cuDNN) kernel's and FlashAttention-2's sustained ratios where measured apart;
  /// 0 = sustained_ratio (attention_clock_ratio).
  double fused_sustained_ratio = 0.0;
  double flash2_sustained_ratio = 0.0;
  /// The same kernels measured across sequence lengths, with and without the causal mask
  /// (topology/gpu.h AttentionCurve): views of the GPU's curves (a profile lives no longer than
  /// the GPU it was made from; no copy in the hot path); null or empty = the scalar shares
  /// above at every length.
  const AttentionCurve* flash_causal = nullptr;
  const AttentionCurve* flash_full = nullptr;
  const AttentionCurve* flash2_causal = nullptr;
  const AttentionCurve* flash2_full = nullptr;
  const AttentionCurve* triton_causal = nullptr;  ///< FlashAttention's Triton kernel
  const AttentionCurve* triton_full = nullptr;

  /// The share of the boost-clock rate a tensor-core kernel keeps in a training job: the
  /// saturated clock of one GPU, paced by the slowest GPU of its job (gpu_for_job)
  /// (docs/cost_model.md#kernels).
  [[nodiscard]] double training_clock_ratio() const { return sustained_ratio * ensemble_ratio; }
};

/// Attention kernel: unfused (batched GEMMs + a softmax kernel over the b*a*s^2 scores, kept
/// for backward), flash (FlashAttention 2 through PyTorch SDPA or the flash-attn package),
/// cuDNN fused attention through Transformer Engine, or flash_triton (FlashAttention's Triton
/// kernel, llm-foundry's 2023 `attn_impl: triton`; priced only on a GPU that measured it). The
/// fused ones skip the causal half. A stack names one (costmodel/stack.h).
enum class AttentionKernel { unfused, flash, cudnn, flash_triton };

/// The share of the boost-clock rate fused attention `kernel` keeps in a training job: its own
/// measured sustained ratio where the GPU has one (`cudnn`: the fused kernel's, `flash`:
/// FlashAttention-2's), else the GEMMs'; paced by the job's slowest GPU as the GEMMs are.
[[nodiscard]] double attention_clock_ratio(const KernelProfile& profile, AttentionKernel kernel);

/// Every kernel but `unfused` is flash-style: no s^2 tensors, causal blocks skipped.
[[nodiscard]] constexpr bool is_fused(AttentionKernel kernel) {
  return kernel != AttentionKernel::unfused;
}
/// The share of the scores a fused kernel computes under the causal mask: the blocks above the
/// diagonal are skipped (half, for long sequences).
inline constexpr double kFusedCausalShare = 0.5;
/// A fused kernel's backward over its forward FLOPs: 5 GEMMs against 2, the scores recomputed
/// from the saved log-sum-exp (Dao 2023, FlashAttention-2 section 3.1.2).
inline constexpr double kFusedBackwardRatio = 2.5;

/// Fused attention's forward and backward share of dense peak for one layer's call.
struct AttentionShares {
  double forward = 0.0;
  double backward = 0.0;
};

/// The curve at sequence length `seq`: linear in log2(seq) between measured points, the end
/// points' values beyond them. {0, 0} for an empty curve.
[[nodiscard]] AttentionShares curve_shares(const AttentionCurve& curve, double seq);

/// Shares of the fused `kernel` (not `unfused`) for a causal layer whose local
/// sequence is `local_seq` tokens split over `cp` context-parallel ranks. Without CP every
/// block up to the diagonal runs under the causal mask. With CP, Transformer Engine's
/// load-balanced ring (each rank holds chunks i and 2·cp−1−i of s/(2·cp) tokens) runs one
/// causal call over the rank's local tokens, 1/cp of its work, and full blocks of a chunk's
/// length for the rest (docs/cost_model.md#attention-curves): the two blend by time. Without
/// curves: the scalar shares. Ulysses (all-to-all) CP instead runs one causal call over the
/// whole sequence, cp x local_seq, with heads / cp (`ulysses`). `flash`: FlashAttention-2's
/// curves or scalars where the GPU has them, `cudnn` the GPU's fused ones, `flash_triton` its
/// own curves (check_stack_on_gpu refuses a GPU without them; without, the fused ones).
[[nodiscard]] AttentionShares attention_shares(const KernelProfile& profile, AttentionKernel kernel,
                                               double local_seq, int cp, bool ulysses = false);

/// The profile of `gpu`, from its preset's keys sm_count, sustained_clock_ratio,
/// ensemble_clock_ratio, the attention kernels' shares, curves and sustained-clock ratios
/// (configs/gpus/*.yaml, each with its source); a GPU file without them gets the empty profile.
[[nodiscard]] KernelProfile kernel_profile(const Gpu& gpu);
/// A profile views its GPU's curves: never of a temporary.
KernelProfile kernel_profile(Gpu&& gpu) = delete;

/// Φ⁻¹(p), the standard normal quantile, for 0 < p < 1 (P. J. Acklam's rational
/// approximation with its published coefficients, relative error below 1.2e-9).
[[nodiscard]] double inverse_normal_cdf(double p);

/// The expected largest of `n` independent standard normal draws (n >= 1): Blom's (1958)
/// plotting position Φ⁻¹((n − 0.375) / (n + 0.25)), 0.75% above the exact expectation at n = 8,
/// 0.3-0.45% below it from 64 to 131,072 (docs/cost_model.md#kernels); 0 for one draw.
[[nodiscard]] double expected_max_standard_normal(long long n);

/// The pace of a job of `to_gpus` GPUs from the pace `ratio` of a job of `from_gpus` (both at
/// least 2), each GPU's sustained rate spread normally with relative standard deviation
/// `spread` around the same mean: the slowest of N is 1 − spread·z(N) of the mean, so
/// ratio × (1 − spread·z(to)) / (1 − spread·z(from)), z = expected_max_standard_normal, and
/// never above 1: no job runs faster than one GPU alone.
[[nodiscard]] double job_pace_ratio(double ratio, double spread, int from_gpus, int to_gpus);

/// Whether `gpu` prices a job of `gpus` GPUs only through gpu_for_job: a job of one GPU keeps
/// its own clock, and a GPU with a clock spread runs at the slowest of the job's GPUs.
[[nodiscard]] bool needs_job_pace(const Gpu& gpu, int gpus);

/// The GPU as a job of `gpus` GPUs runs it: a job of one GPU has no sibling to wait for and
/// keeps its own sustained clock (ensemble_clock_ratio 1, no spread); a larger job runs at its
/// slowest GPU's pace: the file's ratio (a job of kPaceReferenceGpus) moved to the job's size by
/// job_pace_ratio where the GPU has a clock_spread (docs/cost_model.md#kernels).
[[nodiscard]] Gpu gpu_for_job(Gpu gpu, int gpus);

/// GEMM output tile of the Hopper/Ampere cuBLAS kernels (the canonical efficient tile,
/// NVIDIA "Matrix Multiplication Background User's Guide": 128x256 and 256x128).
inline constexpr double kGemmTileShort = 128.0;
inline constexpr double kGemmTileLong = 256.0;

/// Wave quantisation: tiles / (SMs x ceil(tiles / SMs)); 1 when the SM count is unknown.
[[nodiscard]] double wave_efficiency(double tiles, int sm_count);

/// The dtype to train in instead when the GPU has no peak for the model's (fp16 where the GPU
/// has it, else bf16); nullopt when the model's dtype runs there.
[[nodiscard]] std::optional<Dtype> dtype_instead(const Model& model, const Gpu& gpu);

/// MXFP8 runs on block-scaled tensor cores: compute capability 10.0 to 11.x. Transformer Engine's
/// check_mxfp8_support: "Device compute capability 10.0 or higher required", and "not supported
/// on 12.0+ architectures yet" (transformer_engine/pytorch/quantization.py L61-67 @v2.9); its
/// MXFP8 guide lists SM 10.0 and 10.3 (docs/features/low_precision_training/mxfp8/mxfp8.rst).
inline constexpr double kMxfp8MinCapability = 10.0;
inline constexpr double kMxfp8EndCapability = 12.0;  ///< the first capability refused again

/// Whether `recipe` runs on `gpu`: MXFP8 only on compute capability [kMxfp8MinCapability,
/// kMxfp8EndCapability) (or an unknown one); the tensor-scaled and blockwise recipes anywhere.
[[nodiscard]] bool fp8_recipe_runs_on(Fp8Recipe recipe, const Gpu& gpu);

/// Throws InputError naming training.fp8.recipe (its file and line where the model file set
/// it) when the model trains in MXFP8 on a GPU of known compute capability outside
/// [kMxfp8MinCapability, kMxfp8EndCapability).
void check_fp8_recipe_on_gpu(const Model& model, const Gpu& gpu);

/// Throws InputError "model NAME: dtype D not supported by GPU (no D peak); set
/// training.dtype: fp16" (or bf16) when the GPU has no peak for the model's dtype, and what
/// check_fp8_recipe_on_gpu throws.
void check_model_on_gpu(const Model& model, const Gpu& gpu);

}  // namespace trident
