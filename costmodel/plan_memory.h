#pragma once

// A plan's memory as estimate() prices it, apart from its time: the per-GPU dense view the
// cost model prices, what the memory model takes from the stack, the precision and the plan's
// communicators, and the memory-only check a search runs before pricing a plan's time.

#include <optional>

#include "costmodel/context_parallel.h"
#include "costmodel/estimate.h"
#include "costmodel/memory.h"

namespace trident {

/// The per-GPU dense view the cost model prices: context parallel chunks as sequences (cp
/// folded into dp), MoE layers' routed experts taken out at the pace-setting stage's share of
/// MoE layers (`moe_share`, stage_moe_fraction). Dense models without CP are their own view
/// (no copy).
struct PricedView {
  double moe_share = 0.0;
  std::optional<CpView> view;
  [[nodiscard]] const Model& model(const Model& given) const { return view ? view->model : given; }
  [[nodiscard]] const ParallelConfig& config(const ParallelConfig& given) const {
    return view ? view->config : given;
  }
};
[[nodiscard]] PricedView priced_view(const Model& model, const ParallelConfig& config);

/// NCCL channels of a group's ring: inside one NVLink domain or across the NICs; 0 for no
/// group.
[[nodiscard]] double nccl_ring_channels(const Cluster& cluster, const GroupLink& link);

/// What the memory model needs of the stack, the precision and the plan's communicators;
/// `cp_kind` is how context parallelism runs (the all-gather rotater holds the gathered K/V).
[[nodiscard]] MemoryOptions memory_options(const Cluster& cluster, const Model& model,
                                           const ParallelConfig& config, const Placement& placement,
                                           const EstimateOptions& options, CpKind cp_kind);

/// The plan's peak memory and its verdict (Estimate::memory): `view` is priced_view of
/// `model` and `config`.
[[nodiscard]] MemoryBreakdown plan_memory(const Cluster& cluster, const Model& model,
                                          const ParallelConfig& config, const PricedView& view,
                                          const Placement& placement,
                                          const EstimateOptions& options, CpKind cp_kind);

/// Whether the plan can fit, without pricing its time: false only where estimate() reports
/// `memory.fits` false for the same arguments. Its memory is estimate()'s exactly, except that
/// context parallelism is taken to hold no gathered K/V (the all-gather rotater, chosen only
/// by time, adds to the transient memory and never takes from it), so a plan this refuses
/// fits under no CP kind.
[[nodiscard]] bool may_fit(const Cluster& cluster, const Model& model, const ParallelConfig& config,
                           const Placement& placement, const EstimateOptions& options = {});

}  // namespace trident
