// trident topo show: the cluster as trident understood it: servers, NVLink domains, the tiers
// with their per-GPU bandwidth and latency, the NIC share per GPU, mesh pairs.
// `trident topo import` is added by cmd_topo_import.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "cli/cluster_args.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "topology/link_tier.h"

namespace trident::cli {

namespace {

/// Seconds as microseconds to the picosecond: the cost model's seconds read back as the
/// cluster file's microseconds (3.4, not 3.3999999999999995).
double microseconds(double seconds) { return std::round(seconds * 1e12) / 1e6; }

/// A rate or ratio as people read it: whole numbers whole, others to 4 figures, never in
/// exponent form (a 154,300 GB/s tier printed 1.543e+05).
std::string readable(double value) {
  if (value == std::round(value) || std::abs(value) >= 1000.0) return fmt::format("{:.0f}", value);
  if (std::abs(value) >= 0.001) return fmt::format("{:.4g}", value);
  std::string text = fmt::format("{:.12f}", value);  // tiny: fixed point, trailing zeros cut
  text.erase(text.find_last_not_of('0') + 1);
  return text;
}

struct TopoOptions {
  ClusterArgs cluster;
  std::string format = "table";
};

struct TierRow {
  Tier tier;
  double gbps;
  double latency_us;
  std::string use;
};

std::vector<int> domain_ids(const Cluster& c, int domain) {
  std::vector<int> ids(static_cast<std::size_t>(c.domain_size(domain)));
  std::iota(ids.begin(), ids.end(), domain * c.nvlink.domain_gpus);
  return ids;
}

/// " = 25, capped at PCIe 24" when a GPU's PCIe link is below its NIC share.
std::string pcie_cap_text(const Cluster& c) {
  const double nics = c.nic_share_gbps(0);
  return nics > c.pcie.gbps
             ? fmt::format(" = {}, capped at PCIe {}", readable(nics), readable(c.pcie.gbps))
             : "";
}

std::vector<TierRow> tier_rows(const Cluster& c) {
  std::vector<TierRow> rows;
  const GroupLink domain = query_group(c, domain_ids(c, 0));
  rows.push_back({domain.intra_tier, domain.intra_gbps, microseconds(domain.intra_latency_s),
                  fmt::format("inside one domain ({} GPUs{})", c.nvlink.domain_gpus,
                              c.nvlink.kind == NvlinkKind::mesh ? ", rings over the mesh" : "")});
  if (c.network.nics_per_server > 0) {
    const double share = c.nic_gbps_per_gpu(0) / c.network.oversubscription;
    // A pair in two domains on two servers: the first GPU of the next server, or of the next
    // domain where a domain spans servers (domains inside one server talk over PCIe, which is
    // not this row).
    const int other = std::max(c.nvlink.domain_gpus, c.gpus_per_server);
    const double latency = c.domains() > 1 && other < c.gpus()
                               ? query_group(c, {{0, other}}).inter_latency_s
                               : c.network.latency_us * 1e-6;
    rows.push_back(
        {Tier::network, share, microseconds(latency),
         fmt::format("across domains: {} NICs x {} Gb/s / 8 / {} GPUs{} / "
                     "oversubscription {}",
                     c.network.nics_per_server, readable(c.network.nic_gbits), c.gpus_per_server,
                     pcie_cap_text(c), readable(c.network.oversubscription))});
  }
  if (c.nvlink.kind != NvlinkKind::none) {
    rows.push_back({Tier::pcie, c.pcie.gbps, c.pcie.latency_us,
                    "fallback for a GPU that has lost its NVLinks"});
  }
  return rows;
}

std::string domain_line(const Cluster& c) {
  const int per = c.nvlink.domain_gpus;
  std::string where =
      per > c.gpus_per_server   ? fmt::format("each spans {} servers", per / c.gpus_per_server)
      : per < c.gpus_per_server ? fmt::format("{} per server", c.gpus_per_server / per)
                                : "one per server";
  std::string links;
  if (c.nvlink.kind == NvlinkKind::switch_fabric) {
    links = fmt::format("switch, {} links x {} GB/s per GPU", c.nvlink.links_per_gpu,
                        readable(c.nvlink.gbps_per_link));
  } else if (c.nvlink.kind == NvlinkKind::mesh) {
    links = fmt::format("mesh, {} GPU pairs, {} GB/s per link", c.nvlink.mesh.size(),
                        readable(c.nvlink.gbps_per_link));
  } else {
    links = "none (PCIe only)";
  }
  if (c.partial_domain() && c.domains() == 1) {
    return fmt::format("nvlink: {}; 1 domain: {} GPUs of a {}-GPU domain ({})", links, c.gpus(),
                       per, where);
  }
  if (c.partial_domain()) {
    where += fmt::format("; the last holds {}", c.domain_size(c.domains() - 1));
  }
  if (const std::string segments = segments_text(c); !segments.empty()) {
    where += "; " + segments + ", nvlink.job_segments";
  }
  return fmt::format("nvlink: {}; {} domain{} of {} GPUs ({})", links, c.domains(),
                     c.domains() == 1 ? "" : "s", per, where);
}

void print_table(const Cluster& c) {
  fmt::print("cluster {}: {} GPUs = {} server{} x {} {}\n", c.name, c.gpus(), c.servers,
             c.servers == 1 ? "" : "s", c.gpus_per_server, c.gpu.name);
  fmt::print("gpu {}: {}\n", c.gpu.name, summarize_gpu(c.gpu));
  fmt::print("{}\n", domain_line(c));
  fmt::print("network: {} NICs x {} Gb/s per server = {} GB/s per GPU{}, {}, oversubscription {}\n",
             c.network.nics_per_server, readable(c.network.nic_gbits),
             readable(c.nic_gbps_per_gpu(0)),
             c.nic_share_gbps(0) > c.pcie.gbps ? " (its PCIe link)" : "",
             c.network.rail_optimized ? "rail-optimised" : "not rail-optimised",
             readable(c.network.oversubscription));
  fmt::print("tiers (per GPU, one direction):\n");
  for (const auto& row : tier_rows(c)) {
    fmt::print("  {:<8} {:>7} GB/s {:>5.3g} us  {}\n", to_string(row.tier), readable(row.gbps),
               row.latency_us, row.use);
  }
  if (c.nvlink.kind == NvlinkKind::mesh) {
    fmt::print("mesh pairs (local GPU indexes, NVLinks):");
    for (const auto& link : c.nvlink.mesh) fmt::print(" {}-{}x{}", link.a, link.b, link.links);
    fmt::print("\n");
  }
}

nlohmann::json to_json(const Cluster& c) {
  nlohmann::json mesh = nlohmann::json::array();
  for (const auto& l : c.nvlink.mesh) mesh.push_back({{"a", l.a}, {"b", l.b}, {"count", l.links}});
  nlohmann::json tiers = nlohmann::json::array();
  for (const auto& row : tier_rows(c)) {
    tiers.push_back({{"tier", to_string(row.tier)},
                     {"gbps", row.gbps},
                     {"latency_us", row.latency_us},
                     {"use", row.use}});
  }
  const Gpu& g = c.gpu;
  return {{"name", c.name},
          {"gpus", c.gpus()},
          {"servers", c.servers},
          {"gpus_per_server", c.gpus_per_server},
          {"domains", c.domains()},
          {"domain_gpus", c.nvlink.domain_gpus},
          {"rack_domain_gpus", c.nvlink.rack_gpus()},
          {"gpu",
           {{"name", g.name},
            {"peak_tflops",
             {{"bf16", g.peak_tflops_bf16},
              {"fp16", g.peak_tflops_fp16},
              {"fp8", g.peak_tflops_fp8},
              {"tf32", g.peak_tflops_tf32},
              {"fp32", g.peak_tflops_fp32}}},
            {"memory_gib", g.memory_gib},
            {"memory_gbps", g.memory_gbps},
            {"matmul_efficiency", g.matmul_efficiency}}},
          {"nvlink",
           {{"kind", to_string(c.nvlink.kind)},
            {"links_per_gpu", c.nvlink.links_per_gpu},
            {"gbps_per_link", c.nvlink.gbps_per_link},
            {"latency_us", c.nvlink.latency_us},
            {"links", mesh}}},
          {"network",
           {{"nics_per_server", c.network.nics_per_server},
            {"nic_gbits", c.network.nic_gbits},
            {"rail_optimized", c.network.rail_optimized},
            {"oversubscription", c.network.oversubscription},
            {"latency_us", c.network.latency_us},
            {"gbps_per_gpu", c.nic_gbps_per_gpu(0)}}},
          {"pcie", {{"gbps", c.pcie.gbps}, {"latency_us", c.pcie.latency_us}}},
          {"tiers", tiers}};
}

void show(const TopoOptions& options) {
  // What it prints goes to standard output, which may not be redirected onto its inputs.
  RunOutputs files;
  for (const auto& [flag, arg] :
       {std::pair<const char*, std::string>{"--cluster", options.cluster.cluster},
        {"--gpu", options.cluster.gpu}}) {
    if (arg == "-" || names_file(arg)) files.add_input(flag, arg);
  }
  files.check();
  const Cluster cluster = resolve_cluster(options.cluster);
  if (options.format == "json") {
    fmt::print("{}\n", to_json(cluster).dump(2));
  } else {
    print_table(cluster);
  }
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto* topo = app.add_subcommand("topo",
                                  "show a cluster as parsed; import one from "
                                  "`nvidia-smi topo -m` or NCCL topology XML");
  topo->require_subcommand(1);
  auto options = std::make_shared<TopoOptions>();
  auto* show_cmd = topo->add_subcommand(
      "show", "print servers, NVLink domains, tiers with per-GPU bandwidth and latency");
  add_cluster_flags(*show_cmd, options->cluster);
  show_cmd->add_option("--format", options->format, "table or json")
      ->check(choice_check({"table", "json"}));
  show_cmd->callback([options] { show(*options); });
  add_topo_import_subcommand(*topo);
}

}  // namespace trident::cli
