// The search over splits and knobs; see search.h for the contract.
#include "planner/search.h"

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <tuple>

#include "costmodel/context_parallel.h"
#include "costmodel/kernels.h"
#include "costmodel/memory.h"
#include "costmodel/pipeline.h"
#include "costmodel/plan_memory.h"
#include "costmodel/precision.h"
#include "planner/best_plans.h"
#include "planner/layout.h"
#include "planner/option_check.h"
#include "planner/splits.h"
#include "topology/errors.h"

namespace trident {

namespace {

auto plan_key(const PlanResult& plan) {
  const auto& c = plan.config;
  return std::tuple(c.tp, c.pp, c.dp, c.micro_batch, c.virtual_stages,
                    static_cast<int>(c.recompute), c.recompute_layers, c.zero, c.sequence_parallel,
                    c.cp, c.ep, static_cast<int>(plan.placement.order), c.dp_shard);
}

/// Infeasible plans: closest to fitting first.
bool closer_to_fitting(const PlanResult& a, const PlanResult& b) {
  if (a.estimate.memory.total_bytes != b.estimate.memory.total_bytes) {
    return a.estimate.memory.total_bytes < b.estimate.memory.total_bytes;
  }
  return plan_key(a) < plan_key(b);
}

MemoryShortfall shortfall_of(const MemoryBreakdown& memory, double reserve_gib) {
  return {unfragmented_bytes(memory), memory.capacity_bytes, reserve_gib};
}

/// Whether `config` is also placed tp-pp-dp: CP and EP groups are laid out tp-cp-(ep-)dp-pp
/// only (Megatron-Core's default order), and a stack without the tp-pp-dp mapping
/// (Stack::tp_pp_dp_order) runs tp-dp-pp only.
bool tries_tp_pp_dp(const ParallelConfig& config, const Stack& stack) {
  return config.cp == 1 && config.ep == 1 && stack.tp_pp_dp_order;
}

/// A split's placement in the two rank orders, and whether they price alike.
struct Placed {
  Placement first;
  Placement second;
  bool alike = false;
};

/// Runs the knobs of one split; placements computed once per rank order.
class SplitSearch {
 public:
  SplitSearch(const Cluster& cluster, const Model& model, const SearchOptions& options,
              const Calibration* calibration, SearchResult& result)
      : cluster_(cluster),
        placer_(cluster),
        model_(model),
        options_(options),
        calibration_(calibration),
        result_(result),
        estimate_options_(estimate_options(options)),
        plans_(options.keep, better_plan),
        infeasible_(options.keep_infeasible, closer_to_fitting) {}

  [[nodiscard]] int gpus() const { return static_cast<int>(placer_.live().size()); }

  /// The plans that fit, best first (tight ones after the rest), at most options.keep.
  [[nodiscard]] std::vector<PlanResult> take_plans() { return plans_.take(); }
  /// When shown, the plans that do not fit, closest to fitting first.
  [[nodiscard]] std::vector<PlanResult> take_infeasible() { return infeasible_.take(); }

  void run(const Split& split) {
    ParallelConfig config;
    config.tp = split.tp;
    config.pp = split.pp;
    config.dp = split.dp;
    config.cp = split.cp;
    config.ep = split.ep;
    placed_ = false;
    for (const StageLayers& ends : end_stage_candidates(model_, options_, split.pp)) {
      config.first_stage_layers = ends.first;
      config.last_stage_layers = ends.last;
      run_micro_batches(config);
    }
  }

