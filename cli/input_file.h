#pragma once
/// Reading an input file named on the command line: a regular file or `-` (standard input),
/// at most kMaxInputBytes, UTF-8 text without NUL bytes. A directory, a FIFO, a device
/// (/dev/zero, /dev/urandom) or a socket is refused before a byte is read, so no input can
/// block, grow memory without bound or feed binary to a parser.
#include <cstddef>
#include <string>

namespace trident::cli {

/// The largest input read: 16 MiB (the largest real input, an NCCL topology dump of a
/// 72-GPU domain, is ~200 KB; nccl-tests logs are a few KB).
inline constexpr std::size_t kMaxInputBytes = std::size_t{16} << 20;
/// The largest model or stack file read: 1 MiB (the built-in ones are under 20 KB). A YAML
/// parse costs about a second and 130 MB a MiB here, and a stack's `base:` chain holds up to 8.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

/// The whole file (or standard input for "-"). Throws InputError naming the flag and the path:
///   "--model 'x': cannot read the file: No such file or directory"
///   "--model 'dir': is a directory; expected a regular file (or - for standard input)"
///   "--model '/dev/zero': is a character device; expected a regular file (or - ...)"
///   "--model 'big': larger than 16 MiB; expected a configuration file"
///   "PATH:LINE: not UTF-8 text (byte 0xff at column 7)"
[[nodiscard]] std::string read_input_file(const std::string& path, const std::string& flag,
                                          std::size_t max_bytes = kMaxInputBytes);

/// The name errors give the input: "<stdin>" for "-", else the path.
[[nodiscard]] std::string input_source(const std::string& path);

/// What kind of file `mode` (struct stat's st_mode) is, in words ("a FIFO", "a directory").
[[nodiscard]] const char* file_kind(unsigned mode);

}  // namespace trident::cli
