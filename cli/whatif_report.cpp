// `plan --fail-link` reports (cli/whatif_report.h).
#include "cli/whatif_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/failure_text.h"
#include "cli/option_text.h"
#include "cli/plan_checks.h"
#include "cli/report_text.h"
#include "cli/whatif_text.h"
#include "costmodel/collective.h"
#include "planner/layout.h"
#include "topology/errors.h"
#include "topology/failure.h"

namespace trident::cli {
namespace {

using Json = nlohmann::ordered_json;

/// `calibrated`: a calibration prices the groups (its fits scale by the bottleneck rate, not by
/// the ring's cut), so the cut's rate is not said to stand for the group's.
[[nodiscard]] std::string hit_line(const GroupHit& hit, bool calibrated) {
  std::string gpus;
  for (std::size_t i = 0; i < hit.gpus.size() && i < 8; ++i) {
    if (i > 0) gpus += ',';
    gpus += std::to_string(hit.gpus[i]);
  }
  if (hit.gpus.size() > 8) gpus += fmt::format(",... ({} GPUs)", hit.gpus.size());
  if (hit.lost) return fmt::format("{} [{}]: a member GPU is dead", hit.dimension, gpus);
  const GroupLink& a = hit.before;
  const GroupLink& b = hit.after;
  if (a.domains == 1) {
    return fmt::format("{} [{}]: {} {:.2f} GB/s -> {} {:.2f} GB/s", hit.dimension, gpus,
                       to_string(a.tier), a.intra_gbps, to_string(b.tier), b.intra_gbps);
  }
  // The ring's narrowest cut may not move: the crossing spread over a server's members' NICs
  // can still outrun the in-server path (a PCIe server that lost NICs).
  const double ring_before = cross_domain_ring_busbw_gbps(a);
  const double ring_after = cross_domain_ring_busbw_gbps(b);
  return fmt::format(
      "{} [{}]: in-server {:.2f} -> {:.2f} GB/s, across servers {:.2f} -> {:.2f} GB/s{}",
      hit.dimension, gpus, a.intra_gbps, b.intra_gbps, a.inter_gbps, b.inter_gbps,
      !calibrated && b.domains > 1 && ring_after >= ring_before
          ? fmt::format(" (its ring's narrowest cut stays {:.2f} GB/s: {} members a server share "
                        "the crossing)",
                        ring_after, b.min_ranks_per_domain)
          : "");
}

/// What follows the count of groups whose links changed: the groups reached at the same rates.
[[nodiscard]] std::string unchanged_groups_text(const WhatIf& w) {
  if (w.groups_unchanged <= 0) return "";
  // Groups holding a GPU the failures reach whose links do not change: a NIC lost where the
  // others still feed every PCIe link, or groups that do not ride the failed part at all (a
  // TP group inside a server that lost a NIC).
  const char* keeps = w.groups_unchanged == 1 ? "keeps its rates" : "keep their rates";
  if (w.groups_hit.empty()) {
    return fmt::format(" slowed ({} with a GPU they reach {})", w.groups_unchanged, keeps);
  }
  return fmt::format(" (and {} more with a GPU they reach {})", w.groups_unchanged, keeps);
}

/// `split` is as wide as the widest split shown (34 at least: "selective", HSDP, CP and EP
/// widen it), so the columns after it line up.
[[nodiscard]] std::string option_row(std::size_t rank, const WhatIfOption& o, const WhatIf& w,
                                     std::size_t split) {
  if (!o.available) {
    return fmt::format("   - {:<13} {:>5} {:<{}} {:>9} {:>10}  {}\n", to_string(o.kind), "-", "-",
                       split, "-", "-", option_text(o, w));
  }
  return fmt::format("{:>4} {:<13} {:>5} {:<{}} {:>9.3f} {:>+9.1f}%  {}\n", rank, to_string(o.kind),
                     o.gpus, split_summary(o.plan->config, "ZeRO"), split, o.step_time_s,
                     100.0 * o.slowdown, option_text(o, w));
}

[[nodiscard]] std::size_t split_width(const WhatIf& w) {
  std::size_t width = 34;
  for (const WhatIfOption& o : w.options) {
    if (o.available) width = std::max(width, split_summary(o.plan->config, "ZeRO").size());
  }
  return width;
}

}  // namespace

std::string format_what_if_table(const WhatIf& w, const ReportContext& context) {
  std::string out;
  for (const auto& line : context.assumptions) out += "# " + line + "\n";
  for (std::size_t i = 0; i < w.failures.size(); ++i) {
    out += "# failure " + w.failures[i].spec + ": " + describe(w.failures[i], w.degraded) + "\n";
  }
  out += "# " + search_summary(w.searched, context) +
         " (every search the comparison ran: the healthy cluster, each option, each server count "
         "tried)\n";
  const Estimate& base = w.baseline.estimate;
  out +=
      fmt::format("baseline (healthy, {} GPUs): {}: {:.3f} s/step, {:.0f} tokens/s, MFU {:.1f}%\n",
                  w.baseline.config.gpus(), split_summary(w.baseline.config, "ZeRO"),
                  base.time.step_s, base.tokens_per_s, 100.0 * base.mfu);
  out += fmt::format("groups of the baseline the failures reach: {}{}\n",
                     w.groups_hit.empty() ? "none" : std::to_string(w.groups_hit.size()),
                     unchanged_groups_text(w));
  for (std::size_t i = 0; i < w.groups_hit.size() && i < 6; ++i) {
    out += "  " +
           hit_line(w.groups_hit[i],
                    context.calibration != nullptr && !context.calibration->fits.empty()) +
           "\n";
  }
  if (w.groups_hit.size() > 6) out += fmt::format("  ... and {} more\n", w.groups_hit.size() - 6);
  const std::size_t split = split_width(w);
  out += fmt::format("rank {:<13} {:>5} {:<{}} {:>9} {:>10}  {}\n", "option", "GPUs", "split",
                     split, "step (s)", "vs healthy", "what it does");
  std::size_t rank = 0;
  for (const WhatIfOption& o : w.options) {
    out += option_row(o.available ? ++rank : 0, o, w, split);
  }
  out += "recommended: " + recommendation(w) + "\n";
  return out;
}

namespace {

[[nodiscard]] Json plans_of(const SearchResult& result, const ReportContext& context) {
  return Json::parse(format_json(result, context))["plans"];
}

[[nodiscard]] Json link_json(const GroupLink& link) {
  return Json{{"tier", to_string(link.tier)},
              {"domains", link.domains},
              {"intra_gbps", link.intra_gbps},
              {"inter_gbps", link.inter_gbps},
              {"bottleneck_gbps", link.bottleneck_gbps()}};
}

[[nodiscard]] Json hit_json(const GroupHit& hit) {
  Json out{{"dimension", hit.dimension},
           {"gpus", hit.gpus},
           {"lost", hit.lost},
           {"before", link_json(hit.before)}};
  out["after"] = hit.lost ? Json(nullptr) : link_json(hit.after);
  return out;
}

[[nodiscard]] Json option_json(const WhatIfOption& o, const WhatIf& w) {
  Json out{
      {"option", to_string(o.kind)}, {"available", o.available}, {"detail", option_text(o, w)}};
  if (!o.available) return out;
  const ParallelConfig& c = o.plan->config;
  out["gpus"] = o.gpus;
  out["spare_servers"] = o.spare_servers;
  if (o.kind == WhatIfKind::cordon_server) {
    out["servers"] = o.servers;
    out["most_servers"] = o.scan.most_servers;
    out["most_servers_step_time_s"] = o.scan.most_servers_step_s;
    out["server_counts_searched"] = o.scan.counts_searched;
  }
  out["tp"] = c.tp;
  out["pp"] = c.pp;
  out["dp"] = c.dp;
  out["cp"] = c.cp;
  out["ep"] = c.ep;
  out["dp_shard"] = c.zero_shard_ranks();
  out["step_time_s"] = o.step_time_s;
  out["slowdown"] = o.slowdown;
  return out;
}

}  // namespace

std::string format_what_if_json(const WhatIf& w, const ReportContext& context) {
  SearchResult under = w.searched;  // the counters of every search it ran
  for (const WhatIfOption& o : w.options) {
    if (o.available) under.plans.push_back(*o.plan);
  }
  // The live GPUs of the degraded cluster (each option's own count is in impact.options).
  under.gpus = static_cast<int>(live_gpus(w.degraded).size());
  Json doc = Json::parse(format_json(under, context));
  std::vector<std::string> specs;
  for (const Failure& f : w.failures) specs.push_back(f.spec);
  doc["failures"] = specs;
  std::size_t i = 0;
  for (const WhatIfOption& o : w.options) {
    if (o.available) doc["plans"][i++]["option"] = to_string(o.kind);
  }
  SearchResult healthy;
  healthy.plans.push_back(w.baseline);
  doc["baseline"] = plans_of(healthy, context)[0];
  const WhatIfOption& best = w.options.front();
  Json impact;
  impact["slowdown"] = best.available ? Json(best.slowdown) : Json(nullptr);
  impact["step_time_s_before"] = w.baseline.estimate.time.step_s;
  impact["step_time_s_after"] = best.available ? Json(best.step_time_s) : Json(nullptr);
  std::vector<std::string> described;
  for (const Failure& f : w.failures) described.push_back(describe(f, w.degraded));
  impact["failures_described"] = described;
  Json hits = Json::array();
  for (const GroupHit& hit : w.groups_hit) hits.push_back(hit_json(hit));
  impact["groups_hit"] = hits;
  impact["groups_unchanged"] = w.groups_unchanged;
  Json options = Json::array();
  for (const WhatIfOption& o : w.options) options.push_back(option_json(o, w));
  impact["options"] = options;
  impact["recommended"] = best.available ? Json(to_string(best.kind)) : Json(nullptr);
  impact["reason"] = recommendation(w);
  doc["impact"] = impact;
  return doc.dump(2) + "\n";
}

WhatIf run_what_if(const std::vector<std::string>& specs, const Cluster& healthy,
                   const Model& model, const SearchOptions& options,
                   const Calibration* calibration) {
  std::vector<Failure> failures;
  failures.reserve(specs.size());
  for (const std::string& spec : specs) failures.push_back(parse_failure(spec));
  WhatIf w;
  try {
    w = what_if(healthy, model, failures, options, calibration);
  } catch (const NoHealthyPlanError&) {
    throw PlanError("no plan fits the healthy cluster: nothing to compare the failures with");
  }
  check_finite(w);
  check_something_runs(w);
  return w;
}

std::string what_if_report(const WhatIf& w, const Model& model, ReportContext context,
                           const std::string& format) {
  context.cluster = &w.degraded;
  context.model = &model;
  if (format == "json") return format_what_if_json(w, context);
  if (format == "csv") {
    // Row 0 the healthy baseline, then the options that can run, ranked as in the table.
    SearchResult under;
    CsvTail tail{.header = ",option,gpus,slowdown", .cells = {}, .first_rank = 0};
    under.plans.push_back(w.baseline);
    tail.cells.push_back(fmt::format(",healthy,{},0", w.baseline.config.gpus()));
    for (const WhatIfOption& o : w.options) {
      if (!o.available) continue;
      under.plans.push_back(*o.plan);
      tail.cells.push_back(fmt::format(",{},{},{}", to_string(o.kind), o.gpus, o.slowdown));
    }
    return format_csv(under, context, tail);
  }
  return format_what_if_table(w, context);
}

}  // namespace trident::cli
