// The splits a search walks and the candidates of each dimension (planner/splits.h).
#include "planner/splits.h"

#include <algorithm>
#include <numeric>

#include "costmodel/context_parallel.h"
#include "costmodel/pipeline.h"

namespace trident {

namespace {

/// TP degrees: the divisors of largest_tp, within the limits and the pin.
std::vector<int> tp_candidates(const Model& model, const SearchOptions& options) {
  std::vector<int> out;
  for (const int tp : divisors(largest_tp(model))) {
    if (tp < options.min_tp || (options.max_tp > 0 && tp > options.max_tp)) continue;
    if (allowed(options.tp, tp)) out.push_back(tp);
  }
  return out;
}

/// CP sizes: 1, and powers of two with 2 cp dividing the sequence (causal load balancing)
/// when the stack has CP and the sequence is long (or CP is pinned or --min-cp asks).
std::vector<int> cp_candidates(const Model& model, const SearchOptions& options) {
  if (options.cp) return {*options.cp};
  std::vector<int> out;
  if (options.min_cp <= 1) out.push_back(1);
  const bool search = options.stack.context_parallel() &&
                      (model.seq_len >= kCpSearchMinSeqLen || options.min_cp > 1);
  if (!search) return out;
  const int most = options.max_cp > 0 ? options.max_cp : kMaxSearchedCp;
  // 64-bit: a --max-cp near 2^31 would overflow the doubling and 2 x cp.
  for (long long cp = 2; cp <= most && model.seq_len % (2 * cp) == 0; cp *= 2) {
    if (cp >= options.min_cp) out.push_back(static_cast<int>(cp));
  }
  return out;
}

/// EP sizes for a MoE model: powers of two dividing the experts and tp x cp x dp.
std::vector<int> ep_candidates(const Model& model, const SearchOptions& options, int block) {
  if (options.ep)
    return block % *options.ep == 0 ? std::vector<int>{*options.ep} : std::vector<int>{};
  std::vector<int> out;
  if (options.min_ep <= 1) out.push_back(1);
  if (!model.is_moe() || !options.stack.expert_parallel) return out;
  const int most = options.max_ep > 0 ? options.max_ep : model.moe.experts;
  for (int ep = 2; ep <= most && model.moe.experts % ep == 0 && block % ep == 0; ep *= 2) {
    if (ep >= options.min_ep) out.push_back(ep);
  }
  return out;
}

/// A CP size some kind the stack runs can take at this TP: ring attention and the all-gather
/// rotater always, Ulysses only where the heads divide (a stack pinned to all-to-all,
/// --cp-comm a2a, has neither).
bool cp_runnable(const Model& model, const Stack& stack, int tp, int cp) {
  if (cp <= 1 || stack.supports(CpKind::p2p) || stack.supports(CpKind::all_gather)) return true;
  ParallelConfig config;
  config.tp = tp;
  config.cp = cp;
  return cp_a2a_runs(stack, model, config);
}

}  // namespace

int tp_split_ffn_width(const Model& model) {
  const bool dense_layers = !model.is_moe() || model.moe_layers() < model.layers;
  const int shared = model.is_moe() ? model.moe.shared_experts * model.moe.expert_ffn_hidden : 0;
  return std::gcd(dense_layers ? model.ffn_hidden : 0, shared);
}

int largest_tp(const Model& model) {
  // gcd(x, 0) = x: no FFN split over TP leaves the heads' rule.
  return std::gcd(std::gcd(model.heads, model.kv_heads), tp_split_ffn_width(model));
}

bool sp_required(const Model& model, const SearchOptions& options, int tp) {
  if (tp < 2) return false;
  return model.is_moe() || options.stack.sequence_parallel_required ||
         options.sequence_parallel.value_or(false);
}

bool sp_divides_sequence(const Model& model, int tp, int cp) {
  return model.seq_len % (static_cast<long long>(tp) * cp) == 0;
}

std::vector<Split> splits(int gpus, const Model& model, const SearchOptions& options) {
  std::vector<Split> out;
  const long long batch = model.training.global_batch;
  const auto cps = cp_candidates(model, options);
  for (const int tp : tp_candidates(model, options)) {
    for (const int cp : cps) {
      // In 64 bits: a TP and a CP bound of 2^16 each (2^24 GPUs) wrapped an int to 0.
      const long long tp_cp = static_cast<long long>(tp) * cp;
      if (gpus % tp_cp != 0 || !cp_runnable(model, options.stack, tp, cp)) continue;
      if (sp_required(model, options, tp) && !sp_divides_sequence(model, tp, cp)) continue;
      const int rest = static_cast<int>(gpus / tp_cp);
      // DP divides both the GPUs TP and CP leave and the global batch: the divisors of their
      // gcd, largest first (PP ascending). Even splits: PP divides the layers; with uneven
      // stages any PP up to the layers. (Walking the divisors of the GPUs instead cost a
      // cordon-server scan of 131,071 server counts 0.3 s.)
      const auto dps = divisors(std::gcd(static_cast<long long>(rest), batch));
      for (auto dp = dps.rbegin(); dp != dps.rend(); ++dp) {
        const int pp = rest / *dp;
        if (pp > model.layers || (pp > 1 && !options.stack.pipelines())) break;
        if (!options.stack.uneven_stages && model.layers % pp != 0) continue;
        if (!ends_only_writable(model, options, pp, 1)) continue;
        if (!allowed(options.pp, pp) || !allowed(options.dp, *dp)) continue;
        for (const int ep : ep_candidates(model, options, tp * cp * *dp)) {
          out.push_back({tp, pp, *dp, cp, ep});
        }
      }
    }
  }
  return out;
}

/// HSDP shard group sizes for a ZeRO stage: 0 (shard over all of DP) and, where the stack
/// shards this stage per unit with hybrid sharding, powers of two from 2 below dp that divide
/// it. A pin (N < dp) is the only size tried and leaves out the stages that cannot shard
/// hybrid; a pin equal to dp means all of DP.
std::vector<int> shard_candidates(const SearchOptions& options, int zero, int dp, bool moe) {
  // MoE models: the experts' state is sharded over all of DP (moe.h); HSDP is not tried.
  const bool hybrid = options.stack.supports_hybrid_shard(zero) && !moe;
  // A pin shards per unit (ZeRO-3, a per-unit ZeRO-2): no other stage runs under it.
  if (options.dp_shard && !options.stack.shards_per_unit(zero)) return {};
  if (options.dp_shard && *options.dp_shard != dp) {
    if (!hybrid || *options.dp_shard < 2 || dp % *options.dp_shard != 0) return {};
    return {*options.dp_shard};
  }
  std::vector<int> out{0};
  if (options.dp_shard || !hybrid) return out;
  for (int shard = 2; shard < dp; shard *= 2) {
    if (dp % shard == 0) out.push_back(shard);
  }
  return out;
}

std::vector<int> divisors(long long n) {
  std::vector<int> small;
  std::vector<int> large;
  for (long long d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(static_cast<int>(d));
    if (d * d != n) large.push_back(static_cast<int>(n / d));
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

bool has_split(int gpus, const Model& model, const SearchOptions& options) {
  return gpus > 0 && !splits(gpus, model, options).empty();
}

long long pinned_product(const SearchOptions& options) {
  long long product = 1;
  for (const auto& pin : {options.tp, options.pp, options.dp, options.cp}) {
    if (__builtin_mul_overflow(product, static_cast<long long>(pin.value_or(1)), &product)) {
      return kPinnedGpusOverflow;
    }
  }
  return product;
}

std::optional<long long> pinned_gpus(const SearchOptions& options) {
  if (!options.tp || !options.pp || !options.dp) return std::nullopt;
  return pinned_product(options);
}

std::vector<StageLayers> end_stage_candidates(const Model& model, const SearchOptions& options,
                                              int pp) {
  if (options.first_stage_layers && options.last_stage_layers) {
    return {StageLayers{*options.first_stage_layers, 0, *options.last_stage_layers}};
  }
  std::vector<StageLayers> out;
  if (options.lighter_ends != true) out.push_back({});
  if (options.lighter_ends != false) {
    for (const StageLayers& lighter : lighter_candidates(model, options.stack, pp)) {
      out.push_back(lighter);
    }
  }
  return out;
}

std::vector<StageLayers> lighter_candidates(const Model& model, const Stack& stack, int pp) {
  std::vector<StageLayers> out;
  if (!stack.stage_ends_pinned) return out;
  const bool unequal = stack.runs_unequal_middles();
  for (const auto& lighter :
       {lighter_ends(model.layers, pp, unequal), lightest_last(model.layers, pp)}) {
    if (!lighter) continue;
    if (stage_ends_problem(model.layers, pp, lighter->first, lighter->last, unequal) !=
        StageEndsProblem::ok) {
      continue;
    }
    const bool seen = std::any_of(out.begin(), out.end(), [&](const StageLayers& s) {
      return s.first == lighter->first && s.last == lighter->last;
    });
    if (!seen) out.push_back(*lighter);
  }
  return out;
}

bool ends_only_writable(const Model& model, const SearchOptions& options, int pp, int vp) {
  if (!options.stack.uneven_stages_ends_only) return true;
  for (const StageLayers& ends : end_stage_candidates(model, options, pp)) {
    ParallelConfig config;
    config.pp = pp;
    config.first_stage_layers = ends.first;
    config.last_stage_layers = ends.last;
    if (ends_only_split(model.layers, pp, vp, stage_layers(model.layers, config))) return true;
  }
  return false;
}

}  // namespace trident
