#pragma once
// The scene of the end-to-end hardening tests (tests/test_hardening*.cpp): a scratch folder the
// binary runs in, a snapshot of it, and the check that a refused run changed nothing there.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cli_runner.h"

namespace hardening_test {

namespace fs = std::filesystem;
using cli_test::Run;
using cli_test::slurp;
using cli_test::TempDir;

inline const std::string kData = std::string(TRIDENT_SOURCE_DIR) + "/tests/data/";
/// A small plan every hardening run can add flags to.
inline const std::string kPlan = "plan --gpus 8 --servers 1 --model llama3-8b --top 2";
/// A tiny model whose lines the tests count from 1.
inline const std::string kTinyModel =
    "name: tiny\nlayers: 4\nhidden: 256\nheads: 4\nvocab: 1000\nseq_len: 128\ntraining:\n"
    "  global_batch: 8\n";

/// A scratch folder the commands run in, and a second one for their stdout and stderr.
struct Scene {
  TempDir dir;
  TempDir logs;
  std::string path(const std::string& name) const { return (dir.path / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir.path / name, std::ios::binary) << text;
  }
  /// `trident ARGS` in the scene's folder, bounded by `timeout 120` (124 = a hang).
  /// `stdout_to` replaces the capture of stdout ("> /dev/full", ">&-").
  Run run(const std::string& args, const std::string& stdout_to = "") const {
    const std::string out = (logs.path / "out").string();
    const std::string err = (logs.path / "err").string();
    const std::string redirect = stdout_to.empty() ? "> " + out : stdout_to;
    const std::string command = "cd " + dir.path.string() + " && timeout 120 " +
                                std::string(TRIDENT_BINARY) + " " + args + " " + redirect + " 2> " +
                                err;
    const int status = std::system(command.c_str());
    Run r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = stdout_to.empty() ? slurp(out) : "";
    r.err = slurp(err);
    return r;
  }
};

/// Every entry of the folder: its kind, mode and (for files) contents.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> seen;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    struct stat info {};
    ::lstat(entry.path().c_str(), &info);
    std::string what = std::to_string(info.st_mode);
    if (S_ISREG(info.st_mode)) what.append(":").append(slurp(entry.path()));
    if (S_ISLNK(info.st_mode)) what.append("->").append(fs::read_symlink(entry.path()).string());
    seen[fs::relative(entry.path(), dir).string()] = what;
  }
  return seen;
}

/// Exit 2, one line "trident: error: MESSAGE" (a prefix when MESSAGE ends "..."), nothing on
/// stdout, and the scene's folder exactly as before.
inline void check_refused(const Scene& scene, const std::string& args, std::string message,
                          const std::string& stdout_to = "") {
  const auto before = snapshot(scene.dir.path);
  const Run r = scene.run(args, stdout_to);
  INFO("trident " << args << "\nstderr: " << r.err << "stdout: " << r.out.substr(0, 300));
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  const bool prefix = message.ends_with("...");
  if (prefix) message.resize(message.size() - 3);
  if (prefix) {
    CHECK(r.err.starts_with("trident: error: " + message));
  } else {
    CHECK(r.err == "trident: error: " + message + "\n");
  }
  CHECK(snapshot(scene.dir.path) == before);
}

/// `text` with its first `from` replaced by `to` (REQUIREd present).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace hardening_test
