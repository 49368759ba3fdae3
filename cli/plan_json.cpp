// plan output: JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "cli/plan_report.h"
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
              {"gather_time_per_call_s", comm.gather_s},
              {"total_s", comm.total_s},
              {"exposed_s", comm.exposed_s},
              {"unit_gather_s", comm.unit_gather_s},
              {"unit_scatter_s", comm.unit_scatter_s},
              {"unit_gathers_per_step", comm.unit_gathers_per_step},
              {"unit_scatters_per_step", comm.unit_scatters_per_step},
              {"edge_unit_parameters", comm.edge_parameters},
              {"edge_gather_s", comm.edge_gather_s},
              {"edge_scatter_s", comm.edge_scatter_s},
              {"edge_gathers_per_step", comm.edge_gathers_per_step},
              {"edge_scatters_per_step", comm.edge_scatters_per_step},
              {"pipe_gathers_per_step", comm.pipe_gathers_per_step},
              {"pipe_gather_s", comm.pipe_gather_s},
              {"fill_gathers_per_step", comm.fill_gathers_per_step},
              {"fill_gather_s", comm.fill_gather_s}};
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
  const KernelProfile profile = kernel_profile(gpu);
  const Precision precision = precision_of(model.training);
  for (const auto& gemm : gemm_calls(model, plan.config)) {
    // predicted_tflops: the cost model's roofline (or calibrated) rate for this shape with the
    // dtype's tensor-scaled kernel, the one validate times; kernel_rate_ratio: the share of it
    // the recipe's own kernel runs at (MXFP8's block-scaled GEMMs 0.951), as the step prices.
    const GemmShape shape{static_cast<double>(gemm.m), static_cast<double>(gemm.n),
                          static_cast<double>(gemm.k), 1.0};
    const double seconds = gemm_time_s(gpu, gemm.dtype, profile, shape, calibration);
    out.push_back(
        Json{{"name", gemm.name},
             {"m", gemm.m},
             {"n", gemm.n},
             {"k", gemm.k},
             {"dtype", to_string(gemm.dtype)},
             {"calls_per_step", gemm.calls_per_step},
             {"predicted_tflops", seconds > 0 ? shape.flops() / seconds / 1e12 : 0.0},
             {"kernel_rate_ratio", gemm.linear ? precision.linear_gemm_rate_ratio : 1.0}});
  }
  return out;
}

Json plan_json(const ReportContext& context, const PlanResult& plan) {
  const Model& model = *context.model;
  const auto& c = plan.config;
  const auto& e = plan.estimate;
  const auto& p = plan.placement;
  const auto& mem = e.memory;
  const StageLayers split = stage_layers(model.layers, c);
  Json json{{"tp", c.tp},
            {"pp", c.pp},
            {"dp", c.dp},
            {"micro_batch", c.micro_batch},
            {"num_micro_batches", e.num_micro_batches},
            {"virtual_stages", c.virtual_stages},
            {"first_stage_layers", split.first},
            {"last_stage_layers", split.last},
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
            {"attention", to_string(e.attention)},
            {"memory_gib_per_gpu", mem.total_bytes / kGib},
            {"fits", mem.fits},
            {"memory_tight", mem.tight},
            {"bubble_fraction", e.bubble_fraction},
            {"bubble_fill_ratio", e.bubble_fill_ratio}};
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
                      {"optimizer_update_s", e.optimizer.update_s},
                      {"fp8_weight_cast_s", e.optimizer.fp8_weight_cast_s},
                      {"grad_buffer_s", e.optimizer.grad_buffer_s},
                      {"overlap_contention_s", e.time.overlap_contention_s},
                      {"cp_comm_s", e.time.cp_comm_s},
                      {"ep_comm_s", e.time.ep_comm_s},
                      {"amax_comm_s", e.time.amax_comm_s},
                      {"output_wgrad_saved_s", e.output_wgrad.saved_s},
                      {"output_wgrad_deferred_s", e.output_wgrad.deferred_s},
                      {"output_wgrad_exposed_s", e.output_wgrad.exposed_s}};
  json["memory_gib"] = Json{{"weights", mem.weights_bytes / kGib},
                            {"gradients", mem.gradients_bytes / kGib},
                            {"optimizer", mem.optimizer_bytes / kGib},
                            {"activations", mem.activations_bytes / kGib},
                            {"other", mem.other_bytes / kGib},
                            {"capacity", mem.capacity_bytes / kGib},
                            {"weight_copies", mem.weight_copies_bytes / kGib},
                            {"workspace", mem.workspace_bytes / kGib},
                            {"pp_buffers", mem.pp_buffers_bytes / kGib},
                            {"pp_outputs", mem.pp_outputs_bytes / kGib},
                            {"deferred_wgrad", mem.deferred_wgrad_bytes / kGib},
                            {"tp_gather", mem.tp_gather_bytes / kGib},
                            {"cp_gather", mem.cp_gather_bytes / kGib},
                            {"recompute_working", mem.recompute_working_bytes / kGib},
                            {"scores_working", mem.scores_working_bytes / kGib},
                            {"layer_units", mem.layer_units_bytes / kGib},
                            {"loss", mem.loss_bytes / kGib},
                            {"output_unit", mem.output_unit_bytes / kGib},
                            {"transient", mem.transient_bytes / kGib},
                            {"allocated", mem.allocated_bytes / kGib},
                            {"reduce_scatter_kept", mem.reduce_scatter_kept_bytes / kGib},
                            {"fragmentation", mem.fragmentation_bytes / kGib},
                            {"stream_pools", mem.stream_pool_bytes / kGib},
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
                             {"dp", dp_collective_name(c, e.dp.collective)},
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
                      {"dp", comm_json(e.dp, dp_collective_name(c, e.dp.collective))},
                      {"cp", comm_json(e.cp, cp_collective_name(plan))},
                      {"ep", comm_json(e.ep, ep_collective_name(c))}};
  if (hybrid) json["comm"]["dp_replicate"] = replicate_json(e.dp);
  if (e.amax.calls_per_step > 0.0) json["comm"]["fp8_amax"] = comm_json(e.amax, "all-reduce");
  if (e.embedding_grads.calls_per_step > 0.0) {
    json["comm"]["embedding_grads"] = comm_json(e.embedding_grads, "all-reduce");
  }
  if (model.is_moe()) {
    json["comm"]["expert_dp"] = comm_json(e.edp, expert_dp_collective_name(c, e.edp));
    json["comm"]["ep"]["overlap"] = ep_overlap_name(e);
    json["flops_basis"] = "active_parameters";
  }
  json["gemms"] = gemms_json(*context.cluster, model, plan, context.calibration);
  if (plan.shortfall) json["reason"] = shortfall_text(*plan.shortfall);
  return json;
}

