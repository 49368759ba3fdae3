// trident presets: one line per built-in GPU, cluster, model and stack with its key numbers
// (--format json: the same as a list); --show NAME prints one preset's file.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cluster_args.h"
#include "cli/commands.h"
#include "cli/stack_args.h"
#include "configs/presets.h"
#include "costmodel/model_loader.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"

namespace trident::cli {

namespace {

std::string cluster_line(const Cluster& c) {
  return fmt::format("{} GPUs, {} servers: {}", c.gpus(), c.servers, summarize_server(c));
}

std::string summary(PresetKind kind, const std::string& name) {
  switch (kind) {
    case PresetKind::gpu:
      return summarize_gpu(gpu_preset(name));
    case PresetKind::cluster:
      return cluster_line(cluster_preset(name));
    case PresetKind::model:
      return summarize_model(model_preset(name));
    case PresetKind::stack:
      return summarize_stack(stack_preset(name));
  }
  return "";
}

constexpr PresetKind kKinds[] = {PresetKind::gpu, PresetKind::cluster, PresetKind::model,
                                 PresetKind::stack};

struct PresetsOptions {
  std::string format = "table";
  std::string show;  ///< a preset's NAME: print its file
};

/// The file of the preset called `name` (every kind searched; names are unique across kinds).
void print_preset_file(const std::string& name) {
  for (const PresetKind kind : kKinds) {
    if (const auto text = preset_text(kind, name)) {
      fmt::print("# {}\n{}", preset_source(kind, name), *text);
      if (!text->empty() && text->back() != '\n') fmt::print("\n");
      return;
    }
  }
  std::string known;
  for (const PresetKind kind : kKinds) {
    for (const auto& n : preset_names(kind)) known += (known.empty() ? "" : ", ") + n;
  }
  throw InputError("--show " + name +
                   ": no built-in GPU, cluster, model or stack of that name; "
                   "known: " +
                   known);
}

void print_presets(const PresetsOptions& options) {
  if (!options.show.empty()) {
    if (options.format == "json") {
      throw InputError(
          "--show: prints the preset's YAML file as it is; --format json lists "
          "the presets (give one or the other)");
    }
    print_preset_file(options.show);
    return;
  }
  if (options.format == "json") {
    nlohmann::json list = nlohmann::json::array();
    for (const PresetKind kind : kKinds) {
      for (const auto& name : preset_names(kind)) {
        list.push_back({{"kind", to_string(kind)},
                        {"name", name},
                        {"source", preset_source(kind, name)},
                        {"summary", summary(kind, name)}});
      }
    }
    fmt::print("{}\n", nlohmann::json{{"presets", list}}.dump(2));
    return;
  }
  for (const PresetKind kind : kKinds) {
    for (const auto& name : preset_names(kind)) {
      fmt::print("{:<8} {:<18} {}\n", to_string(kind), name, summary(kind, name));
    }
  }
}

}  // namespace

void add_presets_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("presets",
                         "list the built-in GPUs, clusters, models and software stacks (use a NAME "
                         "with --gpu, --cluster, --model, --stack)");
  auto options = std::make_shared<PresetsOptions>();
  sub->add_option("--format", options->format, "table or json")
      ->check(choice_check({"table", "json"}));
  sub->add_option("--show", options->show,
                  "print the preset file NAME (its every field and source), to copy and edit");
  sub->callback([options] { print_presets(*options); });
}

}  // namespace trident::cli
