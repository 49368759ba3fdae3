// What a search says in words (cli/search_text.h).
#include "cli/search_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "cli/report_text.h"
#include "planner/option_check.h"

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
  return "tp divides heads " + std::to_string(rules.heads) +
         (rules.ffn_hidden > 0 ? ", kv_heads " + std::to_string(rules.kv_heads) +
                                     " and ffn_hidden " + std::to_string(rules.ffn_hidden)
                               : " and kv_heads " + std::to_string(rules.kv_heads)) +
         (rules.sp_seq_len > 0 ? ", tp*cp divides seq_len " + std::to_string(rules.sp_seq_len) +
                                     " (sequence parallelism)"
                               : "") +
         (!rules.pipelines ? std::string(", no pipeline parallelism (the stack's), tp*cp*dp")
          : rules.uneven_stages
              ? ", pp at most the layers " + std::to_string(rules.layers) + ", tp*cp*pp*dp"
              : ", pp divides layers " + std::to_string(rules.layers) + ", tp*cp*pp*dp") +
         " = GPUs, dp divides the global batch " + std::to_string(rules.global_batch) +
         ", micro-batch divides global batch / dp" +
         (rules.pipelines
              ? ", vp divides a stage's layers with pp > 1 and micro-batches a multiple of pp"
              : "") +
         (rules.moe ? ", ep divides the experts and tp*cp*dp" : "") +
         (rules.dp_alone ? ", dp = GPUs (a MoE model under a stack whose only ZeRO stage for it "
                           "is 0, DDP with TP, PP and CP 1)"
                         : "") +
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

/// One pin: its option, its flag as given ("--micro-batch 7") and the rule it most often
/// breaks in words (empty: the rules of no_split_text say it).
struct Pin {
  std::optional<int> SearchOptions::*option;
  std::string name;
  std::string flag;
  std::string rule;
};