 private:
  void run_micro_batches(ParallelConfig config) {
    const long long per_replica = model_.training.global_batch / config.dp;
    const StageLayers split = stage_layers(model_.layers, config);
    const int pp = config.pp;
    // The interleavings at which no knob fitted at a smaller micro-batch: a stage's memory
    // grows with the micro-batch (its activations, transients and pipeline buffers scale with
    // it, the states do not), so none fits at a larger one either; those are counted as
    // searched and not fitting without pricing them (shrinks_with_micro_batch says where
    // memory may fall with it, and there every one is priced).
    std::vector<int> unfit_vps;
    const bool prunes = !options_.show_infeasible && !shrinks_with_micro_batch(config);
    for (const int mb : divisors(per_replica)) {
      if (!allowed(options_.micro_batch, mb)) continue;
      config.micro_batch = mb;
      const long long m = per_replica / mb;
      // Interleaving splits each stage's layers into vp chunks: vp divides the (largest)
      // stage's layer count, ceil(L/p) when the split is uneven.
      for (const int vp : divisors(split.most())) {
        if (!allowed(options_.vp, vp)) continue;
        if (vp > 1 && !options_.stack.interleaved_pipeline) continue;
        if (options_.stack.uneven_stages_ends_only &&
            !ends_only_split(model_.layers, pp, vp, split)) {
          continue;
        }
        // Megatron-LM's interleaved schedule: needs pp > 1 and m a multiple of pp.
        if (vp > 1 && (pp < 2 || m % pp != 0)) continue;
        config.virtual_stages = vp;
        unfit_ = prunes && std::find(unfit_vps.begin(), unfit_vps.end(), vp) != unfit_vps.end();
        const long long fitted = fitted_;
        run_knobs(config);
        if (prunes && !unfit_ && fitted_ == fitted) unfit_vps.push_back(vp);
      }
    }
    unfit_ = false;
  }

  /// Whether a stage's memory may fall as the micro-batch grows: an unfused attention's softmax
  /// is fused only where micro-batch x heads / TP is a multiple of 4, and PyTorch's fp32 one
  /// past that gate keeps 6 bytes a score where the fused keeps 2 (unfused_scores_working_bytes,
  /// docs/cost_model.md#unfused-attention: micro-batch 1 of 2 heads a rank needs more than 2);
  /// ZeRO-3 keeping the gathered weights over PP's micro-batches holds one chunk's gradients
  /// when the step is one round of fewer micro-batches (kept_gradient_share); torch
  /// pipelining's idle receive buffers (pp_recv_buffer_bytes) shrink as fewer micro-batches
  /// wait.
  [[nodiscard]] bool shrinks_with_micro_batch(const ParallelConfig& config) const {
    if (!is_fused(options_.stack.attention)) return true;
    if (config.pp < 2) return false;
    if (options_.stack.pp_recv_buffers_per_micro_batch) return true;
    const bool zero3 =
        allowed(options_.zero, 3) && options_.stack.supports_zero(3, config) && !model_.is_moe();
    return zero3 && options_.stack.pp_keeps_gathered_weights;
  }

  void run_knobs(ParallelConfig config) {
    none_fits_outright_.clear();
    for (const Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
      if (options_.recompute && *options_.recompute != recompute) continue;
      if (!options_.stack.supports(recompute)) continue;
      if (recompute == Recompute::selective &&
          !selective_applies(options_.stack.selective, model_)) {
        continue;  // nothing for this stack's selective recompute to repeat on this model
      }
      config.recompute = recompute;
      config.recompute_layers = 0;
      if (options_.recompute_layers) {
        if (recompute != Recompute::full) continue;
        // A pin of at least the chunk's layers recomputes all of them: plain full recompute.
        const int chunk = chunk_layers(config);
        if (*options_.recompute_layers < chunk) {
          if (!options_.stack.runs_partial_recompute(chunk, *options_.recompute_layers,
                                                     even_stages(config))) {
            continue;
          }
          config.recompute_layers = *options_.recompute_layers;
        }
      }
      // With one rank to shard over (DP x CP = 1) every ZeRO stage is the same plan: only the
      // lowest the stack runs is searched, unless one is pinned (they filled the top rows in
      // identical pairs).
      const bool one_rank = config.dp * config.cp == 1 && !options_.zero;
      for (int zero = 0; zero <= 3; ++zero) {
        if (!allowed(options_.zero, zero)) continue;
        // Only the ZeRO stages the stack runs with this PP (DeepSpeed's PipelineEngine
        // asserts ZeRO < 2; Megatron's distributed optimizer is ZeRO-1; torchtitan runs FSDP
        // with PP): costmodel/stack.h.
        if (!options_.stack.supports_zero(zero, config)) continue;
        if (!options_.stack.runs_fp8_params_at(zero, model_.training)) continue;
        if (!options_.stack.runs_optimizer_at(zero, model_.training)) continue;
        if (zero >= 3 && model_.is_moe()) continue;  // experts not sharded per unit
        config.zero = zero;
        run_sequence_parallel(config);
        if (one_rank) break;
      }
    }
  }

