// Writing a run's outputs all or none (cli/output_file.h).
#include "cli/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "cli/input_file.h"
#include "topology/errors.h"

namespace trident::cli {

std::string now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

namespace {

namespace fs = std::filesystem;

/// How one output is written.
enum class Way { to_stdout, to_stderr, in_place, replace };

struct Target {
  const RunOutputs::Output* output;
  Way way = Way::replace;
  std::optional<struct stat> existing;  ///< the file it replaces or writes into
  std::string resolved;                 ///< replace: the real path (a symlink's target)
  bool standard_input = false;          ///< the file or pipe is this process's standard input
};

[[noreturn]] void cannot_write(const std::string& flag, const std::string& path, int error) {
  if (path.empty()) {
    throw InputError(std::string("standard output: cannot write: ") + std::strerror(error));
  }
  // A FIFO with no reader (O_NONBLOCK's ENXIO): refused, not waited on; said in words.
  struct stat info {};
  if (error == ENXIO && ::stat(path.c_str(), &info) == 0 && S_ISFIFO(info.st_mode)) {
    throw InputError(flag + " '" + path +
                     "': a FIFO with no reader (start the reader first: trident does not wait)");
  }
  throw InputError(flag + " '" + path + "': cannot write: " + std::strerror(error));
}

std::string path_of(const RunOutputs::Output& o) {
  return o.dir.empty() ? o.path : (fs::path(o.dir) / o.path).string();
}

/// 'PATH', or "standard output" for the default.
std::string shown(const RunOutputs::Output& o) {
  return o.path.empty() ? std::string("(standard output)") : fmt::format("'{}'", path_of(o));
}

/// The character devices an output may be written into (Linux's numbers, Documentation/
/// admin-guide/devices.txt): the sinks /dev/null, /dev/zero and /dev/full (1:3, 1:5, 1:7),
/// virtual consoles and serial lines (4:*), /dev/tty and /dev/console (5:0, 5:1),
/// pseudo-terminals (136-143:*) and USB serial lines (/dev/ttyACM* 166:*, /dev/ttyUSB* 188:*). Any
/// other is refused unopened: opening some has effects of its own (/dev/watchdog arms the watchdog,
/// /dev/ptmx makes a terminal, /dev/kmsg logs).
bool writable_device(dev_t device) {
  const unsigned int major_number = major(device);
  const unsigned int minor_number = minor(device);
  if (major_number == 1) return minor_number == 3 || minor_number == 5 || minor_number == 7;
  if (major_number == 5) return minor_number <= 1;
  return major_number == 4 || (major_number >= 136 && major_number <= 143) || major_number == 166 ||
         major_number == 188;
}

Target classify(const RunOutputs::Output& o) {
  Target t{&o, Way::replace, std::nullopt, ""};
  const std::string path = path_of(o);
  if (o.path.empty() || o.path == "-" || path == "/dev/stdout") {
    t.way = Way::to_stdout;
    return t;
  }
  if (path == "/dev/stderr") {
    t.way = Way::to_stderr;
    return t;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    // A symbolic link to nothing (or a loop of them) would be replaced by a file where the
    // link stood: refused, as a link whose target exists keeps the link.
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      throw InputError(o.flag + " '" + path +
                       "': a symbolic link whose target cannot be reached (" +
                       std::strerror(error) + "); give the target's own path");
    }
    t.resolved = path;  // new: created beside where it will live
    return t;
  }
  // This process's standard input (/dev/stdin, /proc/self/fd/0): a pipe written by trident
  // itself fills and waits for a reader that never comes; a file would be replaced. A
  // terminal is the terminal's (writing to it overwrites nothing).
  struct stat in {};
  t.standard_input = !S_ISCHR(info.st_mode) && ::fstat(STDIN_FILENO, &in) == 0 &&
                     in.st_dev == info.st_dev && in.st_ino == info.st_ino;
  t.existing = info;
  if (S_ISREG(info.st_mode)) {
    // Replaced by a rename, which asks the folder's permission, not the file's: a file its
    // owner made read-only is refused as the shell's `>` refuses it.
    if (::access(path.c_str(), W_OK) != 0) {
      throw InputError(o.flag + " '" + path + "': cannot write: " + std::strerror(errno));
    }
    std::error_code error;
    const fs::path real = fs::canonical(path, error);
    t.resolved = error ? path : real.string();
    return t;
  }
  if (S_ISFIFO(info.st_mode) || (S_ISCHR(info.st_mode) && writable_device(info.st_rdev))) {
    t.way = Way::in_place;
    return t;
  }
  if (S_ISCHR(info.st_mode)) {
    throw InputError(fmt::format(
        "{} '{}': is a character device other than a terminal or /dev/null (device {}:{}); "
        "expected a regular file, a FIFO, a terminal, /dev/null or - for standard output",
        o.flag, path, major(info.st_rdev), minor(info.st_rdev)));
  }
  throw InputError(o.flag + " '" + path + "': is " + file_kind(info.st_mode) +
                   "; expected a regular file, a FIFO, a terminal, /dev/null or - for standard "
                   "output");
}

bool same_file(const struct stat& a, unsigned long long device, unsigned long long inode) {
  return static_cast<unsigned long long>(a.st_dev) == device &&
         static_cast<unsigned long long>(a.st_ino) == inode;
}

/// Two targets name the same file: the same inode, or the same path once made absolute.
bool same_target(const Target& a, const Target& b) {
  if (a.way == Way::to_stdout || b.way == Way::to_stdout) {
    return a.way == b.way;
  }
  if (a.existing && b.existing) {
    return a.existing->st_dev == b.existing->st_dev && a.existing->st_ino == b.existing->st_ino;
  }
  std::error_code e1;
  std::error_code e2;
  // Absolute first: weakly_canonical leaves a relative path with no existing part as written
  // ("a"), so it would not meet "./a" made absolute.
  const fs::path pa = fs::weakly_canonical(fs::absolute(path_of(*a.output), e1), e1);
  const fs::path pb = fs::weakly_canonical(fs::absolute(path_of(*b.output), e2), e2);
  return !e1 && !e2 && pa == pb;
}

/// Where a stream redirected onto an input was opened with `>` (not `>>`) and the file is now
/// empty, the shell emptied it before this run started: said, so the user restores it.
std::string emptied_note(int fd, const struct stat& st) {
  const int flags = ::fcntl(fd, F_GETFL);
  // `>` opens write-only without O_APPEND; `>>` appends and `<>` reads too: neither empties.
  if (st.st_size != 0 || flags < 0 || (flags & O_APPEND) != 0 || (flags & O_ACCMODE) != O_WRONLY) {
    return "";
  }
  return " (the shell's > redirection emptied it before this run started: restore it from a "
         "copy)";
}

std::vector<Target> classify_all(const std::vector<RunOutputs::Output>& outputs,
                                 const std::vector<RunOutputs::Input>& inputs) {
  std::vector<Target> targets;
  for (const auto& o : outputs) {
    Target t = classify(o);
    const std::string path = path_of(o);
    // Standard output or error redirected to a file (`>> m.yaml`): that file, as for any path.
    struct stat stream {};
    const int stream_fd = t.way == Way::to_stdout   ? STDOUT_FILENO
                          : t.way == Way::to_stderr ? STDERR_FILENO
                                                    : -1;
    if (stream_fd >= 0 && ::fstat(stream_fd, &stream) == 0 && S_ISREG(stream.st_mode)) {
      t.existing = stream;
    }
    for (const auto& in : inputs) {
      if (t.existing && same_file(*t.existing, in.device, in.inode)) {
        const std::string input =
            in.path == "-" ? std::string(" (standard input)") : fmt::format(" '{}'", in.path);
        throw InputError(fmt::format("{} {}: is the input {}{}; refusing to overwrite an input{}",
                                     o.flag, shown(o), in.flag, input,
                                     stream_fd >= 0 ? emptied_note(stream_fd, *t.existing) : ""));
      }
    }
    if (t.standard_input) {  // not read as an input (that is said above): still never written
      throw InputError(o.flag + " '" + path +
                       "': is this run's standard input; refusing to write into it");
    }
    for (const auto& other : targets) {
      if (same_target(t, other)) {
        if (t.way == Way::to_stdout) {  // the other is standard output too, given or by default
          throw InputError(o.flag + " " + shown(o) + ": standard output already carries " +
                           other.output->flag + "'s text (where it goes without " +
                           other.output->flag + " FILE); give one of them a FILE");
        }
        throw InputError(o.flag + " " + shown(o) + ": is also " + other.output->flag + " " +
                         shown(*other.output) + "; give each output its own file");
      }
    }
    targets.push_back(std::move(t));
  }
  // Whatever the run prints (a table, a summary) goes to standard output: redirected onto an
  // input (`calibrate --nccl-tests a.log >> a.log`), refused as an output onto it is.
  struct stat out {};
  if (::fstat(STDOUT_FILENO, &out) == 0 && S_ISREG(out.st_mode)) {
    for (const auto& in : inputs) {
      if (!same_file(out, in.device, in.inode)) continue;
      const std::string input =
          in.path == "-" ? std::string(" (standard input)") : fmt::format(" '{}'", in.path);
      throw InputError(fmt::format(
          "standard output: is the input {}{}; refusing to write the run's text into an input{}",
          in.flag, input, emptied_note(STDOUT_FILENO, out)));
    }
  }
  return targets;
}

/// Writes all of `text` to `fd`; returns 0 or the errno of the failure.
int write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

/// What a commit has done so far, undone when it fails before the renames.
struct Staged {
  std::vector<std::pair<std::string, const Target*>> temps;  ///< temporary file, its target
  std::vector<std::string> made_dirs;
  void undo() const {
    for (const auto& [temp, target] : temps) ::unlink(temp.c_str());
    for (const auto& dir : made_dirs) ::rmdir(dir.c_str());
  }
};

void make_dir(const Target& t, Staged& staged) {
  const std::string& dir = t.output->dir;
  struct stat info {};
  if (::stat(dir.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) return;
    throw InputError(t.output->flag + " '" + dir + "': is " + file_kind(info.st_mode) +
                     "; expected a directory");
  }
  if (::mkdir(dir.c_str(), 0777) != 0) {
    throw InputError(t.output->flag + " '" + dir +
                     "': cannot create the directory: " + std::strerror(errno));
  }
  staged.made_dirs.push_back(dir);
}

/// The temporary file: a short name in the target's directory, so a 255-byte name still fits.
void stage(const Target& t, Staged& staged) {
  if (!t.output->dir.empty()) make_dir(t, staged);
  const fs::path target(t.resolved);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string pattern = (dir / ".trident-XXXXXX").string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) cannot_write(t.output->flag, path_of(*t.output), errno);
  staged.temps.emplace_back(pattern, &t);
  mode_t mode = 0;
  if (t.existing) {
    mode = t.existing->st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  int error = write_all(fd, t.output->text);
  if (error == 0 && ::fchmod(fd, mode) != 0) error = errno;
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) cannot_write(t.output->flag, path_of(*t.output), error);
}

