// trident plan: rank every split of the model over the cluster, place it, explain it.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/calibration_checks.h"
#include "cli/cluster_args.h"
#include "cli/commands.h"
#include "cli/emit_report.h"
#include "cli/failure_text.h"
#include "cli/html_report.h"  // pictures: --svg --svg-plan --report
#include "cli/input_file.h"
#include "cli/option_text.h"
#include "cli/output_file.h"
#include "cli/plan_checks.h"
#include "cli/plan_explain.h"
#include "cli/plan_report.h"
#include "cli/search_text.h"
#include "cli/stack_args.h"
#include "cli/whatif_report.h"
#include "costmodel/calibration_io.h"
#include "costmodel/kernels.h"
#include "planner/export.h"
#include "planner/layout.h"
#include "planner/search.h"
#include "planner/splits.h"
#include "topology/errors.h"
#include "topology/failure.h"

namespace trident::cli {

namespace {

/// Every flag of `plan`, as parsed.
struct PlanFlags {
  ClusterArgs cluster;  ///< --cluster --gpus --servers --gpus-per-server --gpu
  ModelArgs model;      ///< --model --global-batch --seq-len
  SearchOptions search;
  std::optional<int> tp, pp, dp, micro_batch, vp, zero, cp, ep, dp_shard, recompute_layers;
  std::optional<int> first_stage_layers, last_stage_layers;
  std::string lighter_ends;  ///< --lighter-ends on|off
  std::string recompute;
  std::string sequence_parallel;
  std::string cp_comm;  ///< --cp-comm p2p|a2a: the context-parallel kind, pinned
  std::string calibration_file;
  std::size_t top = 10;
  std::string format = "table";
  std::string output;
  std::optional<std::size_t> explain;  ///< 1-based rank of the plan to explain
  bool show_infeasible = false;
  std::string emit;
  std::string stack;  ///< --stack NAME|FILE
  /// --fail-link SPEC (repeatable). The cluster is planned with these failures applied.
  /// FAILURES ENGINEER: the what-if comparison (baseline, impact, re-place, cordon) plugs in
  /// at run_failures() below through planner/whatif.h.
  std::vector<std::string> fail_links;
  PictureFlags pictures;  ///< --svg --svg-plan --report (cli/plan_svg.h, cli/html_report.h)
};

Recompute parse_recompute(const std::string& text) {
  if (text == "none") return Recompute::none;
  if (text == "selective") return Recompute::selective;
  if (text == "full") return Recompute::full;
  throw InputError("--recompute '" + text + "': expected none|selective|full");
}

bool parse_on_off(const std::string& flag, const std::string& text) {
  if (text == "on") return true;
  if (text == "off") return false;
  throw InputError(flag + " '" + text + "': expected on|off");
}

/// --cp-comm: keep only that context-parallel kind in the stack; one the stack does not run
/// is an error naming the flag and the stack.
void pin_cp_comm(const std::string& text, Stack& stack) {
  if (text.empty()) return;
  const CpKind kind = cp_kind_of(text);
  if (!stack.keep_only(kind)) {
    throw InputError(fmt::format("--cp-comm {}: stack {} does not run {} context parallelism", text,
                                 stack.name,
                                 kind == CpKind::a2a          ? "all-to-all (Ulysses)"
                                 : kind == CpKind::all_gather ? "all-gather (PyTorch)"
                                                              : "ring (p2p)"));
  }
}

/// --cp-comm where no plan can have CP > 1 (CP pinned to 1, a sequence below the length CP is
/// searched from without --cp/--min-cp, or pins and limits that leave no room for CP): it
/// changed nothing, silently.
void check_cp_comm_applies(const std::string& text, const SearchOptions& o, const Model& model,
                           const Cluster& cluster) {
  if (text.empty()) return;
  if (o.cp && *o.cp == 1) {
    throw InputError("--cp-comm " + text + " with --cp 1: no context parallelism to run; drop one");
  }
  if (!o.cp && o.min_cp <= 1 && model.seq_len < kCpSearchMinSeqLen) {
    throw InputError(fmt::format(
        "--cp-comm {}: context parallelism is searched from {} tokens and model {} has {}; "
        "give --cp N or --min-cp N as well, or drop --cp-comm",
        text, kCpSearchMinSeqLen, model.name, model.seq_len));
  }
  const int gpus = static_cast<int>(live_gpus(cluster).size());
  const std::vector<Split> all = gpus > 0 ? splits(gpus, model, o) : std::vector<Split>{};
  if (!all.empty() &&
      std::none_of(all.begin(), all.end(), [](const Split& s) { return s.cp > 1; })) {
    throw InputError(fmt::format(
        "--cp-comm {}: no split of the {} GPUs has context parallelism under the pins and limits "
        "(--tp, --pp, --dp, --max-cp, ...); loosen them or drop --cp-comm",
        text, gpus));
  }
}

void add_flags(CLI::App& sub, PlanFlags& f) {
  add_cluster_flags(sub, f.cluster);
  add_model_flags(sub, f.model);
  sub.add_option("--min-tp", f.search.min_tp, "smallest tensor parallel size tried (default 1)")
      ->check(positive_integer_check());
  sub.add_option("--max-tp", f.search.max_tp, "largest tensor parallel size tried (default: any)")
      ->check(positive_integer_check());
  const CLI::Validator positive = positive_integer_check();
  sub.add_option("--tp", f.tp, "pin tensor parallel size")->check(positive);
  sub.add_option("--pp", f.pp, "pin pipeline parallel size")->check(positive);
  sub.add_option("--dp", f.dp, "pin data parallel size")->check(positive);
  sub.add_option("--micro-batch", f.micro_batch, "pin micro-batch size (sequences)")
      ->check(positive);
  sub.add_option("--vp", f.vp, "pin virtual pipeline stages per GPU (interleaving)")
      ->check(positive);
  sub.add_option("--recompute", f.recompute, "pin activation recomputation: none|selective|full")
      ->check(choice_check({"none", "selective", "full"}));
  sub.add_option("--recompute-layers", f.recompute_layers,
                 "pin partial full recompute: N layers per model chunk recomputed, the rest keep "
                 "their activations (Megatron --recompute-method block; torchtitan every k-th "
                 "layer); implies --recompute full")
      ->check(positive);
  sub.add_option("--zero", f.zero, "pin ZeRO stage: 0|1|2|3")
      ->check(choice_check({"0", "1", "2", "3"}));
  sub.add_option("--sequence-parallel", f.sequence_parallel, "pin sequence parallelism: on|off")
      ->check(choice_check({"on", "off"}));
  sub.add_option("--first-stage-layers", f.first_stage_layers,
                 "pin the first pipeline stage's layers (with --last-stage-layers and --pp; the "
                 "middle stages share the rest: Megatron --decoder-first-pipeline-num-layers)")
      ->check(positive);
  sub.add_option("--last-stage-layers", f.last_stage_layers,
                 "pin the last pipeline stage's layers (with --first-stage-layers and --pp)")
      ->check(positive);
  sub.add_option("--lighter-ends", f.lighter_ends,
                 "pin the split with lighter end stages (every middle stage one layer more): "
                 "on|off; default: both, where the stack sets end stages")
      ->check(choice_check({"on", "off"}));
  sub.add_option("--cp", f.cp, "pin context parallel size (ring / all-to-all attention)")
      ->check(positive);
  sub.add_option("--cp-comm", f.cp_comm,
                 "pin how context parallelism runs: p2p (ring attention, Megatron-Core's "
                 "default), a2a (Ulysses all-to-all) or allgather (PyTorch context_parallel's "
                 "all-gather rotater, torchtitan's default); default: the faster the stack runs")
      ->check(choice_check({"p2p", "a2a", "allgather"}));
  sub.add_option("--ep", f.ep, "pin expert parallel size (MoE models)")->check(positive);
  sub.add_option("--dp-shard", f.dp_shard,
                 "pin hybrid sharding (HSDP): ZeRO-3 sharded over N DP ranks, replicated "
                 "across dp/N (fsdp, torchtitan)")
      ->check(positive);
  sub.add_option("--min-cp", f.search.min_cp, "smallest context parallel size tried (default 1)")
      ->check(positive);
  sub.add_option("--max-cp", f.search.max_cp,
                 "largest context parallel size tried (default 32; searched from 16384 tokens)")
      ->check(positive);
  sub.add_option("--min-ep", f.search.min_ep, "smallest expert parallel size tried (default 1)")
      ->check(positive);
  sub.add_option("--max-ep", f.search.max_ep,
                 "largest expert parallel size tried (default: the experts)")
      ->check(positive);
  sub.add_option("--stack", f.stack,
                 "software stack NAME|FILE: megatron-core (default), megatron-core-perf, "
                 "megatron-2021, deepspeed-megatron, fsdp, torchtitan (trident presets)");
  sub.add_option("--calibration", f.calibration_file,
                 "calibration JSON from validate/calibrate: measured values replace defaults");
  sub.add_option("--top", f.top, "plans to show (default 10)")->check(positive_integer_check());
  sub.add_option("--format", f.format, "table|json|csv (default table)")
      ->check(choice_check({"table", "json", "csv"}));
  sub.add_option("--output", f.output, "write to FILE (atomically) instead of stdout");
  sub.add_option("--explain", f.explain, "explain plan N of the ranking (default 1)")
      ->check(positive)
      ->expected(0, 1)
      ->default_str("1");
  sub.add_flag("--show-infeasible", f.show_infeasible, "also list plans that do not fit");
  sub.add_option("--emit", f.emit,
                 "print the best plan as a framework release's launch configuration: "
                 "megatron|nemo|nemo-hydra|deepspeed|torchtitan|megatron-deepspeed[@VERSION]");
  sub.add_option("--fail-link", f.fail_links,
                 "plan under a failure (repeatable): nvlink:S/G[:K|:all], mesh:S/A-B, nic:S/N, "
                 "gpu:S/G, server:S");
  add_picture_flags(sub, f.pictures);  // pictures
}

SearchOptions search_options(const PlanFlags& f) {
  SearchOptions options = f.search;
  options.tp = f.tp;
  options.pp = f.pp;
  options.dp = f.dp;
  options.micro_batch = f.micro_batch;
  options.vp = f.vp;
  options.zero = f.zero;
  options.cp = f.cp;
  options.ep = f.ep;
  options.dp_shard = f.dp_shard;
  options.recompute_layers = f.recompute_layers;
  if (!f.recompute.empty()) options.recompute = parse_recompute(f.recompute);
  if (!f.sequence_parallel.empty()) {
    options.sequence_parallel = parse_on_off("--sequence-parallel", f.sequence_parallel);
  }
  options.first_stage_layers = f.first_stage_layers;
  options.last_stage_layers = f.last_stage_layers;
  if (!f.lighter_ends.empty())
    options.lighter_ends = parse_on_off("--lighter-ends", f.lighter_ends);
  if (f.top < 1) throw InputError("--top 0: expected a positive number of plans");
  options.keep = std::max({f.top, f.explain.value_or(1), f.pictures.svg_plan});
  options.show_infeasible = f.show_infeasible;
  options.keep_infeasible = f.top;
  return options;
}

void check_format(const PlanFlags& f) {
  if (f.format != "table" && f.format != "json" && f.format != "csv") {
    throw InputError("--format '" + f.format + "': expected table|json|csv");
  }
  if (f.explain && *f.explain < 1) throw InputError("--explain 0: plans are numbered from 1");
  if (f.explain && f.format == "csv") throw InputError("--explain: needs --format table or json");
  if (!f.emit.empty() && f.format != "table") {
    throw InputError("--format " + f.format +
                     ": --emit prints a launch configuration, not the ranking; drop one of them");
  }
  if (f.pictures.svg_plan_given && !f.pictures.wanted()) {
    throw InputError("--svg-plan: chooses the plan --svg or --report draws; give one of them");
  }
}

/// Applies --fail-link specs; returns their descriptions for the report.
std::vector<std::string> run_failures(const PlanFlags& f, Cluster& cluster) {
  std::vector<std::string> described;
  for (const auto& spec : f.fail_links) {
    const Failure failure = parse_failure(spec);
    cluster = apply_failure(cluster, failure);
    described.push_back(spec + ": " + describe(failure, cluster));
  }
  return described;
}

/// A progress bar on stderr once the search has run for a second, only on a terminal.
class ProgressBar {
 public:
  ProgressBar() : start_(std::chrono::steady_clock::now()), tty_(isatty(STDERR_FILENO) == 1) {}
  ~ProgressBar() {
    if (drawn_) std::fprintf(stderr, "\r%60s\r", "");
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void operator()(std::size_t done, std::size_t total) {
    if (!tty_ || total == 0) return;
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
    if (elapsed.count() < 1.0) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done / total);
    std::fprintf(stderr, "\rsearching [%.*s%*s] %zu/%zu splits", filled,
                 "##############################", width - filled, "", done, total);
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  std::chrono::steady_clock::time_point start_;
  bool tty_;
  bool drawn_ = false;
};

/// Moves the plans past the first `n` out of `plans` and puts them back when it goes.
class SetAsideBeyond {
 public:
  SetAsideBeyond(std::vector<PlanResult>& plans, std::size_t n) : plans_(plans) {
    if (plans.size() <= n) return;
    const auto first = plans.begin() + static_cast<std::ptrdiff_t>(n);
    beyond_.assign(first, plans.end());
    plans.erase(first, plans.end());
  }
  // Back into the capacity erase left: no allocation, so nothing to throw.
  ~SetAsideBeyond() { plans_.insert(plans_.end(), beyond_.begin(), beyond_.end()); }
  SetAsideBeyond(const SetAsideBeyond&) = delete;
  SetAsideBeyond& operator=(const SetAsideBeyond&) = delete;

