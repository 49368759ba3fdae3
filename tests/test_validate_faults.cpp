// validate under faults, end to end with the CPU backend on loopback (mpirun -np 8, the
// TP2 x PP2 x DP2 plan): a malformed plan, a world-size mismatch, a rank that dies mid-run and
// a rank that stops answering mid-run. The others must exit with a clear error, no hang (each
// run is bounded by `timeout 120`; exit 124 would mean a hang), and no calibration file.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

const std::string kBinary = TRIDENT_BINARY;
const std::string kPlan = std::string(TRIDENT_SOURCE_DIR) + "/tests/data/plan_tp2_pp2_dp2.json";

/// As tests/test_cli_validate.cpp: loopback TCP, leak checks on with Open MPI suppressed.
std::string mpirun(int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return "ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 LSAN_OPTIONS=suppressions=" +
         std::string(TRIDENT_SOURCE_DIR) +
         "/tests/lsan_mpi.supp:print_suppressions=0 "
         "OMPI_MCA_mca_base_component_disable_dlclose=1 OPENBLAS_NUM_THREADS=1 timeout 120 mpirun "
         "--allow-run-as-root --oversubscribe -np " +
         std::to_string(ranks) +
         " --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "
         "-x ASAN_OPTIONS -x LSAN_OPTIONS -x OMPI_MCA_mca_base_component_disable_dlclose "
         "-x OPENBLAS_NUM_THREADS " +
         kBinary + " validate --backend cpu --iters 2 --warmup 1 ";
}

struct Run {
  int code = -1;
  std::string log;
};

std::string temp(const std::string& name) {
  return "/tmp/trident_test_validate_faults_" + std::to_string(getpid()) + "_" + name;
}

Run run(const std::string& command) {
  const std::string log = temp("log.txt");
  const int status = std::system((command + " > " + log + " 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

/// Lines of `log` that start with "trident: error: ".
int error_lines(const std::string& log) {
  int count = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) count += line.starts_with("trident: error: ");
  return count;
}

}  // namespace

TEST_CASE("validate faults: malformed plan JSON under mpirun: rank 0 says so once, exit 2",
          "[validate][faults][mpi]") {
  const std::string plan = temp("bad_plan.json");
  std::ofstream(plan) << "{\"plans\": [{\"tp\": 2, \"pp\": ";
  const Run r = run(mpirun(8) + "--plan " + plan + " --timeout-s 10");
  std::filesystem::remove(plan);
  INFO(r.log);
  CHECK(r.code == 2);
  CHECK(error_lines(r.log) == 1);
  CHECK(r.log.find("trident: error: " + plan + ":1: invalid JSON at column ") != std::string::npos);
}

TEST_CASE("validate faults: world size differs from the plan: one error, exit 2",
          "[validate][faults][mpi]") {
  const Run r = run(mpirun(2) + "--plan " + kPlan + " --timeout-s 10");
  INFO(r.log);
  CHECK(r.code == 2);
  CHECK(error_lines(r.log) == 1);
  CHECK(r.log.find("trident: error: " + kPlan +
                   ": plans[0] needs 8 ranks (tp 2 x pp 2 x dp 2) but the launcher started 2: "
                   "use mpirun -np 8 (or srun -n 8)") != std::string::npos);
}

TEST_CASE("validate faults: a rank that dies mid-run ends the job, no file written",
          "[validate][faults][mpi]") {
  const std::string out = temp("die_calib.json");
  const Run r =
      run(mpirun(8) + "--plan " + kPlan + " --timeout-s 10 --test-die-rank 3 --output " + out);
  INFO(r.log);
  CHECK(r.code != 0);
  CHECK(r.code != 124);  // not the outer timeout: the job ended by itself
  CHECK(r.log.find("trident: test fault: rank 3 dies in tp group (ranks 2,3)") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE(
    "validate faults: a rank that stops answering: its group partner times out naming "
    "the group and aborts the job",
    "[validate][faults][mpi]") {
  const std::string out = temp("hang_calib.json");
  const Run r =
      run(mpirun(8) + "--plan " + kPlan + " --timeout-s 5 --test-hang-rank 3 --output " + out);
  INFO(r.log);
  CHECK(r.code == 1);  // MPI_Abort(..., 1), well before the outer timeout (124)
  CHECK(r.log.find("trident: test fault: rank 3 hangs in tp group (ranks 2,3)") !=
        std::string::npos);
  CHECK(r.log.find("trident: error: validate: tp group (ranks 2,3) all-reduce of ") !=
        std::string::npos);
  CHECK(r.log.find("did not finish within 5 s (--timeout-s); aborting the job") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}
