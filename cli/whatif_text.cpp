// The failure what-if in words (cli/whatif_text.h).
#include "cli/whatif_text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "cli/cluster_args.h"
#include "cli/report_text.h"
#include "planner/layout.h"
#include "topology/failure.h"

namespace trident::cli {
namespace {

[[nodiscard]] std::string printf_string(const char* format, double a) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, a);
  return buffer;
}

[[nodiscard]] std::string seconds(double s) { return printf_string("%.3f s", s); }
[[nodiscard]] std::string percent(double fraction) {
  return printf_string("%+.1f%%", 100.0 * fraction);
}
[[nodiscard]] std::string gbps(double value) { return printf_string("%.0f GB/s", value); }

/// "136-139", "128..252 every 4", "8,12" for a set of GPU ids.
[[nodiscard]] std::string gpu_range(const std::vector<int>& gpus) {
  std::vector<int> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  const int n = static_cast<int>(sorted.size());
  const int step = n > 1 ? sorted[1] - sorted[0] : 0;
  bool even = n > 2;
  for (int i = 1; i < n && even; ++i) even = sorted[i] - sorted[i - 1] == step;
  if (even && step == 1)
    return std::to_string(sorted.front()) + "-" + std::to_string(sorted.back());
  if (even) {
    return std::to_string(sorted.front()) + ".." + std::to_string(sorted.back()) + " every " +
           std::to_string(step);
  }
  std::string text;
  for (const int gpu : sorted) {
    if (!text.empty()) text += ',';
    text += std::to_string(gpu);
  }
  return text;
}

/// "3 GPUs (136-139)": the dead GPUs of the degraded cluster.
[[nodiscard]] std::string dead_text(const Cluster& degraded) {
  const auto dead = dead_gpu_ids(degraded);
  return std::to_string(dead.size()) + (dead.size() == 1 ? " GPU (" : " GPUs (") + gpu_range(dead) +
         ")";
}

[[nodiscard]] std::string keep_text(const WhatIf& w) {
  std::string text = "same split on the same GPUs";
  if (w.groups_hit.empty()) {
    text += w.groups_unchanged > 0 ? "; the groups with a GPU the failures reach keep their rates"
                                   : "; no group of this split crosses the failed part";
  }
  for (std::size_t i = 0; i < w.groups_hit.size() && i < 3; ++i) {
    text += (i == 0 ? "; " : ", ") + hit_text(w.groups_hit[i], w.degraded);
  }
  if (w.groups_hit.size() > 3) text += " and " + std::to_string(w.groups_hit.size() - 3) + " more";
  return text;
}

/// "server 1 TP groups [0 2] [1 3] ..." for each regrouped server, joined by "; ".
[[nodiscard]] std::string regrouped_text(const std::vector<Regrouping>& servers, int tp) {
  std::string text;
  for (const Regrouping& r : servers) {
    if (!text.empty()) text += "; ";
    text += "server " + std::to_string(r.server) + " TP groups";
    for (std::size_t i = 0; i < r.order.size(); ++i) {
      text += (i % static_cast<std::size_t>(tp) == 0 ? " [" : " ") + std::to_string(r.order[i]);
      if ((i + 1) % static_cast<std::size_t>(tp) == 0) text += "]";
    }
  }
  return text;
}

