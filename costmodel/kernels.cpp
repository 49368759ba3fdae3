#include "costmodel/kernels.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string_view>

#include "topology/errors.h"

namespace trident {

namespace {

struct NamedProfile {
  std::string_view prefix;
  KernelProfile profile;
};

// Sources (docs/cost_model.md#kernels):
// - sm_count: NVIDIA architecture whitepapers (A100 108, H100/H200 SXM 132, B200 148, V100 80).
// - sustained_ratio = MSMF / MAMF from stas00/ml-engineering mamf-finder (benchmarks README,
//   "alone vs all-8 concurrent"): H200 702.9 / 828.0 = 0.849 (H100 SXM: same die, same 700 W,
//   "H200 is the same" in the MAMF table); B200 1455.7 / 1732.6 = 0.840. No MSMF is published
//   for A100 or V100: 1.
// - flash shares, H100: cuDNN fused attention (Transformer Engine's backend on Hopper),
//   head dim 128, seq 4k, BF16, FlashAttention-3 paper (Shah et al. 2024) figures: forward
//   609, backward 499 TFLOP/s of 989. A100: FlashAttention-2 paper (Dao 2023) §4.1: forward
//   up to 73%, backward up to 63% of 312.
constexpr double kH100Sustained = 702.9 / 828.0;
constexpr double kB200Sustained = 1455.7 / 1732.6;
constexpr double kA100Sustained = (kH100Sustained + kB200Sustained) / 2.0;
constexpr double kH100FlashForward = 609.0 / 989.0;
constexpr double kH100FlashBackward = 499.0 / 989.0;

constexpr std::array<NamedProfile, 7> kProfiles{{
    {"a100", {108, kA100Sustained, 0.73, 0.63}},
    {"h100", {132, kH100Sustained, kH100FlashForward, kH100FlashBackward}},
    {"h200", {132, kH100Sustained, kH100FlashForward, kH100FlashBackward}},
    {"gh200", {132, kH100Sustained, kH100FlashForward, kH100FlashBackward}},
    {"b200", {148, kB200Sustained, 0.0, 0.0}},
    {"gb200", {148, kB200Sustained, 0.0, 0.0}},
    {"v100", {80, 1.0, 0.0, 0.0}},
}};

}  // namespace

KernelProfile kernel_profile(const Gpu& gpu) {
  const std::string_view name = gpu.name;
  for (const NamedProfile& entry : kProfiles) {
    if (name.substr(0, entry.prefix.size()) == entry.prefix) return entry.profile;
  }
  return {};
}

double wave_efficiency(double tiles, int sm_count) {
  if (sm_count <= 0 || tiles <= 0.0) return 1.0;
  const double sms = sm_count;
  return tiles / (sms * std::ceil(tiles / sms));
}

void check_model_on_gpu(const Model& model, const Gpu& gpu) {
  const Dtype dtype = model.training.dtype;
  if (gpu.peak_tflops(dtype) > 0.0) return;
  const char* other = gpu.peak_tflops_fp16 > 0.0 ? "fp16" : "bf16";
  throw InputError(fmt::format(
      "model {}: dtype {} not supported by {} (no {} peak); set training.dtype: {}", model.name,
      to_string(dtype), gpu.name, to_string(dtype), other));
}

}  // namespace trident
