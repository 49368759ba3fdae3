// trident calibrate: placeholder until its issue lands (owned by the helper implementing it).
#include "cli/commands.h"
#include "topology/errors.h"

namespace trident::cli {

void add_calibrate_command(CLI::App& app) {
  auto* sub = app.add_subcommand("calibrate", "not built yet");
  sub->callback([] { throw InputError("trident calibrate is not built yet"); });
}

}  // namespace trident::cli
