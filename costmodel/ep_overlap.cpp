#include "costmodel/ep_overlap.h"

#include <algorithm>

namespace trident {

CombinedBlock combined_1f1b_block(const Model& model, const ParallelConfig& config) {
  // A 16-bit model: bf16 or fp16 (FP8 trains on bf16 weights), not fp32/tf32.
  const Dtype dtype = model.training.dtype;
  if (!model.is_moe()) return CombinedBlock::not_moe;
  if (dtype != Dtype::bf16 && dtype != Dtype::fp16 && dtype != Dtype::fp8) {
    return CombinedBlock::dtype;
  }
  if (config.ep <= 1) return CombinedBlock::ep;
  if (config.pp > 1 && config.virtual_stages <= 1) return CombinedBlock::pipeline;
  if (config.recompute == Recompute::full) return CombinedBlock::full_recompute;
  if (model.mtp_layers > 1) return CombinedBlock::mtp;
  return CombinedBlock::none;
}

bool combined_1f1b_runs(const Model& model, const ParallelConfig& config) {
  return combined_1f1b_block(model, config) == CombinedBlock::none;
}

double combined_pair_exposed_s(const CombinedLayer& layer, double a2a_s) {
  // Each line: when a node ends = when its stream is free and what it waits for has ended,
  // plus its own time. The communication stream runs combine bwd first, from the pair's start.
  const double combine_bwd = layer.combine_backward_compute_s + a2a_s;
  const double attention_fwd = layer.attention_forward_s;
  const double experts_dgrad = std::max(attention_fwd, combine_bwd) + layer.experts_dgrad_s;
  const double dispatch_fwd = std::max(combine_bwd, attention_fwd) + a2a_s;
  const double experts_wgrad = experts_dgrad + layer.experts_wgrad_s;
  const double dispatch_bwd = std::max(dispatch_fwd, experts_dgrad) + a2a_s;
  const double experts_fwd = std::max(experts_wgrad, dispatch_fwd) + layer.experts_forward_s;
  const double combine_fwd =
      std::max(dispatch_bwd, experts_fwd) + a2a_s + layer.combine_forward_compute_s;
  const double attention_bwd = std::max(experts_fwd, dispatch_bwd) + layer.attention_backward_s;
  return std::max(0.0, std::max(combine_fwd, attention_bwd) - layer.compute_s());
}

double combined_paired_share(int pp, int virtual_stages, long long micro_batches) {
  const double m = static_cast<double>(micro_batches);
  if (m < 1.0) return 0.0;
  if (pp <= 1) return (m - 1.0) / m;
  if (virtual_stages <= 1) return 0.0;
  const double p = pp;
  const double v = virtual_stages;
  const double passes = m * v;
  const double alone = std::min(passes, (p - 1.0) * 2.0 + (v - 1.0) * p + 1.0);
  return (passes - alone) / passes;
}

double combined_layer_exposed_s(const CombinedLayer& layer, double a2a_s, double paired_share) {
  return paired_share * combined_pair_exposed_s(layer, a2a_s) + (1.0 - paired_share) * 4.0 * a2a_s;
}

}  // namespace trident
