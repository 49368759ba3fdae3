#include "cli/stack_args.h"

#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "cli/cluster_args.h"
#include "cli/input_file.h"
#include "cli/report_text.h"
#include "configs/presets.h"
#include "topology/errors.h"
#include "topology/yaml_util.h"

namespace trident::cli {

namespace {

/// `path` without its "." segments: "./a/./b.yaml" is "a/b.yaml", "/x/./y" is "/x/y".
std::string without_dot_segments(const std::string& path) {
  std::filesystem::path out;
  for (const auto& part : std::filesystem::path(path)) {
    if (part != ".") out /= part;
  }
  return out.empty() ? path : out.string();
}

/// `path` with its links and "." / ".." resolved (the file exists: it was read), for telling a
/// cycle of bases spelled two ways; `path` itself where the file system cannot say.
std::string resolved_path(const std::string& path) {
  std::error_code error;
  const auto resolved = std::filesystem::weakly_canonical(path, error);
  return error ? path : resolved.string();
}

/// A `base:` that names a file: read it relative to the file that names it (standard input's
/// bases relative to the working directory), its path added to `files`; a preset name is left
/// to the core.
std::optional<StackText> read_base_file(const std::string& name, const std::string& from,
                                        const std::string& where,
                                        std::vector<std::pair<std::string, std::string>>& files) {
  if (!names_file(name)) return std::nullopt;
  if (name == "-") throw InputError(where + ": '-': a base cannot be standard input; name a file");
  const auto slash = from.find_last_of('/');
  const bool relative = !name.starts_with('/') && slash != std::string::npos;
  // Without its "." segments ("./c.yaml" from "c.yaml" is "c.yaml"), so a file naming itself
  // is seen as the cycle it is, not as a chain of ever longer "./././c.yaml". (".." stays: past
  // a symbolic link it is not the lexical parent.)
  const std::string path = without_dot_segments(relative ? from.substr(0, slash + 1) + name : name);
  files.emplace_back(where, path);
  std::string text = read_input_file(path, where, kMaxConfigBytes);
  return StackText{std::move(text), path, resolved_path(path)};
}

/// `value` a preset or a file; the files read beyond `value` itself (its bases) go to
/// `files`, and `value` too when `record_value` (a cluster file's stack: is no flag the run
/// declared).
Stack named_stack(const std::string& value, const std::string& flag,
                  std::vector<std::pair<std::string, std::string>>& files, bool record_value) {
  if (names_file(value)) {
    if (record_value) files.emplace_back(flag, value);
    return load_stack(
        read_input_file(value, flag, kMaxConfigBytes), input_source(value),
        [&files](const std::string& name, const std::string& from, const std::string& where) {
          return read_base_file(name, from, where, files);
        },
        value == "-" ? std::string() : resolved_path(value));
  }
  if (!preset_text(PresetKind::stack, value)) {
    const auto names = preset_names(PresetKind::stack);
    throw InputError(flag + " '" + value + "': unknown stack" + yaml::did_you_mean(value, names) +
                     "; known: " + yaml::join(names) + ", or a FILE.yaml");
  }
  return stack_preset(value);
}

std::string zero_list(unsigned bits) {
  std::string out;
  for (int z = 0; z <= 3; ++z) {
    if ((bits & (1u << z)) == 0) continue;
    if (!out.empty()) out += "/";
    out += std::to_string(z);
  }
  return out;
}

/// The recompute modes the stack offers, "none/selective/full/full:N(block)" (or the ones it
/// has).
std::string recompute_list(const Stack& s) {
  std::string out;
  const auto add = [&out](const char* mode) {
    out += (out.empty() ? "" : "/") + std::string(mode);
  };
  if (s.supports(Recompute::none)) add("none");
  if (s.supports(Recompute::selective)) {
    add(s.selective == SelectiveKind::per_op        ? "selective(per-op)"
        : s.selective == SelectiveKind::mla_up_proj ? "selective(mla_up_proj)"
                                                    : "selective");
  }
  if (s.supports(Recompute::full)) add("full");
  // Partial full recompute, as the table writes it: full:N (N layers per chunk).
  if (s.supports(Recompute::full) && s.partial_recompute == PartialRecompute::block) {
    add("full:N(block)");
  }
  if (s.supports(Recompute::full) && s.partial_recompute == PartialRecompute::every_kth) {
    add("full:N(every k-th layer)");
  }
  return out;
}

}  // namespace

ResolvedStack resolve_stack(const std::string& flag_value, const Cluster& cluster) {
  ResolvedStack resolved;
  if (!flag_value.empty()) {
    resolved.stack = named_stack(flag_value, "--stack", resolved.files, false);
    resolved.origin = "--stack";
    if (names_file(flag_value)) resolved.file = flag_value;
  } else if (!cluster.stack.empty()) {
    resolved.stack = named_stack(
        cluster.stack,
        cluster.stack_from.empty() ? "cluster " + cluster.name + ": stack" : cluster.stack_from,
        resolved.files, true);
    resolved.origin = "cluster file";
    if (names_file(cluster.stack)) resolved.file = cluster.stack;
  } else {
    resolved.stack = stack_preset(kDefaultStack);
    resolved.origin = "default";
  }
  return resolved;
}

namespace {

/// The MoE all-to-alls' overlap when the stack has one (nothing otherwise).
std::string moe_overlap_text(const Stack& s) {
  if (s.ep_overlap) {
    return std::string(", EP all-to-alls beside another micro-batch (combined 1F1B") +
           (s.ep_overlap_delay_wgrad ? ", delayed weight gradients)" : ")");
  }
  return s.moe_shared_expert_overlap ? ", shared experts beside the EP all-to-alls" : "";
}

/// The bucketed DP overlap (ZeRO 0-2); ZeRO-3 gathers and reduce-scatters per unit as far as
/// the stack prefetches, whatever the keys say (Megatron-FSDP turns both overlaps on itself for
/// optim_grads_params, megatron_fsdp.py L328-333 @d98e8a64), so an "off" names its stages.
std::string dp_overlap_text(const Stack& s) {
  if (s.dp_overlap_grad_reduce) return "on";
  const bool per_unit = (s.zero_stages & (1U << 3U)) != 0 && s.prefetch_units > 0;
  return per_unit ? "off (bucketed ZeRO; ZeRO-3 overlaps per unit)" : "off";
}

}  // namespace

std::string summarize_stack(const Stack& s) {
  return fmt::format(
      "attention {}, TP overlap {}, DP overlap {}, grad reduce {}, ZeRO {} ({}), "
      "recompute {}{}{}",
      to_string(s.attention), to_string(s.tp_overlap), dp_overlap_text(s),
      s.grad_reduce_bytes < 4 ? "16-bit"
      : s.fp16_grads_in_fp16  ? "fp32 (fp16 under fp16)"
                              : "fp32",
      zero_list(s.zero_stages),
      s.pipelines() ? "with PP " + zero_list(s.zero_stages_with_pp) : std::string("no PP"),
      recompute_list(s), moe_overlap_text(s),
      s.measured_error > 0
          ? ", measured error +/-" + error_percent(s.measured_error) +
                (s.measured_error_moe > 0 ? " (MoE +/-" + error_percent(s.measured_error_moe) + ")"
                                          : "")
          : "");
}

std::string describe_stack(const ResolvedStack& r) {
  const std::string origin = r.origin == "default" ? "default; change with --stack"
                             : r.file.empty()      ? "from " + r.origin
                                                   : "from " + r.origin + ", file " + r.file;
  return fmt::format("stack {} ({}): {}", r.stack.name, origin, summarize_stack(r.stack));
}

std::string describe_attention_run(const Stack& stack, const Model& model, const Gpu& gpu) {
  const AttentionKernel run = attention_run(stack, model, gpu);
  if (run == stack.attention) return "";
  return fmt::format(
      "attention: {} for this model's {}/{} heads (Q/K, V) on {}, Transformer Engine's fallback "
      "where its cuDNN fused attention does not train them (docs/cost_model.md"
      "#attention-on-blackwell)",
      run == AttentionKernel::flash ? "FlashAttention 2" : "unfused", model.qk_head_dim(),
      model.v_head_dim(), gpu.name);
}

}  // namespace trident::cli