/// A FIFO or device: opened without waiting (a FIFO with no reader fails with ENXIO), and
/// a terminal without becoming this process's controlling terminal (O_NOCTTY).
int write_in_place(const Target& t) {
  const int fd = ::open(path_of(*t.output).c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  int error = write_all(fd, t.output->text);
  if (::close(fd) != 0 && error == 0) error = errno;
  return error;
}

int write_stream(std::FILE* stream, const std::string& text) {
  errno = 0;
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stream) != text.size()) {
    return errno != 0 ? errno : EIO;
  }
  if (std::fflush(stream) != 0 || std::ferror(stream)) return errno != 0 ? errno : EIO;
  return 0;
}

void write_streams_and_devices(const std::vector<Target>& targets, const std::string& printed) {
  // Devices and FIFOs first: the ones that fail (/dev/full, a FIFO without a reader) fail
  // before anything reaches standard output or error, whose text ("wrote FILE") would say
  // otherwise.
  for (const auto& t : targets) {
    if (t.way != Way::in_place) continue;
    if (const int error = write_in_place(t))
      cannot_write(t.output->flag, path_of(*t.output), error);
  }
  if (const int error = write_stream(stdout, printed)) cannot_write("", "", error);
  for (const auto& t : targets) {
    int error = 0;
    if (t.way == Way::to_stdout) error = write_stream(stdout, t.output->text);
    if (t.way == Way::to_stderr) error = write_stream(stderr, t.output->text);
    if (error != 0)
      cannot_write(t.output->flag, t.way == Way::to_stdout ? "" : path_of(*t.output), error);
  }
}

}  // namespace

