// Writing outputs atomically (temporary file + rename).
#include "cli/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

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

[[noreturn]] void cannot_write(const std::string& path, int error) {
  throw InputError("--output '" + path + "': cannot write: " + std::strerror(error));
}

/// Writes all of `text` to `fd`; returns 0 or the errno of the failure.
int write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) == 0 ? 0 : errno;
}

}  // namespace

void write_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::string pattern = path + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) cannot_write(path, errno);
  // mkstemp creates 0600; give the file the mode a plain open() would (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  const int error = write_all(fd, text);
  ::close(fd);
  if (error != 0 || std::rename(name.data(), path.c_str()) != 0) {
    const int reason = error != 0 ? error : errno;
    std::remove(name.data());
    cannot_write(path, reason);
  }
}

}  // namespace trident::cli
