#include "topology/gpu.h"

#include <fmt/format.h>

namespace trident {

double Gpu::peak_tflops(Dtype dtype) const {
  switch (dtype) {
    case Dtype::bf16:
      return peak_tflops_bf16;
    case Dtype::fp16:
      return peak_tflops_fp16;
    case Dtype::fp8:
      return peak_tflops_fp8;
    case Dtype::tf32:
      return peak_tflops_tf32;
    case Dtype::fp32:
      return peak_tflops_fp32;
  }
  return 0.0;
}

double Gpu::gemm_efficiency(Dtype dtype) const {
  return dtype == Dtype::fp8 && fp8_matmul_efficiency > 0.0 ? fp8_matmul_efficiency
                                                            : matmul_efficiency;
}

const char* to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp16:
      return "fp16";
    case Dtype::fp8:
      return "fp8";
    case Dtype::tf32:
      return "tf32";
    case Dtype::fp32:
      return "fp32";
  }
  return "?";
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Dtype d : kDtypes) out.emplace_back(to_string(d));
    return out;
  }();
  return names;
}

namespace {

std::optional<Problem> not_positive(const char* key, double value) {
  if (value > 0.0) return std::nullopt;
  return Problem{key, fmt::format("expected a positive number, got {}", value)};
}

std::optional<Problem> negative(const char* key, double value) {
  if (value >= 0.0) return std::nullopt;
  return Problem{key, fmt::format("expected a non-negative number, got {}", value)};
}

/// A rate outside [kMinHardwareRate, kMaxHardwareRate] (0 = absent is allowed where `may_be_0`).
std::optional<Problem> rate_out_of_bounds(const char* key, double value, bool may_be_0) {
  if (may_be_0 && value == 0.0) return std::nullopt;
  if (value >= kMinHardwareRate && value <= kMaxHardwareRate) return std::nullopt;
  return Problem{key, fmt::format("expected a number in [{:g}, {:g}], got {:g}", kMinHardwareRate,
                                  kMaxHardwareRate, value)};
}

std::optional<Problem> bounds_problem(const Gpu& gpu) {
  const std::pair<const char*, double> peaks[] = {{"peak_tflops.bf16", gpu.peak_tflops_bf16},
                                                  {"peak_tflops.fp16", gpu.peak_tflops_fp16},
                                                  {"peak_tflops.fp8", gpu.peak_tflops_fp8},
                                                  {"peak_tflops.tf32", gpu.peak_tflops_tf32},
                                                  {"peak_tflops.fp32", gpu.peak_tflops_fp32}};
  for (const auto& [key, value] : peaks) {
    if (auto problem = rate_out_of_bounds(key, value, true)) return problem;
  }
  if (auto problem = rate_out_of_bounds("memory_gbps", gpu.memory_gbps, false)) return problem;
  if (auto problem = rate_out_of_bounds("pcie_gbps", gpu.pcie_gbps, false)) return problem;
  if (gpu.memory_gib > 1e9) {
    return Problem{"memory_gib", fmt::format("expected at most 1e+09, got {:g}", gpu.memory_gib)};
  }
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"pcie_latency_us", gpu.pcie_latency_us},
        {"nvlink_latency_us", gpu.nvlink_latency_us},
        {"network_latency_us", gpu.network_latency_us}}) {
    if (value > kMaxLatencyUs)
      return Problem{key, fmt::format("expected at most 1e+06, got {:g}", value)};
  }
  return std::nullopt;
}

