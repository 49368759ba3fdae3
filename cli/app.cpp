// The application shared by `trident` and `trident-validate`: parse, run, map errors to exit codes.
#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/search_text.h"
#include "topology/errors.h"
#include "topology/text_check.h"

#ifndef TRIDENT_VERSION
#error "TRIDENT_VERSION comes from project(VERSION) in CMakeLists.txt (cli/CMakeLists.txt)"
#endif

namespace trident::cli {
namespace {

/// One line, whatever the message echoes (a key, a value or a file name from the input can
/// hold a newline or an escape sequence): each control character is shown as '?'.
int fail(int code, const std::string& message) {
  std::fprintf(stderr, "trident: error: %s\n", one_line(message).c_str());
  return code;
}

/// CLI11 messages can span lines; keep the first so bad input gets one line.
std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

/// CLI11's wording in the project's: a flag given twice ("--top: At Most 1 required but received
/// 2") and arguments no flag takes ("The following arguments were not expected: 1 --bogus").
std::string parse_error_text(const std::string& message) {
  std::string line = first_line(message);
  const std::string at_most = ": At Most 1 required but received ";
  if (const auto at = line.find(at_most); at != std::string::npos) {
    return line.substr(0, at) + ": given " + line.substr(at + at_most.size()) +
           " times; give it once";
  }
  // CLI11's "--gpus: 1 required INT:N missing": a flag given without its value.
  const std::string required = " required ";
  if (const auto at = line.find(": 1" + required);
      at != std::string::npos && line.ends_with(" missing")) {
    const std::size_t type_at = at + 3 + required.size();
    const std::string type = line.substr(type_at, line.size() - type_at - 8);
    return line.substr(0, at) + ": expected a value (" + type + "), got none";
  }
  for (const std::string_view extras : {"The following arguments were not expected: ",
                                        "The following argument was not expected: "}) {
    if (line.starts_with(extras)) {
      // CLI11 lists the leftover words last first ("1 --bogus"): put them back in order.
      std::vector<std::string> words;
      std::string rest = line.substr(extras.size());
      for (std::size_t at = rest.find(' '); at != std::string::npos; at = rest.find(' ')) {
        words.push_back(rest.substr(0, at));
        rest.erase(0, at + 1);
      }
      words.push_back(rest);
      std::string ordered;
      for (auto w = words.rbegin(); w != words.rend(); ++w) {
        ordered += (ordered.empty() ? "" : " ") + *w;
      }
      return "not a flag or value of this command: " + ordered;
    }
  }
  return line;
}

/// Every argument is UTF-8 text: names and paths end up in JSON, YAML and SVG outputs. None is
/// empty: "--model ''" would read as no model (the default), "--explain ''" or "--explain=" as
/// the option without its value (CLI11 gives an optional value its default).
std::string check_arguments(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!is_clean_text(argv[i])) {
      return "argument " + std::to_string(i) + " is not UTF-8 text; give names and paths in UTF-8";
    }
    const std::string_view arg = argv[i];
    if (arg.starts_with("--") && arg.ends_with("=")) {
      return std::string(arg.substr(0, arg.size() - 1)) +
             ": expected a value, got an empty string (see --help)";
    }
    if (arg.empty()) {
      const std::string_view before = i > 1 ? std::string_view(argv[i - 1]) : std::string_view();
      return before.starts_with("-")
                 ? std::string(before) + ": expected a value, got an empty string (see --help)"
                 : "argument " + std::to_string(i) + " is empty";
    }
  }
  return "";
}

/// The first argument, when it is not an option, must name a command: "trident foo" says so
/// instead of CLI11's "A subcommand is required".
std::string check_command(CLI::App& app, int argc, char** argv) {
  // Down the chain of commands ("trident topo show"): each argument that is not an option must
  // name a command of the one before it while that one has commands.
  CLI::App* at = &app;
  std::string command;  // the commands named so far: "topo"
  // Where to look: "(see --help)", or "(see trident topo --help)" below a command.
  const auto see_help = [&command] {
    return " (see " + (command.empty() ? std::string() : "trident " + command + " ") + "--help)";
  };
  int i = 1;
  for (; i < argc && argv[i][0] != '-'; ++i) {
    const auto subs = at->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";
    std::string names;
    CLI::App* found = nullptr;
    for (CLI::App* sub : subs) {
      if (sub->check_name(argv[i])) found = sub;
      names += (names.empty() ? "" : "|") + sub->get_name();
    }
    if (found == nullptr) {
      std::string shown = argv[i];
      for (char& c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';  // one line, always
      }
      return std::string("'")
          .append(shown)
          .append("': unknown command; expected ")
          .append(names)
          .append(see_help());
    }
    at = found;
    command += (command.empty() ? "" : " ") + found->get_name();
  }
  // A command that needs one of its own and got none: say which ones it has (CLI11 says
  // "A subcommand is required"), unless help was asked for, or the version (a top-level flag).
  for (int j = i; j < argc; ++j) {
    const std::string_view arg = argv[j];
    if (arg == "-h" || arg == "--help" || (command.empty() && arg == "--version")) return "";
  }
  const auto subs = at->get_subcommands([](CLI::App*) { return true; });
  if (subs.empty() || at->get_require_subcommand_min() == 0) return "";
  std::string names;
  for (const CLI::App* sub : subs) names += (names.empty() ? "" : "|") + sub->get_name();
  return (command.empty() ? "" : command + ": ") + "expected a command: " + names + see_help();
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

int parse_and_run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(2, parse_error_text(e.what()) + " (see --help)");
  } catch (const ExitStatus& e) {
    return e.code;
  } catch (const SpecError& e) {
    return fail(2,
                std::string(e.kind() == SpecKind::failure ? "--fail-link " : "--emit ") + e.what());
  } catch (const InputError& e) {
    return fail(2, e.what());
  } catch (const NoSplitError& e) {
    return fail(2, no_split_text(e.rules()));
  } catch (const PlanError& e) {
    return fail(2, e.what());
  } catch (const std::exception& e) {
    if (std::ferror(stdout)) {  // fmt::print throws once stdio's buffer fails to flush
      const int error = errno != 0 ? errno : EIO;
      return fail(2, std::string("standard output: cannot write: ") + std::strerror(error));
    }
    return fail(1, std::string("internal: ") + e.what());
  }
  return 0;
}

}  // namespace

std::string version_text() { return std::string("trident ") + TRIDENT_VERSION; }

int run_app(std::span<const CommandEntry> commands, int argc, char** argv) {
  // A closed pipe (`| head -1`, `| true`) is a write error like `> /dev/full`: reported on one
  // line with exit 2 and the staged output files removed, not a silent death by SIGPIPE that
  // leaves a temporary file behind.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "trident: rank tensor x pipeline x data parallel splits of a model over a GPU cluster, "
      "say which link each dimension rides, what breaks when a link fails, and calibrate on "
      "real hardware."};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  for (const auto& command : commands) command.add(app);
  if (const std::string bad = check_arguments(argc, argv); !bad.empty()) return fail(2, bad);
  if (const std::string bad = check_command(app, argc, argv); !bad.empty()) return fail(2, bad);
  return flush_stdout(parse_and_run(app, argc, argv));
}

}  // namespace trident::cli
