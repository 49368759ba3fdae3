// trident-validate: the executable that runs `trident validate` (cli/cmd_validate.cpp), kept
// apart so that only it loads MPI, CUDA, cuBLAS and NCCL. `trident validate ARGS` execs it with
// the same argv, so its help, messages and exit codes are those of `trident validate`.
#include "cli/app.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  static constexpr trident::cli::CommandEntry kValidate[] = {
      {"validate", trident::cli::add_validate_command}};
  return trident::cli::run_app(kValidate, argc, argv);
}