 private:
  std::vector<PlanResult>& plans_;
  std::vector<PlanResult> beyond_;
};

std::string render(const PlanFlags& f, SearchResult& result, const ReportContext& context,
                   const Calibration* calibration, const EstimateOptions& options) {
  std::string explain_text;
  if (f.explain) {
    const std::size_t n = *f.explain;
    if (n > result.plans.size()) {
      throw PlanError("--explain " + std::to_string(n) + ": the ranking has " +
                      std::to_string(result.plans.size()) + " plans that fit");
    }
    explain_text = explain_plan(*context.cluster, *context.model, result.plans[n - 1], n,
                                calibration, options);
  }
  // The search keeps more than --top only for --explain or --svg-plan: those past --top are
  // set aside while the ranking is formatted, then put back (no copy of the plans shown: a
  // plan is kilobytes and --top may ask for them all).
  const SetAsideBeyond aside(result.plans, f.top);
  if (f.format == "json") return format_json(result, context, explain_text);
  if (f.format == "csv") return format_csv(result, context);
  std::string out = format_table(result, context);
  if (!explain_text.empty()) out += "\n" + explain_text;
  return out;
}

std::string emit(const PlanFlags& f, const SearchResult& result, const Cluster& cluster,
                 const Model& model, const EmitSearch& search) {
  return emit_plan(parse_release(f.emit), result.plans, f.explain.value_or(1), cluster, model,
                   search);
}

/// Under --fail-link, --emit writes the what-if's option N (--explain N; default the
/// recommended one, first in the table) on the cluster that option runs on: the cordoned GPUs
/// or servers and the spare servers left out of the launch.
std::string emit_option(const PlanFlags& f, const WhatIf& w, const Model& model,
                        const EmitSearch& search) {
  const std::size_t n = f.explain.value_or(1);
  if (n > w.options.size()) {
    throw PlanError(
        fmt::format("--explain {}: the failure report has {} options", n, w.options.size()));
  }
  const WhatIfOption& option = w.options[n - 1];
  const std::string name = to_string(option.kind);
  if (!option.available || !option.plan || !option.cluster) {
    throw PlanError(
        fmt::format("--emit: option {} ({}) cannot run under the failures; "
                    "--explain N picks another of the report's options",
                    n, name));
  }
  if (!option.regrouped.empty()) {
    throw PlanError(
        fmt::format("--emit: option {} ({}) regroups the GPUs of a server into new "
                    "TP groups, which a launch configuration does not say; "
                    "--explain N picks another of the report's options",
                    n, name));
  }
  return emit_option_plan(parse_release(f.emit), *option.plan, fmt::format("option {} {}", n, name),
                          *option.cluster, model, search);
}

/// Every file the run reads and writes (cli/output_file.h): refused up front when an output
/// would overwrite an input or another output.
RunOutputs declare_files(const PlanFlags& f) {
  RunOutputs files;
  for (const auto& [flag, arg] :
       {std::pair<const char*, std::string>{"--cluster", f.cluster.cluster},
        {"--gpu", f.cluster.gpu},
        {"--model", f.model.model},
        {"--stack", f.stack},
        {"--calibration", f.calibration_file}}) {
    if (arg == "-" || names_file(arg) || std::string_view(flag) == "--calibration") {
      files.add_input(flag, arg);
    }
  }
  files.add_output("--output", f.output);
  declare_picture_outputs(f.pictures, files);
  files.check();
  return files;
}

/// `--dtype fp8` on a model that was not FP8 (its FP8 options the defaults): the stack's own
/// recipe where it does not run the default one (torchtitan runs current and blockwise
/// scaling, not delayed), the first of them the GPU runs (MXFP8 needs Blackwell). The model
/// line of the assumptions names the recipe.
void adopt_stack_fp8_recipe(Model& model, const Stack& stack, const Gpu& gpu) {
  if (stack.supports(model.training.fp8.recipe)) return;
  const std::vector<Fp8Recipe> run = stack.fp8_recipes_run();
  for (const Fp8Recipe recipe : run) {
    if (fp8_recipe_runs_on(recipe, gpu)) {
      model.training.fp8.recipe = recipe;
      return;
    }
  }
  // The stack runs no FP8, or the GPU has none: refused beside the other --dtype checks.
  if (run.empty() || gpu.peak_tflops(Dtype::fp8) <= 0.0) return;
  throw InputError(fmt::format(
      "--dtype fp8: stack {} runs only mxfp8, which needs compute capability 10.0-11.x ({} is "
      "{:.1f}): plan with a stack that runs current or delayed scaling, or on a Blackwell GPU",
      stack.name, gpu.name, gpu.compute_capability));
}

void run(const PlanFlags& f) {
  check_format(f);
  RunOutputs files = declare_files(f);
  if (!f.emit.empty()) (void)parse_release(f.emit);
  SearchOptions options = search_options(f);
  Cluster cluster = resolve_cluster(f.cluster);
  bool fp8_by_flag = false;
  Model model = resolve_model(f.model, &fp8_by_flag);
  const ResolvedStack stack = resolve_stack(f.stack, cluster);
  // The files the stack was read from (its bases, a cluster file's stack:) are inputs too.
  for (const auto& [named_by, file] : stack.files) files.add_input(named_by, file);
  files.check();
  options.stack = stack.stack;
  if (fp8_by_flag) adopt_stack_fp8_recipe(model, options.stack, cluster.gpu);
  const CpCommPin cp_comm{f.cp_comm, options.stack.cp_kinds};
  pin_cp_comm(f.cp_comm, options.stack);
  check_dtype_flag(f.model.dtype, model, cluster.gpu, options.stack);
  check_options(model, options);
  check_stack_runs(options.stack, model, cluster.gpu);  // as written, before resolving
  // The kernel that runs, as search() resolves it (Transformer Engine's fallback), once: what
  // the search line says, whether --cp-comm can apply at all, and the pins its fallback refuses.
  resolve_attention(options, model, cluster.gpu);
  check_cp_comm_runs(f.cp_comm, model, options);
  check_cp_comm_applies(f.cp_comm, options, model, cluster);
  check_options(model, options);
  ReportContext context;
  context.stack = stack.stack.name;
  context.stack_file = stack.file;
  const std::string assumed = describe_assumptions(f.cluster, f.model, cluster, model);
  if (!assumed.empty()) context.assumptions.push_back(assumed);
  if (const std::string line = describe_gpu_defaults(cluster.gpu); !line.empty()) {
    context.assumptions.push_back(line);
  }
  context.assumptions.push_back(describe_stack(stack));
  if (const std::string line = describe_attention_run(stack.stack, model, cluster.gpu);
      !line.empty()) {
    context.assumptions.push_back(line);
  }
  context.assumptions.push_back(
      fmt::format("cluster {}: {} GPUs in {} server{} of {}; model {}: {}", cluster.name,
                  cluster.gpus(), cluster.servers, cluster.servers == 1 ? "" : "s",
                  summarize_server(cluster), model.name, summarize_model(model, &stack.stack)));
  context.assumptions.push_back(describe_search(options, model));
  // The search line names what is searched: no CP under TE's unfused attention.
  if (const std::string line = describe_cp_ep_search(model, options); !line.empty()) {
    context.assumptions.push_back(line);
  }
  check_pinned_within_cluster(cluster, options);
  if (f.fail_links.empty()) check_pinned_gpus(cluster, options);
  context.failures = run_failures(f, cluster);
  check_gpus_left(cluster, f.fail_links);
  context.cluster = &cluster;
  context.model = &model;
  std::optional<Calibration> calibration;
  if (!f.calibration_file.empty()) {
    const std::string text = read_input_file(f.calibration_file, "--calibration");
    calibration = parse_calibration(text, input_source(f.calibration_file));
    check_calibration_on_gpu(*calibration, cluster.gpu, input_source(f.calibration_file), text);
    // Against the links as built: a fit was measured on healthy ones (--fail-link's are not).
    check_calibration_links(*calibration,
                            f.fail_links.empty() ? cluster : resolve_cluster(f.cluster),
                            input_source(f.calibration_file), text);
    context.calibration_source = f.calibration_file;
  }
  const Calibration* measured = calibration ? &*calibration : nullptr;
  context.calibration = measured;
  // --fail-link: the failure what-if (cli/whatif_report.h) answers instead of one search.
  if (!f.fail_links.empty()) {
    // One what-if for the report and the pictures (--svg / --report under --fail-link).
    const auto started = std::chrono::steady_clock::now();
    const Cluster healthy = resolve_cluster(f.cluster);
    WhatIf w;
    try {
      w = run_what_if(f.fail_links, healthy, model, options, measured);
    } catch (const NoSplitError& e) {  // the healthy cluster's: name the pin, as without failures
      throw InputError(no_split_message(healthy, model, options, e.rules(), cp_comm));
    }
    context.search_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (f.emit.empty() && f.explain) {
      throw InputError(
          "--explain: under --fail-link the report compares the options; "
          "--explain N picks option N for --emit");
    }
    const std::string text = f.emit.empty()
                                 ? what_if_report(w, model, context, f.format)
                                 : emit_option(f, w, model, EmitSearch{options, measured});
    write_what_if_pictures(f.pictures, w, model, options, measured, context, files);
    files.set_text("--output", text);
    files.commit();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  SearchResult result;
  {
    ProgressBar bar;
    try {
      result = search(cluster, model, options, measured,
                      [&bar](std::size_t done, std::size_t total) { bar(done, total); });
    } catch (const NoSplitError& e) {  // name the pin that rules every configuration out
      throw InputError(no_split_message(cluster, model, options, e.rules(), cp_comm));
    }
  }
  context.search_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.plans.empty() && !f.show_infeasible) {
    throw PlanError("none of the " + std::to_string(result.configurations_searched) +
                    " configurations fits in GPU memory (--show-infeasible lists the closest)");
  }
  std::string text = f.emit.empty()
                         ? render(f, result, context, measured, estimate_options(options))
                         : emit(f, result, cluster, model, EmitSearch{options, measured});
  check_finite(result);
  write_search_pictures(f.pictures, result, context, measured, estimate_options(options),
                        files);  // pictures
  files.set_text("--output", std::move(text));
  files.commit();
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "plan", "rank tensor x pipeline x data parallel splits of a model over a cluster");
  auto flags = std::make_shared<PlanFlags>();
  add_flags(*sub, *flags);
  sub->callback([flags] { run(*flags); });
}

}  // namespace trident::cli