[[nodiscard]] std::string replace_text(const WhatIfOption& o, const WhatIf& w) {
  const int tp = w.baseline.config.tp;
  const int per_server = w.degraded.gpus_per_server;
  switch (o.note) {
    case OptionNote::no_spare:
      return "the split needs " + std::to_string(w.baseline.config.gpus()) + " GPUs and " +
             std::to_string(live_gpus(w.degraded).size()) +
             " are left: no spare server to move the ranks of " + dead_text(w.degraded) +
             " to (the job uses all " + std::to_string(w.degraded.servers) + ")";
    case OptionNote::onto_spares:
      return "moves the ranks of " + dead_text(w.degraded) + " onto spare GPUs";
    case OptionNote::nic_only:
      return "a GPU carries its traffic over its server's NICs whichever rank it holds: no "
             "layout of the same split avoids a NIC";
    case OptionNote::not_one_domain:
      return "regrouping is tried only on servers of up to 8 GPUs that are one NVLink domain";
    case OptionNote::tp_whole_server:
      return "TP " + std::to_string(tp) + " takes the whole server: there is no other grouping" +
             (w.degraded.nvlink.kind == NvlinkKind::mesh
                  ? " (its ring already routes around the link)"
                  : "");
    case OptionNote::tp_no_split:
      return "TP " + std::to_string(tp) + " does not split a server into groups (TP 2-" +
             std::to_string(per_server / 2) + " do)";
    case OptionNote::switch_no_gain:
      return "on an NVSwitch a group runs at its slowest member's links and every GPU is in "
             "some TP group: no regrouping of the same split avoids the bad GPU";
    case OptionNote::no_better_grouping:
      return "no regrouping of the bad server's GPUs into TP groups of " + std::to_string(tp) +
             " beats keeping the plan";
    default:
      return "same split, GPUs regrouped: " + regrouped_text(o.regrouped, tp);
  }
}

/// "no split of 511 GPUs fits in memory": why a search on what is left found nothing.
[[nodiscard]] std::string replan_text(const ReplanOutcome& r) {
  switch (r.result) {
    case Replan::no_gpu_left:
      return "no GPU is left";
    case Replan::no_fit:
      return "no split of " + std::to_string(r.gpus) + " GPUs fits in memory";
    case Replan::no_split:
      if (r.pinned_gpus > 0) {
        // Pins past the healthy cluster are refused first (check_pinned_within_cluster).
        return "the pinned --tp, --pp and --dp take " + std::to_string(r.pinned_gpus) +
               " GPUs and " + std::to_string(r.gpus) + " are left (drop a pin to re-plan)";
      }
      return "no split of " + std::to_string(r.gpus) + " GPUs divides the model and batch" +
             (r.pinned ? " with the pins" : "");
    case Replan::runs:
    case Replan::none:
      break;
  }
  return "";
}

[[nodiscard]] std::string cordon_gpu_text(const WhatIfOption& o) {
  if (o.note == OptionNote::not_one_gpu) return "the failure is not on one GPU";
  const std::string what =
      (o.cordoned.size() == 1 ? "takes GPU " : "takes GPUs ") + gpu_range(o.cordoned) + " out";
  if (!o.available) return what + ": " + replan_text(o.replan);
  return what + ", re-plans on " + std::to_string(o.gpus) + " GPUs";
}

[[nodiscard]] std::string cordon_server_text(const WhatIfOption& o) {
  std::string list;
  for (const int s : o.cordoned) {
    if (!list.empty()) list += ',';
    list += std::to_string(s);
  }
  const std::string what =
      (o.cordoned.size() == 1 ? "takes server " : "takes servers ") + list + " out";
  if (!o.available) {
    // Pins that take more GPUs than are left fail on every count: the count is not the news.
    const bool searched = o.replan.result == Replan::no_split || o.replan.result == Replan::no_fit;
    const std::string counts =
        searched && o.replan.pinned_gpus == 0 ? " on any number of servers" : "";
    return what + ": " + replan_text(o.replan) + counts;
  }
  const std::string on = ": re-plans on " + std::to_string(o.servers) +
                         (o.servers == 1 ? " server (" : " servers (") + std::to_string(o.gpus) +
                         " GPUs)";
  const std::string idle = std::to_string(o.spare_servers) + " more idle as spares";
  const std::string none_left = o.replan.result == Replan::runs ? "" : "; " + replan_text(o.replan);
  if (o.servers < o.scan.most_servers) {
    const double band = o.plan->estimate.step_s_high / o.plan->estimate.time.step_s - 1.0;
    const std::string by =
        band > 0.0 ? "by more than the stack's measured error (+/-" + error_percent(band) + ")"
                   : "(the stack has no measured error: any gain counts)";
    return what + none_left + "; on " + std::to_string(o.scan.most_servers) +
           " servers, the most with a plan, a step takes " +
           printf_string("%.3f s", o.scan.most_servers_step_s) + ", slower than on fewer " + by +
           ", so " + idle + on;
  }
  if (o.spare_servers > 0) return what + none_left + ", so " + idle + on;
  return what + on;
}

