#include "costmodel/kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "topology/errors.h"

namespace trident {

KernelProfile kernel_profile(const Gpu& gpu) {
  return {gpu.sm_count,
          gpu.sustained_clock_ratio,
          gpu.ensemble_clock_ratio,
          gpu.attention_forward_efficiency,
          gpu.attention_backward_efficiency,
          gpu.flash2_forward_efficiency,
          gpu.flash2_backward_efficiency,
          gpu.attention_sustained_clock_ratio,
          gpu.flash2_sustained_clock_ratio,
          &gpu.attention_causal,
          &gpu.attention_full,
          &gpu.flash2_causal,
          &gpu.flash2_full,
          &gpu.flash_triton_causal,
          &gpu.flash_triton_full};
}

namespace {
bool has_curve(const AttentionCurve* curve) { return curve != nullptr && !curve->empty(); }

/// Whether the GPU gives FlashAttention-2 scalar shares of its own.
bool has_flash2_scalars(const KernelProfile& profile) {
  return profile.flash2_forward_share > 0.0 || profile.flash2_backward_share > 0.0;
}
}  // namespace

double attention_clock_ratio(const KernelProfile& profile, AttentionKernel kernel) {
  // FlashAttention-2 without rates of its own runs at the fused kernel's (attention_shares), so
  // at that kernel's clock too.
  const bool flash2_own_rates = has_flash2_scalars(profile) || has_curve(profile.flash2_causal);
  double own = 0.0;
  if (kernel == AttentionKernel::cudnn) own = profile.fused_sustained_ratio;
  if (kernel == AttentionKernel::flash) {
    own = flash2_own_rates ? profile.flash2_sustained_ratio : profile.fused_sustained_ratio;
  }
  return own > 0.0 ? own * profile.ensemble_ratio : profile.training_clock_ratio();
}

double inverse_normal_cdf(double p) {
  // P. J. Acklam, "An algorithm for computing the inverse normal cumulative distribution
  // function" (2003): a rational function in the central region, another in the tails.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  static constexpr double kLow = 0.02425;
  const auto tail = [](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  };
  if (p < kLow) return tail(std::sqrt(-2.0 * std::log(p)));
  if (p > 1.0 - kLow) return -tail(std::sqrt(-2.0 * std::log1p(-p)));
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

double expected_max_standard_normal(long long n) {
  if (n <= 1) return 0.0;
  // Φ⁻¹(1 − t) = −Φ⁻¹(t), with t = 1 − (n − 0.375)/(n + 0.25) = 0.625/(n + 0.25) taken
  // directly: no cancellation at a large n.
  return -inverse_normal_cdf(0.625 / (static_cast<double>(n) + 0.25));
}

double job_pace_ratio(double ratio, double spread, int from_gpus, int to_gpus) {
  const double slowest_to = 1.0 - spread * expected_max_standard_normal(to_gpus);
  const double slowest_from = 1.0 - spread * expected_max_standard_normal(from_gpus);
  return std::min(1.0, ratio * slowest_to / slowest_from);
}

namespace {
int pace_gpus_of(const Gpu& gpu) { return gpu.pace_gpus > 0 ? gpu.pace_gpus : kPaceReferenceGpus; }
}  // namespace

bool needs_job_pace(const Gpu& gpu, int gpus) {
  if (gpus <= 1) return gpu.ensemble_clock_ratio != 1.0 || gpu.clock_spread > 0.0;
  return gpu.clock_spread > 0.0 && gpus != pace_gpus_of(gpu);
}

Gpu gpu_for_job(Gpu gpu, int gpus) {
  if (gpus <= 1) {
    gpu.ensemble_clock_ratio = 1.0;
    gpu.clock_spread = 0.0;
    gpu.pace_gpus = 1;
    return gpu;
  }
  if (needs_job_pace(gpu, gpus)) {
    gpu.ensemble_clock_ratio =
        job_pace_ratio(gpu.ensemble_clock_ratio, gpu.clock_spread, pace_gpus_of(gpu), gpus);
    gpu.pace_gpus = gpus;
  }
  return gpu;
}

AttentionShares curve_shares(const AttentionCurve& curve, double seq) {
  if (curve.empty()) return {};
  const auto& first = curve.points[0];
  const std::size_t size = std::min(curve.size, AttentionCurve::kMaxPoints);
  const auto& last = curve.points[size - 1];
  if (seq <= first.seq) return {first.forward, first.backward};
  if (seq >= last.seq) return {last.forward, last.backward};
  std::size_t hi = 1;
  while (curve.points[hi].seq < seq) ++hi;
  const auto& a = curve.points[hi - 1];
  const auto& b = curve.points[hi];
  const double t = std::log2(seq / a.seq) / std::log2(b.seq / a.seq);
  return {a.forward + t * (b.forward - a.forward), a.backward + t * (b.backward - a.backward)};
}

namespace {

/// Time-weighted blend of two kernels doing `causal_share` and 1 - causal_share of the work.
double blend(double causal_share, double causal, double full) {
  return 1.0 / (causal_share / causal + (1.0 - causal_share) / full);
}

/// One kernel's measured curves (its causal one present) for the layer's calls.
AttentionShares curve_path(const AttentionCurve& causal_curve, const AttentionCurve* full_curve,
                           double local_seq, int cp, bool ulysses) {
  if (ulysses && cp > 1) return curve_shares(causal_curve, local_seq * cp);
  const AttentionShares causal = curve_shares(causal_curve, local_seq);
  if (cp <= 1) return causal;
  // A full block's keys are one chunk, s / (2·cp) = local_seq / 2. Standing in for a missing
  // full curve, the causal curve is read where its mean key loop is as long: a causal call of
  // length L runs L/2 keys per query on average, so at 2 x chunk = local_seq.
  const AttentionShares full = has_curve(full_curve) ? curve_shares(*full_curve, local_seq / 2.0)
                                                     : curve_shares(causal_curve, local_seq);
  const double causal_work = 1.0 / cp;  // the first ring step: the rank's own chunks, masked
  return {blend(causal_work, causal.forward, full.forward),
          blend(causal_work, causal.backward, full.backward)};
}

}  // namespace

AttentionShares attention_shares(const KernelProfile& profile, AttentionKernel kernel,
                                 double local_seq, int cp, bool ulysses) {
  const bool flash2 = kernel == AttentionKernel::flash;
  if (kernel == AttentionKernel::flash_triton && has_curve(profile.triton_causal)) {
    return curve_path(*profile.triton_causal, profile.triton_full, local_seq, cp, ulysses);
  }
  if (flash2 && has_curve(profile.flash2_causal)) {
    return curve_path(*profile.flash2_causal, profile.flash2_full, local_seq, cp, ulysses);
  }
  const bool flash2_scalars = flash2 && has_flash2_scalars(profile);
  if (!flash2_scalars && has_curve(profile.flash_causal)) {
    return curve_path(*profile.flash_causal, profile.flash_full, local_seq, cp, ulysses);
  }
  // No curve for this kernel: its scalar shares; a FlashAttention-2 share the GPU leaves out
  // stays the fused kernel's.
  return {flash2 && profile.flash2_forward_share > 0.0 ? profile.flash2_forward_share
                                                       : profile.flash_forward_share,
          flash2 && profile.flash2_backward_share > 0.0 ? profile.flash2_backward_share
                                                        : profile.flash_backward_share};
}

double wave_efficiency(double tiles, int sm_count) {
  if (sm_count <= 0 || tiles <= 0.0) return 1.0;
  const double sms = sm_count;
  return tiles / (sms * std::ceil(tiles / sms));
}

bool fp8_recipe_runs_on(Fp8Recipe recipe, const Gpu& gpu) {
  if (recipe != Fp8Recipe::mxfp8) return true;
  const double cc = gpu.compute_capability;
  return cc <= 0.0 || (cc >= kMxfp8MinCapability && cc < kMxfp8EndCapability);
}

void check_fp8_recipe_on_gpu(const Model& model, const Gpu& gpu) {
  const Training& training = model.training;
  if (training.dtype != Dtype::fp8 || fp8_recipe_runs_on(training.fp8.recipe, gpu)) return;
  const double cc = gpu.compute_capability;
  const std::string where = model.key_where(training.fp8_recipe_from, "training.fp8.recipe");
  throw InputError(fmt::format(
      "{}: mxfp8 runs on compute capability 10.0-11.x (Blackwell's block-scaled tensor cores; "
      "Transformer Engine refuses it elsewhere); {} is {:.1f}: use recipe current or delayed",
      where, gpu.name, cc));
}

std::optional<Dtype> dtype_instead(const Model& model, const Gpu& gpu) {
  if (gpu.peak_tflops(model.training.dtype) > 0.0) return std::nullopt;
  // bf16 where the GPU has it (what training on A100 and later runs), else fp16 (V100).
  return gpu.peak_tflops_bf16 > 0.0 ? Dtype::bf16 : Dtype::fp16;
}

void check_model_on_gpu(const Model& model, const Gpu& gpu) {
  check_fp8_recipe_on_gpu(model, gpu);
  const auto other = dtype_instead(model, gpu);
  if (!other) return;
  const Dtype dtype = model.training.dtype;
  throw InputError(
      fmt::format("model {}: dtype {} not supported by {} (no {} peak); set training.dtype: {}",
                  model.name, to_string(dtype), gpu.name, to_string(dtype), to_string(*other)));
}

}  // namespace trident
