#pragma once
/// A chosen plan as a training framework's launch flags or config keys (`plan --emit FW`).
/// Names checked against the frameworks' sources (cited in docs/cli.md):
///   megatron    Megatron-LM megatron/training/arguments.py flags
///   nemo        NeMo megatron_gpt_config.yaml keys (trainer.*, model.*)
///   deepspeed   DeepSpeed JSON config (train_micro_batch_size_per_gpu, zero_optimization...)
///   torchtitan  torchtitan TOML ([parallelism], [training], [activation_checkpoint])
#include <string>
#include <vector>

#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "topology/cluster.h"

namespace trident {

enum class Framework { megatron, nemo, deepspeed, torchtitan };

/// Parses "megatron" | "nemo" | "deepspeed" | "torchtitan"; throws InputError
/// "--emit 'NAME': expected megatron|nemo|deepspeed|torchtitan" otherwise.
[[nodiscard]] Framework parse_framework(const std::string& name);
[[nodiscard]] const char* to_string(Framework framework);

struct Export {
  std::string text;                ///< flags or config, ready to paste
  std::vector<std::string> notes;  ///< what the framework cannot express exactly
};

[[nodiscard]] Export export_plan(Framework framework, const Cluster& cluster, const Model& model,
                                 const ParallelConfig& config);

}  // namespace trident
