#pragma once
/// `--stack NAME|FILE` and a cluster file's `stack:` key: the software stack that runs the
/// split (costmodel/stack.h). The flag wins over the cluster file; neither: megatron-core.
#include <string>
#include <utility>
#include <vector>

#include "costmodel/stack.h"
#include "topology/cluster.h"

namespace trident::cli {

inline constexpr const char* kDefaultStack = "megatron-core";

/// A resolved stack and where it came from, for the assumptions line.
struct ResolvedStack {
  Stack stack;
  std::string origin;  ///< "--stack", "cluster file", or "default"
  /// The stack file it was read from, as given; empty for a preset. A file may take a preset's
  /// name, so the text and JSON name the file beside the name.
  std::string file;
  /// The files read for it beyond the --stack flag's own: each `base:` file, and a cluster
  /// file's `stack: FILE`, in the order read, as (what named it, path): inputs no output of the
  /// run may overwrite.
  std::vector<std::pair<std::string, std::string>> files;
};

/// InputError naming the flag (or the cluster's key) for an unknown preset or a bad file.
[[nodiscard]] ResolvedStack resolve_stack(const std::string& flag_value, const Cluster& cluster);

/// "stack megatron-core (default: change with --stack): attention cudnn, TP overlap backward,
/// ..." — one line for the assumptions.
[[nodiscard]] std::string describe_stack(const ResolvedStack& resolved);
/// The assumptions line saying which attention runs where Transformer Engine falls back from
/// the stack's cuDNN kernel for the model's heads on the GPU (attention_run); empty otherwise.
[[nodiscard]] std::string describe_attention_run(const Stack& stack, const Model& model,
                                                 const Gpu& gpu);

/// The one-line summary `trident presets` prints.
[[nodiscard]] std::string summarize_stack(const Stack& stack);

}  // namespace trident::cli
