#pragma once
/// One GPU type: what a GPU preset (configs/gpus/*.yaml) describes.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "topology/errors.h"

namespace trident {

enum class Dtype { bf16, fp16, fp8, tf32, fp32 };
/// Every Dtype, in the enum's order (the order users pick them in: bf16 first).
inline constexpr Dtype kDtypes[] = {Dtype::bf16, Dtype::fp16, Dtype::fp8, Dtype::tf32, Dtype::fp32};

/// Bounds on every rate of a GPU or cluster (TFLOP/s, GB/s, Gb/s): far outside real hardware
/// (1e-9 GB/s loads), inside what keeps predicted times finite and positive. Latencies (us) at
/// most kMaxLatencyUs.
inline constexpr double kMinHardwareRate = 1e-12;
inline constexpr double kMaxHardwareRate = 1e12;
inline constexpr double kMaxLatencyUs = 1e6;
/// Smallest efficiency or clock ratio a GPU may have (1e-6): 1e-300 made step times NaN.
inline constexpr double kMinEfficiency = 1e-6;
/// The job size a GPU file's ensemble_clock_ratio is measured at: one node of 8 GPUs all
/// running (ml-engineering's all-8 concurrent mamf-finder runs, docs/cost_model.md#kernels).
inline constexpr int kPaceReferenceGpus = 8;
/// The largest clock_spread a GPU file may give: the slowest of 2^24 GPUs (5.4 standard
/// deviations) then still runs at more than 40% of the mean.
inline constexpr double kMaxClockSpread = 0.1;

/// A fused attention kernel measured across sequence lengths: its forward and backward share
/// of dense peak (boost clock) at each length, lengths increasing. Fixed capacity, no heap: a
/// GPU is copied into every estimate.
struct AttentionCurve {
  struct Point {
    double seq = 0.0;       ///< query and key length of the call, tokens
    double forward = 0.0;   ///< share of dense peak
    double backward = 0.0;  ///< share of dense peak (FLOPs counted as 2.5x the forward's)
  };
  static constexpr std::size_t kMaxPoints = 16;
  std::array<Point, kMaxPoints> points{};
  std::size_t size = 0;  ///< 0 = not measured