void RunOutputs::add_input(const std::string& flag, const std::string& path) {
  struct stat info {};
  if (path.empty()) return;
  // "-" reads standard input: one input can; when that is a file (`< FILE`), the file is it.
  if (path == "-") {
    if (!stdin_flag_.empty()) {
      throw InputError(stdin_flag_ == flag
                           ? flag + ": '-' (standard input) given more than once; give it once"
                           : stdin_flag_ + " and " + flag +
                                 " both read standard input ('-'); give '-' to one of them only");
    }
    stdin_flag_ = flag;
    if (::fstat(STDIN_FILENO, &info) != 0 || !S_ISREG(info.st_mode)) return;
  } else if (::stat(path.c_str(), &info) != 0) {
    return;
  }
  inputs_.push_back({flag, path, static_cast<unsigned long long>(info.st_dev),
                     static_cast<unsigned long long>(info.st_ino)});
}

void RunOutputs::add_output(const std::string& flag, const std::string& path) {
  outputs_.push_back({flag, path == "-" ? "" : path, "", ""});
}

void RunOutputs::add_output_in_dir(const std::string& flag, const std::string& dir,
                                   const std::string& file) {
  // "-" is standard output for every other output flag: a directory of that name would surprise.
  if (dir == "-") {
    throw InputError(fmt::format("{} '-': expected a directory (it writes {} there)", flag, file));
  }
  outputs_.push_back({flag, file, dir, ""});
}

