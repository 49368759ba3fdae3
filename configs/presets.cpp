#include "configs/presets.h"

#include <algorithm>

#include "configs/presets_data.h"

namespace trident {

namespace {

std::string_view directory(PresetKind kind) {
  switch (kind) {
    case PresetKind::gpu:
      return "gpus";
    case PresetKind::cluster:
      return "clusters";
    case PresetKind::model:
      return "models";
    case PresetKind::stack:
      return "stacks";
  }
  return "";
}

}  // namespace

const char* to_string(PresetKind kind) {
  switch (kind) {
    case PresetKind::gpu:
      return "gpu";
    case PresetKind::cluster:
      return "cluster";
    case PresetKind::model:
      return "model";
    case PresetKind::stack:
      return "stack";
  }
  return "?";
}

std::optional<std::string_view> preset_text(PresetKind kind, std::string_view name) {
  for (const auto& entry : presets_data::entries()) {
    if (entry.kind == directory(kind) && entry.name == name) return entry.text;
  }
  return std::nullopt;
}

std::vector<std::string> preset_names(PresetKind kind) {
  std::vector<std::string> names;
  for (const auto& entry : presets_data::entries()) {
    if (entry.kind == directory(kind)) names.emplace_back(entry.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string preset_source(PresetKind kind, std::string_view name) {
  return "configs/" + std::string(directory(kind)) + "/" + std::string(name) + ".yaml";
}

bool names_file(std::string_view value) {
  return value == "-" || value.find('/') != std::string_view::npos || value.ends_with(".yaml") ||
         value.ends_with(".yml") || value.ends_with(".json");
}

}  // namespace trident