/// A measured attention curve: lengths >= 1 and increasing, shares in [kMinEfficiency, 1].
std::optional<Problem> curve_problem(const char* key, const AttentionCurve& curve) {
  if (curve.size > AttentionCurve::kMaxPoints) {
    return Problem{key, fmt::format("expected at most {} points", AttentionCurve::kMaxPoints)};
  }
  for (std::size_t i = 0; i < curve.size; ++i) {
    const AttentionCurve::Point& point = curve.points[i];
    const double previous = i > 0 ? curve.points[i - 1].seq : 0.0;
    if (!(point.seq >= 1.0 && point.seq <= 1e9 && point.seq > previous)) {
      return Problem{key, fmt::format("point {}: expected a sequence length in [1, 1e+09] above "
                                      "the previous point's, got {:g}",
                                      i, point.seq)};
    }
    for (const double share : {point.forward, point.backward}) {
      if (!(share >= kMinEfficiency && share <= 1.0)) {
        return Problem{key, fmt::format("point {}: expected shares in [{}, 1], got {:g}", i,
                                        kMinEfficiency, share)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Problem> find_gpu_problem(const Gpu& gpu) {
  if (gpu.name.empty()) return Problem{"name", "expected a non-empty name"};
  if (gpu.peak_tflops_bf16 <= 0.0 && gpu.peak_tflops_fp16 <= 0.0) {
    return Problem{"peak_tflops", "expected a positive bf16 or fp16 peak"};
  }
  const std::pair<const char*, double> non_negative[] = {
      {"peak_tflops.bf16", gpu.peak_tflops_bf16},   {"peak_tflops.fp16", gpu.peak_tflops_fp16},
      {"peak_tflops.fp8", gpu.peak_tflops_fp8},     {"peak_tflops.tf32", gpu.peak_tflops_tf32},
      {"peak_tflops.fp32", gpu.peak_tflops_fp32},   {"pcie_latency_us", gpu.pcie_latency_us},
      {"nvlink_latency_us", gpu.nvlink_latency_us}, {"network_latency_us", gpu.network_latency_us}};
  for (const auto& [key, value] : non_negative) {
    if (auto problem = negative(key, value)) return problem;
  }
  const std::pair<const char*, double> positive[] = {{"memory_gib", gpu.memory_gib},
                                                     {"memory_gbps", gpu.memory_gbps},
                                                     {"pcie_gbps", gpu.pcie_gbps}};
  for (const auto& [key, value] : positive) {
    if (auto problem = not_positive(key, value)) return problem;
  }
  if (auto problem = bounds_problem(gpu)) return problem;
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"attention_forward_efficiency",
                                       gpu.attention_forward_efficiency},
        {"attention_backward_efficiency", gpu.attention_backward_efficiency},
        {"flash2_forward_efficiency", gpu.flash2_forward_efficiency},
        {"flash2_backward_efficiency", gpu.flash2_backward_efficiency},
        {"attention_sustained_clock_ratio", gpu.attention_sustained_clock_ratio},
        {"flash2_sustained_clock_ratio", gpu.flash2_sustained_clock_ratio},
        {"fp8_matmul_efficiency", gpu.fp8_matmul_efficiency}}) {
    if (value < 0.0 || value > 1.0 || (value > 0.0 && value < kMinEfficiency)) {
      return Problem{key, fmt::format("expected 0 (the default) or a number in [{}, 1], got {}",
                                      kMinEfficiency, value)};
    }
  }
  // Each kernel's curves: its causal one and the full one beside it, named as the file keys.
  struct KernelCurves {
    const char* causal_key;
    const char* full_key;
    const AttentionCurve& causal;
    const AttentionCurve& full;
  };
  const KernelCurves kernels[] = {
      {"attention_causal_curve", "attention_full_curve", gpu.attention_causal, gpu.attention_full},
      {"flash2_causal_curve", "flash2_full_curve", gpu.flash2_causal, gpu.flash2_full},
      {"flash_triton_causal_curve", "flash_triton_full_curve", gpu.flash_triton_causal,
       gpu.flash_triton_full}};
  for (const KernelCurves& kernel : kernels) {
    if (auto problem = curve_problem(kernel.causal_key, kernel.causal)) return problem;
    if (auto problem = curve_problem(kernel.full_key, kernel.full)) return problem;
  }
  // A kernel's own clock ratio prices that kernel's rates: without them it would do nothing.
  const bool fused_rates = gpu.attention_forward_efficiency > 0.0 ||
                           gpu.attention_backward_efficiency > 0.0 || !gpu.attention_causal.empty();
  const bool flash2_rates = gpu.flash2_forward_efficiency > 0.0 ||
                            gpu.flash2_backward_efficiency > 0.0 || !gpu.flash2_causal.empty();
  if (gpu.attention_sustained_clock_ratio > 0.0 && !fused_rates) {
    return Problem{"attention_sustained_clock_ratio",
                   "expected attention_forward_efficiency and attention_backward_efficiency or "
                   "attention_causal_curve beside it (the rates of the kernel whose clock it is)"};
  }
  if (gpu.flash2_sustained_clock_ratio > 0.0 && !fused_rates && !flash2_rates) {
    return Problem{"flash2_sustained_clock_ratio",
                   "expected flash2_forward_efficiency and flash2_backward_efficiency or "
                   "flash2_causal_curve beside it (the rates of the kernel whose clock it is)"};
  }
  // A full curve prices only context parallelism's off-diagonal blocks, beside a causal one.
  for (const KernelCurves& kernel : kernels) {
    if (!kernel.full.empty() && kernel.causal.empty()) {
      return Problem{kernel.full_key, fmt::format("expected {} beside it", kernel.causal_key)};
    }
  }
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"sustained_clock_ratio", gpu.sustained_clock_ratio},
        {"ensemble_clock_ratio", gpu.ensemble_clock_ratio},
        {"matmul_efficiency", gpu.matmul_efficiency}}) {
    if (value < kMinEfficiency || value > 1.0) {
      return Problem{key, fmt::format("expected a number in (0, 1], at least {}, got {}",
                                      kMinEfficiency, value)};
    }
  }
  if (gpu.clock_spread < 0.0 || gpu.clock_spread > kMaxClockSpread) {
    return Problem{"clock_spread", fmt::format("expected a number in [0, {}], got {}",
                                               kMaxClockSpread, gpu.clock_spread)};
  }
  return std::nullopt;
}

}  // namespace trident
