// Checks on the planner's answer before it is reported (cli/plan_checks.h).
#include "cli/plan_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "cli/whatif_text.h"
#include "configs/presets.h"
#include "costmodel/kernels.h"
#include "costmodel/pipeline.h"
#include "planner/splits.h"
#include "topology/errors.h"
#include "topology/failure.h"
#include "topology/json_reader.h"
#include "topology/server_import.h"
#include "topology/text_check.h"

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
    default:
      return "does not run it";
  }
}

/// The pinned value as the flag spells it.
std::string value_text(const OptionProblem& p) {
  if (p.knob == Knob::recompute) return to_string(static_cast<Recompute>(p.value));
  if (p.knob == Knob::sequence_parallel) return "on";
  if (p.knob == Knob::fp8_recipe) return to_string(static_cast<Fp8Recipe>(p.value));
  return std::to_string(p.value);
}

}  // namespace

namespace {

/// A fit's bus bandwidth may exceed its link's (NCCL's NVLS in-switch and SHARP in-network
/// reductions lift an all-reduce's busbw above the per-GPU link rate, by less than 2x): a fit
/// above this multiple of the cluster's link was measured on another link; one below its
/// 1/1000 on no working link. Bounds of a check, not of the cost model.
constexpr double kFitAboveLinkRatio = 3.0;
constexpr double kFitBelowLinkRatio = 1e-3;
/// A measured GEMM under this share of the peak is not a rate in TFLOP/s.
constexpr double kGemmBelowPeakRatio = 1e-5;

/// validate's CPU backend (backend "mpi", gpu "cpu" or "cpu: MODEL") measures no GPU and no
/// GPU link: its rates calibrate a CPU cluster (or a test), not this one's links.
bool cpu_backend(const Calibration& calibration) {
  return calibration.backend == "mpi" || calibration.gpu == "cpu" ||
         calibration.gpu.starts_with("cpu: ");
}

/// The cluster's per-GPU, one-direction rate of `tier` (GB/s); 0 when it has no such tier.
double tier_gbps(const Cluster& cluster, Tier tier) {
  switch (tier) {
    case Tier::nvlink:
      return cluster.nvlink.kind == NvlinkKind::none ? 0.0 : cluster.nvlink.switch_gbps_per_gpu();
    case Tier::pcie:
      return cluster.pcie.gbps;
    case Tier::network:
      return cluster.network.nics_per_server > 0 ? cluster.nic_gbps_per_gpu(0) : 0.0;
  }
  return 0.0;
}

/// The most a fit over `tier` can read: the tier's rate, and across the network every NIC of
/// an NVLink domain (a ring's crossing traffic spreads over them: nccl-tests' busbw of a 2-node
/// H100 all-reduce reads 370-450 GB/s against a GPU's 50 GB/s share; collective.cpp
/// flat_ring_time_s prices the same narrowest cut).
double tier_ceiling_gbps(const Cluster& cluster, Tier tier) {
  const double rate = tier_gbps(cluster, tier);
  return tier == Tier::network ? rate * std::max(1, cluster.nvlink.domain_gpus) : rate;
}

}  // namespace

void check_calibration_links(const Calibration& calibration, const Cluster& cluster,
                             const std::string& source, const std::string& text) {
  if (cpu_backend(calibration)) return;
  const json_reader::Path root = json_reader::Path::root(source, text);
  for (std::size_t i = 0; i < calibration.fits.size(); ++i) {
    const CollectiveFit& fit = calibration.fits[i];
    const double link = tier_gbps(cluster, fit.tier);
    if (link <= 0.0) continue;  // a tier this cluster has not: the fit is never read
    const double ceiling = tier_ceiling_gbps(cluster, fit.tier);
    const bool above = fit.busbw_gbps > kFitAboveLinkRatio * ceiling;
    if (above || fit.busbw_gbps < kFitBelowLinkRatio * link) {
      throw InputError(fmt::format(
          "{}: {:g} GB/s over {} is {} the cluster {}'s {:g} GB/s{} (a fit of another link or "
          "another cluster?); calibrate on this cluster's {} links, or describe them in a "
          "--cluster FILE",
          root.child("fits").index(i).child("busbw_gbps").where(), fit.busbw_gbps,
          to_string(fit.tier),
          above ? fmt::format("more than {:g}x", kFitAboveLinkRatio)
                : std::string("under a thousandth of"),
          cluster.name, above ? ceiling : link,
          above && fit.tier == Tier::network ? " of an NVLink domain's NICs" : " a GPU there",
          to_string(fit.tier)));
    }
  }
  for (std::size_t i = 0; i < calibration.gemms.size(); ++i) {
    const GemmSample& g = calibration.gemms[i];
    const double peak = cluster.gpu.peak_tflops(g.dtype);
    if (peak > 0.0 && g.tflops < kGemmBelowPeakRatio * peak) {
      throw InputError(fmt::format(
          "{}: {:g} TFLOP/s is under a hundred-thousandth of the {}'s {} peak of {:g} (a "
          "measurement in other units?)",
          root.child("gemms").index(i).child("tflops").where(), g.tflops, cluster.gpu.name,
          to_string(g.dtype), peak));
    }
  }
}

