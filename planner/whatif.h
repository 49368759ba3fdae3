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
///                 does, and down to half the live servers a count runs on fewer only when
///                 it is faster by more than the stack's measured error band. The global batch
///                 stays the same throughout.
/// Options are ranked by step time; the fastest is recommended. What each option does, or why
/// it cannot run, is data (OptionNote and its numbers); cli/whatif_text.h says it in words.
#include <optional>
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/model.h"
#include "planner/search.h"
#include "topology/cluster.h"
#include "topology/errors.h"
#include "topology/failure.h"

namespace trident {

enum class WhatIfKind { keep, replace, cordon_gpu, cordon_server };

/// "keep", "re-place", "cordon-gpu", "cordon-server".
[[nodiscard]] const char* to_string(WhatIfKind kind);

/// A group of the healthy best plan that the failures reach, with its link before and after.
struct GroupHit {
  /// "tp", "pp" (a pair of neighbouring stages), "dp", "cp", "ep"; under HSDP "dp shard" and
  /// "dp replica" in place of "dp".
  std::string dimension;
  std::vector<int> gpus;  ///< global GPU ids of the group
  GroupLink before;
  GroupLink after;    ///< unset when `lost`
  bool lost = false;  ///< a member GPU is dead: the group cannot run
};

/// What an option does, or why it cannot run, with the WhatIf's own data (its baseline, the
/// degraded cluster, the groups hit) and the option's fields below.
enum class OptionNote {
  same_gpus,           ///< keep: the same split on the same GPUs (groups_hit: what changed)
  ranks_on_dead,       ///< keep: the plan has ranks on dead GPUs
  no_spare,            ///< re-place: fewer live GPUs than the split needs
  onto_spares,         ///< re-place: the dead GPUs' ranks move onto spare GPUs
  nic_only,            ///< re-place: no bad GPU or link to group around (a NIC)
  not_one_domain,      ///< re-place: regrouping needs servers of up to 8 GPUs, one NVLink domain
  tp_whole_server,     ///< re-place: the baseline's TP takes the whole server
  tp_no_split,         ///< re-place: the baseline's TP does not split a server into groups
  switch_no_gain,      ///< re-place: on an NVSwitch no regrouping avoids the bad GPU
  no_better_grouping,  ///< re-place: no regrouping beats keeping the plan
  regrouped,           ///< re-place: the GPUs of `regrouped` servers regrouped
  not_one_gpu,         ///< cordon-gpu: no failure is on one GPU
  cordoned,            ///< cordon-gpu, cordon-server: `cordoned` taken out, `replan` how it went
};

/// How the search on what is left ended (the cordon options).
enum class Replan {
  none,         ///< no search ran: nothing was left
  runs,         ///< a plan fits
  no_gpu_left,  ///< every GPU is cordoned
  no_fit,       ///< no split of `gpus` fits in memory
  no_split,     ///< no split of `gpus` divides the model and batch
};

struct ReplanOutcome {
  Replan result = Replan::none;
  int gpus = 0;  ///< live GPUs searched
  /// no_split: the fewest GPUs the pinned split takes (TP x PP x DP pinned, times CP where
  /// pinned) when that is more than `gpus`, so no count of what is left runs it; 0 otherwise.
  long long pinned_gpus = 0;
  bool pinned = false;  ///< no_split: TP, PP, DP or CP is pinned (the pins narrow the search)
};

/// A server whose GPUs re-place regrouped: its TP groups are consecutive runs of `order`
/// (server-local GPU indexes), TP GPUs each.
struct Regrouping {
  int server = 0;
  std::vector<int> order;
};

/// cordon-server: the server counts searched, and the plan on the most servers that have one.
/// With the global batch fixed, fewer GPUs can run faster than the most that have a split (a
/// count whose splits are all awkward: 16,128 servers take PP 63 for a batch of 2,048); below
/// the first count that runs, up to 16 more counts with a split, down to half the live
/// servers, are searched, and one is kept when it beats the plan on more servers by more than
/// the stack's measured error band (tied_with_leader).
struct ServerCountScan {
  int counts_searched = 0;           ///< server counts searched: the first, and those with a split
  int lowest_count = 0;              ///< the fewest servers searched
  int most_servers = 0;              ///< the most live servers a plan runs on; 0 when none does
  double most_servers_step_s = 0.0;  ///< that plan's step time
};

struct WhatIfOption {
  WhatIfKind kind = WhatIfKind::keep;
  bool available = false;
  OptionNote note = OptionNote::same_gpus;  ///< what it does, or why it cannot be done
  std::vector<int> cordoned;          ///< cordon-gpu: GPU ids; cordon-server: server ids, ascending
  ReplanOutcome replan;               ///< cordon: the search with no server set aside as spare
  std::vector<Regrouping> regrouped;  ///< re-place (regrouped): the servers regrouped
  std::optional<PlanResult> plan;     ///< the plan this option runs; set when available
  /// The cluster the plan runs on, its ranks on the live GPUs in order (planner/layout.h):
  /// the degraded one (keep, re-place), with the cordoned GPUs or servers and any spare
  /// servers dead (cordon). Set when available; --emit writes the launch from it.
  std::optional<Cluster> cluster;
  int gpus = 0;           ///< GPUs the job runs on
  int servers = 0;        ///< cordon-server: live servers the job runs on
  int spare_servers = 0;  ///< whole live servers left idle (cordon-server)
  ServerCountScan scan;   ///< cordon-server: how the server count was chosen
  double step_time_s = 0.0;
  double slowdown = 0.0;  ///< step_time_s / healthy step time - 1
};

struct WhatIf {
  std::vector<Failure> failures;
  Cluster degraded;                  ///< the cluster with every failure applied
  PlanResult baseline;               ///< the healthy best plan
  std::vector<GroupHit> groups_hit;  ///< groups of the baseline the failures reach
  /// Groups of the baseline holding a GPU the failures reach whose links keep their rates (a
  /// NIC lost where the others still feed every PCIe link; a PP pair across servers beside a
  /// failed NVLink): not in groups_hit.
  int groups_unchanged = 0;
  std::vector<WhatIfOption> options;  ///< available first, fastest first; then the others
  /// Every search the comparison ran, summed (the healthy cluster's, each option's, each
  /// server count cordon-server tried): its counters only, no plans.
  SearchResult searched;
};

/// Thrown by what_if() when no plan fits the healthy cluster: nothing to compare the failures
/// with. The CLI says so in words (cli/whatif_report.cpp).
class NoHealthyPlanError : public PlanError {
 public:
  NoHealthyPlanError() : PlanError("no healthy plan") {}
};

/// Runs the comparison. `options` narrows every search as it narrows the healthy one.
/// Throws what parse/apply/search throw: InputError for a spec naming a missing part,
/// NoSplitError when the healthy cluster has no split at all, NoHealthyPlanError when none
/// of its splits fits.
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
