// Reading input files (cli/input_file.h): regular files or standard input, bounded, text only.
#include "cli/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "topology/errors.h"
#include "topology/text_check.h"

namespace trident::cli {

const char* file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string input_source(const std::string& path) { return path == "-" ? "<stdin>" : path; }

namespace {

[[noreturn]] void refuse(const std::string& flag, const std::string& path, const std::string& why) {
  throw InputError(flag + " '" + path + "': " + why);
}

/// Reads at most max_bytes + 1 bytes of `fd` (one more tells "too large").
std::string read_bounded(int fd, const std::string& flag, const std::string& path,
                         std::size_t max_bytes) {
  std::string text;
  char buffer[65536];
  while (text.size() <= max_bytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) refuse(flag, path, std::string("cannot read the file: ") + std::strerror(errno));
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  refuse(flag, path,
         fmt::format("larger than {} MiB; expected a configuration file{}", max_bytes >> 20,
                     max_bytes == kMaxInputBytes ? " or log" : ""));
}

/// Closes the descriptor it opened on every path out; standard input it only reads. A file
/// opened while standard output was closed (`>&-`) takes descriptor 1: closed again here, so
/// standard output is not the input for the rest of the run.
struct Fd {
  int fd;
  bool owned;
  ~Fd() {
    if (owned && fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& path, const std::string& flag,
                            std::size_t max_bytes) {
  const bool from_stdin = path == "-";
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  const Fd file{from_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC),
                !from_stdin};
  if (file.fd < 0) refuse(flag, path, std::string("cannot read the file: ") + std::strerror(errno));
  if (!from_stdin) {
    struct stat info {};
    if (::fstat(file.fd, &info) != 0) {
      refuse(flag, path, std::string("cannot read the file: ") + std::strerror(errno));
    }
    if (!S_ISREG(info.st_mode)) {
      refuse(flag, path,
             std::string("is ") + file_kind(info.st_mode) +
                 "; expected a regular file (or - for standard input)");
    }
    const int flags = ::fcntl(file.fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(file.fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  std::string text = read_bounded(file.fd, flag, from_stdin ? "-" : path, max_bytes);
  check_text(text, input_source(path));
  return text;
}

}  // namespace trident::cli
