// plan output: table and CSV (JSON: plan_json.cpp).
#include "cli/plan_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cli/plan_explain.h"
#include "cli/report_text.h"
#include "cli/search_text.h"
#include "costmodel/compute.h"
#include "costmodel/context_parallel.h"
#include "costmodel/gemms.h"
#include "costmodel/kernels.h"
#include "costmodel/memory.h"
#include "costmodel/moe.h"
#include "costmodel/pipeline.h"
#include "costmodel/precision.h"
#include "topology/text_check.h"

namespace trident::cli {

namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

const char* on_off(bool value) { return value ? "on" : "off"; }

/// The GPU's memory; '*' marks a plan that fits only if the allocator fragments less than
/// its mean (the table's footnote says so).
std::string memory_text(const PlanResult& plan) {
  return fmt::format("{:.1f} GiB{}", plan.estimate.memory.total_bytes / kGib,
                     plan.estimate.memory.tight ? "*" : "");
}

/// Optional table columns: CP and EP when either is above 1 in any shown row; HSDP (shard x
/// replicate) when any shown row shards hybrid; the stage split when any shown row sets its
/// end stages.
struct Columns {
  bool cp_ep = false;
  bool hsdp = false;
  bool stages = false;
};

Columns columns_of(const SearchResult& result) {
  Columns columns;
  for (const auto* plans : {&result.plans, &result.infeasible}) {
    for (const auto& plan : *plans) {
      columns.cp_ep = columns.cp_ep || plan.config.cp > 1 || plan.config.ep > 1;
      columns.hsdp = columns.hsdp || plan.config.hybrid_shard();
      columns.stages = columns.stages || plan.config.pinned_stage_ends();
    }
  }
  return columns;
}

/// DP's tier; an HSDP plan's as shard+replicate ("nvlink+network").
std::string dp_tier_text(const PlanResult& plan) {
  const Placement& p = plan.placement;
  if (!plan.config.hybrid_shard()) return link_name(p.dp);
  return link_name(p.shard) + "+" + link_name(p.replicate);
}

std::string tiers_text(const PlanResult& plan, Columns columns) {
  const Placement& p = plan.placement;
  std::string text = fmt::format("{}/{}/{}", link_name(p.tp), link_name(p.pp), dp_tier_text(plan));
  if (columns.cp_ep) text += fmt::format("/{}/{}", link_name(p.cp), link_name(p.ep));
  return text;
}

/// Tokens/s with thousands commas, and a rate below 100 with three significant digits (an
/// absurd but well-formed plan's 0.68 tokens/s printed as 0).
std::string rate_text(double tokens_per_s) {
  return tokens_per_s >= 100.0 ? thousands(tokens_per_s) : fmt::format("{:.3g}", tokens_per_s);
}

/// MFU in percent, one decimal; below 0.1% two significant digits (not 0.0).
std::string mfu_text(double mfu) {
  const double percent = 100.0 * mfu;
  return percent >= 0.1 || percent <= 0.0 ? fmt::format("{:.1f}", percent)
                                          : fmt::format("{:.2g}", percent);
}

/// The stage split's cell: "first|middle|last" decoder layers ("first|last" for two stages,
/// "-" for one; "1|4/3|1" where the middle stages hold two sizes).
std::string stages_cell(const Model& model, const ParallelConfig& c) {
  if (c.pp < 2) return "-";
  const StageLayers s = stage_layers(model.layers, c);
  if (c.pp == 2) return fmt::format("{}|{}", s.first, s.last);
  // Middle stages of two sizes (a default split): both, "1|4/3|1".
  const std::string middle = middle_stages(model.layers, c.pp, s).fewer > 0
                                 ? fmt::format("{}/{}", s.middle, s.middle - 1)
                                 : fmt::format("{}", s.middle);
  return fmt::format("{}|{}|{}", s.first, middle, s.last);
}

std::string table_row(std::size_t rank, const PlanResult& plan, Columns columns,
                      const Model& model) {
  const auto& c = plan.config;
  const auto& e = plan.estimate;
  const std::string cp_ep_cells = columns.cp_ep ? fmt::format(" {:>3} {:>3}", c.cp, c.ep) : "";
  const std::string stage_cell = columns.stages ? fmt::format(" {:>9}", stages_cell(model, c)) : "";
  const std::string hsdp_cell =
      columns.hsdp ? fmt::format(" {:>9}", c.hybrid_shard() ? hsdp_split(c) : "-") : "";
  return fmt::format(
      "{:>4} {:>3}{} {:>3}{} {:>5} {:>3} {:>3} {:>9} {:>4}{} {:>3} {:>9.3f} {:>12} "
      "{:>6} {:>10} {:>7.1f}  {}",
      rank, c.tp, cp_ep_cells, c.pp, stage_cell, c.dp, c.micro_batch, c.virtual_stages,
      recompute_text(c), c.zero, hsdp_cell, on_off(c.sequence_parallel), e.time.step_s,
      rate_text(e.tokens_per_s), mfu_text(e.mfu), memory_text(plan), 100.0 * e.bubble_fraction,
      tiers_text(plan, columns));
}

std::string table_header(Columns columns) {
  const std::string cp_ep_cells = columns.cp_ep ? fmt::format(" {:>3} {:>3}", "CP", "EP") : "";
  const std::string stage_cell = columns.stages ? fmt::format(" {:>9}", "stages") : "";
  const std::string hsdp_cell = columns.hsdp ? fmt::format(" {:>9}", "HSDP") : "";
  return fmt::format(
      "{:>4} {:>3}{} {:>3}{} {:>5} {:>3} {:>3} {:>9} {:>4}{} {:>3} {:>9} {:>12} {:>6} "
      "{:>10} {:>7}  {}\n",
      "rank", "TP", cp_ep_cells, "PP", stage_cell, "DP", "mb", "VP", "recompute", "ZeRO", hsdp_cell,
      "SP", "step (s)", "tokens/s", "MFU %", "mem/GPU", "bubble%",
      columns.cp_ep ? "link TP/PP/DP/CP/EP" : "link TP/PP/DP");
}

/// ZeRO 0's all-reduce, or ZeRO 1-3's gradient collective + the weights' all-gather.
std::string zero_reduction_name(const ParallelConfig& config, Collective reduce) {
  return config.zero == 0 ? "all-reduce" : std::string(to_string(reduce)) + "+all-gather";
}

}  // namespace

