// trident plan: placeholder until its issue lands (owned by the helper implementing it).
#include "cli/commands.h"
#include "topology/errors.h"

namespace trident::cli {

void add_plan_command(CLI::App& app) {
  auto* sub = app.add_subcommand("plan", "not built yet");
  sub->callback([] { throw InputError("trident plan is not built yet"); });
}

}  // namespace trident::cli
