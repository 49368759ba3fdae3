#include "topology/cluster_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "configs/presets.h"
#include "topology/errors.h"
#include "topology/server_import.h"
#include "topology/yaml_util.h"

namespace trident {

namespace {

using yaml::MapReader;
using yaml::Range;

const std::vector<std::string> kGpuKeys = {"name",
                                           "peak_tflops",
                                           "memory_gib",
                                           "memory_gbps",
                                           "matmul_efficiency",
                                           "fp8_matmul_efficiency",
                                           "pcie_gbps",
                                           "pcie_latency_us",
                                           "nvlink_latency_us",
                                           "network_latency_us",
                                           "sm_count",
                                           "compute_capability",
                                           "sustained_clock_ratio",
                                           "ensemble_clock_ratio",
                                           "clock_spread",
                                           "attention_forward_efficiency",
                                           "attention_backward_efficiency",
                                           "flash2_forward_efficiency",
                                           "flash2_backward_efficiency",
                                           "attention_sustained_clock_ratio",
                                           "flash2_sustained_clock_ratio",
                                           "attention_causal_curve",
                                           "attention_full_curve",
                                           "flash2_causal_curve",
                                           "flash2_full_curve",
                                           "flash_triton_causal_curve",
                                           "flash_triton_full_curve"};
const std::vector<std::string> kClusterKeys = {
    "name", "stack", "gpu", "servers", "gpus_per_server", "nvlink", "network", "pcie"};
const std::vector<std::string> kNvlinkKeys = {
    "domain_gpus", "kind", "links_per_gpu", "gbps_per_link", "links", "latency_us", "job_segments"};
const std::vector<std::string> kNvlinkKinds = {"switch", "mesh", "none"};
const std::vector<std::string> kNetworkKeys = {"nics_per_server", "nic_gbits", "rail_optimized",
                                               "oversubscription", "latency_us"};
const std::vector<std::string> kPcieKeys = {"gbps", "latency_us"};
const std::vector<std::string> kMeshLinkKeys = {"a", "b", "count"};

int to_int32(const MapReader& m, std::string_view key, Range range) {
  const long long value = m.required_int(key, range);
  if (value > INT_MAX) m.fail(key, "expected at most " + std::to_string(INT_MAX));
  return static_cast<int>(value);
}

/// A fraction from 0 to 1 where 0 means `zero_means` (the documented fallback applies); `what`
/// says what the fraction is.
double fraction_or_zero(const MapReader& m, std::string_view key, std::string_view zero_means,
                        std::string_view what) {
  const double value = m.optional_double(key, 0.0, Range::non_negative);
  if (value > 1.0) {
    m.fail(key, fmt::format("expected 0 ({}) to 1, {}, got {:g}", zero_means, what, value));
  }
  return value;
}

/// A share of a peak: 0 (not published) to 1.
double share_or_zero(const MapReader& m, std::string_view key) {
  return fraction_or_zero(m, key, "not published", "a share of the peak");
}

/// A kernel's own sustained-clock ratio: 0 (not measured) to 1.
double clock_ratio_or_zero(const MapReader& m, std::string_view key) {
  return fraction_or_zero(m, key, "not measured", "a sustained over burst rate");
}

/// `key: [[seq, forward, backward], ...]`, lengths strictly increasing, shares in (0, 1];
/// absent: the empty curve.
AttentionCurve read_attention_curve(const MapReader& m, std::string_view key) {
  AttentionCurve curve;
  const YAML::Node list = m.node(key);
  if (!list.IsDefined() || list.IsNull()) return curve;
  if (!list.IsSequence() || list.size() == 0) {
    m.fail(key, "expected a list of [sequence length, forward share, backward share], got " +
                    yaml::describe_value(list));
  }
  if (list.size() > AttentionCurve::kMaxPoints) {
    m.fail(key, "expected at most " + std::to_string(AttentionCurve::kMaxPoints) + " points, got " +
                    std::to_string(list.size()));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item_path = m.path(key) + "[" + std::to_string(i) + "]";
    const std::string where =
        yaml::position(m.source(), yaml::line_of(list[i], m.line(key)), item_path);
    if (!list[i].IsSequence() || list[i].size() != 3) {
      throw InputError(where + ": expected [sequence length, forward share, backward share], got " +
                       yaml::describe_value(list[i]));
    }
    AttentionCurve::Point& point = curve.points[i];
    point.seq = yaml::to_double(list[i][0], Range::at_least_one, where + "[0]");
    point.forward = yaml::to_double(list[i][1], Range::fraction, where + "[1]");
    point.backward = yaml::to_double(list[i][2], Range::fraction, where + "[2]");
    if (point.seq > 1e9) throw InputError(where + "[0]: expected at most 1e+09 tokens");
    if (point.seq != std::floor(point.seq)) {
      throw InputError(where + "[0]: expected a whole number of tokens, got " +
                       fmt::format("{:g}", point.seq));
    }
    if (i > 0 && point.seq <= curve.points[i - 1].seq) {
      throw InputError(where + "[0]: expected a sequence length above the previous point's (" +
                       fmt::format("{:g}", curve.points[i - 1].seq) + ")");
    }
    curve.size = i + 1;
  }
  return curve;
}

Gpu read_gpu(const MapReader& m) {
  m.reject_unknown(kGpuKeys);
  Gpu gpu;
  gpu.name = m.required_string("name");
  const MapReader peak = m.required_map("peak_tflops");
  peak.reject_unknown(dtype_names());  // a peak per training dtype
  gpu.peak_tflops_bf16 = peak.required_double("bf16", Range::non_negative);
  gpu.peak_tflops_fp16 = peak.optional_double("fp16", gpu.peak_tflops_bf16, Range::non_negative);
  gpu.peak_tflops_fp8 = peak.optional_double("fp8", 0.0, Range::non_negative);
  gpu.peak_tflops_tf32 = peak.optional_double("tf32", 0.0, Range::non_negative);
  gpu.peak_tflops_fp32 = peak.optional_double("fp32", 0.0, Range::non_negative);
  gpu.memory_gib = m.required_double("memory_gib", Range::positive);
  gpu.memory_gbps = m.required_double("memory_gbps", Range::positive);
  gpu.matmul_efficiency = m.optional_double("matmul_efficiency", 0.8, Range::fraction);
  gpu.fp8_matmul_efficiency = share_or_zero(m, "fp8_matmul_efficiency");
  const long long sm_count = m.optional_int("sm_count", 0, Range::non_negative);
  if (sm_count > 100000) m.fail("sm_count", "expected at most 100000");
  gpu.sm_count = static_cast<int>(sm_count);
  gpu.compute_capability = m.optional_double("compute_capability", 0.0, Range::non_negative);
  // NVIDIA's major.minor (7.0 V100 ... 10.0 B200, 12.0 RTX Blackwell); 0 = not given.
  if (gpu.compute_capability != 0.0 &&
      (gpu.compute_capability < 1.0 || gpu.compute_capability > 20.0)) {
    m.fail("compute_capability",
           fmt::format("expected 0 (not given) or a major.minor from 1.0 to 20.0, got {:g}",
                       gpu.compute_capability));
  }
  gpu.sustained_clock_ratio = m.optional_double("sustained_clock_ratio", 1.0, Range::fraction);
  gpu.ensemble_clock_ratio = m.optional_double("ensemble_clock_ratio", 1.0, Range::fraction);
  gpu.clock_spread = m.optional_double("clock_spread", 0.0, Range::non_negative);
  if (gpu.clock_spread > kMaxClockSpread) {
    m.fail("clock_spread", fmt::format("expected a number from 0 to {:g} (a standard deviation "
                                       "over the mean), got {}",
                                       kMaxClockSpread, gpu.clock_spread));
  }
  gpu.defaulted = (m.has("matmul_efficiency") ? 0U : kMatmulEfficiencyDefault) |
                  (m.has("sustained_clock_ratio") ? 0U : kSustainedClockDefault) |
                  (m.has("ensemble_clock_ratio") ? 0U : kEnsembleClockDefault) |
                  (m.has("clock_spread") ? 0U : kClockSpreadDefault);
  gpu.attention_forward_efficiency = share_or_zero(m, "attention_forward_efficiency");
  gpu.attention_backward_efficiency = share_or_zero(m, "attention_backward_efficiency");
  gpu.flash2_forward_efficiency = share_or_zero(m, "flash2_forward_efficiency");
  gpu.flash2_backward_efficiency = share_or_zero(m, "flash2_backward_efficiency");
  gpu.attention_sustained_clock_ratio = clock_ratio_or_zero(m, "attention_sustained_clock_ratio");
  gpu.flash2_sustained_clock_ratio = clock_ratio_or_zero(m, "flash2_sustained_clock_ratio");
  gpu.attention_causal = read_attention_curve(m, "attention_causal_curve");
  gpu.attention_full = read_attention_curve(m, "attention_full_curve");
  gpu.flash2_causal = read_attention_curve(m, "flash2_causal_curve");
  gpu.flash2_full = read_attention_curve(m, "flash2_full_curve");
  gpu.flash_triton_causal = read_attention_curve(m, "flash_triton_causal_curve");
  gpu.flash_triton_full = read_attention_curve(m, "flash_triton_full_curve");
  gpu.pcie_gbps = m.optional_double("pcie_gbps", 24.0, Range::positive);
  gpu.pcie_latency_us = m.optional_double("pcie_latency_us", 5.7, Range::non_negative);
  gpu.nvlink_latency_us = m.optional_double("nvlink_latency_us", 3.4, Range::non_negative);
  gpu.network_latency_us = m.optional_double("network_latency_us", 14.0, Range::non_negative);
  return gpu;
}

Gpu cluster_gpu(const MapReader& m) {
  const YAML::Node node = m.node("gpu");
  if (node.IsMap()) return read_gpu(MapReader(node, m.source(), "gpu", m.line("gpu")));
  const std::string name = m.required_string("gpu");
  if (!preset_text(PresetKind::gpu, name)) {
    unknown_preset(PresetKind::gpu, name, yaml::position(m.source(), m.line("gpu"), "gpu") + ": ");
  }
  return gpu_preset(name);
}

std::vector<MeshLink> read_mesh_links(const MapReader& nv) {
  const YAML::Node list = nv.node("links");
  if (!list.IsDefined()) nv.fail("links", "missing required key (kind mesh lists its GPU pairs)");
  if (!list.IsSequence()) {
    nv.fail("links", "expected a list of {a, b, count}, got " + yaml::describe_value(list));
  }
  std::vector<MeshLink> links;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const MapReader item(list[i], nv.source(), nv.path("links") + "[" + std::to_string(i) + "]",
                         yaml::line_of(list[i], nv.line("links")));
    item.reject_unknown(kMeshLinkKeys);
    const int count = to_int32(item, "count", Range::positive);
    if (count > kMaxNvlinks) {
      item.fail("count", "expected at most " + std::to_string(kMaxNvlinks) +
                             " NVLinks between two GPUs, got " + std::to_string(count));
    }
    links.push_back({to_int32(item, "a", Range::non_negative),
                     to_int32(item, "b", Range::non_negative), count});
  }
  return links;
}

/// Keys that only some kinds take: name them instead of silently ignoring them.
void reject_other_kind_keys(const MapReader& nv, NvlinkKind kind) {
  const std::pair<const char*, bool> used[] = {{"links_per_gpu", kind == NvlinkKind::switch_fabric},
                                               {"gbps_per_link", kind != NvlinkKind::none},
                                               {"links", kind == NvlinkKind::mesh}};
  for (const auto& [key, allowed] : used) {
    if (!allowed && nv.has(key)) {
      nv.fail(key, std::string("not used with kind ") + to_string(kind));
    }
  }
}

NvlinkSpec read_nvlink(const MapReader& nv, const Gpu& gpu) {
  nv.reject_unknown(kNvlinkKeys);
  NvlinkSpec spec;
  spec.domain_gpus = to_int32(nv, "domain_gpus", Range::positive);
  constexpr NvlinkKind kinds[] = {NvlinkKind::switch_fabric, NvlinkKind::mesh, NvlinkKind::none};
  spec.kind = kinds[nv.required_choice("kind", kNvlinkKinds)];
  reject_other_kind_keys(nv, spec.kind);
  if (spec.kind != NvlinkKind::none) {
    spec.gbps_per_link = nv.required_double("gbps_per_link", Range::positive);
  }
  if (spec.kind == NvlinkKind::switch_fabric) {
    spec.links_per_gpu = to_int32(nv, "links_per_gpu", Range::positive);
    if (spec.links_per_gpu > kMaxNvlinks) {
      nv.fail("links_per_gpu", "expected at most " + std::to_string(kMaxNvlinks) + ", got " +
                                   std::to_string(spec.links_per_gpu));
    }
  } else if (spec.kind == NvlinkKind::mesh) {
    spec.mesh = read_mesh_links(nv);
    spec.links_per_gpu = 0;  // informational for mesh: the most links any GPU has
    // One pass over the list, not 0..domain_gpus-1 x the list: domain_gpus is checked later
    // (check_cluster) and 2147483647 spun here. 64-bit sums: counts are unchecked yet.
    std::map<int, long long> links_of;
    for (const MeshLink& link : spec.mesh) {
      links_of[link.a] += link.links;
      if (link.b != link.a) links_of[link.b] += link.links;
    }
    for (const auto& [local, links] : links_of) {
      spec.links_per_gpu = static_cast<int>(
          std::min<long long>(std::max<long long>(spec.links_per_gpu, links), 1LL << 30));
    }
  } else {
    spec.links_per_gpu = 0;
    spec.gbps_per_link = 0.0;
  }
  spec.latency_us = nv.optional_double("latency_us", gpu.nvlink_latency_us, Range::non_negative);
  spec.job_segments = nv.optional_bool("job_segments", false);
  return spec;
}

NetworkSpec read_network(const MapReader& net, const Gpu& gpu) {
  net.reject_unknown(kNetworkKeys);
  NetworkSpec spec;
  spec.nics_per_server = to_int32(net, "nics_per_server", Range::non_negative);
  // A rate where the servers have NICs (cluster.cpp refuses 0 there), anything >= 0 without.
  spec.nic_gbits = net.required_double(
      "nic_gbits", spec.nics_per_server > 0 ? Range::positive : Range::non_negative);
  spec.rail_optimized = net.optional_bool("rail_optimized", true);
  spec.oversubscription = net.optional_double("oversubscription", 1.0, Range::at_least_one);
  spec.latency_us = net.optional_double("latency_us", gpu.network_latency_us, Range::non_negative);
  return spec;
}

PcieSpec read_pcie(const std::optional<MapReader>& pcie, const Gpu& gpu) {
  PcieSpec spec{gpu.pcie_gbps, gpu.pcie_latency_us};
  if (!pcie) return spec;
  pcie->reject_unknown(kPcieKeys);
  spec.gbps = pcie->optional_double("gbps", spec.gbps, Range::positive);
  spec.latency_us = pcie->optional_double("latency_us", spec.latency_us, Range::non_negative);
  return spec;
}

MapReader document(const YAML::Node& root, const std::string& source) {
  return MapReader(root, source, "", yaml::line_of(root, 1));
}

}  // namespace

