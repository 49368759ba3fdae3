// --explain: one plan in words and numbers.
#include "cli/plan_explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cluster_args.h"
#include "cli/plan_report.h"
#include "cli/report_text.h"
#include "costmodel/compute.h"
#include "costmodel/ep_overlap.h"
#include "costmodel/kernels.h"
#include "costmodel/memory.h"
#include "costmodel/moe.h"
#include "costmodel/pipeline.h"
#include "costmodel/plan_memory.h"
#include "costmodel/precision.h"
#include "planner/layout.h"

namespace trident::cli {

namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

std::string bytes_text(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.1f} KB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "0%";
}

/// "nvlink at 450 GB/s per GPU inside one NVLink domain" / "network at 50 GB/s per GPU across
/// 8 NVLink domains"; `domain` names the domain (a server where there is no NVLink).
std::string link_text(const GroupLink& link, const char* domain) {
  if (link.ranks < 2) return "no traffic (group of one GPU)";
  if (link.domains < 2) {
    return fmt::format("{} at {:.0f} GB/s per GPU inside one {}", to_string(link.tier),
                       link.intra_gbps, domain);
  }
  if (link.ranks_per_domain < 2) {
    return fmt::format("{} at {:.1f} GB/s per GPU across {} {}s (one rank in each)",
                       to_string(link.tier), link.inter_gbps, link.domains, domain);
  }
  return fmt::format(
      "{} at {:.1f} GB/s per GPU across {} {}s (up to {} ranks in one, {:.0f} GB/s between "
      "those)",
      to_string(link.tier), link.inter_gbps, link.domains, domain, link.ranks_per_domain,
      link.intra_gbps);
}

/// "full", or "full on the first N layers of each model chunk" (partial).
std::string recompute_words(const ParallelConfig& c) {
  if (c.recompute != Recompute::full || c.recompute_layers == 0) return to_string(c.recompute);
  return fmt::format("full on {} layer{} of each model chunk (the rest keep their activations)",
                     c.recompute_layers, c.recompute_layers == 1 ? "" : "s");
}

std::string knobs_text(const PlanResult& plan, long long m) {
  const ParallelConfig& c = plan.config;
  std::string text = fmt::format(
      "TP {} x PP {} x DP {}, micro-batch {} ({} micro-batches per step), {}, "
      "recompute {}, ZeRO-{}, sequence parallel {}",
      c.tp, c.pp, c.dp, c.micro_batch, m,
      c.virtual_stages > 1
          ? fmt::format("interleaved 1F1B with {} virtual stages", c.virtual_stages)
          : std::string("1F1B"),
      recompute_words(c), c.zero, c.sequence_parallel ? "on" : "off");
  if (c.cp > 1) text += fmt::format(", CP {} ({})", c.cp, to_string(plan.estimate.cp_kind));
  if (c.ep > 1) text += fmt::format(", EP {} (expert TP 1)", c.ep);
  return text;
}

/// Whether the pace of a job of `gpus` GPUs rests on a default: the file's ratio left out, or its
/// spread where the job is not the size the ratio was measured for.
bool ensemble_defaulted(const Gpu& preset, int gpus) {
  if ((preset.defaulted & kEnsembleClockDefault) != 0) return true;
  return (preset.defaulted & kClockSpreadDefault) != 0 && gpus > 1 && gpus != kPaceReferenceGpus;
}

/// The linear GEMMs' ceiling and the factors it is made of (docs/cost_model.md#kernels): what a
/// GEMM of ideal shape reaches in this job, before tile and wave losses.
std::string gemm_ceiling_text(const Gpu& preset, const Model& model, int gpus) {
  const Gpu gpu = gpu_for_job(preset, gpus);
  const Precision precision = precision_of(model.training);
  const Dtype dtype = precision.linear_gemm;
  const KernelProfile profile = kernel_profile(gpu);
  const double kernel = precision.linear_gemm_rate_ratio;
  return fmt::format(
      "  GEMM ceiling {:.0f} TFLOP/s  ({} peak {:.0f} x {:.3f} {} x {:.3f} sustained "
      "clock{} x {:.3f} the slowest of {} GPU{}{}{}; before tile and wave losses)\n",
      gemm_ceiling_tflops(gpu, dtype, profile) * kernel, to_string(dtype), gpu.peak_tflops(dtype),
      gpu.gemm_efficiency(dtype),
      (preset.defaulted & kMatmulEfficiencyDefault) != 0 &&
              gpu.gemm_efficiency(dtype) == gpu.matmul_efficiency
          ? "default (not measured)"
          : "best measured",
      profile.sustained_ratio, (preset.defaulted & kSustainedClockDefault) != 0 ? " (default)" : "",
      profile.ensemble_ratio, gpus, gpus == 1 ? "" : "s",
      ensemble_defaulted(preset, gpus) ? " (default)" : "",
      kernel == 1.0 ? "" : fmt::format(" x {:.3f} MXFP8's block-scaled kernels", kernel));
}

