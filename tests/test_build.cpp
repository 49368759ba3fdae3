// The build's promises, end to end: `trident` needs no GPU or MPI library (only
// trident-validate does), `trident validate` reaches trident-validate beside it, the version is
// project(VERSION)'s, and `cmake --install` gives a working pair of executables.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "cli_runner.h"

namespace {

using cli_test::Run;
using cli_test::run_shell;
using cli_test::TempDir;

const std::string kBinary = TRIDENT_BINARY;
const std::string kValidateBinary = TRIDENT_VALIDATE_BINARY;

/// Library name stems of the GPU and MPI stacks (and the BLAS only the CPU backend uses).
constexpr const char* kGpuMpiLibraries[] = {"libcuda.",    "libcudart", "libcublas",
                                            "libnccl",     "libmpi",    "libopen-rte",
                                            "libopen-pal", "libpmix",   "libopenblas"};

std::string first_hit(const std::string& text) {
  for (const char* stem : kGpuMpiLibraries) {
    if (text.find(stem) != std::string::npos) return stem;
  }
  return "";
}

}  // namespace

TEST_CASE("trident links no CUDA, cuBLAS, NCCL, MPI or BLAS library", "[build]") {
  // DT_NEEDED of the executable itself.
  const Run needed = run_shell("readelf -d " + kBinary);
  REQUIRE(needed.code == 0);
  REQUIRE(needed.out.find("(NEEDED)") != std::string::npos);  // readelf did list the entries
  CHECK(first_hit(needed.out) == "");
  // And what the loader resolves, transitively (a library could pull one in).
  const Run resolved = run_shell("ldd " + kBinary);
  REQUIRE(resolved.code == 0);
  REQUIRE(resolved.out.find("libc.so") != std::string::npos);
  CHECK(first_hit(resolved.out) == "");
}

TEST_CASE("trident validate runs trident-validate with the same command line", "[build]") {
  const Run help = run_shell(kBinary + " validate --help");
  REQUIRE(help.code == 0);
  CHECK(help.out.find("--plan") != std::string::npos);
  CHECK(help.out.find("--backend") != std::string::npos);
  CHECK(help.out.find("trident validate") != std::string::npos);  // usage names trident
  // A bad flag is refused by trident-validate's parser with trident's one-line error, exit 2.
  const Run bad = run_shell(kBinary + " validate --plan x.json --iters 0");
  CHECK(bad.code == 2);
  CHECK(bad.err.rfind("trident: error: --iters", 0) == 0);
  // trident's own help still lists validate.
  const Run top = run_shell(kBinary + " --help");
  REQUIRE(top.code == 0);
  CHECK(top.out.find("validate") != std::string::npos);
}

TEST_CASE("trident validate without trident-validate beside it: one line, exit 1", "[build]") {
  TempDir dir;
  const auto lone = dir.path / "trident";
  std::filesystem::copy_file(kBinary, lone);
  const Run run = run_shell(lone.string() + " validate --plan p.json");
  CHECK(run.code == 1);
  const std::string missing = "trident: error: validate: cannot run " +
                              (dir.path / "trident-validate").string() +
                              " (No such file or directory); trident validate (its --help too) "
                              "needs trident-validate installed beside trident: cmake --install "
                              "puts both in one bin/\n";
  CHECK(run.err == missing);
  // --help goes to trident-validate too: the same line, not a help text that lists no option.
  const Run help = run_shell(lone.string() + " validate --help");
  CHECK(help.code == 1);
  CHECK(help.err == missing);
  // The planner side of the same lone binary works: it needs nothing beside it.
  const Run presets = run_shell(lone.string() + " presets");
  CHECK(presets.code == 0);
}

TEST_CASE("--version is project(VERSION) of CMakeLists.txt", "[build]") {
  const Run run = run_shell(kBinary + " --version");
  CHECK(run.code == 0);
  CHECK(run.out == std::string("trident ") + TRIDENT_VERSION + "\n");
}

TEST_CASE("cmake --install puts a working trident and trident-validate under PREFIX/bin",
          "[build]") {
  TempDir prefix;
  const Run install = run_shell(std::string(TRIDENT_CMAKE) + " --install " + TRIDENT_BUILD_DIR +
                                " --prefix " + prefix.path.string());
  REQUIRE(install.code == 0);
  const std::string bin = (prefix.path / "bin").string();
  REQUIRE(std::filesystem::is_regular_file(bin + "/trident"));
  REQUIRE(std::filesystem::is_regular_file(bin + "/trident-validate"));
  // Presets are compiled in: the installed binary runs the seed plan from any directory.
  const Run plan =
      run_shell("cd / && " + bin + "/trident plan --gpus 16 --servers 2 --model llama2-7b --top 1");
  CHECK(plan.code == 0);
  CHECK(plan.out.find("TP") != std::string::npos);
  const Run validate = run_shell(bin + "/trident validate --help");
  CHECK(validate.code == 0);
  CHECK(validate.out.find("--plan") != std::string::npos);
}
