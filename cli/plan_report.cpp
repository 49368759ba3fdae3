// plan output: table, CSV and JSON.
#include "cli/plan_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

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

namespace trident::cli {

namespace {

using Json = nlohmann::ordered_json;
constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

const char* on_off(bool value) { return value ? "on" : "off"; }

Json link_gbps(const GroupLink& link) {
  if (link.ranks < 2) return 0.0;
  return link.domains > 1 ? link.inter_gbps : link.intra_gbps;
}

Json comm_json(const CommDetail& comm, const std::string& collective) {
  return Json{{"collective", collective},
              {"bytes_per_call", comm.bytes_per_call},
              {"gather_bytes_per_call",
               comm.gather_bytes_per_call > 0.0 ? comm.gather_bytes_per_call : comm.bytes_per_call},
              {"calls_per_step", comm.calls_per_step},
              {"ranks", comm.link.ranks},
              {"tier", link_name(comm.link)},
              {"gbps", link_gbps(comm.link)},
              {"time_per_call_s", comm.time_per_call_s},
              {"total_s", comm.total_s},
              {"exposed_s", comm.exposed_s},
              {"unit_gather_s", comm.unit_gather_s},
              {"unit_scatter_s", comm.unit_scatter_s},
              {"unit_gathers_per_step", comm.unit_gathers_per_step},
              {"unit_scatters_per_step", comm.unit_scatters_per_step}};
}

/// HSDP: the all-reduce of each unit's gradient shard across the replicas.
Json replicate_json(const CommDetail& comm) {
  return Json{{"collective", "all-reduce"},
              {"bytes_per_call", comm.replicate_bytes_per_call},
              {"calls_per_step", comm.unit_scatters_per_step},
              {"ranks", comm.replicate_link.ranks},
              {"tier", link_name(comm.replicate_link)},
              {"gbps", link_gbps(comm.replicate_link)},
              {"time_per_call_s", comm.unit_replicate_s},
              {"total_s", comm.unit_replicate_s * comm.unit_scatters_per_step}};
}

Json gemms_json(const Cluster& cluster, const Model& model, const PlanResult& plan,
                const Calibration* calibration) {
  Json out = Json::array();
  const Gpu gpu = gpu_for_job(cluster.gpu, plan.config.gpus());  // the pace estimate() priced
  for (const auto& gemm : gemm_calls(model, plan.config)) {
    // predicted_tflops: the cost model's roofline (or calibrated) rate for this shape.
    const GemmShape shape{static_cast<double>(gemm.m), static_cast<double>(gemm.n),
                          static_cast<double>(gemm.k), 1.0};
    const double seconds = gemm_time_s(gpu, gemm.dtype, shape, calibration);
    out.push_back(Json{{"name", gemm.name},
                       {"m", gemm.m},
                       {"n", gemm.n},
                       {"k", gemm.k},
                       {"dtype", to_string(gemm.dtype)},
                       {"calls_per_step", gemm.calls_per_step},
                       {"predicted_tflops", seconds > 0 ? shape.flops() / seconds / 1e12 : 0.0}});
  }
  return out;
}

Json plan_json(const ReportContext& context, const PlanResult& plan) {
  const Model& model = *context.model;
  const auto& c = plan.config;
  const auto& e = plan.estimate;
  const auto& p = plan.placement;
  const auto& mem = e.memory;
  Json json{{"tp", c.tp},
            {"pp", c.pp},
            {"dp", c.dp},
            {"micro_batch", c.micro_batch},
            {"num_micro_batches", e.num_micro_batches},
            {"virtual_stages", c.virtual_stages},
            {"recompute", to_string(c.recompute)},
            {"recompute_layers", c.recompute_layers},
            {"zero", c.zero},
            {"sequence_parallel", c.sequence_parallel},
            {"cp", c.cp},
            {"ep", c.ep},
            {"dp_shard", c.zero_shard_ranks()},
            {"dp_replicate", c.dp / c.zero_shard_ranks()},
            {"step_time_s", e.time.step_s},
            {"tokens_per_s", e.tokens_per_s},
            {"model_tflops_per_gpu", e.model_tflops_per_gpu},
            {"hardware_tflops_per_gpu", e.hardware_tflops_per_gpu},
            {"mfu", e.mfu},
            {"mfu_causal", e.mfu_causal},
            {"step_time_s_low", e.step_s_low},
            {"step_time_s_high", e.step_s_high},
            {"stack", context.stack},
            {"memory_gib_per_gpu", mem.total_bytes / kGib},
            {"fits", mem.fits},
            {"memory_tight", mem.tight},
            {"bubble_fraction", e.bubble_fraction}};
  json["time"] = Json{{"compute_s", e.time.compute_s()},
                      {"tp_comm_s", e.time.tp_comm_s},
                      {"pp_comm_s", e.time.pp_comm_s},
                      {"dp_comm_s", e.time.dp_comm_s},
                      {"bubble_s", e.time.bubble_s},
                      {"exposed_comm_s", e.time.exposed_comm_s()},
                      {"forward_s", e.time.forward_s},
                      {"backward_s", e.time.backward_s},
                      {"recompute_s", e.time.recompute_s},
                      {"optimizer_s", e.time.optimizer_s},
                      {"overlap_contention_s", e.time.overlap_contention_s},
                      {"cp_comm_s", e.time.cp_comm_s},
                      {"ep_comm_s", e.time.ep_comm_s},
                      {"amax_comm_s", e.time.amax_comm_s}};
  json["memory_gib"] = Json{{"weights", mem.weights_bytes / kGib},
                            {"gradients", mem.gradients_bytes / kGib},
                            {"optimizer", mem.optimizer_bytes / kGib},
                            {"activations", mem.activations_bytes / kGib},
                            {"other", mem.other_bytes / kGib},
                            {"capacity", mem.capacity_bytes / kGib},
                            {"weight_copies", mem.weight_copies_bytes / kGib},
                            {"workspace", mem.workspace_bytes / kGib},
                            {"tp_gather", mem.tp_gather_bytes / kGib},
                            {"cp_gather", mem.cp_gather_bytes / kGib},
                            {"recompute_working", mem.recompute_working_bytes / kGib},
                            {"layer_units", mem.layer_units_bytes / kGib},
                            {"loss", mem.loss_bytes / kGib},
                            {"output_unit", mem.output_unit_bytes / kGib},
                            {"transient", mem.transient_bytes / kGib},
                            {"allocated", mem.allocated_bytes / kGib},
                            {"fragmentation", mem.fragmentation_bytes / kGib},
                            {"reserved", mem.reserved_bytes / kGib},
                            {"cuda_context", mem.cuda_context_bytes / kGib},
                            {"nccl_buffers", mem.nccl_buffer_bytes / kGib},
                            {"total", mem.total_bytes / kGib}};
  json["links"] = Json{{"tp", link_name(p.tp)},
                       {"pp", link_name(p.pp)},
                       {"dp", link_name(p.dp)},
                       {"cp", link_name(p.cp)},
                       {"ep", link_name(p.ep)}};
  json["collectives"] = Json{{"tp", tp_collective_name(c)},
                             {"pp", pp_collective_name(c)},
                             {"dp", dp_collective_name(c)},
                             {"cp", cp_collective_name(plan)},
                             {"ep", ep_collective_name(c)}};
  if (c.cp > 1) json["cp_comm_type"] = to_string(e.cp_kind);
  if (c.hybrid_shard()) {
    json["links"]["dp_shard"] = link_name(p.shard);
    json["links"]["dp_replicate"] = link_name(p.replicate);
  }
  const bool hybrid = c.hybrid_shard();
  json["rank_order"] = p.order == RankOrder::tp_dp_pp ? "tp-dp-pp" : "tp-pp-dp";
  json["comm"] = Json{{"tp", comm_json(e.tp, tp_collective_name(c))},
                      {"pp", comm_json(e.pp, pp_collective_name(c))},
                      {"dp", comm_json(e.dp, dp_collective_name(c))},
                      {"cp", comm_json(e.cp, cp_collective_name(plan))},
                      {"ep", comm_json(e.ep, ep_collective_name(c))}};
  if (hybrid) json["comm"]["dp_replicate"] = replicate_json(e.dp);
  if (e.amax.calls_per_step > 0.0) json["comm"]["fp8_amax"] = comm_json(e.amax, "all-reduce");
  if (model.is_moe()) {
    json["comm"]["expert_dp"] = comm_json(e.edp, e.edp.link.ranks > 1 ? "all-reduce" : "none");
    json["flops_basis"] = "active_parameters";
  }
  json["gemms"] = gemms_json(*context.cluster, model, plan, context.calibration);
  if (plan.shortfall) json["reason"] = shortfall_text(*plan.shortfall);
  return json;
}

Json cluster_json(const Cluster& cluster, int gpus_used) {
  return Json{{"name", cluster.name},
              {"gpus", gpus_used},
              {"servers", cluster.servers},
              {"gpu", cluster.gpu.name},
              {"gpus_per_server", cluster.gpus_per_server},
              {"domain_gpus", cluster.nvlink.domain_gpus},
              {"total_gpus", cluster.gpus()}};
}

Json model_json(const Model& model) {
  const ParameterCount count = count_parameters(model);
  Json json{{"name", model.name},
            {"parameters", count.total},
            {"layers", model.layers},
            {"hidden", model.hidden},
            {"heads", model.heads},
            {"kv_heads", model.kv_heads},
            {"ffn_hidden", model.ffn_hidden},
            {"ffn", to_string(model.ffn)},
            {"vocab", model.vocab},
            {"seq_len", model.seq_len},
            {"global_batch", model.training.global_batch},
            {"dtype", to_string(model.training.dtype)}};
  if (model.attention == AttentionKind::mla) json["attention"] = "mla";
  if (model.is_moe()) {
    json["active_parameters"] = count.active;
    json["moe"] = Json{{"experts", model.moe.experts},
                       {"top_k", model.moe.top_k},
                       {"expert_ffn_hidden", model.moe.expert_ffn_hidden},
                       {"shared_experts", model.moe.shared_experts},
                       {"moe_layers", model.moe_layers()},
                       {"capacity_factor", model.moe.capacity_factor},
                       {"dropless", model.moe.capacity_factor <= 0.0}};
  }
  return json;
}

/// The GPU's memory; '*' marks a plan that fits only if the allocator fragments less than
/// its mean (the table's footnote says so).
std::string memory_text(const PlanResult& plan) {
  return fmt::format("{:.1f} GiB{}", plan.estimate.memory.total_bytes / kGib,
                     plan.estimate.memory.tight ? "*" : "");
}

/// Optional table columns: CP and EP when either is above 1 in any shown row; HSDP (shard x
/// replicate) when any shown row shards hybrid.
struct Columns {
  bool cp_ep = false;
  bool hsdp = false;
};

Columns columns_of(const SearchResult& result) {
  Columns columns;
  for (const auto* plans : {&result.plans, &result.infeasible}) {
    for (const auto& plan : *plans) {
      columns.cp_ep = columns.cp_ep || plan.config.cp > 1 || plan.config.ep > 1;
      columns.hsdp = columns.hsdp || plan.config.hybrid_shard();
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

std::string table_row(std::size_t rank, const PlanResult& plan, Columns columns) {
  const auto& c = plan.config;
  const auto& e = plan.estimate;
  const std::string cp_ep_cells = columns.cp_ep ? fmt::format(" {:>3} {:>3}", c.cp, c.ep) : "";
  const std::string hsdp_cell =
      columns.hsdp ? fmt::format(" {:>9}", c.hybrid_shard() ? hsdp_split(c) : "-") : "";
  return fmt::format(
      "{:>4} {:>3}{} {:>3} {:>5} {:>3} {:>3} {:>9} {:>4}{} {:>3} {:>9.3f} {:>12} "
      "{:>6.1f} {:>10} {:>7.1f}  {}",
      rank, c.tp, cp_ep_cells, c.pp, c.dp, c.micro_batch, c.virtual_stages, recompute_text(c),
      c.zero, hsdp_cell, on_off(c.sequence_parallel), e.time.step_s, thousands(e.tokens_per_s),
      100.0 * e.mfu, memory_text(plan), 100.0 * e.bubble_fraction, tiers_text(plan, columns));
}

std::string table_header(Columns columns) {
  const std::string cp_ep_cells = columns.cp_ep ? fmt::format(" {:>3} {:>3}", "CP", "EP") : "";
  const std::string hsdp_cell = columns.hsdp ? fmt::format(" {:>9}", "HSDP") : "";
  return fmt::format(
      "{:>4} {:>3}{} {:>3} {:>5} {:>3} {:>3} {:>9} {:>4}{} {:>3} {:>9} {:>12} {:>6} "
      "{:>10} {:>7}  {}\n",
      "rank", "TP", cp_ep_cells, "PP", "DP", "mb", "VP", "recompute", "ZeRO", hsdp_cell, "SP",
      "step (s)", "tokens/s", "MFU %", "mem/GPU", "bubble%",
      columns.cp_ep ? "link TP/PP/DP/CP/EP" : "link TP/PP/DP");
}

std::string search_summary(const SearchResult& result, const ReportContext& context) {
  const std::string tight =
      result.tight > 0 ? fmt::format(" ({} of them tight)", thousands(result.tight)) : "";
  return fmt::format(
      "searched {} configurations ({} cost-model evaluations, {} placements) in "
      "{:.2f} s; {} fit in memory{}",
      thousands(result.configurations_searched), thousands(result.evaluations),
      thousands(result.placements), context.search_seconds, thousands(result.feasible), tight);
}

}  // namespace

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

std::string dp_collective_name(const ParallelConfig& config) {
  if (config.dp < 2) return "none";
  return config.zero == 0 ? "all-reduce" : "reduce-scatter+all-gather";
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

std::string describe_cp_ep_search(const Model& model, const SearchOptions& options) {
  std::string text;
  const Stack& stack = options.stack;
  if (options.cp) {
    text = fmt::format("context parallel pinned at {}", *options.cp);
  } else if (stack.context_parallel() &&
             (model.seq_len >= kCpSearchMinSeqLen || options.min_cp > 1)) {
    text = fmt::format(
        "context parallel searched over powers of two with 2 cp dividing seq {} (ring p2p / "
        "all-to-all, the faster; --cp --min-cp --max-cp)",
        model.seq_len);
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
  const double moe_share = stage_moe_fraction(model, config.pp);
  const CpView view = cp_local_view(moe_dense_view(model, moe_share), config);
  const double m = static_cast<double>(config.num_micro_batches(model.training.global_batch));
  const double layers = model_stage_layers(model, config.pp).most();
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
  if (model.mtp_layers > 0) {
    out.push_back(as_call("mtp_projection",
                          mtp_projection_gemm(view.model, config.micro_batch, config.tp).shape,
                          3.0 * model.mtp_layers * m, precision.linear_gemm));
  }
  return out;
}

/// Plans from the top inside the leader's band; a tight plan (ranked after those that fit with
/// the mean fragmentation) does not extend the leader's run.
std::size_t tied_count(const std::vector<PlanResult>& plans) {
  std::size_t n = 0;
  while (n < plans.size() && tied_with_leader(plans.front(), plans[n]) &&
         plans[n].estimate.memory.tight == plans.front().estimate.memory.tight) {
    ++n;
  }
  return n;
}

std::string format_table(const SearchResult& result, const ReportContext& context) {
  std::string out;
  for (const auto& line : context.assumptions) out += "# " + line + "\n";
  for (const auto& line : context.failures) out += "# failure: " + line + "\n";
  if (!context.calibration_source.empty()) {
    out += "# calibration: measured GEMM and collective values from " + context.calibration_source +
           " replace the default efficiencies\n";
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
  out += table_header(columns);
  for (std::size_t i = 0; i < result.plans.size(); ++i)
    out += table_row(i + 1, result.plans[i], columns) + "\n";
  const auto tight = std::count_if(result.plans.begin(), result.plans.end(),
                                   [](const PlanResult& p) { return p.estimate.memory.tight; });
  if (tight > 0) {
    out += fmt::format(
        "# * tight: fits only if the caching allocator fragments less than the {:.0f}% it "
        "averages (--explain N says by how much); ranked after the plans that fit with it\n",
        100.0 * kAllocatorFragmentation);
  }
  if (result.plans.size() > 1) {
    const auto& lead = result.plans.front().estimate;
    const std::size_t tied = tied_count(result.plans);
    const char* aside = tight > 0 && !lead.memory.tight ? " (the tight plans aside)" : "";
    out +=
        fmt::format("# band: {:.3f}-{:.3f} s for plan 1 (stack {}'s measured error); {}{}\n",
                    lead.step_s_low, lead.step_s_high, context.stack,
                    tied > 1 ? fmt::format("plans 1-{} are tied within the model's error", tied)
                             : std::string("plan 1 is ahead of the rest beyond the model's error"),
                    aside);
  }
  if (!result.infeasible.empty()) {
    out += fmt::format("\ndo not fit ({} of {}; closest first):\n",
                       thousands(result.configurations_searched - result.feasible),
                       thousands(result.configurations_searched));
    out += table_header(columns);
    for (std::size_t i = 0; i < result.infeasible.size(); ++i) {
      const auto& plan = result.infeasible[i];
      out += table_row(i + 1, plan, columns) + "  " + shortfall_text(plan) + "\n";
    }
  }
  return out;
}

std::string format_csv(const SearchResult& result, const ReportContext& /*context*/) {
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
  out += ",memory_tight,recompute_layers\n";
  auto row = [&out, cp_ep, columns](std::size_t rank, const PlanResult& plan) {
    const auto& c = plan.config;
    const auto& e = plan.estimate;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{},{:.6g},{},{},{},"
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
    out +=
        fmt::format(",{},{}\n", plan.estimate.memory.tight ? "true" : "false", c.recompute_layers);
  };
  for (std::size_t i = 0; i < result.plans.size(); ++i) row(i + 1, result.plans[i]);
  for (std::size_t i = 0; i < result.infeasible.size(); ++i) row(i + 1, result.infeasible[i]);
  return out;
}

std::string format_json(const SearchResult& result, const ReportContext& context,
                        const std::string& explain_text) {
  const Model& model = *context.model;
  Json doc;
  doc["cluster"] = cluster_json(*context.cluster, result.gpus);
  doc["model"] = model_json(model);
  doc["failures"] = context.failures;
  doc["stack"] = context.stack;
  Json plans = Json::array();
  for (const auto& plan : result.plans) {
    plans.push_back(plan_json(context, plan));
    plans.back()["tied"] = tied_with_leader(result.plans.front(), plan);
  }
  doc["plans"] = plans;
  if (!result.infeasible.empty()) {
    Json infeasible = Json::array();
    for (const auto& plan : result.infeasible) infeasible.push_back(plan_json(context, plan));
    doc["infeasible"] = infeasible;
  }
  doc["search"] = Json{{"configurations_searched", result.configurations_searched},
                       {"feasible", result.feasible},
                       {"tight", result.tight},
                       {"evaluations", result.evaluations},
                       {"placements", result.placements},
                       {"seconds", context.search_seconds}};
  doc["assumptions"] = context.assumptions;
  doc["calibration"] =
      context.calibration_source.empty() ? Json(nullptr) : Json(context.calibration_source);
  if (!explain_text.empty()) doc["explain"] = explain_text;
  return doc.dump(2) + "\n";
}

}  // namespace trident::cli