/// How many of the layer's twelve linear GEMM shapes (each of the four GEMMs forward, input
/// gradient and weight gradient, as the cost model prices them: compute.cpp
/// linear_gemm_times) take a measured rate from the calibration instead of the ceiling; 0
/// without GEMM measurements.
int calibrated_linear_gemms(const Model& model, const PlanResult& plan,
                            const Calibration* calibration) {
  if (calibration == nullptr || calibration->gemms.empty()) return 0;
  const PricedView view = priced_view(model, plan.config);
  const ParallelConfig& split = view.config(plan.config);
  const Dtype dtype = precision_of(model.training).linear_gemm;
  int measured = 0;
  for (const NamedGemm& gemm : layer_linear_gemms(view.model(model), split.micro_batch, split.tp)) {
    const GemmShape& s = gemm.shape;
    for (const GemmShape& pass : {s, s.input_gradient(), s.weight_gradient()}) {
      if (calibration->gemm_tflops(std::llround(pass.m), std::llround(pass.n), std::llround(pass.k),
                                   dtype)) {
        ++measured;
      }
    }
  }
  return measured;
}

std::string three_numbers(const Cluster& cluster, const Model& model, const PlanResult& plan,
                          const Calibration* calibration) {
  const auto& e = plan.estimate;
  const double tokens = static_cast<double>(model.training.global_batch) * model.seq_len;
  std::string out = "The three numbers\n";
  out += fmt::format("  step time    {:.3f} s\n", e.time.step_s);
  out += fmt::format("  throughput   {} tokens/s  ({} tokens per step / {:.3f} s)\n",
                     thousands(e.tokens_per_s), thousands(tokens), e.time.step_s);
  out += fmt::format(
      "  MFU          {:.1f}%  ({:.0f} model TFLOP/s per GPU of {:.0f} dense peak; "
      "{:.0f} TFLOP/s executed{})\n",
      100.0 * e.mfu, e.model_tflops_per_gpu, cluster.gpu.peak_tflops(model.training.dtype),
      e.hardware_tflops_per_gpu,
      plan.config.recompute == Recompute::none ? "" : " with recomputation");
  // The causal convention beside Megatron's: at long sequences the masked half of attention
  // is much of the model FLOPs the MFU above counts.
  out += fmt::format("  MFU causal   {:.1f}%  (attention's masked half not counted)\n",
                     100.0 * e.mfu_causal);
  if (model.is_moe()) {
    out += "  (MoE: FLOPs and MFU count active parameters: top_k + shared experts per token)\n";
  }
  out += gemm_ceiling_text(cluster.gpu, model, plan.config.gpus());
  if (const int measured = calibrated_linear_gemms(model, plan, calibration); measured > 0) {
    out += fmt::format(
        "  (the calibration's measured rates replace the ceiling for {} of the layer's 12 linear "
        "GEMM shapes: 4 GEMMs, forward and both gradients)\n",
        measured);
  }
  return out;
}

/// The critical path's terms, in the order `--explain` lists them.
struct StepTerm {
  const char* name;
  double TimeBreakdown::*seconds;
};
constexpr StepTerm kStepTerms[] = {
    {"forward", &TimeBreakdown::forward_s},
    {"backward", &TimeBreakdown::backward_s},
    {"recompute", &TimeBreakdown::recompute_s},
    {"TP communication (exposed)", &TimeBreakdown::tp_comm_s},
    {"PP communication (exposed)", &TimeBreakdown::pp_comm_s},
    {"DP communication (exposed)", &TimeBreakdown::dp_comm_s},
    {"CP communication (exposed)", &TimeBreakdown::cp_comm_s},
    {"EP all-to-all (exposed)", &TimeBreakdown::ep_comm_s},
    {"FP8 amax all-reduces", &TimeBreakdown::amax_comm_s},
    {"pipeline bubble", &TimeBreakdown::bubble_s},
    {"optimizer step", &TimeBreakdown::optimizer_s},
    {"overlap SM contention", &TimeBreakdown::overlap_contention_s},
};

/// Whether the plan has the term at all (CP, EP, the FP8 amax reductions only where they run).
bool has_term(const PlanResult& plan, const StepTerm& term) {
  if (term.seconds == &TimeBreakdown::cp_comm_s) return plan.config.cp > 1;
  if (term.seconds == &TimeBreakdown::ep_comm_s) return plan.config.ep > 1;
  if (term.seconds == &TimeBreakdown::amax_comm_s) return plan.estimate.amax.calls_per_step > 0.0;
  return true;
}

/// The optimizer step's parts under its line, those the plan has (docs/cost_model.md#optimizer,
/// #grad-accumulation).
std::string optimizer_parts(const OptimizerDetail& detail) {
  std::string parts = fmt::format("    = update {:.3f} s", detail.update_s);
  if (detail.fp8_weight_cast_s > 0.0) {
    parts += fmt::format(" + FP8 weight casts {:.3f} s", detail.fp8_weight_cast_s);
  }
  if (detail.grad_buffer_s > 0.0) {
    std::vector<std::string> passes;
    if (detail.grad_passes.zeroed) passes.emplace_back("zeroing");
    if (detail.grad_passes.nan_checked) passes.emplace_back("NaN check");
    if (detail.grad_passes.prescaled) passes.emplace_back("1/DP scaling");
    parts += fmt::format(" + main-grad buffer passes {:.3f} s (its {})", detail.grad_buffer_s,
                         join_words(passes, ", ", " and "));
  }
  return parts + "\n";
}