/// A JSON object's text, as nlohmann's dump(2) lays it out, written one key at a time: a
/// value nested `depth` levels has every line after its first shifted 2 x depth spaces (dump
/// escapes the newlines inside strings, so each raw newline is layout).
class JsonTextWriter {
 public:
  void add(const char* key, const Json& value) {
    open(key);
    append(value, 1);
  }
  /// An array of `count` values made one at a time by `make(i)`.
  template <typename Make>
  void add_array(const char* key, std::size_t count, Make make) {
    open(key);
    if (count == 0) {
      text_ += "[]";
      return;
    }
    text_ += "[";
    for (std::size_t i = 0; i < count; ++i) {
      text_ += i == 0 ? "\n    " : ",\n    ";
      append(make(i), 2);
    }
    text_ += "\n  ]";
  }
  std::string finish() {
    text_ += text_.empty() ? "{}\n" : "\n}\n";
    return std::move(text_);
  }

 private:
  void open(const char* key) {
    text_ += text_.empty() ? "{\n  \"" : ",\n  \"";
    text_ += key;
    text_ += "\": ";
  }
  void append(const Json& value, int depth) {
    const std::string dumped = value.dump(2);
    const std::string shift(static_cast<std::size_t>(2 * depth), ' ');
    std::size_t from = 0;
    for (std::size_t at = dumped.find('\n'); at != std::string::npos;
         from = at + 1, at = dumped.find('\n', from)) {
      text_.append(dumped, from, at + 1 - from);
      text_ += shift;
    }
    text_.append(dumped, from, std::string::npos);
  }

  std::string text_;
};

Json cluster_json(const Cluster& cluster, int gpus_used) {
  return Json{{"name", cluster.name},
              {"gpus", gpus_used},
              {"servers", cluster.servers},
              {"gpu", cluster.gpu.name},
              {"gpus_per_server", cluster.gpus_per_server},
              {"domain_gpus", cluster.nvlink.domain_gpus},
              {"rack_domain_gpus", cluster.nvlink.rack_gpus()},
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
  if (model.explicit_head_dim > 0) json["head_dim"] = model.explicit_head_dim;
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

}  // namespace

std::string format_json(const SearchResult& result, const ReportContext& context,
                        const std::string& explain_text) {
  const Model& model = *context.model;
  // Written key by key, each plan dumped on its own: the ranking may hold every plan of a
  // large search (--top), whose document tree would take several times the text's memory.
  JsonTextWriter doc;
  doc.add("cluster", cluster_json(*context.cluster, result.gpus));
  doc.add("model", model_json(model));
  doc.add("failures", context.failures);
  doc.add("stack", context.stack);
  if (!context.stack_file.empty()) doc.add("stack_file", context.stack_file);
  doc.add_array("plans", result.plans.size(), [&](std::size_t i) {
    Json plan = plan_json(context, result.plans[i]);
    plan["tied"] = tied_in_ranking(result.plans.front(), result.plans[i]);
    return plan;
  });
  if (!result.infeasible.empty()) {
    doc.add_array("infeasible", result.infeasible.size(), [&](std::size_t i) {
      Json plan = plan_json(context, result.infeasible[i]);
      plan["tied"] = false;  // the plans' keys; a plan that does not fit ties none
      return plan;
    });
  }
  doc.add("search", Json{{"configurations_searched", result.configurations_searched},
                         {"feasible", result.feasible},
                         {"tight", result.tight},
                         {"does_not_fit", result.does_not_fit},
                         {"evaluations", result.evaluations},
                         {"placements", result.placements},
                         {"seconds", context.search_seconds}});
  doc.add("assumptions", context.assumptions);
  doc.add("calibration",
          context.calibration_source.empty() ? Json(nullptr) : Json(context.calibration_source));
  if (!explain_text.empty()) doc.add("explain", explain_text);
  return doc.finish();
}

}  // namespace trident::cli