  void run_sequence_parallel(ParallelConfig config) {
    for (const bool sp : {false, true}) {
      if (sp && (config.tp < 2 || !options_.stack.sequence_parallel)) continue;
      if (sp && !sp_divides_sequence(model_, config.tp, config.cp)) continue;
      if (!sp && sp_required(model_, options_, config.tp)) continue;
      if (options_.sequence_parallel && *options_.sequence_parallel != sp) continue;
      config.sequence_parallel = sp;
      run_shards(config);
    }
  }

  /// Sharding over all of DP, then the HSDP shard sizes, of which only the fastest is kept (the
  /// sizes differ by little; one row per knob setting). An HSDP plan holds more state per GPU
  /// than sharding over all of DP, so none fits where that does not: not priced.
  void run_shards(ParallelConfig config) {
    // The fastest HSDP size for every layer recomputed and for partial recompute: two knob
    // settings, one row each. Held on the heap only once an HSDP size gives a plan: a plan is
    // kilobytes, and most configurations (no HSDP) would zero two of them a call for nothing.
    std::unique_ptr<PlanResult> best_hybrid;
    std::unique_ptr<PlanResult> best_partial_hybrid;
    bool full_fits = true;
    for (const int shard : shard_candidates(options_, config.zero, config.dp, model_.is_moe())) {
      config.dp_shard = shard;
      if (shard > 0 && !full_fits) break;
      std::optional<PlanResult> plan = evaluate(config);
      if (shard == 0) full_fits = plan.has_value();
      if (!plan) continue;
      if (config.recompute == Recompute::none && !plan->estimate.memory.tight) {
        none_fits_outright_.push_back(
            {config.zero, config.sequence_parallel ? 1 : 0, config.dp_shard});
      }
      if (shard == 0) {
        rank(*plan);
        if (searches_partial(config)) {
          if (const auto partial = fewest_recomputed(config, *plan)) rank(*partial);
        }
        continue;
      }
      if (searches_partial(config)) {
        if (const auto partial = fewest_recomputed(config, *plan)) {
          keep_faster(best_partial_hybrid, *partial);
        }
      }
      keep_faster(best_hybrid, *plan);
    }
    if (best_hybrid) rank(*best_hybrid);
    if (best_partial_hybrid) rank(*best_partial_hybrid);
  }

  /// A plan that fits enters the ranking: counted here, so `feasible` and `tight` count the
  /// plans the ranking holds (the partial-recompute probes and the slower HSDP sizes are
  /// searched, and counted as such, but not ranked).
  void rank(const PlanResult& plan) {
    ++result_.feasible;
    if (plan.estimate.memory.tight) ++result_.tight;
    plans_.offer(plan);
  }

  static void keep_faster(std::unique_ptr<PlanResult>& best, const PlanResult& plan) {
    if (!best) {
      best = std::make_unique<PlanResult>(plan);
    } else if (better_plan(plan, *best)) {
      *best = plan;
    }
  }

  [[nodiscard]] bool even_stages(const ParallelConfig& config) const {
    return model_stage_layers(model_, config).even(config.pp);
  }

  [[nodiscard]] int chunk_layers(const ParallelConfig& config) const {
    return model_chunk_layers(model_, config);
  }

  /// Whether to look for partial recompute beside full recompute of every layer: recompute
  /// free, the stack runs it, and no recompute at all does not already fit outright.
  [[nodiscard]] bool searches_partial(const ParallelConfig& config) const {
    if (config.recompute != Recompute::full || config.recompute_layers != 0) return false;
    if (options_.recompute || options_.recompute_layers) return false;
    if (options_.stack.partial_recompute == PartialRecompute::none) return false;
    const std::array<int, 3> key{config.zero, config.sequence_parallel ? 1 : 0, config.dp_shard};
    return std::find(none_fits_outright_.begin(), none_fits_outright_.end(), key) ==
           none_fits_outright_.end();
  }

