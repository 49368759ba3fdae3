// `trident validate` in the `trident` executable: exec `trident-validate` from the directory of
// the running binary with the same command line. The process (and its MPI rank, under mpirun or
// srun) stays the same; only trident-validate loads MPI, OpenBLAS, CUDA, cuBLAS and NCCL.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace trident::cli {
namespace {

/// trident-validate beside the running executable (/proc/self/exe, symbolic links resolved).
std::filesystem::path validate_executable() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error)
    throw std::runtime_error("validate: cannot locate the trident binary: " + error.message());
  return self.parent_path() / "trident-validate";
}

/// Replaces this process with `trident-validate PROGRAM validate ARGS...`; returns only on failure.
[[noreturn]] void exec_validate(const std::string& program, const std::vector<std::string>& args) {
  const std::string path = validate_executable().string();
  std::vector<std::string> words{program, "validate"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(words.size() + 1);
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  // Not an internal failure: an installation without its second executable (exit 1, as a
  // failure that is not the input's).
  std::fprintf(stderr,
               "trident: error: validate: cannot run %s (%s); trident validate (its --help "
               "too) needs trident-validate installed beside trident: cmake --install puts both "
               "in one bin/\n",
               path.c_str(), std::strerror(errno));
  throw ExitStatus{1};
}

}  // namespace

void add_validate_launcher(CLI::App& app) {
  auto* sub = app.add_subcommand("validate", kValidateDescription);
  // Everything after `validate`, --help included, goes to trident-validate unparsed.
  sub->prefix_command();
  sub->allow_extras();
  sub->set_help_flag();
  sub->callback([sub] { exec_validate(sub->get_parent()->get_name(), sub->remaining()); });
}

}  // namespace trident::cli