Gpu load_gpu(const std::string& text, const std::string& source) {
  const YAML::Node root = yaml::parse(text, source);
  Gpu gpu = read_gpu(document(root, source));
  if (const auto problem = find_gpu_problem(gpu)) {
    yaml::throw_problem(source, yaml::key_lines(root), problem->key, problem->message);
  }
  return gpu;
}

namespace {

/// A cluster's `stack:` names a stack preset or a stack file (names_file, read by the CLI);
/// a name that is neither is refused here, at its line.
void check_stack_name(const MapReader& m, const std::string& stack) {
  if (stack.empty() || preset_text(PresetKind::stack, stack) || names_file(stack)) return;
  const auto names = preset_names(PresetKind::stack);
  m.fail("stack", "unknown stack '" + stack + "'" + yaml::did_you_mean(stack, names) +
                      "; known: " + yaml::join(names) + ", or a FILE.yaml");
}

}  // namespace

Cluster load_cluster(const std::string& text, const std::string& source) {
  const YAML::Node root = yaml::parse(text, source);
  const MapReader m = document(root, source);
  m.reject_unknown(kClusterKeys);
  Cluster cluster;
  cluster.name = m.required_string("name");
  cluster.stack = m.optional_string("stack", "");
  check_stack_name(m, cluster.stack);
  if (m.has("stack")) {
    cluster.stack_from = yaml::position(m.source(), m.line("stack"), m.path("stack"));
  }
  cluster.gpu = cluster_gpu(m);
  cluster.servers = to_int32(m, "servers", Range::positive);
  cluster.gpus_per_server = to_int32(m, "gpus_per_server", Range::positive);
  const MapReader nvlink = m.required_map("nvlink");
  cluster.nvlink = read_nvlink(nvlink, cluster.gpu);
  const MapReader network = m.required_map("network");
  cluster.network = read_network(network, cluster.gpu);
  const std::optional<MapReader> pcie = m.optional_map("pcie");
  cluster.pcie = read_pcie(pcie, cluster.gpu);
  cluster.from_gpu = {!nvlink.has("latency_us"), !network.has("latency_us"),
                      !pcie || !pcie->has("gbps"), !pcie || !pcie->has("latency_us")};
  if (const auto problem = find_cluster_problem(cluster)) {
    yaml::throw_problem(source, yaml::key_lines(root), problem->key, problem->message);
  }
  return cluster;
}

void unknown_preset(PresetKind kind, const std::string& name, const std::string& where) {
  const auto names = preset_names(kind);
  const std::string label = kind == PresetKind::gpu ? "GPU" : to_string(kind);
  throw InputError(where + "unknown " + label + " preset '" + name + "'" +
                   yaml::did_you_mean(name, names) + "; known: " + yaml::join(names));
}

Gpu gpu_preset(const std::string& name) {
  const auto text = preset_text(PresetKind::gpu, name);
  if (!text) unknown_preset(PresetKind::gpu, name, "");
  return load_gpu(std::string(*text), preset_source(PresetKind::gpu, name));
}

Cluster cluster_preset(const std::string& name) {
  const auto text = preset_text(PresetKind::cluster, name);
  if (!text) unknown_preset(PresetKind::cluster, name, "");
  return load_cluster(std::string(*text), preset_source(PresetKind::cluster, name));
}

}  // namespace trident