std::string step_breakdown(const PlanResult& plan) {
  const auto& t = plan.estimate.time;
  std::string out = "Where the step goes (critical path)\n";
  for (const StepTerm& term : kStepTerms) {
    if (!has_term(plan, term)) continue;
    const double seconds = t.*term.seconds;
    out +=
        fmt::format("  {:<26} {:>9.3f} s  {:>6}\n", term.name, seconds, share(seconds, t.step_s));
    if (term.seconds == &TimeBreakdown::optimizer_s)
      out += optimizer_parts(plan.estimate.optimizer);
  }
  return out;
}

/// The calibration's fit that prices a dimension's calls instead of the link's rate, in
/// words; empty when none does (collective_time_s takes the fit of the nearest group size).
std::string calibrated_text(const CommDetail& comm, const Calibration* calibration) {
  if (calibration == nullptr) return "";
  std::string out;
  for (const auto& [collective, link] : collectives_run(comm)) {
    const auto fit = calibration->collective_fit(collective, link->ranks, link->tier);
    if (!fit) continue;
    out += fmt::format(
        "      calibrated: the {} calls{} are priced by the calibration's {} fit over {} ranks "
        "on {} ({:.1f} GB/s bus bandwidth, {:.1f} us latency), not the link's rate\n",
        to_string(collective), link == &comm.link ? "" : " over the replicas",
        to_string(fit->collective), fit->ranks, to_string(fit->tier), fit->busbw_gbps,
        fit->latency_s * 1e6);
  }
  return out;
}

std::string dimension(const char* name, const std::string& collective, const CommDetail& comm,
                      double step_s, const char* why, const Calibration* calibration,
                      const char* domain) {
  if (comm.link.ranks < 2) return fmt::format("  {}: size 1, no traffic\n", name);
  // ZeRO's gradient reduction (fp32 gradients: a reduce-scatter, or DeepSpeed ZeRO-1's
  // all-reduce) and all-gather (16-bit weights) differ in size.
  const bool split_sizes =
      comm.gather_bytes_per_call > 0.0 && comm.gather_bytes_per_call != comm.bytes_per_call;
  const std::string gathered =
      bytes_text(split_sizes ? comm.gather_bytes_per_call : comm.bytes_per_call);
  const std::string what =
      split_sizes ? fmt::format("{} of {} + all-gather of {}", to_string(comm.collective),
                                bytes_text(comm.bytes_per_call), gathered)
                  : fmt::format("{} of {}", collective, bytes_text(comm.bytes_per_call));
  // Calls whose reductions and gathers run different numbers of times a step (sharded data
  // parallel per unit; ZeRO-2 reducing every micro-batch, gathering once): each counted apart,
  // so that calls x time per call is not read as the step's total.
  const bool per_unit = comm.unit_gathers_per_step > 0.0;
  const bool gather_once = !per_unit && comm.gather_s > 0.0 && comm.calls_per_step > 1.0;
  const double reduce_ms = 1e3 * (comm.time_per_call_s - comm.gather_s);
  std::string calls = fmt::format("{} per call, {:.0f} call{} per step", what, comm.calls_per_step,
                                  comm.calls_per_step == 1.0 ? "" : "s");
  std::string timing = fmt::format("{:.3f} ms per call", 1e3 * comm.time_per_call_s);
  if (per_unit) {
    calls = fmt::format("per unit (one layer) {} of {} and all-gather of {}",
                        to_string(comm.collective), bytes_text(comm.bytes_per_call), gathered);
    timing = fmt::format(
        "{:.3f} ms a unit's reduce-scatter, {:.3f} ms its all-gather (counts "
        "below)",
        reduce_ms, 1e3 * comm.gather_s);
  } else if (gather_once) {
    calls = fmt::format(
        "{} of {} each micro-batch ({:.0f} per step) and one all-gather of {} "
        "per step",
        to_string(comm.collective), bytes_text(comm.bytes_per_call), comm.calls_per_step, gathered);
    timing = fmt::format("{:.3f} ms a reduce-scatter, {:.3f} ms the all-gather", reduce_ms,
                         1e3 * comm.gather_s);
  }
  std::string out = fmt::format(
      "  {}: {}, {} ranks\n"
      "      link: {}\n"
      "      {}, {:.3f} s per step in all, {:.3f} s exposed ({} of the step)\n",
      name, calls, comm.link.ranks, link_text(comm.link, domain), timing, comm.total_s,
      comm.exposed_s, share(comm.exposed_s, step_s));
  out += calibrated_text(comm, calibration);
  if (comm.pipe_gathers_per_step > 0.0) {
    out += fmt::format(
        "      and the pipeline's scatter undone: {:.0f} all-gathers of {} per step, {:.3f} ms "
        "each, {:.3f} s in all (each activation and gradient crosses a stage boundary as 1/TP "
        "and is gathered back over TP, blocking)\n",
        comm.pipe_gathers_per_step, bytes_text(comm.pipe_gather_bytes), 1e3 * comm.pipe_gather_s,
        comm.pipe_gathers_per_step * comm.pipe_gather_s);
  }
  if (comm.fill_gathers_per_step > 0.0) {
    out += fmt::format(
        "      and on the fill's path: {:.0f} later stages each gather their parameters as one "
        "call, {:.3f} ms each, {:.3f} s in all (without interleaving a stage after the first "
        "gathers at its first forward, after its input arrives)\n",
        comm.fill_gathers_per_step, 1e3 * comm.fill_gather_s,
        comm.fill_gathers_per_step * comm.fill_gather_s);
  }
  if (comm.unit_gathers_per_step > 0.0) {
    // Sharded data parallel: the per-unit schedule behind the totals.
    out += fmt::format(
        "      per unit (one layer): all-gather {:.3f} ms x {:.0f} per step, reduce-scatter "
        "{:.3f} ms x {:.0f} per step; each is a ring over {} ranks paying NCCL's per-hop "
        "latency {} times, hidden only behind the neighbouring unit's compute\n",
        1e3 * comm.unit_gather_s, comm.unit_gathers_per_step, 1e3 * comm.unit_scatter_s,
        comm.unit_scatters_per_step, comm.link.ranks, comm.link.ranks - 1);
    if (comm.edge_parameters > 0.0) {
      out += fmt::format(
          "      and the unit beside the layers ({} parameters gathered: the embedding, or the "
          "root unit with the final norm and output layer): all-gather {:.3f} ms x {:.0f} per "
          "step, reduce-scatter{} {:.3f} ms x {:.0f} per step, {:.3f} s in all, all exposed (no "
          "layer's compute runs beside it)\n",
          thousands(comm.edge_parameters), 1e3 * comm.edge_gather_s, comm.edge_gathers_per_step,
          comm.unit_replicate_s > 0.0 ? " and the replicas' all-reduce" : "",
          1e3 * comm.edge_scatter_s, comm.edge_scatters_per_step,
          comm.edge_gathers_per_step * comm.edge_gather_s +
              comm.edge_scatters_per_step * comm.edge_scatter_s);
    }
    if (comm.unit_replicate_s > 0.0) {
      out += fmt::format(
          "      hybrid sharding (HSDP): the {} ranks above are one shard group; after each "
          "reduce-scatter the unit's {} gradient shard is all-reduced over {} replicas, {:.3f} "
          "ms x {:.0f} per step, on the same stream\n"
          "      replicas' link: {}\n",
          comm.link.ranks, bytes_text(comm.replicate_bytes_per_call), comm.replicate_link.ranks,
          1e3 * comm.unit_replicate_s, comm.unit_scatters_per_step,
          link_text(comm.replicate_link, domain));
    }
    return out +
           "      why: sharded data parallel gathers every layer's weights before it runs "
           "and reduce-scatters its gradients after, on every micro-batch the stack "
           "does; what the next unit's compute cannot cover is exposed\n";
  }
  return out + fmt::format("      why: {}\n", why);
}

