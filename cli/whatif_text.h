#pragma once
/// The failure what-if in words: each option's one line (what it does, or why it cannot run),
/// a group the failures reach, and the recommendation. planner/whatif.h returns the data.
#include <string>

#include "planner/whatif.h"

namespace trident::cli {

/// "TP group 136-139: inside the server 450 GB/s -> 425 GB/s", "DP group 8,12 lost a GPU".
[[nodiscard]] std::string hit_text(const GroupHit& hit, const Cluster& cluster);

/// What `option` of `w` does, or why it cannot run: "same split, GPUs regrouped: server 0 TP
/// groups [0 4] [1 5]", "takes GPU 139 out: no split of 511 GPUs divides the model and batch".
[[nodiscard]] std::string option_text(const WhatIfOption& option, const WhatIf& w);

/// Why w.options.front() is recommended, with its step time against the healthy one and the
/// other options; "no option runs: WHY" when none can.
[[nodiscard]] std::string recommendation(const WhatIf& w);

}  // namespace trident::cli
