#include "costmodel/parallel_config.h"

#include <algorithm>

namespace trident {

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

double ParallelConfig::recomputed_layers(double stage_layers) const {
  if (recompute != Recompute::full) return 0.0;
  if (recompute_layers <= 0) return stage_layers;
  return std::min(stage_layers, static_cast<double>(recompute_layers) * virtual_stages);
}

double ParallelConfig::full_recompute_share(double stage_layers) const {
  return stage_layers > 0.0 ? recomputed_layers(stage_layers) / stage_layers : 0.0;
}

}  // namespace trident
