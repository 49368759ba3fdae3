#pragma once
/// A --fail-link failure in words, for the what-if report and its pictures.
#include <string>

#include "topology/failure.h"

namespace trident::cli {

/// One line: "one of 18 NVLinks of GPU 3 on server 17 (global GPU 139): it keeps 17",
/// "server 3 dead (GPUs 24-31)". `cluster`: the cluster with the failure (and the others
/// given with it) applied, whose health it reads.
[[nodiscard]] std::string describe(const Failure& failure, const Cluster& cluster);

}  // namespace trident::cli
