#pragma once
/// The sub-commands of `trident`, one data table (as ninja's kTools): adding a command is
/// adding a row here and a file cli/cmd_NAME.cpp that defines its register function.
#include <CLI/CLI.hpp>

namespace trident::cli {

/// Adds the sub-command to `app`; its callback does the work and may throw InputError
/// (exit 2), PlanError (exit 2) or anything else (exit 1).
/// Thrown by a command that has printed its own report and must exit with `code`
/// (e.g. validate found wrong results: 1).
struct ExitStatus {
  int code = 0;
};

using RegisterFn = void (*)(CLI::App& app);

struct CommandEntry {
  const char* name;
  RegisterFn add;
};

void add_plan_command(CLI::App& app);
void add_topo_command(CLI::App& app);
/// `validate` in `trident`: hands the whole command line to `trident-validate` beside the
/// binary (cli/validate_launcher.cpp), so `trident` itself links no MPI or GPU library.
void add_validate_launcher(CLI::App& app);
/// `validate` in `trident-validate`: the real command (cli/cmd_validate.cpp).
void add_validate_command(CLI::App& app);
/// What `validate` does, as both executables' help lists it.
inline constexpr const char* kValidateDescription =
    "Run a plan's collectives and GEMMs for real (launch with mpirun -np N or srun -n N, one "
    "rank per GPU), print predicted vs measured, write a calibration file";
void add_calibrate_command(CLI::App& app);
void add_presets_command(CLI::App& app);
/// `trident topo import ...`: added to the `topo` sub-command by cmd_topo.cpp.
void add_topo_import_subcommand(CLI::App& topo);

inline constexpr CommandEntry kCommands[] = {
    {"plan", add_plan_command},          {"topo", add_topo_command},
    {"validate", add_validate_launcher}, {"calibrate", add_calibrate_command},
    {"presets", add_presets_command},
};

}  // namespace trident::cli