std::string search_summary(const SearchResult& result, const ReportContext& context) {
  const std::string tight =
      result.tight > 0 ? fmt::format(" ({} of them tight)", thousands(result.tight)) : "";
  return fmt::format(
      "searched {} configurations ({} cost-model evaluations, {} placements) in "
      "{:.2f} s; {} fit in memory{}",
      thousands(result.configurations_searched), thousands(result.evaluations),
      thousands(result.placements), context.search_seconds, thousands(result.feasible), tight);
}

std::string link_name(const GroupLink& link) {
  return link.ranks < 2 ? "none" : to_string(link.tier);
}

std::string tp_collective_name(const ParallelConfig& config) {
  if (config.tp < 2) return "none";
  return config.sequence_parallel ? "reduce-scatter+all-gather" : "all-reduce";
}

std::string pp_collective_name(const ParallelConfig& config) {
  return config.pp < 2 ? "none" : "send-recv";
}

std::string dp_collective_name(const ParallelConfig& config, Collective reduce) {
  // Gradients reduce over DP x CP (CP ranks hold the same weights): DP 1 at CP 2 has traffic.
  return config.dp * config.cp < 2 ? "none" : zero_reduction_name(config, reduce);
}

std::string expert_dp_collective_name(const ParallelConfig& config, const CommDetail& edp) {
  return edp.link.ranks < 2 ? "none" : zero_reduction_name(config, edp.collective);
}

std::string bubble_fill_text(const Estimate& estimate) {
  const double r = estimate.bubble_fill_ratio;
  return r < 0.9995 ? fmt::format(" x {:.3f}", r) : std::string();
}

std::string cp_collective_name(const PlanResult& plan) {
  if (plan.config.cp < 2) return "none";
  switch (plan.estimate.cp_kind) {
    case CpKind::p2p:
      return "send-recv";
    case CpKind::all_gather:
      return "all-gather+send-recv";
    case CpKind::a2a:
      return "all-to-all";
  }
  return "all-to-all";
}

std::string ep_collective_name(const ParallelConfig& config) {
  return config.ep < 2 ? "none" : "all-to-all";
}

std::string ep_overlap_name(const Estimate& estimate) {
  if (estimate.ep_overlapped) return "combined_1f1b";
  return estimate.ep.exposed_s < estimate.ep.total_s ? "shared_experts" : "none";
}

