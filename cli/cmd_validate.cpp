// trident validate: run a plan's collectives and GEMMs for real (under mpirun / srun), print
// predicted vs measured, write a calibration file. MPI is initialised here and only here. Built
// into `trident-validate` only (cli/validate_main.cpp); `trident validate` execs that.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "cli/cluster_args.h"
#include "cli/commands.h"
#include "cli/input_file.h"
#include "cli/output_file.h"
#include "costmodel/calibration_io.h"
#include "costmodel/compute.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "validate/patterns.h"
#include "validate/plan_reader.h"
#ifdef TRIDENT_HAVE_MPI
#include "validate/backend.h"
#include "validate/measure.h"
#include "validate/mpi_util.h"
#include "validate/test_fault.h"
#endif

namespace trident::cli {
namespace {

struct ValidateFlags {
  std::string plan;
  int plan_index = 0;
  std::string backend = "auto";
  int iters = 20;
  int warmup = 5;
  double timeout_s = 60.0;
  std::string output;
  double max_bytes = -1.0;      ///< -1: the backend's default
  long long max_gemm_dim = -1;  ///< -1: the backend's default
  int test_die_rank = -1;       ///< testing only (hidden): this rank dies mid-run
  int test_hang_rank = -1;      ///< testing only (hidden): this rank stops answering mid-run
};

/// The plan read and the calibration written: --output may not be --plan.
RunOutputs declare_files(const ValidateFlags& flags) {
  RunOutputs files;
  files.add_input("--plan", flags.plan);
  if (!flags.output.empty()) files.add_output("--output", flags.output);
  return files;
}

/// The launcher's rank before MPI_Init (Open MPI, PMIx, MPICH, Slurm); 0 when none says.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

/// A rank other than 0 that hit the same input error exits quietly, but only after rank 0 has
/// had time to report it: mpirun tears the job down at the first non-zero exit, which could
/// otherwise kill rank 0 before its one line reaches stderr (seen under load in
/// test_validate_faults). Before MPI starts there is no barrier to wait on; 2 s is bounded.
[[noreturn]] void exit_quietly_after_rank0() {
  std::this_thread::sleep_for(std::chrono::seconds(2));
  throw ExitStatus{2};
}

/// Only rank 0 reports an error every rank hit; the others exit with the same code quietly.
[[noreturn]] void rethrow_on_rank0(int rank) {
  if (rank != 0) exit_quietly_after_rank0();
  throw;
}

#ifdef TRIDENT_HAVE_MPI

void print_sweep(const Measurement& m) {
  fmt::print("\ncollectives (time: mean of the timed runs, max over ranks; busbw as nccl-tests)\n");
  fmt::print("{:<4} {:<16} {:>5} {:<8} {:>12} {:>12} {:>11} {:>7}\n", "dim", "collective", "ranks",
             "tier", "bytes", "time_us", "busbw_GB/s", "#wrong");
  for (const auto& p : m.sweep) {
    fmt::print("{:<4} {:<16} {:>5} {:<8} {:>12.0f} {:>12.2f} {:>11.3f} {:>7}\n", p.dimension,
               to_string(p.sample.collective), p.sample.ranks, to_string(p.sample.tier),
               p.sample.bytes, p.sample.time_s * 1e6, p.sample.busbw_gbps, p.wrong);
  }
  fmt::print("\nfits: t(S) = steps x latency + S x factor / busbw\n");
  for (const auto& f : m.calibration.fits) {
    fmt::print("  {:<16} ranks {:>4} {:<8} latency {:>9.2f} us  busbw {:>9.3f} GB/s\n",
               to_string(f.collective), f.ranks, to_string(f.tier), f.latency_s * 1e6,
               f.busbw_gbps);
  }
}

void print_gemms(const Measurement& m) {
  if (m.gemms.empty()) return;
  fmt::print("\ngemms (per GPU after the TP split; measured shape may be capped)\n");
  fmt::print("{:<14} {:>22} {:>22} {:<5} {:>10} {:>10} {:>7}\n", "name", "plan m x n x k",
             "measured m x n x k", "dtype", "TFLOP/s", "predicted", "#wrong");
  for (const auto& g : m.gemms) {
    fmt::print("{:<14} {:>22} {:>22} {:<5} {:>10.3f} {:>10.1f} {:>7}\n", g.planned.name,
               fmt::format("{}x{}x{}", g.planned.m, g.planned.n, g.planned.k),
               fmt::format("{}x{}x{}", g.measured.m, g.measured.n, g.measured.k),
               to_string(g.measured.dtype), g.measured.tflops, g.planned.predicted_tflops, g.wrong);
  }
}

void print_memory_copy(const Measurement& m, const PlanSpec& plan) {
  if (!m.memory_copy) return;
  const MemoryCopyPoint& copy = *m.memory_copy;
  fmt::print(
      "\nhbm: device-to-device copy of {:.0f} bytes: {:.3f} ms, {:.1f} GB/s (read + write) "
      "#wrong {}\n",
      copy.bytes, copy.time_s * 1e3, copy.gbps, copy.wrong);
  if (plan.gpu.empty()) return;
  try {
    const Gpu gpu = gpu_preset(plan.gpu);
    const double model_gbps = gpu.memory_gbps * kHbmAchievableFraction;
    fmt::print(
        "     the cost model's memory-bound rate for {}: {:.0f} GB/s x {:.2f} = {:.0f} GB/s "
        "(measured / model = {:.3f})\n",
        plan.gpu, gpu.memory_gbps, kHbmAchievableFraction, model_gbps,
        model_gbps > 0.0 ? copy.gbps / model_gbps : 0.0);
  } catch (const InputError&) {
    fmt::print("     (no GPU preset named '{}' to compare with)\n", plan.gpu);
  }
}

void print_comparison(const Measurement& m) {
  fmt::print("\npredicted vs measured, per call (error = (predicted - measured) / measured)\n");
  fmt::print("{:<34} {:>14} {:>14} {:>9}\n", "component", "predicted_s", "measured_s", "error");
  for (const auto& r : m.calibration.comparison) {
    bool marked = false;
    for (const auto& e : m.extrapolated) marked = marked || e == r.component;
    fmt::print("{:<34} {:>14.6g} {:>14.6g} {:>8.1f}%{}\n", r.component, r.predicted_s, r.measured_s,
               r.error_pct, marked ? " *" : "");
  }
  if (!m.extrapolated.empty()) {
    fmt::print(
        "* measured at a capped size (--max-bytes / --max-gemm-dim) or, for fp8 GEMMs, padded "
        "to multiples of 16: the time at the plan's size comes from the fit / the shape's "
        "TFLOP/s\n");
  }
}

std::unique_ptr<Backend> open_backend(const std::string& kind) {
  if (kind == "cuda") return make_cuda_backend();
  if (kind == "cpu") return make_mpi_backend();
  if (kind == "auto") return cuda_available() ? make_cuda_backend() : make_mpi_backend();
  throw InputError("--backend: expected auto|cuda|cpu, got '" + kind + "'");
}

/// The hidden testing-only fault flags as a TestFault (none unless one is given).
TestFault test_fault(const ValidateFlags& flags) {
  TestFault fault;
  if (flags.test_die_rank >= 0) fault = {TestFaultKind::die, flags.test_die_rank};
  if (flags.test_hang_rank >= 0) {
    fault = {TestFaultKind::hang, flags.test_hang_rank};
    fault.hang_s = 3.0 * flags.timeout_s + 10.0;  // well past the others' deadline
  }
  return fault;
}

/// The smallest GEMM dimension cap: at 64 a GEMM still fills a tensor-core tile.
constexpr long long kMinGemmDim = 64;

MeasureOptions measure_options(const ValidateFlags& flags, const Backend& backend) {
  const bool gpu = backend.name() == "nccl";
  MeasureOptions options;
  options.run = {flags.warmup, flags.iters, flags.timeout_s};
  options.max_bytes = flags.max_bytes >= 0 ? flags.max_bytes : (gpu ? 1073741824.0 : 16777216.0);
  options.max_gemm_dim = flags.max_gemm_dim >= 0 ? flags.max_gemm_dim : (gpu ? 0 : 512);
  options.hbm_copy_bytes = gpu ? 1073741824.0 : 0.0;  // 1 GiB: far past every cache
  return options;
}

/// The dtypes the plan's GEMMs run in here, once each in order of appearance: "fp8, bf16".
std::string gemm_dtypes(const PlanSpec& plan, const Backend& backend) {
  std::vector<std::string> names;
  for (const auto& gemm : plan.gemms) {
    const std::string name = to_string(backend.gemm_dtype(gemm.dtype));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) return to_string(backend.gemm_dtype(plan.dtype));
  std::string out = names.front();
  for (std::size_t i = 1; i < names.size(); ++i) out += ", " + names[i];
  return out;
}

/// The backend's notes on GEMM dtypes it cannot run as planned, once each.
std::vector<std::string> gemm_notes(const PlanSpec& plan, const Backend& backend) {
  std::vector<std::string> notes;
  for (const auto& gemm : plan.gemms) {
    const std::string note = backend.gemm_note(gemm.dtype);
    if (!note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end()) {
      notes.push_back(note);
    }
  }
  return notes;
}

/// "tp 4 x pp 1 x dp 1 x cp 2": the plan's world, CP named where it splits.
std::string world_text(const PlanSpec& plan) {
  const ParallelConfig& c = plan.config;
  return fmt::format("tp {} x pp {} x dp {}{}", c.tp, c.pp, c.dp,
                     c.cp > 1 ? fmt::format(" x cp {}", c.cp) : std::string());
}

void report(const ValidateFlags& flags, const PlanSpec& plan, const Backend& backend,
            const MeasureOptions& options, Measurement& m) {
  m.calibration.date = now_iso8601();
  fmt::print("trident validate: {} plans[{}]: {} = {} ranks, backend {} ({}{})\n", flags.plan,
             plan.index, world_text(plan), plan.world_size(), backend.name(), backend.device_name(),
             backend.nccl_version().empty() ? "" : ", NCCL " + backend.nccl_version());
  fmt::print(
      "{} warm-up + {} timed runs per point; messages capped at {:.0f} bytes; GEMMs in {}{}\n",
      options.run.warmup, options.run.iters, options.max_bytes, gemm_dtypes(plan, backend),
      options.max_gemm_dim > 0 ? fmt::format(", dims capped at {}", options.max_gemm_dim)
                               : std::string());
  for (const std::string& note : gemm_notes(plan, backend)) fmt::print("note: {}\n", note);
  if (backend.name() == "mpi") {
    fmt::print(
        "CPU backend: MPI over the hosts' network, fp32 GEMMs through OpenBLAS; these "
        "numbers calibrate a CPU cluster, not a GPU one\n");
  }
  print_sweep(m);
  print_gemms(m);
  print_memory_copy(m, plan);
  print_comparison(m);
  if (!flags.output.empty()) {
    RunOutputs files = declare_files(flags);
    files.set_text("--output", to_json(m.calibration));
    std::fflush(stdout);
    files.commit();
    fmt::print("\nwrote {}\n", flags.output);
  }
}

void run_validate(const ValidateFlags& flags, const PlanSpec& plan) {
  MpiSession mpi;
  if (mpi.size() != plan.world_size()) {
    if (mpi.rank() != 0) throw ExitStatus{2};
    throw InputError(fmt::format(
        "{}: plans[{}] needs {} ranks ({}) but the launcher started {}: use mpirun -np {} (or "
        "srun -n {})",
        flags.plan, plan.index, plan.world_size(), world_text(plan), mpi.size(), plan.world_size(),
        plan.world_size()));
  }
  std::unique_ptr<Backend> backend;
  try {
    backend = open_backend(flags.backend);
  } catch (const InputError&) {
    rethrow_on_rank0(mpi.rank());
  }
  backend = with_test_fault(std::move(backend), test_fault(flags), mpi.rank());
  const MeasureOptions options = measure_options(flags, *backend);
  Measurement m;
  try {
    m = measure_plan(*backend, plan, mpi.rank(), options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "trident: error: validate (rank {}): {}\n", mpi.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (mpi.rank() == 0) report(flags, plan, *backend, options, m);
  const long long wrong = m.wrong();
  backend.reset();
  if (wrong > 0) {
    if (mpi.rank() == 0) fmt::print(stderr, "trident: error: validate: {} wrong elements\n", wrong);
    throw ExitStatus{1};
  }
}

#endif  // TRIDENT_HAVE_MPI

/// --max-bytes below the plan's smallest message (one fp32 element per rank of its largest
/// group: measure.cpp rounds the cap up to it) is refused: it ran that size anyway, under a
/// header that said "messages capped at 3 bytes".
void check_max_bytes(const ValidateFlags& flags, const PlanSpec& plan) {
  if (flags.max_bytes < 0.0) return;
  const PlanComm* widest = nullptr;
  for (const auto* comm : {&plan.tp, &plan.pp, &plan.dp, &plan.cp, &plan.ep}) {
    if (comm->has_value() && (widest == nullptr || (*comm)->ranks > widest->ranks)) {
      widest = &comm->value();
    }
  }
  if (widest == nullptr) return;
  const double smallest = message_quantum_bytes(widest->ranks);
  if (flags.max_bytes >= smallest) return;
  throw InputError(fmt::format(
      "--max-bytes: expected at least {:.0f}, the smallest message of {} plans[{}]'s {} group "
      "(one fp32 element on each of its {} ranks), got {:.0f}",
      smallest, flags.plan, plan.index, widest->name, widest->ranks, flags.max_bytes));
}

void validate(const ValidateFlags& flags) {
  const int rank = launcher_rank();
  if (flags.backend != "auto" && flags.backend != "cuda" && flags.backend != "cpu") {
    if (rank != 0) exit_quietly_after_rank0();  // before MPI starts: a bad flag costs nothing
    throw InputError("--backend: expected auto|cuda|cpu, got '" + flags.backend + "'");
  }
  PlanSpec plan;
  try {
    declare_files(flags).check();  // before MPI starts: a bad --output costs nothing
    plan = read_plan(read_input_file(flags.plan, "--plan"), input_source(flags.plan),
                     flags.plan_index);
    check_max_bytes(flags, plan);
  } catch (const InputError&) {
    rethrow_on_rank0(rank);
  }
#ifdef TRIDENT_HAVE_MPI
  run_validate(flags, plan);
#else
  throw InputError("validate: this trident was built without MPI (install OpenMPI and rebuild)");
#endif
}

}  // namespace

/// Bounds on validate's run counts and message cap: a whole number of runs and bytes, at most
/// 100,000 runs of a measurement (an hour at 36 ms a run) and 1 TiB a message (past any GPU's
/// memory), so no flag turns a check into a job that never ends or a cap of a fraction of a byte.
constexpr long long kMaxRuns = 100000;
constexpr long long kMaxMessageBytes = 1LL << 40;

void add_validate_command(CLI::App& app) {
  auto flags = std::make_shared<ValidateFlags>();
  auto* sub = app.add_subcommand("validate", kValidateDescription);
  sub->add_option("--plan", flags->plan, "plan JSON from `trident plan --format json`")->required();
  sub->add_option("--plan-index", flags->plan_index, "which of plans[] to run (default 0)")
      ->check(non_negative_integer_check());
  sub->add_option("--backend", flags->backend,
                  "auto (cuda when built with it and a GPU is visible) | cuda | cpu");
  sub->add_option("--iters", flags->iters, "timed runs per measurement (default 20)")
      ->check(positive_integer_check(kMaxRuns));
  sub->add_option("--warmup", flags->warmup, "untimed runs first (default 5)")
      ->check(non_negative_integer_check(kMaxRuns));
  sub->add_option("--timeout-s", flags->timeout_s,
                  "abort the job when any collective or wait between ranks takes longer "
                  "(default 60); a rank's own GEMM is not timed out: cap it with --max-gemm-dim")
      ->check(positive_number_check());
  sub->add_option("--max-bytes", flags->max_bytes,
                  "largest message run (default 1 GiB on GPUs, 16 MiB on the CPU backend); "
                  "larger plan sizes are predicted from the fit")
      ->check(positive_integer_check(kMaxMessageBytes))
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            // Below 8 bytes no collective sends anything: its smallest message is one fp32
            // element on each of 2 ranks (message_quantum_bytes), which ran whatever the cap.
            const double smallest = message_quantum_bytes(2);
            if (std::stod(text) >= smallest) return "";
            return fmt::format(
                "expected at least {:.0f} (one fp32 element on each of 2 ranks, the smallest "
                "message validate sends), got '{}'",
                smallest, text);
          },
          ">= 8"));
  sub->add_option("--max-gemm-dim", flags->max_gemm_dim,
                  "cap on each GEMM dimension, 0 for none (default none on GPUs, 512 on the CPU "
                  "backend)")
      ->check(non_negative_integer_check())
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            // Below kMinGemmDim a GEMM times its launch, not its rate, and the plan's sizes
            // would be extrapolated from that (a 1 x 1 x 1 GEMM read as 94,049 s for ffn_up).
            const long long dim = std::stoll(text);
            if (dim == 0 || dim >= kMinGemmDim) return "";
            return fmt::format("expected 0 (no cap) or at least {}, got '{}'", kMinGemmDim, text);
          },
          "0 or >= 64"));
  sub->add_option("--output", flags->output, "calibration file to write (rank 0)");
  // Testing only (docs/validate.md): a rank that dies or hangs mid-run; hidden from --help.
  sub->add_option("--test-die-rank", flags->test_die_rank)->group("");
  sub->add_option("--test-hang-rank", flags->test_hang_rank)->group("");
  sub->callback([flags] { validate(*flags); });
}

}  // namespace trident::cli
