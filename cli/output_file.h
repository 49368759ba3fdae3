#pragma once
/// Everything one command run writes, written all or none (docs/hardening.md, "Outputs").
///
/// A command declares its inputs and outputs first (`check()` refuses a bad target before any
/// work is done), builds every text, then commits:
///   - a regular file (new or existing) is written to a temporary file beside it, checked
///     (every write, fsync and close), given the existing file's mode (new: 0666 less the
///     umask) and renamed over the target; a symlink's target is replaced, the link stays;
///   - "" or "-" (or /dev/stdout) is standard output; /dev/stderr is standard error;
///   - a FIFO or a character device the user names (/dev/null) is written in place, never
///     renamed over, before anything goes to standard output or error (so /dev/full or a FIFO
///     without a reader fails with nothing printed; a standard output that fails after them
///     leaves them written, each whole); a FIFO without a reader is an error, not a hang;
///   - a directory, a block device or a socket is refused;
///   - an output that is an input of the same run (same device and inode), or that another
///     output of the run also names, is refused;
///   - when anything fails before the renames, every temporary file (and a --report
///     directory the run created) is removed: no partial output is left.
#include <cstddef>
#include <string>
#include <vector>

namespace trident::cli {

/// The current UTC time as ISO 8601 ("2026-12-01T10:00:00Z"), for calibration files.
[[nodiscard]] std::string now_iso8601();

class RunOutputs {
 public:
  /// An input file of the run; "" is ignored, so is a path that does not exist (its read
  /// fails on its own). "-" is standard input: recorded when it is a regular file (`< FILE`),
  /// so `--output FILE` (or /dev/stdin) cannot overwrite it. Throws InputError when a second
  /// input of the run is "-" too (one stream cannot be read twice).
  void add_input(const std::string& flag, const std::string& path);
  /// An output; "" or "-" is standard output.
  void add_output(const std::string& flag, const std::string& path);
  /// An output FILE inside DIR (`--report DIR`): DIR is created at commit when missing (its
  /// parent must exist) and removed again when the commit fails.
  void add_output_in_dir(const std::string& flag, const std::string& dir, const std::string& file);
  /// Throws InputError for a target commit would refuse ("--output 'm.yaml': is the input
  /// --model 'm.yaml'; refusing to overwrite an input").
  void check() const;
  /// The text of the output declared with `flag`.
  void set_text(const std::string& flag, std::string text);
  /// Text for standard output ahead of the outputs (a summary), written at commit.
  void print(const std::string& text);
  /// Writes every output or none. Throws InputError "FLAG 'PATH': cannot write: REASON" or
  /// "standard output: cannot write: REASON".
  void commit();

  struct Input {
    std::string flag;
    std::string path;
    unsigned long long device = 0;
    unsigned long long inode = 0;
  };
  struct Output {
    std::string flag;
    std::string path;  ///< as given; "" = standard output
    std::string dir;   ///< add_output_in_dir: the directory to create when missing
    std::string text;
  };

 private:
  std::vector<Input> inputs_;
  std::string stdin_flag_;  ///< the input flag reading standard input ("-"), if one does
  std::vector<Output> outputs_;
  std::string printed_;
};

}  // namespace trident::cli