std::string describe_cp_ep_search(const Model& model, const SearchOptions& options) {
  std::string text;
  const Stack& stack = options.stack;
  if (options.cp) {
    text = fmt::format("context parallel pinned at {}", *options.cp);
  } else if (stack.context_parallel() &&
             (model.seq_len >= kCpSearchMinSeqLen || options.min_cp > 1)) {
    // The ways the stack runs it (torchtitan: PyTorch's all-gather rotater only).
    std::vector<std::string> kinds;
    if (stack.supports(CpKind::p2p)) kinds.emplace_back("ring p2p");
    if (stack.supports(CpKind::a2a)) kinds.emplace_back("all-to-all");
    if (stack.supports(CpKind::all_gather)) kinds.emplace_back("all-gather");
    std::string how;
    for (const std::string& kind : kinds) how += (how.empty() ? "" : " / ") + kind;
    text = fmt::format(
        "context parallel searched over powers of two with 2 cp dividing seq {} ({}{}; --cp "
        "--min-cp --max-cp)",
        model.seq_len, how, kinds.size() > 1 ? ", the faster" : "");
  } else if (options.unfused_fallback && model.seq_len >= kCpSearchMinSeqLen) {
    text = stack.attention_is_fallback
               ? "context parallel not searched: the unfused attention above takes none"
               : "context parallel not searched: Transformer Engine's unfused attention takes "
                 "none";
  }
  if (model.is_moe()) {
    if (!text.empty()) text += "; ";
    text += options.ep ? fmt::format("expert parallel pinned at {}", *options.ep)
            : stack.expert_parallel
                ? std::string(
                      "expert parallel searched over powers of two dividing the experts "
                      "and TP x CP x DP (expert TP 1; --ep --min-ep --max-ep)")
                : "stack " + stack.name + " has no expert parallelism: experts replicated";
  }
  return text;
}

std::vector<GemmCall> gemm_calls(const Model& model, const ParallelConfig& config) {
  // The cost model's own list (costmodel/gemms.h) on one GPU's view: a CP rank's chunk of each
  // sequence (context_parallel.h), a MoE layer's dense part (moe.h) and its grouped expert
  // GEMMs; calls on the busiest stage.
  const double moe_share = stage_moe_fraction(model, config);
  const CpView view = cp_local_view(moe_dense_view(model, moe_share), config);
  const double m = static_cast<double>(config.num_micro_batches(model.training.global_batch));
  const double layers = model_stage_layers(model, config).most();
  const double passes = 3.0 + config.full_recompute_share(layers);
  const Precision precision = precision_of(model.training);
  const auto as_call = [](const char* name, const GemmShape& shape, double calls, Dtype dtype) {
    return GemmCall{
        name, std::llround(shape.m), std::llround(shape.n), std::llround(shape.k), calls, dtype};
  };
  std::vector<GemmCall> out;
  for (const NamedGemm& gemm : layer_linear_gemms(view.model, config.micro_batch, config.tp)) {
    if (gemm.shape.flops() <= 0.0) continue;  // a MoE model without dense FFN
    out.push_back(as_call(gemm.name, gemm.shape, passes * layers * m, precision.linear_gemm));
  }
  if (model.is_moe()) {
    // One expert's GEMM of the grouped call, as many calls as local experts.
    const ExpertGemms experts = expert_gemms(model, config);
    const double calls = passes * layers * moe_share * m * experts.up.batch;
    out.push_back(as_call("expert_up", {experts.up.m, experts.up.n, experts.up.k}, calls,
                          precision.linear_gemm));
    out.push_back(as_call("expert_down", {experts.down.m, experts.down.n, experts.down.k}, calls,
                          precision.linear_gemm));
  }
  // The output layer runs on the last stage only, once per micro-batch (never recomputed).
  // Multi-token prediction runs the output layer once more per module, and its projection.
  const double heads = 1.0 + model.mtp_layers;
  out.push_back(as_call("logits", logits_gemm(view.model, config.micro_batch, config.tp).shape,
                        3.0 * heads * m, precision.output_gemm));
  out.back().linear = false;
  if (model.mtp_layers > 0) {
    out.push_back(as_call("mtp_projection",
                          mtp_projection_gemm(view.model, config.micro_batch, config.tp).shape,
                          3.0 * model.mtp_layers * m, precision.linear_gemm));
  }
  return out;
}