  [[nodiscard]] bool empty() const { return size == 0; }
};

/// Which measured rates a GPU file left to their defaults (Gpu::defaulted).
enum GpuDefault : unsigned {
  kMatmulEfficiencyDefault = 1U,      ///< matmul_efficiency: 0.8
  kSustainedClockDefault = 1U << 1U,  ///< sustained_clock_ratio: 1
  kEnsembleClockDefault = 1U << 2U,   ///< ensemble_clock_ratio: 1
  kClockSpreadDefault = 1U << 3U,     ///< clock_spread: 0 (every job at ensemble_clock_ratio)
};

struct Gpu {
  std::string name;
  double peak_tflops_bf16 = 0.0;  ///< dense, no sparsity
  double peak_tflops_fp16 = 0.0;
  double peak_tflops_fp8 = 0.0;  ///< 0 = not supported
  double peak_tflops_tf32 = 0.0;
  /// Plain FP32 (CUDA cores, not tensor cores): what an fp32 run's matmuls get, since PyTorch
  /// keeps torch.backends.cuda.matmul.allow_tf32 off by default (1.12+) and Megatron-LM,
  /// NeMo and torchtitan do not turn it on. 0 = not given: fp32 is refused.
  double peak_tflops_fp32 = 0.0;
  double memory_gib = 0.0;   ///< HBM capacity, GiB
  double memory_gbps = 0.0;  ///< HBM bandwidth, GB/s (1e9 bytes/s)
  /// Best measured large square BF16 GEMM as a share of peak (MAMF tables); the GEMM
  /// roofline's ceiling. Source in the preset file.
  double matmul_efficiency = 0.8;
  /// The same for FP8 GEMMs (e4m3, TN layout), measured apart; 0 = not published (FP8 GEMMs
  /// then use matmul_efficiency, and docs/cost_model.md says so).
  double fp8_matmul_efficiency = 0.0;
  int sm_count = 0;  ///< streaming multiprocessors, for wave quantisation; 0 = unknown (no waves)
  /// CUDA compute capability (7.0 Volta ... 10.0 Blackwell): which kernels run (fused attention
  /// needs 8.0); 0 = not given (taken as able to run them).
  double compute_capability = 0.0;
  /// Saturated-clock (power-capped) GEMM rate over the boost-clock burst that
  /// matmul_efficiency measures (ml-engineering MSMF / MAMF); 1 = not published.
  double sustained_clock_ratio = 1.0;
  /// The slowest GPU of a job of kPaceReferenceGpus whose GPUs all run GEMMs at once, over
  /// one GPU alone (its MSMF): a synchronous job runs at its slowest GPU's pace
  /// (ml-engineering's alone vs all-8 concurrent mamf-finder runs); 1 = not measured.
  double ensemble_clock_ratio = 1.0;
  /// One GPU's sustained GEMM rate across GPUs of the SKU under load, its standard deviation
  /// over the mean: the slowest of a larger job's GPUs is slower (costmodel/kernels.h
  /// job_pace_ratio); 0 = not measured (every job of more than one GPU at ensemble_clock_ratio).
  double clock_spread = 0.0;
  /// The job size ensemble_clock_ratio is the pace of: 0 = the file's, kPaceReferenceGpus;
  /// set by gpu_for_job when it prices the GPU for a job of another size.
  int pace_gpus = 0;
  /// The measured rates the file left out, priced at their defaults (bits of GpuDefault): a
  /// user's GPU file without them is priced at an unmeasured ceiling, and the plan says so.
  unsigned defaulted = 0;
  /// Fused (flash) attention forward/backward as a share of dense peak; 0 = not published
  /// (attention then runs at the GEMM tile model's rate).
  double attention_forward_efficiency = 0.0;
  double attention_backward_efficiency = 0.0;
  /// FlashAttention-2 (the flash-attn package, PyTorch SDPA's flash backend) where it differs
  /// from the fused kernel above: on Hopper FA2 has no WGMMA/TMA path and reaches far less
  /// than cuDNN's fused attention; 0 = the same as attention_*_efficiency.
  double flash2_forward_efficiency = 0.0;
  double flash2_backward_efficiency = 0.0;
  /// Fused attention's own sustained-clock ratios where measured apart from the GEMMs' (they
  /// draw less power and hold a higher clock at the board's power limit): the fused (cuDNN)
  /// kernel of attention_*, and FlashAttention-2; 0 = not measured (the GEMMs'
  /// sustained_clock_ratio, docs/cost_model.md#kernels).
  double attention_sustained_clock_ratio = 0.0;
  double flash2_sustained_clock_ratio = 0.0;
  /// The same kernels measured across sequence lengths (docs/cost_model.md#attention-curves),
  /// with the causal mask (every block up to the diagonal, the diagonal half-masked) and without
  /// it (full blocks: a context-parallel ring's off-diagonal steps). Where a curve is given it
  /// replaces the scalar share above; a full curve left out is the causal one.
  AttentionCurve attention_causal;
  AttentionCurve attention_full;
  AttentionCurve flash2_causal;
  AttentionCurve flash2_full;
  /// FlashAttention's Triton kernel (flash_attn_triton.py, which llm-foundry's MPT ran as
  /// `attn_impl: triton`) across sequence lengths; empty = not measured on this GPU, and a stack
  /// with `attention: flash_triton` is refused on it (docs/cost_model.md#attention-curves).
  AttentionCurve flash_triton_causal;
  AttentionCurve flash_triton_full;
  double pcie_gbps = 0.0;  ///< per GPU, one direction, GB/s (default for clusters)
  double pcie_latency_us = 2.0;
  double nvlink_latency_us = 2.0;   ///< default NVLink hop latency for clusters
  double network_latency_us = 5.0;  ///< default NIC-to-NIC latency for clusters

  /// Dense peak for a dtype in TFLOP/s; fp32 falls back to tf32. 0 = unsupported.
  [[nodiscard]] double peak_tflops(Dtype dtype) const;
  /// The GEMM ceiling's share of peak for a dtype: fp8_matmul_efficiency for fp8 when
  /// published, matmul_efficiency otherwise.
  [[nodiscard]] double gemm_efficiency(Dtype dtype) const;
};

[[nodiscard]] const char* to_string(Dtype dtype);
/// to_string of kDtypes, in its order: a loader's choice list (index i names kDtypes[i]).
[[nodiscard]] const std::vector<std::string>& dtype_names();

/// The first impossible value of a GPU (keys as in the preset file: "peak_tflops.bf16",
/// "memory_gib"...), or nullopt. A GPU needs a positive bf16 or fp16 peak.
[[nodiscard]] std::optional<Problem> find_gpu_problem(const Gpu& gpu);

}  // namespace trident
