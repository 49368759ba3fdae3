// cli/output_file.h and cli/input_file.h: a run's outputs are written all or none and never
// over an input or a special file; inputs are regular files of text. (End to end, with the
// binary: tests/test_hardening.cpp.)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/input_file.h"
#include "cli/output_file.h"
#include "cli_runner.h"
#include "topology/errors.h"

namespace fs = std::filesystem;
using cli_test::slurp;
using cli_test::TempDir;
using trident::InputError;
using trident::cli::read_input_file;
using trident::cli::RunOutputs;

namespace {

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = (dir.path / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("outputs: written with the mode of the file they replace", "[output_file]") {
  TempDir dir;
  const std::string a = write(dir, "a.txt", "old");
  fs::permissions(a, fs::perms::owner_read | fs::perms::owner_write);
  const std::string b = (dir.path / "b.txt").string();
  RunOutputs files;
  files.add_output("--output", a);
  files.add_output("--svg", b);
  files.set_text("--output", "new a");
  files.set_text("--svg", "new b");
  files.commit();
  CHECK(slurp(a) == "new a");
  CHECK(slurp(b) == "new b");
  CHECK(fs::status(a).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  // Only a.txt and b.txt: no temporary file is left.
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 2);
}

TEST_CASE("outputs: all or none", "[output_file]") {
  TempDir dir;
  const std::string a = (dir.path / "a.txt").string();
  RunOutputs files;
  files.add_output("--output", a);
  files.add_output_in_dir("--report", (dir.path / "missing" / "rep").string(), "index.html");
  files.set_text("--output", "a");
  files.set_text("--report", "<html>");
  CHECK(error_of([&] {
          files.commit();
        }).ends_with("cannot create the directory: No such file or directory"));
  CHECK(fs::is_empty(dir.path));  // a.txt was staged, then removed with the failure
}

TEST_CASE("outputs: an input or another output of the run is refused up front", "[output_file]") {
  TempDir dir;
  const std::string m = write(dir, "m.yaml", "name: m\n");
  fs::create_hard_link(m, dir.path / "hard.yaml");
  RunOutputs files;
  files.add_input("--model", m);
  files.add_output("--output", (dir.path / "hard.yaml").string());
  CHECK(error_of([&] {
          files.check();
        }).ends_with("is the input --model '" + m + "'; refusing to overwrite an input"));
  RunOutputs twice;
  twice.add_output("--output", (dir.path / "x").string());
  twice.add_output("--svg", (dir.path / "." / "x").string());
  CHECK(error_of([&] { twice.check(); }).ends_with("; give each output its own file"));
  RunOutputs stdout_twice;
  stdout_twice.add_output("--output", "");
  stdout_twice.add_output("--svg", "-");
  // --output need not have been given: standard output is where its text goes without it.
  CHECK(error_of([&] { stdout_twice.check(); }) ==
        "--svg (standard output): standard output already carries --output's text (where it "
        "goes without --output FILE); give one of them a FILE");
}

TEST_CASE("outputs: a character device only where writing is all it does", "[output_file]") {
  // /dev/null (1:3) is written in place; /dev/random (1:8) and /dev/ptmx (5:2, opening it
  // makes a new terminal) are refused before anything is opened or written.
  RunOutputs sink;
  sink.add_output("--output", "/dev/null");
  sink.set_text("--output", "discarded");
  CHECK_NOTHROW(sink.commit());
  for (const std::string device : {"/dev/random", "/dev/ptmx"}) {
    if (!fs::exists(device)) continue;
    RunOutputs files;
    files.add_output("--svg", device);
    CHECK(error_of([&] { files.check(); })
              .starts_with("--svg '" + device +
                           "': is a character device other than a "
                           "terminal or /dev/null (device "));
  }
  // A pseudo-terminal (136-143:*) is a terminal: its text reaches the other side.
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
    WARN("no pseudo-terminal here: the terminal case is not checked");
    if (master >= 0) ::close(master);
    return;
  }
  const std::string terminal = ::ptsname(master);
  RunOutputs files;
  files.add_output("--output", terminal);
  files.set_text("--output", "to the terminal");
  CHECK_NOTHROW(files.commit());
  char read_back[64] = {};
  const ssize_t n = ::read(master, read_back, sizeof(read_back) - 1);
  ::close(master);
  CHECK(std::string(read_back, n > 0 ? static_cast<std::size_t>(n) : 0) == "to the terminal");
}

TEST_CASE("inputs: regular files of text, at most 16 MiB", "[input_file]") {
  TempDir dir;
  CHECK(read_input_file(write(dir, "ok.yaml", "a: 1\n"), "--model") == "a: 1\n");
  const std::string d = dir.path.string();
  CHECK(error_of([&] { (void)read_input_file(d, "--model"); }) ==
        "--model '" + d + "': is a directory; expected a regular file (or - for standard input)");
  const std::string fifo = (dir.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error_of([&] { (void)read_input_file(fifo, "--cluster"); }) ==
        "--cluster '" + fifo + "': is a FIFO; expected a regular file (or - for standard input)");
  const std::string big = write(dir, "big", std::string(trident::cli::kMaxInputBytes + 1, 'x'));
  CHECK(error_of([&] { (void)read_input_file(big, "--model"); }) ==
        "--model '" + big + "': larger than 16 MiB; expected a configuration file or log");
  const std::string exact = write(dir, "exact", std::string(trident::cli::kMaxInputBytes, 'x'));
  CHECK(read_input_file(exact, "--model").size() == trident::cli::kMaxInputBytes);
}