void check_calibration_on_gpu(const Calibration& calibration, const Gpu& gpu,
                              const std::string& source, const std::string& text) {
  const json_reader::Path root = json_reader::Path::root(source, text);
  // Measured on a known GPU other than the cluster's known one: its rates are that GPU's (an
  // A100 file moved an H100 plan by 11%). A GPU file of the user's own has no name to compare.
  const std::string measured = gpu_preset_for_device(calibration.gpu);
  const bool built_in = preset_text(PresetKind::gpu, gpu.name).has_value();
  if (measured.empty() && built_in && !cpu_backend(calibration)) {
    // A device name that is none of the built-in GPUs (or none at all) cannot be this one.
    throw InputError(fmt::format(
        "{}: {}, and the cluster's GPU is the built-in {}: its fits and GEMM rates would be "
        "applied to a GPU they were not measured on; calibrate on {} (validate writes its "
        "device name), or describe the measured GPU in a --gpu FILE",
        root.child("gpu").where(),
        calibration.gpu.empty() ? std::string("no GPU named (the device the file was measured on)")
                                : fmt::format("measured on '{}', not a GPU trident knows as {}",
                                              one_line(calibration.gpu), gpu.name),
        gpu.name, gpu.name));
  }
  if (!measured.empty() && measured != gpu.name && built_in) {
    throw InputError(fmt::format(
        "{}: measured on '{}' ({}), and the cluster's GPU is {}: its fits and GEMM rates "
        "are another GPU's; calibrate on {}, or plan with --gpu {}",
        root.child("gpu").where(), one_line(calibration.gpu), measured, gpu.name, gpu.name,
        measured));
  }
  for (std::size_t i = 0; i < calibration.gemms.size(); ++i) {
    const GemmSample& g = calibration.gemms[i];
    const double peak = gpu.peak_tflops(g.dtype);
    if (peak > 0.0 && g.tflops > peak) {
      throw InputError(
          fmt::format("{}: {:g} TFLOP/s is above the {}'s {} peak of {:g}; a measurement "
                      "cannot beat the peak (a calibration of another GPU?)",
                      root.child("gemms").index(i).child("tflops").where(), g.tflops, gpu.name,
                      to_string(g.dtype), peak));
    }
  }
}

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

namespace {

/// The FP8 recipes a stack runs: "current, blockwise".
std::string fp8_recipes_text(const Stack& stack) {
  std::string out;
  for (const Fp8Recipe r : stack.fp8_recipes_run()) {
    out += std::string(out.empty() ? "" : ", ") + to_string(r);
  }
  return out;
}

}  // namespace

namespace {

/// Where the model's dtype comes from: the file's line, the preset, or the default.
std::string dtype_where(const Model& model) {
  if (!model.training.dtype_from.empty()) return model.training.dtype_from;
  return "model " + model.name + " (training.dtype bf16 by default)";
}

/// The dtypes both the GPU (a peak) and the stack run, in the order a user would pick them.
std::vector<Dtype> dtypes_run(const Gpu& gpu, const Stack& stack) {
  std::vector<Dtype> out;
  for (const Dtype d : kDtypes) {
    if (gpu.peak_tflops(d) > 0.0 && stack.runs_dtype(d)) out.push_back(d);
  }
  return out;
}

}  // namespace

void check_dtype_flag(const std::string& given, const Model& model, const Gpu& gpu,
                      const Stack& stack) {
  const Dtype dtype = model.training.dtype;
  const bool gpu_runs = gpu.peak_tflops(dtype) > 0.0;
  if (!gpu_runs || !stack.runs_dtype(dtype)) {
    if (given.empty()) {
      // What to give instead: the first dtype both the GPU and the stack run (bf16 first).
      const std::vector<Dtype> both = dtypes_run(gpu, stack);
      const std::string lacks =
          !gpu_runs ? fmt::format("{} has no {} peak", gpu.name, to_string(dtype))
                    : fmt::format("stack {} does not train in {}", stack.name, to_string(dtype));
      throw InputError(fmt::format(
          "{}: {}; {}", dtype_where(model), lacks,
          both.empty() ? std::string("the GPU and the stack share no dtype: another --stack")
                       : fmt::format("give --dtype {} (or set training.dtype in the model file)",
                                     to_string(both.front()))));
    }
    std::string runs;
    for (const Dtype d : kDtypes) {
      const bool ok = !gpu_runs ? gpu.peak_tflops(d) > 0.0 : stack.runs_dtype(d);
      if (ok) runs += std::string(runs.empty() ? "" : ", ") + to_string(d);
    }
    throw InputError(!gpu_runs
                         ? fmt::format("--dtype {}: {} has no {} peak (it runs {})", given,
                                       gpu.name, given, runs)
                         : fmt::format("--dtype {}: stack {} does not train in it (it runs {})",
                                       given, stack.name, runs));
  }
  if (!given.empty() && dtype == Dtype::fp8 && !stack.supports(model.training.fp8.recipe)) {
    throw InputError(fmt::format(
        "--dtype fp8: stack {} {}", stack.name,
        stack.fp8_recipes == 0
            ? std::string("has no FP8 training")
            : fmt::format("does not run the FP8 recipe {} (the model "
                          "file's, or the default); an FP8 model file "
                          "sets training.fp8.recipe to one it runs ({})",
                          to_string(model.training.fp8.recipe), fp8_recipes_text(stack))));
  }
}

