// The application shared by `trident` and `trident-validate`: parse, run, map errors to exit codes.
#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "topology/errors.h"

#ifndef TRIDENT_VERSION
#error "TRIDENT_VERSION comes from project(VERSION) in CMakeLists.txt (cli/CMakeLists.txt)"
#endif

namespace trident::cli {
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

std::string version_text() { return std::string("trident ") + TRIDENT_VERSION; }

int run_app(std::span<const CommandEntry> commands, int argc, char** argv) {
  CLI::App app{
      "trident: rank tensor x pipeline x data parallel splits of a model over a GPU cluster, "
      "say which link each dimension rides, what breaks when a link fails, and calibrate on "
      "real hardware."};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  for (const auto& command : commands) command.add(app);
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
  } catch (const ExitStatus& e) {
    return e.code;
  } catch (const InputError& e) {
    return fail(2, e.what());
  } catch (const PlanError& e) {
    return fail(2, e.what());
  } catch (const std::exception& e) {
    return fail(1, std::string("internal: ") + e.what());
  }
  return 0;
}

}  // namespace trident::cli
