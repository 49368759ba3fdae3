#pragma once
/// The built-in presets (configs/gpus, configs/clusters, configs/models), embedded into the
/// binary at build time so trident never reads configs/ at run time. Loading them into values
/// is the loaders' job: gpu_preset / cluster_preset (topology/cluster_loader.h) and
/// model_preset (costmodel/model_loader.h).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trident {

enum class PresetKind { gpu, cluster, model, stack };

[[nodiscard]] const char* to_string(PresetKind kind);  ///< "gpu", "cluster", "model"

/// The YAML text of preset `name`, or nullopt when there is none of that kind.
[[nodiscard]] std::optional<std::string_view> preset_text(PresetKind kind, std::string_view name);

/// Names of the presets of a kind, sorted.
[[nodiscard]] std::vector<std::string> preset_names(PresetKind kind);

/// True when a NAME|FILE value names a file, not a preset: "-" (standard input), or it has a
/// '/' or ends .yaml/.yml/.json. The one rule for flags and for keys that name a preset.
[[nodiscard]] bool names_file(std::string_view value);

/// The source name errors in a preset are reported against: "configs/gpus/NAME.yaml".
[[nodiscard]] std::string preset_source(PresetKind kind, std::string_view name);

}  // namespace trident