/// Why PP's transfers cost what they do: overlapped (interleaved Megatron-Core), apart
/// (DeepSpeed), or batched and blocking.
std::string pp_why(const PlanResult& plan, const Stack& stack) {
  const auto& c = plan.config;
  const auto& e = plan.estimate;
  if (c.virtual_stages > 1 && e.pp.exposed_s < e.pp.total_s) {
    const double chain = interleaved_chain_transfers(c.pp, c.virtual_stages);  // pipeline.h
    const bool beyond_chain = e.pp.exposed_s > chain * e.pp.time_per_call_s;
    return fmt::format(
        "one activation per micro-batch per model-chunk boundary, overlapped with compute; "
        "micro-batch 0's trip through all {} chunks and back waits on each of its {} "
        "transfers{}",
        c.pp * c.virtual_stages, chain,
        beyond_chain ? ", and a transfer outlasts a chunk, so later ones wait too" : "");
  }
  if (stack.pp_separate_send_recv) {
    return "one activation per micro-batch per stage boundary, each send and each receive its "
           "own blocking call: four a micro-batch on a middle stage";
  }
  // Small bursts between neighbouring stages: said of the network only where PP rides it.
  return std::string("one activation per micro-batch per stage boundary: small bursts") +
         (link_name(plan.placement.pp) == "network" ? ", so it tolerates the network" : "");
}

/// Why bucketed DP costs what it does: hidden behind backward where the stack overlaps the
/// reduction, else once after the last micro-batch, all of it exposed.
std::string dp_why(const ParallelConfig& c, const Stack& stack) {
  if (c.zero == 2 && stack.reduce_every_micro_batch) {
    return std::string(
               "gradients reduce-scattered after every micro-batch's backward (the "
               "stack partitions them as backward makes them), the weights all-gathered "
               "once a step") +
           (stack.overlaps_grad_reduce(c) ? "; the reductions overlap backward as far as it hides "
                                            "them"
                                          : ": this stack overlaps neither, so all of it is "
                                            "exposed");
  }
  const std::string group =
      c.cp > 1 ? "gradients once per step over DP x CP (CP ranks hold the same weights)"
               : "gradients once per step";
  if (stack.overlaps_grad_reduce(c)) {
    return group + ", overlapped with backward; only the part backward cannot hide counts";
  }
  if (stack.dp_overlap_grad_reduce) {
    return group + ", after the last micro-batch's backward: this stack overlaps the reduction " +
           (c.pp > 1 && !stack.dp_overlap_grad_reduce_with_pp ? "only without pipelining"
                                                              : "only without sequence "
                                                                "parallelism") +
           ", so all of it is exposed";
  }
  return group +
         ", after the last micro-batch's backward: this stack does not overlap the "
         "reduction, so all of it is exposed";
}

