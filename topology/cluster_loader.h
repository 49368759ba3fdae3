#pragma once
/// Loaders for GPU and cluster descriptions (docs/cli.md "Input files"; YAML or JSON text) and
/// the built-in presets. Errors are InputError "SOURCE:LINE: KEY: what was expected".
#include <string>

#include "configs/presets.h"
#include "topology/cluster.h"
#include "topology/gpu.h"

namespace trident {

/// A GPU file (configs/gpus/*.yaml). Keys: name, peak_tflops {bf16, fp16 (default bf16),
/// fp8 (0), tf32 (0)}, memory_gib, memory_gbps; optional matmul_efficiency (0.8), pcie_gbps
/// (24: PCIe Gen4 x16 achievable), pcie_latency_us (5.7), nvlink_latency_us (3.4),
/// network_latency_us (14; NCCL's Simple-protocol hops), sm_count (0 = unknown),
/// sustained_clock_ratio (1), ensemble_clock_ratio (1), attention_forward_efficiency and
/// attention_backward_efficiency (0 = not published), flash2_forward_efficiency and
/// flash2_backward_efficiency (0 = as attention), attention_sustained_clock_ratio and
/// flash2_sustained_clock_ratio (0 = sustained_clock_ratio), attention_causal_curve,
/// attention_full_curve, flash2_causal_curve, flash2_full_curve, flash_triton_causal_curve,
/// flash_triton_full_curve
/// ([[seq, forward share, backward share], ...], lengths increasing; absent = the scalars, and
/// no Triton-kernel rate).
[[nodiscard]] Gpu load_gpu(const std::string& text, const std::string& source);

/// A cluster file (configs/clusters/*.yaml). `gpu` is a preset name or an inline GPU mapping.
/// Defaults: network.rail_optimized true, network.oversubscription 1.0, latencies and
/// pcie.gbps from the GPU. Runs check_cluster's rules, reported at the offending line.
[[nodiscard]] Cluster load_cluster(const std::string& text, const std::string& source);

/// Built-in presets by name; an unknown name throws InputError "unknown GPU preset 'X' (did
/// you mean 'Y'?); known: a, b, c".
[[nodiscard]] Gpu gpu_preset(const std::string& name);
[[nodiscard]] Cluster cluster_preset(const std::string& name);

/// Throws InputError "WHEREunknown KIND preset 'NAME' (did you mean 'Y'?); known: a, b, c"
/// (KIND "GPU", "cluster", "model", "stack"): the one message of every preset lookup.
[[noreturn]] void unknown_preset(PresetKind kind, const std::string& name,
                                 const std::string& where = "");

}  // namespace trident
