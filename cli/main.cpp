// trident: the thin executable. Parses flags, calls the core, maps errors to exit codes:
// 0 success, 2 bad input (one line on stderr), 1 internal failure.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "topology/errors.h"
#include "topology/text_check.h"

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

/// Every argument is UTF-8 text: names and paths end up in JSON, YAML and SVG outputs.
std::string check_arguments(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!trident::is_clean_text(argv[i])) {
      return "argument " + std::to_string(i) + " is not UTF-8 text; give names and paths in UTF-8";
    }
  }
  return "";
}

/// What was printed must have reached standard output (`> /dev/full`, a closed stdout).
int flush_stdout(int code) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int error = errno != 0 ? errno : EIO;
    if (code != 0) return code;  // the first error has been reported
    return fail(2, std::string("standard output: cannot write: ") + std::strerror(error));
  }
  return code;
}

int run(CLI::App& app, int argc, char** argv) {
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
    if (std::ferror(stdout)) return fail(2, "standard output: cannot write");
    return fail(1, std::string("internal: ") + e.what());
  }
  return 0;
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
  if (const std::string bad = check_arguments(argc, argv); !bad.empty()) return fail(2, bad);
  return flush_stdout(run(app, argc, argv));
}