  /// The fewest layers per chunk full recompute can repeat and still fit as well as
  /// recomputing all of them does (outright, or tight when that is only tight): memory falls
  /// and time grows with every layer recomputed, so a binary search over what the stack runs.
  std::optional<PlanResult> fewest_recomputed(ParallelConfig config, const PlanResult& all) {
    const int chunk = chunk_layers(config);
    // Block recompute runs every count below the chunk: searched as a range (a list of them
    // took 1 GB and a minute for a chunk of 2x10^8 layers); every k-th block only divisors.
    const bool block = options_.stack.partial_recompute == PartialRecompute::block;
    std::vector<int> candidates;
    if (!block) {
      const bool even = even_stages(config);
      for (const int n : divisors(chunk)) {
        if (options_.stack.runs_partial_recompute(chunk, n, even)) candidates.push_back(n);
      }
    }
    const auto candidate = [&](std::size_t i) {
      return block ? static_cast<int>(i) + 1 : candidates[i];
    };
    const bool outright = !all.estimate.memory.tight;
    std::optional<PlanResult> best;
    std::size_t low = 0;
    std::size_t high = block ? static_cast<std::size_t>(std::max(chunk - 1, 0)) : candidates.size();
    while (low < high) {
      const std::size_t mid = low + (high - low) / 2;
      config.recompute_layers = candidate(mid);
      std::optional<PlanResult> plan = evaluate(config, Probe::yes);
      if (plan && (!outright || !plan->estimate.memory.tight)) {
        best = plan;
        high = mid;
      } else {
        low = mid + 1;
      }
    }
    return best;
  }

  /// The split's placements in both orders; HSDP configurations get their shard and
  /// replicate links added (computed once per shard size and split).
  const Placed& placed(const ParallelConfig& config) {
    ensure_placed(config);
    if (!config.hybrid_shard()) return plain_;
    for (const auto& [shard, hybrid] : hybrid_) {
      if (shard == config.dp_shard) return hybrid;
    }
    Placed hybrid;
    hybrid.first = placer_.with_shard_links(config, plain_.first);
    hybrid.second = plain_.alike ? hybrid.first : placer_.with_shard_links(config, plain_.second);
    hybrid.alike = plain_.alike || same_links(hybrid.first, hybrid.second);
    hybrid_.emplace_back(config.dp_shard, hybrid);
    return hybrid_.back().second;
  }

  void ensure_placed(const ParallelConfig& config) {
    if (placed_) return;
    ParallelConfig plain = config;
    plain.dp_shard = 0;
    const bool amax = reduces_amax(model_.training);
    plain_.first = placer_.place(plain, RankOrder::tp_dp_pp, amax);
    const bool one_order = !tries_tp_pp_dp(config, options_.stack);
    plain_.second = one_order ? plain_.first : placer_.place(plain, RankOrder::tp_pp_dp, amax);
    plain_.alike = one_order || same_links(plain_.first, plain_.second);
    result_.placements += plain_.alike ? 1 : 2;
    hybrid_.clear();
    placed_ = true;
  }

  /// A probe of the partial-recompute search: one that does not fit is no alternative to
  /// list (more recomputed layers of the same split fit).
  enum class Probe { no, yes };

