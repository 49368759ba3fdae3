// trident presets: one line per built-in GPU, cluster and model with its key numbers.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cli/cluster_args.h"
#include "cli/commands.h"
#include "cli/stack_args.h"
#include "configs/presets.h"
#include "costmodel/model_loader.h"
#include "topology/cluster_loader.h"

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

void print_presets() {
  for (const PresetKind kind :
       {PresetKind::gpu, PresetKind::cluster, PresetKind::model, PresetKind::stack}) {
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
  sub->callback(print_presets);
}

}  // namespace trident::cli
