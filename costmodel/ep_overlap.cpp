#include "costmodel/ep_overlap.h"

#include <algorithm>

namespace trident {

bool combined_1f1b_runs(const Model& model, const ParallelConfig& config) {
  return model.is_moe() && config.ep > 1 && (config.pp <= 1 || config.virtual_stages > 1) &&
         config.recompute != Recompute::full && model.mtp_layers <= 1;
}

double combined_pair_exposed_s(const CombinedLayer& layer, double a2a_s) {
  // Each line: when a node ends = when its stream is free and what it waits for has ended,
  // plus its own time. The communication stream runs combine bwd first, from the pair's start.
  const double combine_bwd = a2a_s;
  const double attention_fwd = layer.attention_forward_s;
  const double experts_dgrad = std::max(attention_fwd, combine_bwd) + layer.experts_dgrad_s;
  const double dispatch_fwd = std::max(combine_bwd, attention_fwd) + a2a_s;
  const double experts_wgrad = experts_dgrad + layer.experts_wgrad_s;
  const double dispatch_bwd = std::max(dispatch_fwd, experts_dgrad) + a2a_s;
  const double experts_fwd = std::max(experts_wgrad, dispatch_fwd) + layer.experts_forward_s;
  const double combine_fwd = std::max(dispatch_bwd, experts_fwd) + a2a_s;
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
