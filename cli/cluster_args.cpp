#include "cli/cluster_args.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cmath>
#include <optional>
#include <utility>

#include "cli/input_file.h"
#include "configs/presets.h"
#include "costmodel/calibration_io.h"
#include "costmodel/model_loader.h"
#include "topology/cluster.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/yaml_util.h"

namespace trident::cli {

namespace {

/// The whole text as a T (long long or double), else nothing.
template <typename T>
[[nodiscard]] std::optional<T> parse_whole(const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

/// The largest integer a flag takes: every integer flag lands in an int (or wider).
constexpr long long kMaxFlagInteger = INT_MAX;

/// Decimal digits only (no sign, no point): an integer as written, whatever its size.
[[nodiscard]] bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

/// CLI11 converts integers with the base their text implies, so "010" would read as octal 8 and
/// "09" fail with its own wording: a leading zero is refused, not guessed.
[[nodiscard]] bool leading_zero(const std::string& text) {
  return text.size() > 1 && text[0] == '0' && all_digits(text);
}

[[nodiscard]] std::string leading_zero_error(const std::string& words, const std::string& text) {
  return "expected " + words + " without leading zeros, got '" + text + "'";
}

/// `most` bounds integers (a larger one is named with the bound); numbers are unbounded.
template <typename T>
[[nodiscard]] CLI::Validator number_check(bool allow_zero, const std::string& words,
                                          std::optional<T> most = std::nullopt) {
  return CLI::Validator(
      [allow_zero, words, most](const std::string& text) -> std::string {
        const auto value = parse_whole<T>(text);
        if (most && leading_zero(text)) return leading_zero_error(words, text);
        if (most && all_digits(text) && (!value || *value > *most)) {  // or past long long
          return "expected " + words + " at most " + std::to_string(*most) + ", got '" + text + "'";
        }
        if (value && std::isfinite(static_cast<double>(*value)) &&
            (*value > 0 || (allow_zero && *value == 0))) {
          return "";
        }
        return "expected " + words + ", got '" + text + "'";
      },
      "N");
}

/// An integer in [least, most], `kind` naming it ("a positive integer"); the message adds the
/// bound ("expected a positive integer at most 100000, got '0'").
[[nodiscard]] CLI::Validator bounded_integer_check(long long least, long long most,
                                                   const std::string& kind) {
  const std::string words = kind + " at most " + std::to_string(most);
  return CLI::Validator(
      [least, most, kind, words](const std::string& text) -> std::string {
        if (leading_zero(text)) return leading_zero_error(kind, text);
        const auto value = parse_whole<long long>(text);
        if (value && *value >= least && *value <= most) return "";
        return "expected " + words + ", got '" + text + "'";
      },
      "N");
}

}  // namespace

CLI::Validator positive_integer_check() {
  return number_check<long long>(false, "a positive integer", kMaxFlagInteger);
}
CLI::Validator non_negative_integer_check() {
  return number_check<long long>(true, "a non-negative integer", kMaxFlagInteger);
}
CLI::Validator positive_integer_check(long long most) {
  return bounded_integer_check(1, most, "a positive integer");
}
CLI::Validator non_negative_integer_check(long long most) {
  return bounded_integer_check(0, most, "a non-negative integer");
}
CLI::Validator choice_check(std::vector<std::string> names) {
  const std::string words = yaml::join(names, "|");
  return CLI::Validator(
      [names = std::move(names), words](const std::string& text) -> std::string {
        for (const auto& name : names) {
          if (text == name) return "";
        }
        return "expected " + words + ", got '" + text + "'";
      },
      words);
}

CLI::Validator positive_number_check() { return number_check<double>(false, "a positive number"); }

namespace {

const CLI::Validator kPositive = positive_integer_check();

}  // namespace

void add_cluster_flags(CLI::App& app, ClusterArgs& args) {
  app.add_option("--cluster", args.cluster,
                 "cluster preset NAME or YAML/JSON FILE (default dgx-h100; see trident presets)");
  // A cluster holds at most kMaxClusterGpus GPUs: each count says that bound, not an int's.
  const CLI::Validator cluster_count =
      number_check<long long>(false, "a positive integer", kMaxClusterGpus);
  app.add_option("--gpus", args.gpus, "total GPUs")->check(cluster_count);
  app.add_option("--servers", args.servers, "servers (nodes)")->check(cluster_count);
  app.add_option("--gpus-per-server", args.gpus_per_server, "GPUs per server")
      ->check(cluster_count);
  app.add_option("--gpu", args.gpu, "GPU preset NAME or FILE replacing the cluster's GPU");
}

void add_model_flags(CLI::App& app, ModelArgs& args) {
  app.add_option("--model", args.model, "model preset NAME or YAML/JSON FILE (default gpt3-175b)");
  app.add_option("--global-batch", args.global_batch, "sequences per step (at most 2^24)")
      ->check(positive_integer_check(kMaxGlobalBatch));
  app.add_option("--seq-len", args.seq_len, "sequence length")->check(kPositive);
  app.add_option("--dtype", args.dtype,
                 "training precision in place of the model's training.dtype (fp8: an FP8 "
                 "model file's training.fp8 options, else their defaults, with the stack's "
                 "recipe where it does not run delayed scaling)")
      ->check(choice_check(trident::dtype_names()));
}

bool names_file(const std::string& arg) { return trident::names_file(std::string_view(arg)); }

namespace {

[[noreturn]] void unknown(PresetKind kind, const std::string& flag, const std::string& name) {
  const auto names = preset_names(kind);
  const std::string label = kind == PresetKind::gpu ? "GPU" : to_string(kind);
  throw InputError(flag + " " + name + ": unknown " + label + " preset" +
                   yaml::did_you_mean(name, names) + "; known: " + yaml::join(names) +
                   " (or give a .yaml/.json file)");
}

Cluster base_cluster(const ClusterArgs& a) {
  if (a.cluster.empty()) return cluster_preset(kDefaultCluster);
  if (names_file(a.cluster))
    return load_cluster(read_input_file(a.cluster, "--cluster"), input_source(a.cluster));
  if (!preset_text(PresetKind::cluster, a.cluster))
    unknown(PresetKind::cluster, "--cluster", a.cluster);
  return cluster_preset(a.cluster);
}

Gpu flag_gpu(const std::string& arg) {
  if (names_file(arg)) return load_gpu(read_input_file(arg, "--gpu"), input_source(arg));
  if (!preset_text(PresetKind::gpu, arg)) unknown(PresetKind::gpu, "--gpu", arg);
  return gpu_preset(arg);
}

/// The flags that changed the shape, as the source name of a shape error.
std::string shape_flags(const ClusterArgs& a) {
  std::string flags;
  auto add = [&](const char* flag, int value) {
    if (value > 0) flags += fmt::format("{}{} {}", flags.empty() ? "" : " ", flag, value);
  };
  add("--gpus", a.gpus);
  add("--servers", a.servers);
  add("--gpus-per-server", a.gpus_per_server);
  return flags;
}

void apply_shape(Cluster& c, const ClusterArgs& a) {
  const int old_per_server = c.gpus_per_server;
  int per_server = a.gpus_per_server > 0 ? a.gpus_per_server : c.gpus_per_server;
  if (a.gpus > 0 && a.servers > 0) {
    if (a.gpus % a.servers != 0) {
      throw InputError(fmt::format("--gpus {}: not divisible into {} servers", a.gpus, a.servers));
    }
    const int derived = a.gpus / a.servers;
    if (a.gpus_per_server > 0 && a.gpus_per_server != derived) {
      throw InputError(fmt::format("--gpus-per-server {}: --gpus {} over --servers {} gives {}",
                                   a.gpus_per_server, a.gpus, a.servers, derived));
    }
    per_server = derived;
    c.servers = a.servers;
  } else if (a.gpus > 0) {
    if (a.gpus % per_server != 0) {
      throw InputError(
          fmt::format("--gpus {}: not divisible into servers of {} GPUs", a.gpus, per_server));
    }
    c.servers = a.gpus / per_server;
  } else if (a.servers > 0) {
    c.servers = a.servers;
  }
  c.gpus_per_server = per_server;
  if (c.nvlink.domain_gpus == old_per_server) c.nvlink.domain_gpus = per_server;
}

}  // namespace

Cluster resolve_cluster(const ClusterArgs& args) {
  Cluster cluster = base_cluster(args);
  if (!args.gpu.empty()) cluster = with_gpu(std::move(cluster), flag_gpu(args.gpu));
  const std::string flags = shape_flags(args);
  if (!flags.empty()) {
    apply_shape(cluster, args);
    check_cluster(cluster, flags);
  }
  return in_job_segments(std::move(cluster));
}

Model resolve_model(const ModelArgs& args, bool* fp8_by_flag) {
  Model model;
  if (args.model.empty()) {
    model = model_preset(kDefaultModel);
  } else if (names_file(args.model)) {
    model = load_model(read_input_file(args.model, "--model", kMaxConfigBytes),
                       input_source(args.model));
  } else {
    if (!preset_text(PresetKind::model, args.model))
      unknown(PresetKind::model, "--model", args.model);
    model = model_preset(args.model);
  }
  if (args.global_batch > 0) model.training.global_batch = args.global_batch;
  if (args.seq_len > 0) model.seq_len = args.seq_len;
  if (!args.dtype.empty()) {
    const Dtype given = parse_dtype(args.dtype, "--dtype");
    if (fp8_by_flag != nullptr) {
      *fp8_by_flag = given == Dtype::fp8 && model.training.dtype != Dtype::fp8;
    }
    model.training.dtype = given;
  }
  if (model.training.global_batch <= 0) {
    throw InputError("--global-batch: model '" + model.name +
                     "' has no training.global_batch; give --global-batch N");
  }
  return model;
}

std::string format_count(double count) {
  if (count >= 1e12) return fmt::format("{:.3g}T", count / 1e12);
  if (count >= 1e9) return fmt::format("{:.4g}B", count / 1e9);
  if (count >= 1e6) return fmt::format("{:.4g}M", count / 1e6);
  return fmt::format("{}", count);
}

namespace {
/// A domain that is not a server: NVLink's, or where there is none, the PCIe group's.
const char* non_server_domain(const Cluster& cluster) {
  return cluster.nvlink.kind == NvlinkKind::none ? "PCIe domain" : "NVLink domain";
}
bool domain_is_server(const Cluster& cluster) {
  return cluster.nvlink.domain_gpus == cluster.gpus_per_server;
}
}  // namespace

const char* domain_word(const Cluster& cluster) {
  return domain_is_server(cluster) ? "server" : non_server_domain(cluster);
}

const char* link_domain_word(const Cluster& cluster) {
  return cluster.nvlink.kind == NvlinkKind::none && domain_is_server(cluster)
             ? "server"
             : non_server_domain(cluster);
}

std::string segments_text(const Cluster& c) {
  if (c.nvlink.rack_domain_gpus == 0) return "";
  const int segment = c.nvlink.domain_gpus / c.gpus_per_server;
  return fmt::format("the job's segments of {} server{} in {}-GPU racks", segment,
                     segment == 1 ? "" : "s", c.nvlink.rack_domain_gpus);
}

std::string summarize_server(const Cluster& c) {
  std::string links;
  switch (c.nvlink.kind) {
    case NvlinkKind::switch_fabric:
      links = fmt::format("NVSwitch {}x{} GB/s", c.nvlink.links_per_gpu, c.nvlink.gbps_per_link);
      break;
    case NvlinkKind::mesh:
      links = fmt::format("NVLink mesh of {} pairs, up to {}x{} GB/s per GPU", c.nvlink.mesh.size(),
                          c.nvlink.links_per_gpu, c.nvlink.gbps_per_link);
      break;
    case NvlinkKind::none:
      links = fmt::format("PCIe only ({} GB/s)", c.pcie.gbps);
      break;
  }
  // A job's segments of one server keep NVLink inside the server: said as such.
  if (c.nvlink.domain_gpus != c.gpus_per_server || c.nvlink.rack_domain_gpus > 0) {
    links += fmt::format(" in {}-GPU domains", c.nvlink.domain_gpus);
  }
  if (const std::string segments = segments_text(c); !segments.empty()) {
    links += " (" + segments + ")";
  }
  return fmt::format("{}x {} per server, {}, {}x{} Gb/s NICs", c.gpus_per_server, c.gpu.name, links,
                     c.network.nics_per_server, c.network.nic_gbits);
}

std::string summarize_gpu(const Gpu& g) {
  const bool bf16 = g.peak_tflops_bf16 > 0.0;
  const std::string fp8 =
      g.fp8_matmul_efficiency > 0.0
          ? fmt::format(" (fp8 {:.0f}% of {})", g.fp8_matmul_efficiency * 100.0, g.peak_tflops_fp8)
          : "";
  return fmt::format("{} {} TFLOP/s, {} GiB at {} GB/s, GEMM ceiling {:.0f}%{}, PCIe {} GB/s",
                     bf16 ? "bf16" : "fp16", bf16 ? g.peak_tflops_bf16 : g.peak_tflops_fp16,
                     g.memory_gib, g.memory_gbps, g.matmul_efficiency * 100.0, fp8, g.pcie_gbps);
}

std::string summarize_precision(const Training& t, const Stack* stack) {
  if (t.dtype != Dtype::fp8) return to_string(t.dtype);
  std::string eight = "linear GEMMs";
  std::string sixteen = "output layer, activations";
  (t.fp8.attention ? eight : sixteen) += ", attention";
  if (t.fp8.communication) eight += ", TP all-gathers";
  // A shard of 2: the recipe's own answer, apart from a plan's shard (--explain says that).
  const bool kept_16 = stack != nullptr && stack->gathers_fp8_params_in_16_bits(t, 2);
  if (t.fp8.params && kept_16) {
    sixteen += fmt::format(", weights (stack {} gathers FP8 weights under tensorwise scaling only)",
                           stack->name);
  } else if (t.fp8.params) {
    eight += ", weights";
  }
  return fmt::format("fp8 {} scaling ({} in FP8; {} in bf16)", to_string(t.fp8.recipe), eight,
                     sixteen);
}

std::string summarize_model(const Model& m, const Stack* stack) {
  const ParameterCount count = count_parameters(m);
  const std::string heads_of =
      m.explicit_head_dim > 0 ? fmt::format(" of {}", m.explicit_head_dim) : std::string();
  // Every layer MoE: no dense FFN runs, so its width (ffn_hidden) is not shown as if it did.
  const bool dense_ffns = !m.is_moe() || m.moe_layers() < m.layers;
  std::string text = fmt::format(
      "{} parameters: {} layers, hidden {}, {}/{} heads{}, {} {}, seq {}, batch {}, {}",
      format_count(count.total), m.layers, m.hidden, m.heads, m.kv_heads, heads_of,
      to_string(m.ffn), dense_ffns ? std::to_string(m.ffn_hidden) : "(no dense FFN layer)",
      m.seq_len, m.training.global_batch, summarize_precision(m.training, stack));
  if (m.attention == AttentionKind::mla) {
    // mla.q_lora_rank 0 or absent: the queries are projected directly (DeepSeek-V2-Lite).
    text += m.mla.q_lora_rank > 0 ? ", multi-head latent attention"
                                  : ", multi-head latent attention (queries not compressed)";
  }
  if (m.mtp_layers > 0) {
    text += fmt::format(", multi-token prediction depth {} (on the last stage)", m.mtp_layers);
  }
  if (m.is_moe()) {
    text += fmt::format(
        "; MoE: {} of {} layers, {} experts of ffn {} (top-{}{}), {} active parameters; FLOPs "
        "and MFU count active parameters",
        m.moe_layers(), m.layers, m.moe.experts, m.moe.expert_ffn_hidden, m.moe.top_k,
        m.moe.shared_experts > 0 ? fmt::format(" + {} shared", m.moe.shared_experts) : "",
        format_count(count.active));
  }
  return text;
}

std::string describe_gpu_defaults(const Gpu& gpu) {
  std::string keys;
  const auto add = [&](unsigned bit, const char* key) {
    if ((gpu.defaulted & bit) == 0) return;
    keys += std::string(keys.empty() ? "" : ", ") + key;
  };
  add(kMatmulEfficiencyDefault, "matmul_efficiency 0.8");
  add(kSustainedClockDefault, "sustained_clock_ratio 1");
  add(kEnsembleClockDefault, "ensemble_clock_ratio 1");
  add(kClockSpreadDefault, "clock_spread 0 (a job of any size at the ratio of 8 GPUs)");
  if (keys.empty()) return "";
  return fmt::format(
      "gpu {}: its file leaves out {}: priced at these defaults, not measurements (the presets "
      "measure them, docs/cost_model.md#kernels), so the step can read faster than the GPU runs "
      "and the band does not cover it",
      gpu.name, keys);
}

std::string describe_assumptions(const ClusterArgs& cluster_args, const ModelArgs& model_args,
                                 const Cluster& cluster, const Model& model) {
  std::string parts;
  if (cluster_args.cluster.empty()) {
    parts += fmt::format("cluster {} ({})", cluster.name, summarize_server(cluster));
  }
  if (model_args.model.empty()) {
    if (!parts.empty()) parts += "; ";
    parts += fmt::format("model {}, global batch {}", model.name, model.training.global_batch);
  }
  if (parts.empty()) return "";
  return "assumed: " + parts + "; change with --cluster/--gpu/--model/--global-batch";
}

}  // namespace trident::cli
