#pragma once
/// The search: every tensor x pipeline x data parallel split of the cluster's live GPUs with
/// micro-batch, interleaving, recomputation, ZeRO stage and sequence parallelism, each placed
/// on the topology (both rank orders) and priced by the cost model; best first by step time.
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/estimate.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/placement.h"
#include "topology/cluster.h"
#include "topology/errors.h"

namespace trident {

/// Narrows the search. A pinned value is the only one tried; with every pin set exactly one
/// configuration is evaluated (in both rank orders).
struct SearchOptions {
  std::optional<int> tp;
  std::optional<int> pp;
  std::optional<int> dp;
  std::optional<int> micro_batch;
  std::optional<int> vp;  ///< virtual stages per GPU
  std::optional<Recompute> recompute;
  /// Partial full recompute: layers recomputed per model chunk (implies full recompute). Not
  /// pinned: with recompute free, the search adds to each split that fits with full recompute
  /// the fewest recomputed layers that still fit, where the stack runs partial recompute.
  std::optional<int> recompute_layers;
  std::optional<int> zero;
  std::optional<bool> sequence_parallel;
  std::optional<int> cp;  ///< context parallel size
  std::optional<int> ep;  ///< expert parallel size (MoE models)
  /// HSDP shard group size in DP ranks (dp = shard over all of DP); pinned, only ZeRO stages
  /// the stack shards hybrid are tried.
  std::optional<int> dp_shard;
  /// The split with lighter end stages (pipeline.h lighter_ends), where the stack pins end
  /// stages (Stack::stage_ends_pinned): true tries only it, false only the framework's default
  /// split; unset, both.
  std::optional<bool> lighter_ends;
  /// The end stages' decoder layers pinned (both or neither, with PP pinned): that split only.
  std::optional<int> first_stage_layers;
  std::optional<int> last_stage_layers;
  int min_tp = 1;
  int max_tp = 0;  ///< 0 = no limit
  /// Context parallel sizes tried: powers of two with 2 cp dividing the sequence, from min_cp
  /// to max_cp (0 = kMaxSearchedCp), only for sequences of kCpSearchMinSeqLen tokens or more
  /// unless min_cp > 1 or pinned, and only under a stack with context parallelism.
  int min_cp = 1;
  int max_cp = 0;
  /// Expert parallel sizes tried (MoE models): powers of two dividing the experts and
  /// tp x cp x dp, from min_ep to max_ep (0 = the experts).
  int min_ep = 1;
  int max_ep = 0;
  double reserve_gib = 0.0;  ///< extra headroom kept free on every GPU (context, NCCL priced)
  Stack stack;               ///< the software that runs the split; only what it supports is tried
  /// Transformer Engine's unfused attention runs, the stack's stated kernel or its cuDNN
  /// attention's fallback for the model's heads on the GPU (resolve_attention,
  /// Stack::attention_is_fallback says which): it takes no context parallelism.
  bool unfused_fallback = false;
  std::size_t keep = 10;  ///< feasible plans kept, best first
  bool show_infeasible = false;
  /// Count the configurations only, stopping at the first: no placement, no estimate (why a
  /// set of pins leaves none: cli/search_text.h).
  bool count_only = false;
  std::size_t keep_infeasible = 10;  ///< closest-to-fitting infeasible plans kept when shown
};

/// Why a plan does not fit: what it needs per GPU (CUDA context and NCCL buffers included)
/// against what is usable. cli/search_text.h says it in words.
struct MemoryShortfall {
  /// Allocated + CUDA context + NCCL buffers: what must fit before any fragmentation.
  double needed_bytes = 0.0;
  double usable_bytes = 0.0;
  double reserve_gib = 0.0;  ///< the extra headroom kept free (0: none)
};

struct PlanResult {
  ParallelConfig config;
  Placement placement;
  Estimate estimate;
  std::optional<MemoryShortfall> shortfall;  ///< set on a plan kept although it does not fit
};

struct SearchResult {
  /// Feasible, best first (tight ones after the rest: better_plan), at most options.keep.
  std::vector<PlanResult> plans;
  std::vector<PlanResult> infeasible;     ///< when asked: least memory first
  long long configurations_searched = 0;  ///< valid configurations enumerated
  long long feasible = 0;                 ///< of those, how many fit and are ranked
  long long tight = 0;         ///< of the feasible, how many only below the mean fragmentation
  long long does_not_fit = 0;  ///< configurations that do not fit (partial-recompute probes aside)
  long long evaluations = 0;   ///< cost-model calls (a config in two rank orders: 2)
  long long placements = 0;    ///< (tp, pp, dp, order) placements computed
  int gpus = 0;                ///< live GPUs the splits use
};

/// Context parallelism is searched (not pinned) only from this sequence length: a choice to
/// keep the search small (unsourced; docs/cost_model.md#context-parallel), pins and --min-cp
/// reach any length.
inline constexpr int kCpSearchMinSeqLen = 16384;
/// Largest context parallel size the search tries unless --max-cp says otherwise.
inline constexpr int kMaxSearchedCp = 32;

/// Called after each (tp, pp) pair with (pairs done, pairs in all).
using SearchProgress = std::function<void(std::size_t done, std::size_t total)>;

/// Strict total order on plans: those that fit, then those that fit only below the mean
/// fragmentation (tight), then those that do not; within each, step time, then tp, pp, dp,
/// micro-batch, virtual stages, recompute, ZeRO, sequence parallel, rank order. Stable across
/// runs.
[[nodiscard]] bool better_plan(const PlanResult& a, const PlanResult& b);

/// The rules every split obeys, with the numbers of the model and GPUs they were checked
/// against: what a search that enumerated no configuration reports (NoSplitError).
struct SplitRules {
  int gpus = 0;
  int heads = 0;
  int kv_heads = 0;
  int ffn_hidden = 0;  ///< the FFN width TP splits (tp_split_ffn_width; 0: none)
  /// Sequence parallelism required at TP > 1 (sp_required): tp x cp divides the sequence.
  long long sp_seq_len = 0;
  int layers = 0;
  bool pipelines = true;       ///< the stack has pipeline parallelism (else pp is 1, no vp)
  bool uneven_stages = false;  ///< the stack splits layers unevenly: pp at most the layers
  long long global_batch = 0;
  bool moe = false;       ///< ep divides the experts and tp x cp x dp
  bool dp_alone = false;  ///< a MoE model under a stack left DDP over the whole job (moe_dp_alone)
  int dp_shard = 0;       ///< the pinned HSDP shard size (divides dp, below it, ZeRO-3); 0 = none
  /// Context parallelism by all-to-all only (--cp-comm a2a): cp divides the heads per TP rank.
  bool ulysses_only = false;
  /// The pinned partial recompute under a stack that recomputes every k-th block: the pin
  /// divides a chunk's layers (or is at least the chunk), on equal stages; 0 = no such pin.
  int every_kth_layers = 0;
};

/// Thrown by search() when the pins together leave no configuration; the CLI says the rules
/// in words (cli/search_text.h) from the data.
class NoSplitError : public PlanError {
 public:
  explicit NoSplitError(const SplitRules& rules)
      : PlanError("no configuration obeys the rules and pins"), rules_(rules) {}
  [[nodiscard]] const SplitRules& rules() const { return rules_; }