  /// Prices one configuration in each rank order: the better of the orders that fit, or
  /// nullopt; a configuration no order fits goes to the infeasible list when asked (probes
  /// aside). Memory depends on the order through NCCL's buffers (a group across NVLink domains
  /// holds more channels), so each order decides its own fit.
  std::optional<PlanResult> evaluate(const ParallelConfig& config, Probe probe = Probe::no) {
    if (options_.count_only) {
      ++result_.configurations_searched;
      return std::nullopt;
    }
    if (unfit_) {  // a smaller micro-batch fitted nothing (run_micro_batches)
      ++result_.configurations_searched;
      if (probe == Probe::no) ++result_.does_not_fit;
      return std::nullopt;
    }
    const Placed& where = placed(config);
    ++result_.configurations_searched;
    std::optional<PlanResult> best;
    // Of the orders that do not fit, the nearest: on the heap, asked for (--show-infeasible)
    // only; a plan is kilobytes, not built or zeroed per configuration for nothing.
    std::unique_ptr<PlanResult> closest;
    for (const Placement* placement : {&where.first, where.alike ? nullptr : &where.second}) {
      if (placement == nullptr) continue;
      ++result_.evaluations;
      // Without the infeasible list nothing reads a plan that does not fit: its memory alone
      // decides it (may_fit), and its time is not priced. Most plans of a long-sequence or
      // MoE search do not fit (DeepSeek-V3 at 131,072 tokens on 16,384 GPUs: 84%).
      if (!options_.show_infeasible &&
          !may_fit(cluster_, model_, config, *placement, estimate_options_)) {
        continue;
      }
      PlanResult plan{
          config,
          *placement,
          estimate(cluster_, model_, config, *placement, calibration_, estimate_options_),
          {}};
      if (!plan.estimate.memory.fits) {
        if (!options_.show_infeasible) continue;
        if (!closest) {
          closest = std::make_unique<PlanResult>(plan);
        } else if (closer_to_fitting(plan, *closest)) {
          *closest = plan;
        }
      } else if (!best) {
        best.emplace(plan);
      } else if (better_plan(plan, *best)) {
        *best = plan;
      }
    }
    if (best) {
      ++fitted_;
      return best;
    }
    if (probe == Probe::no) ++result_.does_not_fit;
    if (options_.show_infeasible && probe == Probe::no && closest) {
      closest->shortfall = shortfall_of(closest->estimate.memory, options_.reserve_gib);
      infeasible_.offer(*closest);
    }
    return std::nullopt;
  }

