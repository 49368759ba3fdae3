// What a search says in words (cli/search_text.h).
#include "cli/search_text.h"

#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <vector>

namespace trident::cli {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::string shortfall_text(const MemoryShortfall& shortfall) {
  char text[200];
  if (shortfall.reserve_gib > 0.0) {
    std::snprintf(text, sizeof text,
                  "needs %.2f GiB per GPU before fragmentation (CUDA context and NCCL buffers "
                  "included), %.2f GiB usable (%.0f GiB kept free)",
                  shortfall.needed_bytes / kGib, shortfall.usable_bytes / kGib,
                  shortfall.reserve_gib);
  } else {
    std::snprintf(text, sizeof text,
                  "needs %.2f GiB per GPU before fragmentation (CUDA context and NCCL buffers "
                  "included), %.2f GiB usable",
                  shortfall.needed_bytes / kGib, shortfall.usable_bytes / kGib);
  }
  return text;
}

std::string shortfall_text(const PlanResult& plan) {
  return plan.shortfall ? shortfall_text(*plan.shortfall) : "";
}

std::string rules_text(const SplitRules& rules) {
  return "tp divides heads " + std::to_string(rules.heads) + ", kv_heads " +
         std::to_string(rules.kv_heads) + " and ffn_hidden " + std::to_string(rules.ffn_hidden) +
         (rules.sp_seq_len > 0 ? ", tp*cp divides seq_len " + std::to_string(rules.sp_seq_len) +
                                     " (sequence parallelism)"
                               : "") +
         (rules.uneven_stages ? ", pp at most the layers " : ", pp divides layers ") +
         std::to_string(rules.layers) + ", tp*cp*pp*dp = GPUs, dp divides the global batch " +
         std::to_string(rules.global_batch) + ", micro-batch divides global batch / dp" +
         ", vp divides a stage's layers with pp > 1 and micro-batches a multiple of pp" +
         (rules.moe ? ", ep divides the experts and tp*cp*dp" : "") +
         (rules.dp_shard > 0 ? ", --dp-shard " + std::to_string(rules.dp_shard) +
                                   " divides dp with a ZeRO stage sharded per unit"
                             : "") +
         (rules.ulysses_only ? ", cp divides the heads and kv_heads per TP rank (all-to-all CP)"
                             : "") +
         (rules.every_kth_layers > 0
              ? ", --recompute-layers " + std::to_string(rules.every_kth_layers) +
                    " divides the layers per chunk (every k-th block) on equal stages, or is at "
                    "least the chunk"
              : "");
}

std::string no_split_text(const SplitRules& rules) {
  return "no configuration of " + std::to_string(rules.gpus) + " GPUs obeys the rules and pins (" +
         rules_text(rules) + ")";
}

namespace {

/// One pin as its flag says it, and how to clear it from a copy of the options.
struct Pin {
  std::string flag;
  std::function<void(SearchOptions&)> clear;
};

std::vector<Pin> pins_of(const SearchOptions& o) {
  std::vector<Pin> pins;
  const auto add = [&](const char* name, const std::optional<int>& value, auto clear) {
    if (value) pins.push_back({fmt::format("--{} {}", name, *value), clear});
  };
  add("tp", o.tp, [](SearchOptions& s) { s.tp.reset(); });
  add("pp", o.pp, [](SearchOptions& s) { s.pp.reset(); });
  add("dp", o.dp, [](SearchOptions& s) { s.dp.reset(); });
  add("cp", o.cp, [](SearchOptions& s) { s.cp.reset(); });
  add("ep", o.ep, [](SearchOptions& s) { s.ep.reset(); });
  add("micro-batch", o.micro_batch, [](SearchOptions& s) { s.micro_batch.reset(); });
  add("vp", o.vp, [](SearchOptions& s) { s.vp.reset(); });
  add("dp-shard", o.dp_shard, [](SearchOptions& s) { s.dp_shard.reset(); });
  add("recompute-layers", o.recompute_layers, [](SearchOptions& s) { s.recompute_layers.reset(); });
  return pins;
}

/// The rule a pin most often breaks, in words.
std::string pin_rule(const std::string& flag, const SplitRules& r) {
  if (flag.starts_with("--tp ")) {
    return fmt::format("TP divides heads {}, kv_heads {}, ffn_hidden {} and the GPUs", r.heads,
                       r.kv_heads, r.ffn_hidden);
  }
  if (flag.starts_with("--pp ")) {
    return fmt::format("PP {} the layers {} and divides the GPUs over TP x CP x DP",
                       r.uneven_stages ? "at most" : "divides", r.layers);
  }
  if (flag.starts_with("--dp ")) {
    return fmt::format("DP divides the global batch {} and the GPUs over TP x CP x PP",
                       r.global_batch);
  }
  if (flag.starts_with("--micro-batch ")) {
    return fmt::format("the micro-batch divides the global batch {} / DP", r.global_batch);
  }
  if (flag.starts_with("--vp ")) {
    return "VP divides a stage's layers, with PP 2 or more and micro-batches a multiple of PP "
           "(Megatron's interleaved schedule), under a stack that interleaves";
  }
  return "";  // the rules of no_split_text say it
}

bool has_configuration(const Cluster& cluster, const Model& model, SearchOptions options) {
  options.keep = 1;
  options.show_infeasible = false;
  options.count_only = true;  // no placement, no estimate: stops at the first configuration
  try {
    (void)search(cluster, model, options);
  } catch (const PlanError&) {  // NoSplitError among them
    return false;
  } catch (const InputError&) {  // the pins left contradict each other (--dp-shard, --dp)
    return false;
  }
  return true;
}

}  // namespace

std::string no_split_message(const Cluster& cluster, const Model& model,
                             const SearchOptions& options, const SplitRules& rules) {
  std::vector<std::string> alone;
  for (const Pin& pin : pins_of(options)) {
    SearchOptions cleared = options;
    pin.clear(cleared);
    if (has_configuration(cluster, model, cleared)) alone.push_back(pin.flag);
  }
  if (alone.size() == 1) {
    const std::string& flag = alone.front();
    const std::string rule = pin_rule(flag, rules);
    if (rule.empty()) {
      return fmt::format(
          "{}: no configuration of {} GPUs takes it (without it there are; the rules: {})", flag,
          rules.gpus, rules_text(rules));
    }
    return fmt::format(
        "{}: no configuration of {} GPUs takes it: {} (without {} there are "
        "configurations)",
        flag, rules.gpus, rule, flag.substr(0, flag.find(' ')));
  }
  if (alone.size() > 1) {
    std::string flags;
    for (const std::string& flag : alone) flags += (flags.empty() ? "" : ", ") + flag;
    return fmt::format(
        "{} together: no configuration of {} GPUs takes them all (without any "
        "one of them there are configurations; the rules: {})",
        flags, rules.gpus, rules_text(rules));
  }
  return no_split_text(rules);
}

}  // namespace trident::cli
