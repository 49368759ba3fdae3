// trident: the thin executable. Parses flags, calls the core, maps errors to exit codes:
// 0 success, 2 bad input (one line on stderr), 1 internal failure (cli/app.h). It links no GPU
// or MPI library: `trident validate` hands over to `trident-validate` (cli/validate_launcher.cpp).
#include "cli/app.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  return trident::cli::run_app(trident::cli::kCommands, argc, argv);
}