/// Why a stack with the combined 1F1B (`ep_overlap`) leaves this plan's all-to-alls exposed:
/// the first of Megatron-Core's conditions it misses (costmodel/ep_overlap.h).
std::string combined_off_reason(const Model& model, const ParallelConfig& c) {
  switch (combined_1f1b_block(model, c)) {
    case CombinedBlock::dtype:
      return "it needs a 16-bit model";
    case CombinedBlock::pipeline:
      return "it needs interleaving (--vp) with PP";
    case CombinedBlock::full_recompute:
      return "it does not run with full recompute";
    case CombinedBlock::mtp:
      return "it runs with at most one MTP layer";
    default:
      return "it needs EP > 1";
  }
}

std::string communication(const Cluster& cluster, const Model& model, const PlanResult& plan,
                          const Stack& stack, const Calibration* calibration) {
  const char* domain = link_domain_word(cluster);
  const auto& c = plan.config;
  const auto& e = plan.estimate;
  const double step = e.time.step_s;
  std::string out =
      fmt::format("Communication per dimension (rank order {}, {})\n",
                  rank_order_text(plan.placement.order, c), "TP innermost as in Megatron-LM");
  out += dimension("TP", tp_collective_name(c), e.tp, step,
                   e.tp.link.domains > 1
                       ? fmt::format("every layer waits for it, forward and backward; this group "
                                     "is wider than the {}, so its traffic crosses the NICs",
                                     domain)
                             .c_str()
                       : "every layer waits for it, forward and backward; consecutive ranks "
                         "keep the group inside the fastest domain",
                   calibration, domain);
  out += dimension("PP", pp_collective_name(c), e.pp, step, pp_why(plan, stack).c_str(),
                   calibration, domain);
  out += dimension("DP", dp_collective_name(c, e.dp.collective), e.dp, step,
                   dp_why(c, stack).c_str(), calibration, domain);
  if (c.cp > 1) {
    out += dimension(
        "CP", cp_collective_name(plan), e.cp, step,
        e.cp_kind == CpKind::p2p
            ? "ring attention: each layer passes its K/V chunk cp-1 times forward (and K/V plus "
              "their gradients backward), each send hidden behind one step's attention; only "
              "what a step's attention cannot cover is exposed"
        : e.cp_kind == CpKind::all_gather
            ? "PyTorch context_parallel, all-gather rotater: each layer gathers every rank's K/V "
              "once forward and once backward, behind the local chunk's attention, and passes "
              "the K/V gradients round the ring cp-1 times, each behind a step's attention"
            : "Ulysses: Q, K, V and the output change from sequence- to head-sharded by "
              "all-to-all around every attention, forward and backward, not overlapped",
        calibration, domain);
  }
  if (c.ep > 1) {
    const std::string overlap = ep_overlap_name(e);
    const std::string exposed =
        overlap == "combined_1f1b"
            ? "beside another micro-batch's compute (combined 1F1B: its backward runs with "
              "this forward layer by layer; the first forwards and last backwards run alone)"
        : overlap == "shared_experts"
            ? "exposed but what the shared experts on their side stream hide"
        : stack.ep_overlap ? "exposed (the stack's combined 1F1B does not run here: " +
                                 combined_off_reason(model, c) + ")"
                           : "exposed";
    out += dimension(
        "EP", ep_collective_name(c), e.ep, step,
        ("every MoE layer dispatches its tokens to their experts and combines them "
         "back, forward and backward, " +
         exposed +
         (e.ep.link.domains > 1
              ? fmt::format("; this group is wider than the {}, so each GPU's off-{} share "
                            "crosses its NIC",
                            domain, domain)
              : fmt::format("; the group sits inside one {}", domain)))
            .c_str(),
        calibration, domain);
    if (stack.moe_dispatcher == MoeDispatcher::hybridep) {
      const HybridEpTraffic traffic = hybrid_ep_traffic(model, c, e.ep.link);
      out += fmt::format(
          "      HybridEP (the stack's dispatcher) moves {} over the network and {} over NVLink "
          "per GPU and call, not the all-to-all's bytes above: a token once to each NVLink "
          "domain, then once to each rank, that holds one of its experts\n",
          bytes_text(traffic.network_bytes), bytes_text(traffic.nvlink_bytes));
    }
  }
  if (e.edp.link.ranks > 1) {
    out += dimension("expert DP", expert_dp_collective_name(c, e.edp), e.edp, step,
                     "the experts' gradients reduce over the ranks holding the same experts "
                     "(tp x cp x dp / ep), overlapped with backward as DP's",
                     calibration, domain);
  }
  if (e.embedding_grads.calls_per_step > 0.0) {
    // Tied: the output layer is the embedding. Untied with MTP: the last stage's MTP layers
    // embed their inputs with a copy of the input embedding (Megatron-Core's shared embedding).
    const bool tied = model.tied_embeddings;
    out += dimension(tied ? "tied embedding" : "shared embedding", "all-reduce", e.embedding_grads,
                     step,
                     tied ? "the first and the last stage each hold the word embedding (input "
                            "embedding, output layer) and all-reduce its gradients once a step "
                            "after the backward, before the optimizer: exposed, counted with DP"
                          : "the first stage's input embedding and the copy the last stage's "
                            "MTP layers embed with all-reduce their gradients once a step "
                            "after the backward, before the optimizer: exposed, counted with DP",
                     calibration, domain);
  }
  if (e.amax.calls_per_step > 0.0) {
    const bool current = model.training.fp8.recipe == Fp8Recipe::current;
    out += dimension("FP8 amax", "all-reduce", e.amax, step,
                     current ? "current scaling reduces the amax of each tensor it quantizes "
                               "before an FP8 TP all-gather (QKV and FFN-up inputs forward, "
                               "projection and FFN-down output gradients backward; a MoE layer's "
                               "routed experts have no TP and reduce none) over TP, "
                               "blocking the compute stream: latency, not bandwidth"
                             : "delayed scaling reduces each model chunk's amaxes over TP x CP x "
                               "DP after its forward and after its backward, every micro-batch, "
                               "blocking the compute stream: latency, not bandwidth",
                     calibration, domain);
  }
  return out;
}