  const Cluster& cluster_;
  Placer placer_;  ///< the cluster's live GPUs listed once, each dimension's groups walked once
  const Model& model_;
  const SearchOptions& options_;
  const Calibration* calibration_;
  SearchResult& result_;
  EstimateOptions estimate_options_;
  BestPlans plans_;
  BestPlans infeasible_;
  Placed plain_;
  std::vector<std::pair<int, Placed>> hybrid_;
  /// (ZeRO stage, sequence parallel off/on, HSDP shard size) where the split fits outright
  /// without recompute (this micro-batch and interleaving).
  std::vector<std::array<int, 3>> none_fits_outright_;
  bool placed_ = false;
  long long fitted_ = 0;  ///< configurations evaluate() found to fit
  bool unfit_ = false;    ///< the knobs being run fit nothing (a smaller micro-batch did not)
};

}  // namespace

bool better_plan(const PlanResult& a, const PlanResult& b) {
  // A plan that does not fit ranks after every plan that does (its `tight` is false: it is
  // not an outright fit either).
  if (a.estimate.memory.fits != b.estimate.memory.fits) return a.estimate.memory.fits;
  // A plan that fits only if the allocator fragments less than its mean ranks after every
  // plan that fits with it.
  if (a.estimate.memory.tight != b.estimate.memory.tight) return !a.estimate.memory.tight;
  if (a.estimate.time.step_s != b.estimate.time.step_s) {
    return a.estimate.time.step_s < b.estimate.time.step_s;
  }
  return plan_key(a) < plan_key(b);
}

EstimateOptions estimate_options(const SearchOptions& options) {
  EstimateOptions out;
  out.reserve_gib = options.reserve_gib;
  out.stack = options.stack;
  return out;
}

bool tied_with_leader(const PlanResult& leader, const PlanResult& plan) {
  return plan.estimate.time.step_s <= leader.estimate.step_s_high;
}

PlanResult evaluate_plan(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                         const Calibration* calibration, const EstimateOptions& options) {
  const double reserve_gib = options.reserve_gib;
  PlanResult best;
  for (const RankOrder order : {RankOrder::tp_dp_pp, RankOrder::tp_pp_dp}) {
    if (order == RankOrder::tp_pp_dp && !tries_tp_pp_dp(config, options.stack)) break;
    const auto placement = place(cluster, config, order, reduces_amax(model.training));
    PlanResult plan{
        config, placement, estimate(cluster, model, config, placement, calibration, options), {}};
    if (order == RankOrder::tp_dp_pp || better_plan(plan, best)) best = plan;
  }
  if (!best.estimate.memory.fits) best.shortfall = shortfall_of(best.estimate.memory, reserve_gib);
  return best;
}

void resolve_attention(SearchOptions& options, const Model& model, const Gpu& gpu) {
  // FP8 attention has no fallback: check_stack_for_model refuses its heads on the cuDNN stack.
  if (model.training.dtype == Dtype::fp8 && model.training.fp8.attention) return;
  const AttentionKernel run = attention_run(options.stack, model, gpu);
  if (run != options.stack.attention) {
    options.stack.attention = run;
    options.stack.attention_is_fallback = true;
    // The fallback of a cuDNN stack is Transformer Engine's own unfused attention.
    options.stack.unfused_softmax = UnfusedSoftmax::transformer_engine;
  }
  // Transformer Engine's unfused attention, stated or as the fallback, takes no context
  // parallelism (dot_product_attention/utils.py L535-538 @v2.2.1).
  if (options.stack.attention != AttentionKernel::unfused ||
      options.stack.unfused_softmax != UnfusedSoftmax::transformer_engine ||
      options.stack.cp_kinds == 0) {
    return;
  }
  options.unfused_fallback = true;
  options.stack.cp_kinds = 0;
}

SearchResult search(const Cluster& asked_cluster, const Model& model, const SearchOptions& asked,
                    const Calibration* calibration, const SearchProgress& progress) {
  // Every split runs on the cluster's live GPUs, so at the pace of the slowest of them
  // (gpu_for_job): resolved once here rather than on a copy in every estimate().
  Cluster cluster = asked_cluster;
  cluster.gpu = gpu_for_job(cluster.gpu, static_cast<int>(live_gpus(cluster).size()));
  // Transformer Engine's fallback for heads cuDNN does not train here, resolved once rather
  // than on a copy in every estimate() (attention_run).
  SearchOptions options = asked;
  resolve_attention(options, model, cluster.gpu);
  if (const auto problem = find_option_problem(model, options)) throw OptionError(*problem);
  // The stack as asked (a V100, an fp32 run, FP8 attention), not its resolved kernel.
  check_model_on_gpu(model, cluster.gpu);
  check_stack_runs(asked.stack, model, cluster.gpu);
  SearchResult result;
  SplitSearch runner(cluster, model, options, calibration, result);
  result.gpus = runner.gpus();
  const auto all = splits(result.gpus, model, options);
  for (std::size_t i = 0; i < all.size(); ++i) {
    runner.run(all[i]);
    if (progress) progress(i + 1, all.size());
    if (options.count_only && result.configurations_searched > 0) break;
  }
  result.plans = runner.take_plans();
  result.infeasible = runner.take_infeasible();
  if (result.configurations_searched == 0) {
    throw NoSplitError(
        {.gpus = result.gpus,
         .heads = model.heads,
         .kv_heads = model.kv_heads,
         .ffn_hidden = tp_split_ffn_width(model),
         .sp_seq_len = sp_required(model, options, 2) ? model.seq_len : 0,
         .layers = model.layers,
         .pipelines = options.stack.pipelines(),
         .uneven_stages = options.stack.uneven_stages,
         .global_batch = model.training.global_batch,
         .moe = model.is_moe(),
         .dp_alone = moe_dp_alone(model, options.stack),
         .dp_shard = options.dp_shard.value_or(0),
         .ulysses_only = !options.stack.supports(CpKind::p2p) &&
                         !options.stack.supports(CpKind::all_gather) &&
                         options.stack.supports(CpKind::a2a),
         .every_kth_layers = options.stack.partial_recompute == PartialRecompute::every_kth
                                 ? options.recompute_layers.value_or(0)
                                 : 0});
  }
  return result;
}

}  // namespace trident
