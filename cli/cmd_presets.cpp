// trident presets: placeholder until its issue lands (owned by the helper implementing it).
#include "cli/commands.h"
#include "topology/errors.h"

namespace trident::cli {

void add_presets_command(CLI::App& app) {
  auto* sub = app.add_subcommand("presets", "not built yet");
  sub->callback([] { throw InputError("trident presets is not built yet"); });
}

}  // namespace trident::cli