/// "  stages: 7 | 8 x14 | 7 decoder layers (first | middle | last)": how the plan splits the
/// layers (costmodel/pipeline.h stage_layers; MTP layers on the last stage).
std::string stages_text(const Model& model, const ParallelConfig& c) {
  const StageLayers split = stage_layers(model.layers, c);
  const std::string mtp = model.mtp_layers > 0
                              ? fmt::format(", and the {} MTP layer{} on the last",
                                            model.mtp_layers, model.mtp_layers > 1 ? "s" : "")
                              : std::string();
  const std::string chunks = c.virtual_stages > 1
                                 ? fmt::format(", in {} chunks a stage", c.virtual_stages)
                                 : std::string();
  if (split.even(c.pp)) {
    return fmt::format("  stages: {} decoder layers each{}{}\n", split.first, chunks, mtp);
  }
  std::string middles;
  if (c.pp > 2) {
    const MiddleStages counts = middle_stages(model.layers, c.pp, split);
    middles = fmt::format(" {} x{}", split.middle, counts.full);
    if (counts.fewer > 0) middles += fmt::format(", {} x{}", split.middle - 1, counts.fewer);
    middles += " |";
  }
  const StageLayers standard = stage_layers(model.layers, c.pp);
  const std::string lighter =
      sets_ends(model.layers, c)
          ? fmt::format(
                "; end stages set (--first-stage-layers {} --last-stage-layers {}), the "
                "default split {}",
                split.first, split.last,
                standard.even(c.pp) ? fmt::format("{} each", standard.first)
                                    : fmt::format("{} | ... | {}", standard.first, standard.last))
          : std::string();
  return fmt::format("  stages: {} |{} {} decoder layers (first |{} last){}{}{}\n", split.first,
                     middles, split.last, c.pp > 2 ? " middle |" : "", chunks, mtp, lighter);
}

std::string bubble(const Model& model, const PlanResult& plan) {
  const auto& c = plan.config;
  const auto& e = plan.estimate;
  const long long m = e.num_micro_batches;
  std::string out = "Pipeline bubble\n";
  if (c.pp < 2) return out + "  none: one pipeline stage\n";
  out += stages_text(model, c);
  const double ideal = bubble_fraction(c.pp, c.virtual_stages, m);  // costmodel/pipeline.h
  const std::string fill = bubble_fill_text(e);
  out += fmt::format(
      "  (p-1)/(v*m) = ({}-1)/({}*{}) = {:.2f}% of the ideal time{} -> {:.3f} s, "
      "{} of the step\n",
      c.pp, c.virtual_stages, m, 100.0 * ideal, fill, e.time.bubble_s,
      share(e.time.bubble_s, e.time.step_s));
  if (!fill.empty()) {
    out +=
        "  (the fill and drain cross the other stages, lighter than the slowest one, which "
        "runs its micro-batches back to back)\n";
  }
  if (c.virtual_stages > 1) {
    out += fmt::format("  interleaving cuts it {}x at {}x the point-to-point messages\n",
                       c.virtual_stages, c.virtual_stages);
  }
  const DeferredOutputWgrad& d = e.output_wgrad;
  if (d.calls > 0.0) {
    out += fmt::format(
        "  the output layer's weight gradients of {:g} calls wait for the drain (the stack's "
        "defer_output_wgrad): {:.3f} s off the last stage's micro-batches, {:.3f} s run after "
        "its last backward, {:.3f} s of them beyond the drain\n",
        d.calls, d.saved_s, d.deferred_s, d.exposed_s);
  }
  return out;
}

