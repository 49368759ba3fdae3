// placeholder: replaced by the module owner (trident topo import)
#include "cli/commands.h"

namespace trident::cli {

void add_topo_import_subcommand(CLI::App& /*topo*/) {}

}  // namespace trident::cli