std::vector<Pin> pins_of(const SearchOptions& o, const SplitRules& r) {
  std::vector<Pin> pins;
  const auto add = [&](std::optional<int> SearchOptions::*option, const char* name,
                       std::string rule) {
    if (const auto& value = o.*option) {
      pins.push_back({option, fmt::format("--{}", name), fmt::format("--{} {}", name, *value),
                      std::move(rule)});
    }
  };
  add(&SearchOptions::tp, "tp",
      r.ffn_hidden > 0
          ? fmt::format("TP divides heads {}, kv_heads {}, ffn_hidden {} and the GPUs", r.heads,
                        r.kv_heads, r.ffn_hidden)
          : fmt::format("TP divides heads {}, kv_heads {} and the GPUs", r.heads, r.kv_heads));
  // A PP that keeps its own rule is refused for the GPUs it leaves: say which rules those break.
  const bool pp_own_rule = o.pp && *o.pp > 0 && r.gpus % *o.pp == 0 &&
                           (r.uneven_stages ? *o.pp <= r.layers : r.layers % *o.pp == 0);
  add(&SearchOptions::pp, "pp",
      pp_own_rule
          ? fmt::format("PP {} leaves {} GPUs for TP x CP x DP, and none of their splits has TP "
                        "dividing heads {} and kv_heads {}{} and DP the global batch {}",
                        *o.pp, r.gpus / *o.pp, r.heads, r.kv_heads,
                        r.ffn_hidden > 0 ? fmt::format(" and ffn_hidden {}", r.ffn_hidden) : "",
                        r.global_batch)
          : fmt::format("PP {} the layers {} and divides the GPUs over TP x CP x DP",
                        r.uneven_stages ? "at most" : "divides", r.layers));
  add(&SearchOptions::dp, "dp",
      r.dp_alone ? fmt::format("DP divides the global batch {} and is all the GPUs (a MoE model "
                               "under stack {}: ZeRO-0 DDP, TP, PP and CP 1)",
                               r.global_batch, o.stack.name)
                 : fmt::format("DP divides the global batch {} and the GPUs over TP x CP{}",
                               r.global_batch, r.pipelines ? " x PP" : ""));
  add(&SearchOptions::cp, "cp", "");
  add(&SearchOptions::ep, "ep", "");
  add(&SearchOptions::micro_batch, "micro-batch",
      fmt::format("the micro-batch divides the global batch {} / DP", r.global_batch));
  add(&SearchOptions::vp, "vp",
      std::string("VP divides a stage's layers, with PP 2 or more and micro-batches a multiple "
                  "of PP (Megatron's interleaved schedule), under a stack that interleaves") +
          (o.stack.uneven_stages_ends_only
               ? " and, where PP does not divide the layers, leaves each end stage short by at "
                 "most one chunk (stack " +
                     o.stack.name + " shortens only the first and last virtual stage)"
               : std::string()));
  add(&SearchOptions::dp_shard, "dp-shard",
      "the HSDP shard group divides DP, with a ZeRO stage the stack shards per unit");
  add(&SearchOptions::recompute_layers, "recompute-layers", "");
  return pins;
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
                             const SearchOptions& options, const SplitRules& rules,
                             const CpCommPin& cp_comm) {
  if (!cp_comm.text.empty()) {
    SearchOptions any_kind = options;
    any_kind.stack.cp_kinds = cp_comm.stack_kinds;
    if (has_configuration(cluster, model, any_kind)) {
      return fmt::format(
          "--cp-comm {}: no configuration of {} GPUs takes it with the other pins (without it "
          "there are; the rules: {})",
          cp_comm.text, rules.gpus, rules_text(rules));
    }
  }
  const std::vector<Pin> pins = pins_of(options, rules);
  std::vector<const Pin*> alone;
  for (const Pin& pin : pins) {
    SearchOptions cleared = options;
    (cleared.*pin.option).reset();
    if (has_configuration(cluster, model, cleared)) alone.push_back(&pin);
  }
  if (alone.size() == 1) {
    const Pin& pin = *alone.front();
    if (pin.rule.empty()) {
      return fmt::format(
          "{}: no configuration of {} GPUs takes it (without it there are; the rules: {})",
          pin.flag, rules.gpus, rules_text(rules));
    }
    return fmt::format(
        "{}: no configuration of {} GPUs takes it: {} (without {} there are configurations)",
        pin.flag, rules.gpus, pin.rule, pin.name);
  }
  if (alone.size() > 1) {
    std::string flags;
    for (const Pin* pin : alone) flags += (flags.empty() ? "" : ", ") + pin->flag;
    return fmt::format(
        "{} together: no configuration of {} GPUs takes them all (without any "
        "one of them there are configurations; the rules: {})",
        flags, rules.gpus, rules_text(rules));
  }
  // No one pin's clearing helps: name the pins that leave no configuration even on their own
  // (every other pin cleared), each with its rule.
  std::vector<std::string> solo;
  int unruled = 0;  // pins of solo whose rule the full list says
  for (const Pin& pin : pins) {
    if (pins.size() < 2) break;  // one pin alone is the options themselves
    SearchOptions only = options;
    for (const Pin& other : pins) {
      if (other.option != pin.option) (only.*other.option).reset();
    }
    // The choices pinned beside the sizes go too: the pin is tested on its own.
    only.recompute.reset();
    only.zero.reset();
    only.sequence_parallel.reset();
    if (has_configuration(cluster, model, only)) continue;
    if (pin.rule.empty()) ++unruled;
    solo.push_back(pin.rule.empty() ? pin.flag : fmt::format("{} ({})", pin.flag, pin.rule));
  }
  if (!solo.empty()) {
    return fmt::format("{}: {} no configuration of {} GPUs even with the other pins cleared{}",
                       fmt::join(solo, "; "), solo.size() == 1 ? "leaves" : "each leaves",
                       rules.gpus, unruled == 0 ? "" : " (the rules: " + rules_text(rules) + ")");
  }
  return no_split_text(rules);
}

namespace {

/// The search of a MoE model under a stack that leaves it DP alone at ZeRO-0 (moe_dp_alone):
/// micro-batch and recompute are all it chooses (the option checks refuse TP, PP, CP and VP
/// above 1 and ZeRO other than 0).
std::string dp_alone_search(const SearchOptions& o, const Model& model) {
  std::vector<std::string> pinned;
  std::vector<std::string> free;
  if (o.micro_batch) {
    pinned.push_back("micro-batch " + std::to_string(*o.micro_batch));
  } else {
    free.emplace_back("micro-batch");
  }
  if (o.recompute) {
    pinned.push_back(std::string("recompute ") + to_string(*o.recompute));
  } else {
    free.emplace_back("recompute");
  }
  std::string rest;
  if (!pinned.empty()) rest += fmt::format("{} pinned", fmt::join(pinned, " and "));
  if (!free.empty())
    rest += fmt::format("{}{} free", rest.empty() ? "" : ", ", fmt::join(free, " and "));
  return fmt::format(
      "search: DP over every GPU, ZeRO-0 (DDP): model {} is MoE, planned with ZeRO 0-2 (experts "
      "are not sharded per unit), and stack {} has no ZeRO-1 or 2 and runs ZeRO-0 with TP, PP "
      "and CP 1; {} (--stack megatron-core plans MoE splits)",
      model.name, o.stack.name, rest);
}

}  // namespace