void check_pinned_within_cluster(const Cluster& cluster, const SearchOptions& options) {
  const long long gpus = cluster.gpus();
  const long long product = pinned_product(options);
  if (product <= gpus) return;
  std::string named;
  for (const auto& [flag, pin] : {std::pair{"--tp", options.tp}, std::pair{"--pp", options.pp},
                                  std::pair{"--dp", options.dp}, std::pair{"--cp", options.cp}}) {
    if (pin) named += fmt::format("{}{} {}", named.empty() ? "" : " x ", flag, *pin);
  }
  const std::string total =
      product == kPinnedGpusOverflow ? std::string("more than 2^63") : std::to_string(product);
  throw InputError(fmt::format("{} = {} GPUs; the cluster has {}", named, total, gpus));
}

void check_pinned_gpus(const Cluster& cluster, const SearchOptions& options) {
  const long long gpus = cluster.gpus();
  // A lower limit beyond the cluster leaves no split (the generic no-configuration line).
  for (const auto& [flag, least] :
       {std::pair{"--min-tp", options.min_tp}, std::pair{"--min-cp", options.min_cp},
        std::pair{"--min-ep", options.min_ep}}) {
    if (least > gpus) {
      throw InputError(fmt::format("{} {}: more than the cluster's {} GPUs", flag, least, gpus));
    }
  }
  // After check_pinned_within_cluster the product is at most the GPUs: only all four pinned
  // can fall short (a free CP may make up the rest).
  const std::optional<long long> product = pinned_gpus(options);
  if (!product || !options.cp || *product == gpus) return;
  throw InputError(
      fmt::format("--tp {} x --pp {} x --dp {} x --cp {} = {} GPUs; the cluster has {}",
                  *options.tp, *options.pp, *options.dp, *options.cp, *product, gpus));
}

void check_gpus_left(const Cluster& cluster, const std::vector<std::string>& specs) {
  if (specs.empty()) return;
  const std::size_t dead = dead_gpu_ids(cluster).size();
  if (dead >= static_cast<std::size_t>(cluster.gpus())) {
    throw PlanError(
        fmt::format("--fail-link: all {} GPUs of the cluster have failed; nothing is "
                    "left to run on",
                    cluster.gpus()));
  }
}

namespace {

void check_plan(const PlanResult& plan, const std::string& label) {
  const Estimate& e = plan.estimate;
  const std::pair<const char*, double> values[] = {
      {"step_s", e.time.step_s},
      {"forward_s", e.time.forward_s},
      {"backward_s", e.time.backward_s},
      {"recompute_s", e.time.recompute_s},
      {"tp_comm_s", e.time.tp_comm_s},
      {"pp_comm_s", e.time.pp_comm_s},
      {"dp_comm_s", e.time.dp_comm_s},
      {"bubble_s", e.time.bubble_s},
      {"optimizer_s", e.time.optimizer_s},
      {"tokens_per_s", e.tokens_per_s},
      {"mfu", e.mfu},
      {"model_tflops_per_gpu", e.model_tflops_per_gpu},
      {"hardware_tflops_per_gpu", e.hardware_tflops_per_gpu},
      {"memory total_bytes", e.memory.total_bytes},
      {"bubble_fraction", e.bubble_fraction},
  };
  for (const auto& [name, value] : values) {
    if (!std::isfinite(value)) {
      throw PlanError(
          fmt::format("{} (tp {}, pp {}, dp {}): {} is not a finite number ({}); an "
                      "input rate or size is too extreme to price",
                      label, plan.config.tp, plan.config.pp, plan.config.dp, name, value));
    }
  }
}

}  // namespace

void check_finite(const SearchResult& result) {
  for (std::size_t i = 0; i < result.plans.size(); ++i) {
    check_plan(result.plans[i], fmt::format("plan {}", i + 1));
  }
  for (const auto& plan : result.infeasible) check_plan(plan, "a plan that does not fit");
}

void check_something_runs(const WhatIf& what_if) {
  for (const auto& option : what_if.options) {
    if (option.available) return;
  }
  // Each option's reason: the first alone hid why cordoning failed (pins that fix the GPU
  // count leave no server count to re-plan on).
  std::string why;
  for (const auto& option : what_if.options) {
    why += (why.empty() ? ": " : "; ") + std::string(to_string(option.kind)) + ": " +
           option_text(option, what_if);
  }
  throw PlanError("--fail-link: no plan can run under the failures" + why);
}

void check_finite(const WhatIf& what_if) {
  check_plan(what_if.baseline, "the healthy plan");
  for (const auto& option : what_if.options) {
    if (option.plan) check_plan(*option.plan, "a plan under the failure");
  }
}

}  // namespace trident::cli