 private:
  SplitRules rules_;
};

/// Whether `gpus` GPUs have a TP x CP x PP x DP (x EP) split the model, the batch, the stack
/// and the pins allow: the search's own enumeration, no placement or estimate. False means
/// search() on that many GPUs throws NoSplitError; true does not promise a plan that fits.
[[nodiscard]] bool has_split(int gpus, const Model& model, const SearchOptions& options);

/// The product of the pinned sizes among TP, PP, DP and CP (1 for each free one): the GPUs
/// they take at least. Saturates at kPinnedGpusOverflow: four pins below 2^31 can pass 2^63.
[[nodiscard]] long long pinned_product(const SearchOptions& options);
inline constexpr long long kPinnedGpusOverflow = std::numeric_limits<long long>::max();

/// The GPUs pinned TP x PP x DP (x the pinned CP) take: pinned_product, nullopt unless TP, PP
/// and DP are all pinned.
[[nodiscard]] std::optional<long long> pinned_gpus(const SearchOptions& options);

/// Throws OptionError (an InputError carrying find_option_problem's data, planner/
/// option_check.h) when a pin or limit is impossible on its own (a pinned TP that does not
/// divide the heads, a minimum TP above the maximum, ZeRO 4...); NoSplitError when the pins
/// together leave no configuration.
[[nodiscard]] SearchResult search(const Cluster& cluster, const Model& model,
                                  const SearchOptions& options,
                                  const Calibration* calibration = nullptr,
                                  const SearchProgress& progress = {});

/// One configuration in both rank orders, the better kept (what search does per point).
[[nodiscard]] PlanResult evaluate_plan(const Cluster& cluster, const Model& model,
                                       const ParallelConfig& config,
                                       const Calibration* calibration = nullptr,
                                       const EstimateOptions& options = {});

/// The search's stack with the attention kernel that runs the model's heads on `gpu`
/// (attention_run): where cuDNN falls back to the unfused attention, context parallelism goes
/// too (TE's unfused attention takes none: dot_product_attention/utils.py L535-538 @v2.2.1,
/// "Disabling UnfusedDotProductAttention as it does not support context parallelism") and
/// `unfused_fallback` says why. Idempotent; search() applies it to its own copy.
void resolve_attention(SearchOptions& options, const Model& model, const Gpu& gpu);

/// The cost model's options for a search: its reserve and stack.
[[nodiscard]] EstimateOptions estimate_options(const SearchOptions& options);

/// Plans whose step time lies within the leader's band (the stack's measured error): their
/// difference is inside the model's error. `plans` best first; the leader is plans[0].
[[nodiscard]] bool tied_with_leader(const PlanResult& leader, const PlanResult& plan);

/// Sorted divisors of n (n >= 1).
[[nodiscard]] std::vector<int> divisors(long long n);

}  // namespace trident
