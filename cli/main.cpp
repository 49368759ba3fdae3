// trident: the thin executable. Parses flags, calls the core, maps errors to exit codes:
// 0 success, 2 bad input (one line on stderr), 1 internal failure.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "topology/errors.h"

namespace {

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "trident: error: %s\n", message.c_str());
  return code;
}

/// CLI11 messages can span lines; keep the first so bad input gets one line.
std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "trident: rank tensor x pipeline x data parallel splits of a model over a GPU cluster, "
      "say which link each dimension rides, what breaks when a link fails, and calibrate on "
      "real hardware."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trident 0.1.0");
  for (const auto& command : trident::cli::kCommands) command.add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(2, first_line(e.what()) + " (see --help)");
  } catch (const trident::cli::ExitStatus& e) {
    return e.code;
  } catch (const trident::InputError& e) {
    return fail(2, e.what());
  } catch (const trident::PlanError& e) {
    return fail(2, e.what());
  } catch (const std::exception& e) {
    return fail(1, std::string("internal: ") + e.what());
  }
  return 0;
}