/// Plans from the top inside the leader's band; a tight plan (ranked after those that fit with
/// the mean fragmentation) does not extend the leader's run.
bool tied_in_ranking(const PlanResult& leader, const PlanResult& plan) {
  return tied_with_leader(leader, plan) &&
         plan.estimate.memory.tight == leader.estimate.memory.tight;
}

std::size_t tied_count(const std::vector<PlanResult>& plans) {
  std::size_t n = 0;
  while (n < plans.size() && tied_in_ranking(plans.front(), plans[n])) ++n;
  return n;
}

std::string format_table(const SearchResult& result, const ReportContext& context) {
  std::string out;
  for (const auto& line : context.assumptions) out += "# " + line + "\n";
  for (const auto& line : context.failures) out += "# failure: " + line + "\n";
  if (!context.calibration_source.empty()) {
    // What the file holds, and when it applies: nothing is replaced where nothing matches.
    const std::size_t fits = context.calibration ? context.calibration->fits.size() : 0;
    const std::size_t gemms = context.calibration ? context.calibration->gemms.size() : 0;
    out += fmt::format(
        "# calibration: {}{} holds {} collective fit(s) and {} GEMM shape(s); each replaces the "
        "default rate where it matches (a fit: the same collective and tier, the nearest group "
        "size; a GEMM: the dtype, within 2x in every dimension)\n",
        context.calibration_source,
        context.calibration && !context.calibration->gpu.empty()
            ? " (measured on " + one_line(context.calibration->gpu) + ")"
            : "",
        fits, gemms);
    // A calibration that prices none of plan 1's collectives steers the search to what it did
    // not measure: said, so a partial calibration is not read as having been applied.
    if (fits > 0 && !result.plans.empty()) {
      const std::size_t used =
          collective_fits_used(result.plans.front().estimate, *context.calibration);
      out += used == 0 ? "# calibration: plan 1 runs none of the measured collectives on their "
                         "tiers: its collectives are priced at the model's rates\n"
                       : fmt::format(
                             "# calibration: plan 1 is priced with {} of the {} collective "
                             "fit(s)\n",
                             used, fits);
    }
  }
  out += "# " + search_summary(result, context) + "\n";
  const Columns columns = columns_of(result);
  out += columns.cp_ep
             ? "# link TP/PP/DP/CP/EP: the tier of the slowest group of each dimension (none = "
               "size 1; DP is DP x CP: gradients reduce over both)\n"
             : "# link TP/PP/DP: the tier of the slowest group of each dimension (none = size 1)\n";
  if (columns.hsdp) {
    out +=
        "# HSDP: hybrid sharding, DP ranks per shard group x replicas; its DP link reads "
        "shard group+replicas\n";
  }
  if (columns.stages) {
    out +=
        "# stages: decoder layers of the first|middle|last pipeline stage (a/b: middle stages "
        "of two counts); ends lighter than the default split are set at launch "
        "(--first/last-stage-layers, or a pipeline layout)\n";
  }
  out += table_header(columns);
  for (std::size_t i = 0; i < result.plans.size(); ++i)
    out += table_row(i + 1, result.plans[i], columns, *context.model) + "\n";
  const auto tight = std::count_if(result.plans.begin(), result.plans.end(),
                                   [](const PlanResult& p) { return p.estimate.memory.tight; });
  if (tight > 0) {
    // ZeRO-3's side-stream pools are reserved beside the fragmentation: the room absorbs both.
    const bool pools =
        std::any_of(result.plans.begin(), result.plans.end(), [](const PlanResult& p) {
          return p.estimate.memory.tight && p.estimate.memory.stream_pool_bytes > 0.0;
        });
    out += fmt::format(
        "# * tight: fits only if the caching allocator fragments less than the {:.0f}% it "
        "averages{} (--explain N says by how much); ranked after the plans that fit with it\n",
        100.0 * kAllocatorFragmentation,
        pools ? " and caches less on ZeRO-3's side streams than priced" : "");
  }
  if (!result.plans.empty()) {
    const auto& lead = result.plans.front().estimate;
    const std::size_t tied = tied_count(result.plans);
    const char* aside = tight > 0 && !lead.memory.tight ? " (the tight plans aside)" : "";
    // The tie is read off the plans shown: when every one is tied, more may be beyond --top.
    const bool more = result.feasible > static_cast<long long>(result.plans.size());
    std::string verdict;
    if (result.plans.size() == 1) {
      verdict = more ? "--top 2 or more shows which plans are tied with it" : "the only plan";
    } else if (tied == result.plans.size() && more) {
      verdict = fmt::format(
          "plans 1-{} (every plan shown) are tied within the model's error; --top shows more",
          tied);
    } else if (tied > 1) {
      verdict = fmt::format("plans 1-{} are tied within the model's error", tied);
    } else {
      verdict = "plan 1 is ahead of the rest beyond the model's error";
    }
    out += fmt::format("# band: {:.3f}-{:.3f} s for plan 1 (stack {}'s measured error); {}{}\n",
                       lead.step_s_low, lead.step_s_high, context.stack, verdict, aside);
  }
  if (!result.infeasible.empty()) {
    out += fmt::format("\ndo not fit ({} of {}; closest first):\n", thousands(result.does_not_fit),
                       thousands(result.configurations_searched));
    out += table_header(columns);
    for (std::size_t i = 0; i < result.infeasible.size(); ++i) {
      const auto& plan = result.infeasible[i];
      out += table_row(i + 1, plan, columns, *context.model) + "  " + shortfall_text(plan) + "\n";
    }
  }
  return out;
}

