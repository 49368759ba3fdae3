// Impossible pins and limits worded with their flags (cli/option_text.h).
#include "cli/option_text.h"

#include <fmt/format.h>

#include "costmodel/pipeline.h"
#include "planner/splits.h"
#include "topology/errors.h"

namespace trident::cli {

const char* flag_of(Knob knob) {
  switch (knob) {
    case Knob::tp:
      return "--tp";
    case Knob::pp:
      return "--pp";
    case Knob::dp:
      return "--dp";
    case Knob::micro_batch:
      return "--micro-batch";
    case Knob::vp:
      return "--vp";
    case Knob::min_tp:
      return "--min-tp";
    case Knob::max_tp:
      return "--max-tp";
    case Knob::zero:
      return "--zero";
    case Knob::recompute:
      return "--recompute";
    case Knob::sequence_parallel:
      return "--sequence-parallel";
    case Knob::fp8_recipe:
      return "training.fp8.recipe";
    case Knob::global_batch:
      return "--global-batch";
    case Knob::cp:
      return "--cp";
    case Knob::ep:
      return "--ep";
    case Knob::min_cp:
      return "--min-cp";
    case Knob::max_cp:
      return "--max-cp";
    case Knob::min_ep:
      return "--min-ep";
    case Knob::max_ep:
      return "--max-ep";
    case Knob::dp_shard:
      return "--dp-shard";
    case Knob::recompute_layers:
      return "--recompute-layers";
    case Knob::fp8_attention:
      return "training.fp8.attention";
    case Knob::fp8_params:
      return "training.fp8.params";
    case Knob::first_stage_layers:
      return "--first-stage-layers";
    case Knob::last_stage_layers:
      return "--last-stage-layers";
    case Knob::lighter_ends:
      return "--lighter-ends";
  }
  return "?";
}

namespace {

/// What the stack lacks, for "stack S ...": "does not run ZeRO-1", "has no full recompute".
std::string stack_lack(const OptionProblem& p, const Stack& stack) {
  switch (p.knob) {
    case Knob::zero:
      return fmt::format("does not run ZeRO-{}", p.value);
    case Knob::pp:
      return "has no pipeline parallelism; use --pp 1 or another --stack";
    case Knob::recompute:
      return fmt::format("has no {} recompute", to_string(static_cast<Recompute>(p.value)));
    case Knob::sequence_parallel:
      return "has no sequence parallelism";
    case Knob::vp:
      return "has no interleaved pipeline schedule";
    case Knob::fp8_recipe:
      return stack.fp8_recipes == 0 ? "has no FP8 training" : "does not run this FP8 recipe";
    case Knob::cp:
      return "has no context parallelism; use --cp 1 or --stack megatron-core";
    case Knob::min_cp:
      return "has no context parallelism; drop --min-cp or use --stack megatron-core";
    case Knob::min_ep:
      return "has no expert parallelism; drop --min-ep or use --stack megatron-core";
    case Knob::ep:
      return "has no expert parallelism; use --ep 1 or --stack megatron-core";
    case Knob::dp_shard:
      return "has no hybrid sharding (HSDP); drop --dp-shard or use --stack fsdp or torchtitan";
    case Knob::recompute_layers:
      // Partial recompute is of full recompute: a stack file may keep partial_recompute
      // (its own or its base's) and leave full out of its recompute list.
      return stack.partial_recompute != PartialRecompute::none && !stack.supports(Recompute::full)
                 ? "has no full recompute (its recompute list), of which partial recompute is "
                   "part; drop --recompute-layers or use --stack megatron-core or torchtitan"
                 : "has no partial recompute; drop --recompute-layers or use --stack "
                   "megatron-core or torchtitan";
    case Knob::first_stage_layers:
    case Knob::last_stage_layers:
      return "sets no end stage's layers (its partition_method balances its own way); pin the "
             "default split, drop --first-stage-layers and --last-stage-layers, or use --stack "
             "megatron-core or torchtitan";
    case Knob::lighter_ends:
      return "sets no end stage's layers; drop --lighter-ends or use --stack megatron-core or "
             "torchtitan";
    default:
      return "does not run it";
  }
}

/// The pinned value as the flag spells it.
std::string value_text(const OptionProblem& p) {
  if (p.knob == Knob::recompute) return to_string(static_cast<Recompute>(p.value));
  if (p.knob == Knob::sequence_parallel) return "on";
  if (p.knob == Knob::fp8_recipe) return to_string(static_cast<Fp8Recipe>(p.value));
  if (p.knob == Knob::lighter_ends) return p.value != 0 ? "on" : "off";
  return std::to_string(p.value);
}

}  // namespace

namespace {

/// A pinned PP (or VP over it) whose uneven split a stack that shortens only the ends cannot
/// write: the split as stage_layers makes it, and what the stack needs.
std::string uneven_ends_text(const OptionProblem& p, const Model& model, const Stack& stack,
                             const std::string& pin) {
  const int pp = static_cast<int>(p.issue == OptionIssue::uneven_middles ? p.value : p.limit);
  const StageLayers split = stage_layers(model.layers, pp);
  const int gap = std::max(split.most() - split.first, split.most() - split.last);
  const std::string shape = fmt::format(
      "PP {} splits model {}'s {} layers {} | {} | {}", pp, model.name, model.layers, split.first,
      split.middle > 0 ? fmt::format("up to {}", split.middle) : std::string("-"), split.last);
  if (p.issue == OptionIssue::uneven_middles) {
    return fmt::format(
        "{}: {}, middle stages of different sizes; stack {} shortens only the first and the "
        "last stage; use another --pp or --stack",
        pin, shape, stack.name);
  }
  return fmt::format(
      "{}: {}; stack {} shortens only the first and the last virtual stage, so VP must divide "
      "{} and leave chunks of at least {} layer{}; use another --vp",
      pin, shape, stack.name, split.most(), gap, gap > 1 ? "s" : "");
}

}  // namespace

namespace {

/// Why pinned end stages cannot split the model's layers (StageEndsProblem in `p.limit`).
std::string stage_ends_invalid_text(const OptionProblem& p, const Model& model, const Stack& stack,
                                    const std::string& pin) {
  switch (static_cast<StageEndsProblem>(p.limit)) {
    case StageEndsProblem::no_pipeline:
      return pin + ": end stages need --pp 2 or more";
    case StageEndsProblem::empty_end:
      return pin + ": each end stage holds at least one layer";
    case StageEndsProblem::layers_left:
      return fmt::format(
          "{}: with --pp 2 the first and the last stage hold all {} layers (--first-stage-layers "
          "+ --last-stage-layers = {})",
          pin, model.layers, model.layers);
    case StageEndsProblem::middle_empty:
      return fmt::format(
          "{}: the ends take {} + {} of the model's {} layers and leave the middle stages none",
          pin, p.value, p.other, model.layers);
    case StageEndsProblem::middles_unequal:
      return fmt::format(
          "{}: the {} layers the ends leave of the model's {} must divide equally over the "
          "middle stages (stack {} sets the ends' counts only, no per-stage layout)",
          pin, model.layers - p.value - p.other, model.layers, stack.name);
    case StageEndsProblem::ok:
      break;
  }
  return pin + ": impossible";
}

/// The issues of pinned end stages and --lighter-ends.
std::string stage_ends_text(const OptionProblem& p, const Model& model, const Stack& stack,
                            const std::string& pin) {
  switch (p.issue) {
    case OptionIssue::needs_other_end:
      return fmt::format(
          "{}: needs {} too (the middle stages share the rest)", pin,
          p.knob == Knob::first_stage_layers ? "--last-stage-layers" : "--first-stage-layers");
    case OptionIssue::stage_ends_need_pp:
      return pin + ": end stages need a pinned --pp";
    case OptionIssue::stage_ends_twice:
      return pin + " with --first-stage-layers: the ends are pinned already; drop one";
    case OptionIssue::no_lighter_split:
      return fmt::format(
          "{}: --pp {} leaves no lighter ends for model {}'s {} layers ({}); use --lighter-ends "
          "off or another --pp",
          pin, p.limit, model.name, model.layers,
          stack.runs_unequal_middles()
              ? "its default split gives each end stage one layer already"
              : "every middle stage one layer more must leave each end a layer, and the "
                "default split is not two or more layers short of ceil(L/PP) a stage to move "
                "onto the last");
    case OptionIssue::stage_ends_over_chunk:
      return fmt::format(
          "{}: stack {}'s counts only shorten the first and the last (virtual) stage, and these "
          "ends are heavier than the middle stages or short of them by more than a chunk; use "
          "another --vp or other end stages",
          pin, stack.name);
    case OptionIssue::stage_ends_vp:
      if (p.other > 0) {
        return fmt::format(
            "{}: VP divides the largest stage's layers, {} or {} with the lighter end stages; use "
            "--vp 1 or a divisor of {} or of {}",
            pin, p.limit, p.other, p.limit, p.other);
      }
      return fmt::format(
          "{}: VP divides the largest stage's layers, {} with these end stages; use --vp 1 or a "
          "divisor of {}",
          pin, p.limit, p.limit);
    default:
      return stage_ends_invalid_text(p, model, stack, pin);
  }
}

/// FP8 parameters where the stack gathers them only from a sharded optimizer: a pinned ZeRO-0,
/// or a stack whose only ZeRO stage is 0; the stages it does run named as the way out.
std::string fp8_params_zero0_text(const OptionProblem& p, const Model& model, const Stack& stack) {
  std::string sharded;
  for (int zero = 1; zero <= 3; ++zero) {
    if (!stack.supports_zero(zero, 1)) continue;
    sharded += (sharded.empty() ? "--zero " : " or ") + std::to_string(zero);
  }
  const std::string way =
      sharded.empty() ? "plan with a stack that has a distributed optimizer" : "use " + sharded;
  const char* why =
      "gathers FP8 parameters only from a sharded optimizer (Megatron-LM: --fp8-param-gather "
      "needs --use-distributed-optimizer or Megatron-FSDP)";
  if (p.knob == Knob::fp8_params) {
    return fmt::format("{}: stack {} {} and runs no ZeRO stage above 0{}; {}, or set it false",
                       model.key_where("", "training.fp8.params"), stack.name, why,
                       sharded.empty() ? "" : " with PP above 1",
                       sharded.empty() ? way : "plan without PP and " + way);
  }
  return fmt::format(
      "--zero {}: model {} keeps FP8 parameters (training.fp8.params), and stack {} {}; {}, or "
      "set training.fp8.params false",
      p.value, model.name, stack.name, why, way);
}

}  // namespace

std::string describe(const OptionProblem& p, const Model& model, const Stack& stack) {
  const std::string pin = fmt::format("{} {}", flag_of(p.knob), value_text(p));
  switch (p.issue) {
    case OptionIssue::not_positive:
      return pin + ": expected a positive integer";
    case OptionIssue::min_above_max:
      return fmt::format("{} is above {} {}", pin,
                         flag_of(p.knob == Knob::min_cp   ? Knob::max_cp
                                 : p.knob == Knob::min_ep ? Knob::max_ep
                                                          : Knob::max_tp),
                         p.limit);
    case OptionIssue::min_above_default_max:
      return fmt::format("{} is above {} {}, the search's default; raise {}", pin,
                         flag_of(Knob::max_cp), p.limit, flag_of(Knob::max_cp));
    case OptionIssue::out_of_range:
      return pin + ": expected 0, 1, 2 or 3";
    case OptionIssue::stack_lacks:
      if (p.knob == Knob::fp8_recipe) {
        // The model file's place for the recipe where it has one (FILE:LINE: KEY).
        if (!model.training.fp8_recipe_from.empty()) {
          return fmt::format("{}: stack {} {} ({})", model.training.fp8_recipe_from, stack.name,
                             stack_lack(p, stack), value_text(p));
        }
        return fmt::format("model {}: {}: stack {} {}", model.name, pin, stack.name,
                           stack_lack(p, stack));
      }
      if (p.knob == Knob::fp8_attention) {
        const std::string where =
            model.key_where(model.training.fp8_attention_from, "training.fp8.attention");
        return fmt::format(
            "{}: stack {}'s attention kernel ({}) has no FP8 path (Transformer Engine's cuDNN "
            "attention has one: --stack megatron-core); set attention: false",
            where, stack.name, to_string(stack.attention));
      }
      return fmt::format("{}: stack {} {}", pin, stack.name, stack_lack(p, stack));
    case OptionIssue::zero0_with_split:
      return fmt::format(
          "{} with --zero 0: stack {} runs ZeRO-0 (DDP) only with data parallelism alone (TP, "
          "PP and CP 1); use --zero 3 or drop {}",
          pin, stack.name, pin);
    case OptionIssue::stack_lacks_with_pp:
      return fmt::format(
          "{} with --pp {}: stack {} does not combine ZeRO-{} with pipeline parallelism; use "
          "another --zero, --pp 1 or another --stack",
          pin, p.limit, stack.name, p.value);
    case OptionIssue::not_dividing_heads: {
      // The FFN width TP splits: the dense FFN's, or an all-MoE model's shared experts'.
      const int width = tp_split_ffn_width(model);
      if (width == 0) {
        return fmt::format("{}: must divide the model's heads ({}) and kv_heads ({})", pin,
                           model.heads, model.kv_heads);
      }
      return fmt::format("{}: must divide the model's heads ({}), kv_heads ({}) and {} ({})", pin,
                         model.heads, model.kv_heads,
                         width == model.ffn_hidden ? "ffn_hidden" : "the FFN width TP splits",
                         width);
    }
    case OptionIssue::more_than_experts:
      return fmt::format("{}: more than model {}'s {} experts", pin, model.name, p.limit);
    case OptionIssue::above_largest_tp:
      return fmt::format(
          "{}: the largest TP model {} takes is {} (TP divides its heads {}, kv_heads {} and "
          "ffn_hidden {})",
          pin, model.name, p.limit, model.heads, model.kv_heads, model.ffn_hidden);
    case OptionIssue::not_dividing_layers:
      return fmt::format(
          "{}: must divide the model's layers ({}) under stack {}, which has no uneven pipeline "
          "stages",
          pin, model.layers, stack.name);
    case OptionIssue::uneven_middles:
    case OptionIssue::uneven_ends_over_chunk:
      return uneven_ends_text(p, model, stack, pin);
    case OptionIssue::more_than_layers:
      return fmt::format("{}: more stages than the model's {} layers", pin, model.layers);
    case OptionIssue::missing:
      return "global batch: not given (set training.global_batch in the model or pass "
             "--global-batch N)";
    case OptionIssue::not_dividing_sequence:
      return fmt::format(
          "{}: 2 x cp must divide the sequence length {} (causal load balancing: 2 cp chunks)", pin,
          p.limit);
    case OptionIssue::no_experts:
      return fmt::format("{}: model {} has no experts (no moe: in its file)", pin, model.name);
    case OptionIssue::no_ep_divides:
      return fmt::format(
          "{}: no expert parallel size from {} up (a power of two, as the search tries) divides "
          "the model's {} experts",
          pin, p.value, p.limit);
    case OptionIssue::not_dividing_experts:
      return fmt::format("{}: must divide the model's {} experts", pin, p.limit);
    case OptionIssue::moe_needs_sp:
      return fmt::format(
          "--sequence-parallel off with --tp {}: MoE layers with tensor parallelism run sequence "
          "parallel (Megatron moe_layer.py refuses otherwise); use --sequence-parallel on or --tp "
          "1",
          p.limit);
    case OptionIssue::moe_needs_sp_stack:
      return fmt::format(
          "{}: MoE layers with tensor parallelism run sequence parallel (Megatron moe_layer.py "
          "refuses otherwise), and stack {} has no sequence parallelism; use --tp 1 or another "
          "--stack",
          pin, stack.name);
    case OptionIssue::stack_needs_sp:
      return fmt::format(
          "--sequence-parallel off with --tp {}: stack {} runs tensor parallelism only with "
          "sequence parallelism; use --sequence-parallel on or --tp 1",
          p.limit, stack.name);
    case OptionIssue::not_dividing_dp:
      return fmt::format("{}: must divide --dp {} (the shard groups tile data parallel)", pin,
                         p.limit);
    case OptionIssue::needs_unit_sharding:
      return fmt::format(
          "{} with --zero {}: stack {} shards hybrid only what it shards per unit (ZeRO-3{}); use "
          "--zero 3 or drop --dp-shard",
          pin, p.limit, stack.name, stack.zero2_per_unit ? " or ZeRO-2" : "");
    case OptionIssue::no_unit_sharding:
      return fmt::format(
          "{}: stack {} runs no ZeRO stage sharded per unit (ZeRO-3, or a per-unit ZeRO-2){}, "
          "the state --dp-shard shards; use another --stack{} or drop --dp-shard",
          pin, stack.name, p.limit > 1 ? fmt::format(" with --pp {}", p.limit) : "",
          p.limit > 1 ? ", --pp 1" : "");
    case OptionIssue::shard_below_two:
      return pin + ": expected at least 2 (a shard group of 1 shards nothing; drop --dp-shard)";
    case OptionIssue::selective_needs_mla:
      return fmt::format(
          "{}: stack {} recomputes multi-latent attention's up-projections (selective: "
          "mla_up_proj) and model {} has no MLA; use --recompute none|full or another --stack",
          pin, stack.name, model.name);
    case OptionIssue::only_selective_needs_mla:
      return fmt::format(
          "stack {} recomputes only selectively, multi-latent attention's up-projections "
          "(selective: mla_up_proj), and model {} has no MLA: nothing to search; use another "
          "--stack or list none or full in its recompute",
          stack.name, model.name);
    case OptionIssue::needs_full_recompute:
      return fmt::format(
          "{} with --recompute {}: partial recompute repeats whole layers; use --recompute full "
          "or drop --recompute-layers",
          pin, to_string(static_cast<Recompute>(p.limit)));
    case OptionIssue::cp_unfused_fallback:
      return pin + ": " + unfused_takes_no_cp(model, stack) + "; use --cp 1";
    case OptionIssue::fp8_params_zero0:
      return fp8_params_zero0_text(p, model, stack);
    case OptionIssue::sgd_sharded:
      if (p.knob == Knob::fp8_params) {
        return fmt::format(
            "{}: stack {} gathers FP8 parameters only from a sharded optimizer and shards it "
            "only for Adam, and model {} trains with SGD (training.optimizer): no ZeRO stage "
            "runs both; set it false, or train with adam",
            model.key_where("", "training.fp8.params"), stack.name, model.name);
      }
      return fmt::format(
          "--zero {}: stack {} shards the optimizer only for Adam (Megatron-Core's "
          "DistributedOptimizer asserts it), and model {} trains with SGD "
          "(training.optimizer); use --zero 0",
          p.value, stack.name, model.name);
    case OptionIssue::moe_hybrid_shard:
      return pin +
             ": MoE models shard over all of DP (the experts' state per shard group is not "
             "modelled); drop --dp-shard";
    case OptionIssue::moe_zero3:
      return fmt::format(
          "{}: MoE models are planned with ZeRO 0-2 (sharding experts per unit is not modelled)",
          pin);
    case OptionIssue::moe_stack_only_zero3:
      return fmt::format(
          "model {} is MoE, and stack {} runs only ZeRO-3, which MoE models are not planned with "
          "(sharding experts per unit is not modelled); use a stack with ZeRO 0, 1 or 2",
          model.name, stack.name);
    case OptionIssue::moe_dp_alone:
      return fmt::format(
          "{}: model {} is MoE, planned with ZeRO 0-2 (sharding experts per unit is not "
          "modelled), and stack {} has no ZeRO-1 or 2 and runs ZeRO-0 (DDP) with data "
          "parallelism alone (TP, PP and CP 1); drop {} or use a stack with ZeRO 1 or 2 "
          "(--stack megatron-core)",
          pin, model.name, stack.name, pin);
    case OptionIssue::above_max:
      return fmt::format("{} is above {} {}", pin,
                         flag_of(p.knob == Knob::cp   ? Knob::max_cp
                                 : p.knob == Knob::ep ? Knob::max_ep
                                                      : Knob::max_tp),
                         p.limit);
    case OptionIssue::below_min:
      return fmt::format("{} is below {} {}", pin,
                         flag_of(p.knob == Knob::cp   ? Knob::min_cp
                                 : p.knob == Knob::ep ? Knob::min_ep
                                                      : Knob::min_tp),
                         p.limit);
    case OptionIssue::vp_needs_pp:
      return pin +
             ": interleaving splits each pipeline stage into chunks; it needs --pp 2 or "
             "more, and --pp is 1";
    case OptionIssue::sp_needs_tp:
      return "--sequence-parallel on: splits the sequence over the TP group; it needs --tp 2 "
             "or more, and --tp is 1";
    case OptionIssue::needs_other_end:
    case OptionIssue::stage_ends_need_pp:
    case OptionIssue::stage_ends_twice:
    case OptionIssue::stage_ends_invalid:
    case OptionIssue::no_lighter_split:
    case OptionIssue::stage_ends_over_chunk:
    case OptionIssue::stage_ends_vp:
      return stage_ends_text(p, model, stack, pin);
  }
  return pin + ": impossible";
}

std::string unfused_takes_no_cp(const Model& model, const Stack& stack) {
  if (!stack.attention_is_fallback) {
    return "stack " + stack.name +
           " runs Transformer Engine's unfused attention (attention: unfused), which takes no "
           "context parallelism (docs/cost_model.md#unfused-attention)";
  }
  return fmt::format(
      "model {}'s {}/{} heads run Transformer Engine's unfused attention on this GPU under stack "
      "{} (its cuDNN does not train them, docs/cost_model.md#attention-on-blackwell), which takes "
      "no context parallelism",
      model.name, model.qk_head_dim(), model.v_head_dim(), stack.name);
}

void check_cp_comm_runs(const std::string& cp_comm, const Model& model,
                        const SearchOptions& options) {
  if (cp_comm.empty() || !options.unfused_fallback) return;
  throw InputError("--cp-comm " + cp_comm + ": " + unfused_takes_no_cp(model, options.stack) +
                   "; drop --cp-comm");
}

void check_options(const Model& model, const SearchOptions& options) {
  if (const auto problem = find_option_problem(model, options)) {
    throw InputError(describe(*problem, model, options.stack));
  }
}

}  // namespace trident::cli