std::string describe_search(const SearchOptions& o, const Model& model) {
  const Training& training = model.training;
  const Stack& stack = o.stack;
  // A MoE model refuses --dp-shard under any stack: HSDP is no knob of its search.
  const bool hsdp =
      o.dp_shard ||
      (!model.is_moe() && (stack.supports_hybrid_shard(2) || stack.supports_hybrid_shard(3)));
  if (moe_dp_alone(model, stack)) return dp_alone_search(o, model);
  std::vector<std::string> pinned;
  std::vector<std::string> free;
  std::vector<std::string> flags;
  std::vector<std::string> split_knobs;  // unpinned: "every split with ... free"
  // `in_split`: what the unpinned line calls the knob beside the split, or null for TP, PP,
  // DP (the split itself).
  const auto knob = [&](bool has, const char* name, const char* in_split, const char* flag,
                        const std::optional<std::string>& value) {
    if (!has && !value) return;
    flags.emplace_back(flag);
    if (value) {
      pinned.push_back(std::string(name) + " " + *value);
      return;
    }
    free.emplace_back(name);
    if (in_split != nullptr) split_knobs.emplace_back(in_split);
  };
  const auto number = [](const std::optional<int>& v) {
    return v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt;
  };
  knob(true, "TP", nullptr, "--tp", number(o.tp));
  knob(stack.pipelines(), "PP", nullptr, "--pp", number(o.pp));
  knob(true, "DP", nullptr, "--dp", number(o.dp));
  knob(true, "micro-batch", "micro-batch", "--micro-batch", number(o.micro_batch));
  knob(stack.pipelines() && stack.interleaved_pipeline, "VP", "interleaving", "--vp", number(o.vp));
  knob(true, "recompute", "recompute", "--recompute",
       o.recompute ? std::optional<std::string>(to_string(*o.recompute)) : std::nullopt);
  // Where ZeRO is free (a pin says its own value), the stages the search skips: ZeRO-0 for FP8
  // parameters a stack gathers only through its sharded optimizer, ZeRO-3 for MoE models
  // (experts not sharded per unit).
  const bool no_zero0 = !o.zero && !stack.runs_fp8_params_at(0, training);
  const char* zero_name = "ZeRO";
  if (!o.zero && model.is_moe()) {
    zero_name = no_zero0 ? "ZeRO (1 or 2: FP8 parameters need the distributed optimizer; MoE "
                           "experts are not sharded per unit)"
                         : "ZeRO (0 to 2: MoE experts are not sharded per unit)";
  } else if (no_zero0) {
    zero_name = "ZeRO (1 or more: FP8 parameters need the distributed optimizer)";
  } else if (!o.zero && !stack.runs_optimizer_at(1, training)) {
    zero_name =
        "ZeRO (0 only: the stack shards Adam's optimizer only, and the model trains with "
        "SGD)";
  }
  knob(true, zero_name, zero_name, "--zero", number(o.zero));
  knob(stack.sequence_parallel, "sequence parallel", "sequence parallel", "--sequence-parallel",
       o.sequence_parallel ? std::optional<std::string>(*o.sequence_parallel ? "on" : "off")
                           : std::nullopt);
  knob(hsdp, "HSDP shard", "HSDP shard", "--dp-shard", number(o.dp_shard));
  if (pinned.empty()) {
    return std::string("search: every TP x ") + (stack.pipelines() ? "PP x " : "") +
           "DP split with " + join_words(split_knobs, ", ", " and ") +
           " free; narrow with --min-tp/--max-tp or pin " + join_words(flags, " ", " ");
  }
  return "search: " + join_words(pinned, ", ", " and ") + " pinned; " +
         (free.empty() ? std::string("nothing else free")
                       : join_words(free, ", ", " and ") + " free");
}

}  // namespace trident::cli