std::string tp_across(const Cluster& cluster, const Model& model, const PlanResult& plan,
                      const Calibration* calibration, const EstimateOptions& options) {
  const auto& c = plan.config;
  const std::string unit = domain_word(cluster);
  std::string out = "If TP crossed two " + unit + "s\n";
  if (c.tp < 2) return out + "  TP is 1: there is no TP traffic to move\n";
  if (plan.placement.tp.domains > 1) {
    return out + "  TP already spans " + unit + "s in this plan (it is wider than one)\n";
  }
  const Placement stretched = place_tp_across_domains(cluster, c, plan.placement);
  if (stretched.tp.domains < 2) return out + "  the cluster has no second " + unit + "\n";
  const Estimate other = estimate(cluster, model, c, stretched, calibration, options);
  const double step = plan.estimate.time.step_s;
  out += fmt::format("  the same split with each TP group split {}+{} over two {}s:\n",
                     stretched.tp.ranks_per_domain, c.tp - stretched.tp.ranks_per_domain, unit);
  out += fmt::format("  TP link   {}\n", link_text(stretched.tp, link_domain_word(cluster)));
  out += fmt::format("  TP comm   {:.3f} s per step exposed (now {:.3f} s)\n", other.tp.exposed_s,
                     plan.estimate.tp.exposed_s);
  // Whatever else the re-placement moves (the SM time its hidden traffic holds, the DP
  // groups it reshapes), so the step's change adds up.
  for (const StepTerm& term : kStepTerms) {
    if (term.seconds == &TimeBreakdown::tp_comm_s) continue;
    const double was = plan.estimate.time.*term.seconds;
    const double then = other.time.*term.seconds;
    if (std::abs(then - was) < 0.0005) continue;
    out += fmt::format("  also      {} {:.3f} s (now {:.3f} s)\n", term.name, then, was);
  }
  out += fmt::format("  step time {:.3f} s (now {:.3f} s): {:+.1f}%\n", other.time.step_s, step,
                     step > 0 ? 100.0 * (other.time.step_s / step - 1.0) : 0.0);
  // Within the stack's measured error the two layouts are a tie, not a verdict.
  const double error = options.stack.error_for(model);
  if (step > 0 && std::abs(other.time.step_s / step - 1.0) < error) {
    out += fmt::format(
        "  so crossing reads the same here, within the model's error (+/-{:.1f}%): the search "
        "keeps each TP group inside one {}\n",
        100.0 * error, unit);
    return out;
  }
  if (other.time.step_s < step) {
    // The search places TP innermost, inside a domain: it never ranks this layout.
    out += fmt::format(
        "  so crossing would not cost this plan: the search keeps each TP group inside one {}, "
        "and here that is not the faster layout\n",
        unit);
    return out;
  }
  out += unit == "server" ? "  so TP stays inside the box" : "  so TP stays inside its " + unit;
  out += ": its all-reduces sit on every layer's critical path\n";
  return out;
}

std::string memory(const PlanResult& plan, double reserve_gib) {
  const auto& m = plan.estimate.memory;
  std::string out = "Memory on the peak GPU (docs/cost_model.md#memory)\n";
  const auto line = [&](const char* name, double bytes, const char* note) {
    out += fmt::format("  {:<30} {:>8.2f} GiB{}\n", name, bytes / kGib, note);
  };
  line("weights", m.weights_bytes,
       plan.estimate.fp8_params_gathered_16bit
           ? "  (16-bit: the stack gathers FP8 weights only with a data-parallel shard above 1, "
             "and torchao only under tensorwise scaling)"
           : "");
  line("gradients", m.gradients_bytes, "");
  line("optimizer states", m.optimizer_bytes, "");
  if (m.weight_copies_bytes > 0.0) line("extra weight copies", m.weight_copies_bytes, "");
  line("activations kept", m.activations_bytes, "");
  if (m.pp_buffers_bytes > 0.0) {
    line("PP receive buffers", m.pp_buffers_bytes, "  (one per micro-batch, kept across steps)");
  }
  if (m.pp_outputs_bytes > 0.0) {
    line("stage outputs kept", m.pp_outputs_bytes, "  (sent on, still held: the stack's pipeline)");
  }
  if (m.deferred_wgrad_bytes > 0.0) {
    line("deferred output wgrads", m.deferred_wgrad_bytes,
         "  (each deferred call's input and logits gradient, held until the drain)");
  }
  line("cuBLAS workspace", m.workspace_bytes, "");
  // The transients of the two moments; only the larger one is at the peak.
  const double backward =
      m.recompute_working_bytes + m.scores_working_bytes + m.layer_units_bytes + m.cp_gather_bytes;
  const double loss = m.loss_bytes + m.output_unit_bytes;
  const char* backward_note = backward >= loss ? "" : "  (not at the peak: the loss is larger)";
  const char* loss_note =
      loss > backward ? "" : "  (not at the peak: a layer's backward is larger)";
  line("TP/SP gathered layer input", m.tp_gather_bytes, "");
  line("layer being recomputed", m.recompute_working_bytes, backward_note);
  if (m.scores_working_bytes > 0.0) {
    line("unfused scores at their peak", m.scores_working_bytes, backward_note);
  }
  if (m.states_churn && m.layer_units_bytes > 0.0) {
    // Everything is kept gathered: what comes and goes is the layer's 16-bit gradients.
    line("ZeRO-3 layer gradients", m.layer_units_bytes,
         *backward_note != '\0' ? backward_note
                                : "  (a layer's 16-bit gradients before the kept fp32 ones)");
  } else {
    line("ZeRO-3 gathered layers", m.layer_units_bytes, backward_note);
  }
  if (m.cp_gather_bytes > 0.0) line("CP-gathered K/V of a layer", m.cp_gather_bytes, backward_note);
  line("logits + cross-entropy", m.loss_bytes, loss_note);
  line("ZeRO-3 gathered output layer", m.output_unit_bytes, loss_note);
  if (m.reduce_scatter_kept_bytes > 0.0) {
    line("ZeRO-3 reduce-scatter input", m.reduce_scatter_kept_bytes,
         "  (the last unit's, held through the next step: the stack's pipeline)");
  }
  line("allocated (peak)", m.allocated_bytes, "");
  const std::string fragmentation = fmt::format(
      "  ({:.0f}% of the reserve of what churns: activations, transients, outputs kept{})",
      100.0 * kAllocatorFragmentation,
      m.states_churn ? ", the gathered weights and unsharded gradients" : "");
  line("allocator fragmentation", m.fragmentation_bytes, fragmentation.c_str());
  if (m.stream_pool_bytes > 0.0) {
    line("side-stream pools", m.stream_pool_bytes,
         "  (cached on ZeRO-3's all-gather and reduce-scatter streams, not reusable by compute)");
  }
  line("reserved by PyTorch", m.reserved_bytes, "");
  line("CUDA context", m.cuda_context_bytes, "");
  line("NCCL buffers", m.nccl_buffer_bytes, "");
  line("total", m.total_bytes, "");
  const std::string kept =
      reserve_gib > 0.0 ? fmt::format(", {:.0f} GiB kept free", reserve_gib) : std::string();
  out += fmt::format("  {:<30} {:>8.2f} GiB{}: {}\n", "usable", m.capacity_bytes / kGib, kept,
                     m.tight  ? "TIGHT"
                     : m.fits ? "fits"
                              : "does NOT fit");
  if (m.tight) {
    // What the room must absorb: the mean fragmentation and the side streams' cached blocks.
    const std::string priced =
        m.stream_pool_bytes > 0.0
            ? fmt::format("{:.2f} GiB priced ({:.2f} fragmentation, {:.2f} side-stream pools)",
                          (m.fragmentation_bytes + m.stream_pool_bytes) / kGib,
                          m.fragmentation_bytes / kGib, m.stream_pool_bytes / kGib)
            : fmt::format("{:.2f} GiB priced", m.fragmentation_bytes / kGib);
    out += fmt::format(
        "  tight: it fits only if the allocator fragments less than {:.2f} GiB of the {} "
        "(PyTorch's caching allocator frees its cached blocks and retries before it raises "
        "out-of-memory); ranked after the plans that fit with it\n",
        fragmentation_room_bytes(m) / kGib, priced);
  }
  return out;
}

}  // namespace

