#pragma once
/// Memory on the peak rank: model states (weights, gradients, optimizer states under ZeRO
/// 0-3), activations with the micro-batches in flight of 1F1B / interleaved 1F1B (Korthikanti
/// et al. 2022), embedding and logits on the first/last stage, temporary buffers.
/// Derivation and sources: docs/cost_model.md#memory.
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/stack.h"
#include "topology/gpu.h"

namespace trident {

struct MemoryBreakdown;

/// Mixed-precision training with Megatron-LM's fp32 gradient buffer: 16-bit weights (2),
/// fp32 main gradients (4); Adam keeps fp32 master weights, momentum and variance (12), SGD
/// fp32 master weights and momentum (8).
inline constexpr double kGradientBytesPerParameter = 4.0;
inline constexpr double kAdamStateBytesPerParameter = 12.0;
inline constexpr double kSgdStateBytesPerParameter = 8.0;

/// Activation bytes one layer keeps for one micro-batch on one GPU (16-bit activations,
/// 1-byte dropout masks). Reduces to Korthikanti's s*b*h*(10 + 24/t + 5*a*s/(h*t)) for
/// f = 4h, k = a, no sequence parallelism, unfused attention, no recompute.
[[nodiscard]] double layer_activation_bytes(const Model& model, const ParallelConfig& config,
                                            bool fused_attention,
                                            SelectiveKind selective = SelectiveKind::attention);

/// Micro-batches whose activations stage 0 holds at its peak, in units of one micro-batch
/// through its layers: min(p, m) for 1F1B, times (1 + (p-1)/(p*v)) when interleaved.
[[nodiscard]] double in_flight_micro_batches(int pp, int virtual_stages, long long micro_batches);

/// Parameters one GPU of a stage holds (after the TP split): its layers, plus the embedding
/// on the first stage and the output layer (or the tied copy) and final norm on the last.
[[nodiscard]] double stage_parameters(const Model& model, const ParallelConfig& config,
                                      bool first_stage, bool last_stage);

struct MemoryOptions {
  double reserve_gib = 4.0;
  bool fused_attention = true;
  double grad_buffer_bytes = kGradientBytesPerParameter;  ///< the stack's gradient dtype
  /// Bytes per parameter of the weights held for compute (16-bit: 2; FP8 adds its cached copies:
  /// weight_memory_bytes_per_parameter in costmodel/precision.h).
  double weight_bytes = 2.0;
  int prefetch_units = 1;             ///< ZeRO-3 units gathered ahead of the one computing
  bool zero3_keeps_gathered = false;  ///< ZeRO-3 with PP keeps weights and gradients whole
  SelectiveKind selective = SelectiveKind::attention;
};

/// Memory of the peak rank (the largest of the first, a middle and the last pipeline stage).
[[nodiscard]] MemoryBreakdown peak_memory(const Gpu& gpu, const Model& model,
                                          const ParallelConfig& config,
                                          const MemoryOptions& options);

}  // namespace trident
