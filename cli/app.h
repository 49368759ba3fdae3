#pragma once
/// The top level shared by the two executables, `trident` (cli/main.cpp) and
/// `trident-validate` (cli/validate_main.cpp): one application description, one version, one
/// mapping of exceptions to exit codes (0 success, 2 bad input on one line, 1 internal failure).
#include <span>
#include <string>

#include "cli/commands.h"

namespace trident::cli {

/// "trident X.Y.Z", X.Y.Z from project(VERSION ...) in the top CMakeLists.txt.
[[nodiscard]] std::string version_text();

/// Builds the application with `commands`, parses `argv`, runs the named command and returns
/// the process's exit code. Prints only error lines (and CLI11's help and version text).
[[nodiscard]] int run_app(std::span<const CommandEntry> commands, int argc, char** argv);

}  // namespace trident::cli
