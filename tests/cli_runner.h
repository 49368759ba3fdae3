#pragma once
// Running the trident binary from end-to-end tests: one helper for every CLI test file.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cli_test {

struct Run {
  int code = -1;    ///< exit code; -1 when the process did not exit normally
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A scratch directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/trident_test_XXXXXX";
    const char* made = ::mkdtemp(name);
    path = made != nullptr ? made : "/tmp";
  }
  ~TempDir() {
    if (path != "/tmp") std::filesystem::remove_all(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// Runs `command` through the shell; captures stdout, stderr and the exit code.
inline Run run_shell(const std::string& command) {
  TempDir dir;
  const std::string err_path = (dir.path / "stderr").string();
  Run run;
  FILE* pipe = ::popen((command + " 2>" + err_path).c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, n);
  const int status = ::pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = slurp(err_path);
  return run;
}

/// Runs `TRIDENT_BINARY ARGS` through the shell; captures stdout, stderr and the exit code.
inline Run run_trident(const std::string& args) {
  return run_shell(std::string(TRIDENT_BINARY) + " " + args);
}

}  // namespace cli_test