std::vector<std::pair<Collective, const GroupLink*>> collectives_run(const CommDetail& comm) {
  std::vector<std::pair<Collective, const GroupLink*>> runs{{comm.collective, &comm.link}};
  // A reduce-scatter call is a reduce-scatter and an all-gather (TP with sequence parallelism,
  // ZeRO's gradients and weights), whatever their sizes; collective_time_s prices the gathers
  // with the all-gather fit.
  const bool gathers = comm.gather_bytes_per_call > 0.0 || comm.unit_gathers_per_step > 0.0 ||
                       comm.pipe_gathers_per_step > 0.0 ||
                       comm.collective == Collective::reduce_scatter;
  if (gathers && comm.collective != Collective::all_gather) {
    runs.emplace_back(Collective::all_gather, &comm.link);
  }
  if (comm.unit_replicate_s > 0.0) runs.emplace_back(Collective::all_reduce, &comm.replicate_link);
  return runs;
}

std::size_t collective_fits_used(const Estimate& e, const Calibration& calibration) {
  std::vector<std::tuple<Collective, int, Tier>> used;
  for (const CommDetail* comm :
       {&e.tp, &e.pp, &e.dp, &e.edp, &e.cp, &e.ep, &e.amax, &e.embedding_grads}) {
    if (comm->link.ranks < 2 && comm->collective != Collective::send_recv) continue;
    if (comm->calls_per_step <= 0.0) continue;
    for (const auto& [collective, link] : collectives_run(*comm)) {
      const auto fit = calibration.collective_fit(collective, link->ranks, link->tier);
      if (!fit) continue;
      const std::tuple<Collective, int, Tier> key{fit->collective, fit->ranks, fit->tier};
      if (std::find(used.begin(), used.end(), key) == used.end()) used.push_back(key);
    }
  }
  return used.size();
}

std::string explain_plan(const Cluster& cluster, const Model& model, const PlanResult& plan,
                         std::size_t rank, const Calibration* calibration,
                         const EstimateOptions& options) {
  std::string out =
      fmt::format("Plan #{}: {}\n", rank, knobs_text(plan, plan.estimate.num_micro_batches));
  for (const std::string& part :
       {three_numbers(cluster, model, plan, calibration), step_breakdown(plan),
        communication(cluster, model, plan, options.stack, calibration), bubble(model, plan),
        tp_across(cluster, model, plan, calibration, options), memory(plan, options.reserve_gib)}) {
    out.append("\n").append(part);
  }
  return out;
}

}  // namespace trident::cli