void RunOutputs::check() const { (void)classify_all(outputs_, inputs_); }

void RunOutputs::set_text(const std::string& flag, std::string text) {
  // A flag names one output; should two match, each gets the text (the last one moved in, so
  // a ranking of every plan is not held twice).
  Output* last = nullptr;
  for (auto& o : outputs_) {
    if (o.flag != flag) continue;
    if (last != nullptr) last->text = text;
    last = &o;
  }
  if (last != nullptr) last->text = std::move(text);
}

void RunOutputs::print(const std::string& text) { printed_ += text; }

void RunOutputs::commit() {
  const std::vector<Target> targets = classify_all(outputs_, inputs_);
  Staged staged;
  try {
    for (const auto& t : targets) {
      if (t.way == Way::replace) stage(t, staged);
    }
    write_streams_and_devices(targets, printed_);
  } catch (...) {
    staged.undo();
    throw;
  }
  for (std::size_t i = 0; i < staged.temps.size(); ++i) {
    const auto& [temp, target] = staged.temps[i];
    if (std::rename(temp.c_str(), target->resolved.c_str()) != 0) {
      const int error = errno;
      for (std::size_t j = i; j < staged.temps.size(); ++j) ::unlink(staged.temps[j].first.c_str());
      cannot_write(target->output->flag, path_of(*target->output), error);
    }
  }
}

}  // namespace trident::cli
