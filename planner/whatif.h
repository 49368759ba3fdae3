#pragma once
/// What a failure costs and what to do about it (`plan --fail-link`). Synchronous training
/// runs at the pace of its slowest group, so one degraded link slows every rank. For a set of
/// failures the healthy best plan is compared under four options:
///   keep          the same plan on the same GPUs, running degraded;
///   re-place      the same split with its groups laid around the bad GPU or link where the
///                 topology allows (regroup a server's GPUs into other TP groups; move ranks
///                 off dead GPUs onto spare GPUs when the job leaves some idle);
///   cordon GPU    take the bad GPU out and re-plan on what is left (any split);
///   cordon server take the bad servers out and re-plan on the rest; when no split of what is
///                 left divides the model, whole servers are set aside as spares until one
///                 does. The global batch stays the same throughout.
/// Options are ranked by step time; the fastest is recommended, with one sentence saying why.
#include <optional>
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/model.h"
#include "planner/search.h"
#include "topology/cluster.h"
#include "topology/failure.h"

namespace trident {

enum class WhatIfKind { keep, replace, cordon_gpu, cordon_server };

/// "keep", "re-place", "cordon-gpu", "cordon-server".
[[nodiscard]] const char* to_string(WhatIfKind kind);

/// A group of the healthy best plan that the failures reach, with its link before and after.
struct GroupHit {
  std::string dimension;  ///< "tp", "pp" (a pair of neighbouring stages) or "dp"
  std::vector<int> gpus;  ///< global GPU ids of the group
  GroupLink before;
  GroupLink after;    ///< unset when `lost`
  bool lost = false;  ///< a member GPU is dead: the group cannot run
};

struct WhatIfOption {
  WhatIfKind kind = WhatIfKind::keep;
  bool available = false;
  /// What the option does (available) or why it cannot be done (not available); one line.
  std::string detail;
  std::optional<PlanResult> plan;  ///< the plan this option runs; set when available
  int gpus = 0;                    ///< GPUs the job runs on
  int spare_servers = 0;           ///< whole live servers left idle (cordon-server)
  double step_time_s = 0.0;
  double slowdown = 0.0;  ///< step_time_s / healthy step time - 1
};

struct WhatIf {
  std::vector<Failure> failures;
  std::vector<std::string> described;  ///< describe() of each failure
  Cluster degraded;                    ///< the cluster with every failure applied
  PlanResult baseline;                 ///< the healthy best plan
  std::vector<GroupHit> groups_hit;    ///< groups of the baseline the failures reach
  std::vector<WhatIfOption> options;   ///< available first, fastest first; then the others
  std::string reason;                  ///< why options.front() is recommended, with numbers
};

/// Runs the comparison. `options` narrows every search as it narrows the healthy one.
/// Throws what parse/apply/search throw: InputError for a spec naming a missing part,
/// PlanError when the healthy cluster has no plan at all.
[[nodiscard]] WhatIf what_if(const Cluster& healthy, const Model& model,
                             const std::vector<Failure>& failures, const SearchOptions& options,
                             const Calibration* calibration = nullptr);

/// GPU ids a failure reaches directly: the GPU, both ends of a mesh link, every GPU of a
/// server with a NIC down or dead. Sorted, no repeats.
[[nodiscard]] std::vector<int> failure_gpus(const Cluster& cluster,
                                            const std::vector<Failure>& failures);

/// The plan's slowest group per dimension when rank r runs on GPU gpu_of[r]. Groups with no
/// member in `changed` are taken to price as in `base` (the same split on a cluster where
/// they sit alike); pass every GPU in `changed` to query them all.
[[nodiscard]] Placement place_mapped(const Cluster& cluster, const ParallelConfig& config,
                                     RankOrder order, const std::vector<int>& gpu_of,
                                     const std::vector<int>& changed, const Placement& base);

/// Ways to split GPUs 0..n-1 into groups of `size` (each group ascending, groups ordered by
/// their first GPU), the identity first. Empty when n > 8 or size does not divide n.
[[nodiscard]] std::vector<std::vector<int>> regroupings(int n, int size);

}  // namespace trident