[[nodiscard]] std::string why_clause(const WhatIfOption& best, const WhatIf& w) {
  const int before = w.baseline.config.gpus();
  switch (best.kind) {
    case WhatIfKind::keep:
      if (w.groups_hit.empty() && w.groups_unchanged > 0) {
        return "the groups of the plan with a GPU the failures reach keep their rates";
      }
      return w.groups_hit.empty() ? "no group of the plan uses the failed part"
                                  : "running at the pace of the degraded group costs less than "
                                    "giving up GPUs";
    case WhatIfKind::replace:
      return "it keeps all " + std::to_string(best.gpus) +
             " GPUs and takes the failure out of the slowest groups";
    case WhatIfKind::cordon_gpu:
    case WhatIfKind::cordon_server:
      break;
  }
  const std::string lost =
      std::to_string(before - best.gpus) + " of " + std::to_string(before) + " GPUs";
  if (best.slowdown < 0.0) {
    return "it runs faster than the healthy plan on all " + std::to_string(before) +
           " GPUs: with this global batch fewer GPUs run faster, the healthy cluster's too " +
           "(plan uses every GPU it is given; plan --gpus " + std::to_string(best.gpus) +
           " plans for that many), so the gain is the batch's, not the failure's";
  }
  const bool keep_runs = std::any_of(w.options.begin(), w.options.end(), [](const WhatIfOption& o) {
    return o.kind == WhatIfKind::keep && o.available;
  });
  if (!keep_runs) {
    return "the healthy plan cannot run without its dead GPUs and there is no spare, so it "
           "re-plans on what is left, giving up " +
           lost;
  }
  return "losing " + lost + " costs less than running every step at the pace of the degraded group";
}

}  // namespace

std::string hit_text(const GroupHit& hit, const Cluster& cluster) {
  // The dimension's name in capitals ("TP", "DP shard"): its first word only.
  std::string dim = hit.dimension;
  for (char& ch : dim) {
    if (ch == ' ' || ch == '_') break;
    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  const std::string what =
      dim + (hit.dimension == "pp" ? " pair " : " group ") + gpu_range(hit.gpus);
  if (hit.lost) return what + " lost a GPU";
  const GroupLink& a = hit.before;
  const GroupLink& b = hit.after;
  const std::string unit = domain_word(cluster);
  if (a.domains > 1 && a.inter_gbps != b.inter_gbps) {
    return what + ": across " + unit + "s " + gbps(a.inter_gbps) + " -> " + gbps(b.inter_gbps);
  }
  const std::string inside = a.domains > 1 ? "inside the " + unit + " " : "";
  return what + ": " + inside + gbps(a.intra_gbps) + " -> " + gbps(b.intra_gbps) +
         (b.tier != a.tier ? " (" + std::string(to_string(b.tier)) + ")" : "");
}

std::string option_text(const WhatIfOption& option, const WhatIf& w) {
  switch (option.kind) {
    case WhatIfKind::keep:
      if (option.note == OptionNote::ranks_on_dead) {
        return "the plan has ranks on " + dead_text(w.degraded) +
               " that are dead: it cannot run as placed";
      }
      return keep_text(w);
    case WhatIfKind::replace:
      return replace_text(option, w);
    case WhatIfKind::cordon_gpu:
      return cordon_gpu_text(option);
    case WhatIfKind::cordon_server:
      return cordon_server_text(option);
  }
  return "";
}

std::string recommendation(const WhatIf& w) {
  const WhatIfOption& best = w.options.front();
  if (!best.available) return "no option runs: " + option_text(best, w);
  std::string text = std::string(to_string(best.kind)) + ": " + seconds(best.step_time_s) +
                     "/step (" + percent(best.slowdown) + " vs the healthy " +
                     seconds(w.baseline.estimate.time.step_s) + ")";
  std::string others;
  for (std::size_t i = 1; i < w.options.size(); ++i) {
    const WhatIfOption& o = w.options[i];
    if (!o.available) continue;
    others += (others.empty() ? " against " : ", ") + std::string(to_string(o.kind)) + " " +
              seconds(o.step_time_s) + " (" + percent(o.slowdown) + ")";
  }
  return text + others + "; " + why_clause(best, w);
}

}  // namespace trident::cli
