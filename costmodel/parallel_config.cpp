#include "costmodel/parallel_config.h"

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

}  // namespace trident