std::string format_csv(const SearchResult& result, const ReportContext& context,
                       const CsvTail& tail) {
  // cp,ep,link_cp,link_ep columns at the end when CP or EP is above 1 in any row (as the table);
  // then dp_shard,dp_replicate,link_dp_shard,link_dp_replicate when any row shards hybrid.
  const Columns columns = columns_of(result);
  const bool cp_ep = columns.cp_ep;
  std::string out =
      "rank,tp,pp,dp,micro_batch,num_micro_batches,virtual_stages,recompute,zero,"
      "sequence_parallel,step_time_s,tokens_per_s,mfu,memory_gib_per_gpu,fits,bubble_fraction,"
      "link_tp,link_pp,link_dp,rank_order,reason";
  out += cp_ep ? ",cp,ep,link_cp,link_ep" : "";
  out += columns.hsdp ? ",dp_shard,dp_replicate,link_dp_shard,link_dp_replicate" : "";
  out += ",memory_tight,recompute_layers,attention,first_stage_layers,last_stage_layers" +
         tail.header + "\n";
  // Numbers at full precision (fmt's shortest round-trip form, as the JSON): 6 significant
  // digits wrote two million tokens/s as 2.08032e+06.
  const Model& model = *context.model;
  auto row = [&out, cp_ep, columns, &model](std::size_t rank, const PlanResult& plan,
                                            const std::string& trailing) {
    const auto& c = plan.config;
    const auto& e = plan.estimate;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
        "{},{}",
        rank, c.tp, c.pp, c.dp, c.micro_batch, e.num_micro_batches, c.virtual_stages,
        to_string(c.recompute), c.zero, c.sequence_parallel ? "true" : "false", e.time.step_s,
        e.tokens_per_s, e.mfu, e.memory.total_bytes / kGib, e.memory.fits ? "true" : "false",
        e.bubble_fraction, link_name(plan.placement.tp), link_name(plan.placement.pp),
        link_name(plan.placement.dp),
        plan.placement.order == RankOrder::tp_dp_pp ? "tp-dp-pp" : "tp-pp-dp",
        csv_quoted(shortfall_text(plan)));
    if (cp_ep) {
      out += fmt::format(",{},{},{},{}", c.cp, c.ep, link_name(plan.placement.cp),
                         link_name(plan.placement.ep));
    }
    if (columns.hsdp) {
      out += fmt::format(",{},{},{},{}", c.zero_shard_ranks(), c.dp / c.zero_shard_ranks(),
                         link_name(plan.placement.shard), link_name(plan.placement.replicate));
    }
    const StageLayers split = stage_layers(model.layers, c);
    out +=
        fmt::format(",{},{},{},{},{}{}\n", plan.estimate.memory.tight ? "true" : "false",
                    c.recompute_layers, to_string(e.attention), split.first, split.last, trailing);
  };
  for (std::size_t i = 0; i < result.plans.size(); ++i) {
    row(tail.first_rank + i, result.plans[i], i < tail.cells.size() ? tail.cells[i] : "");
  }
  for (std::size_t i = 0; i < result.infeasible.size(); ++i) row(i + 1, result.infeasible[i], "");
  return out;
}

}  // namespace trident::cli
