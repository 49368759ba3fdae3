#pragma once
/// Where the plan command writes. Writing is atomic: the text goes to a temporary file beside
/// the target, then is renamed over it, so an error never leaves a partial file.
#include <string>

namespace trident::cli {

/// The whole file; throws InputError naming the flag when it cannot be read. (Declared here
/// for the commands that include this header; defined with the flags in cli/cluster_args.cpp.)
[[nodiscard]] std::string read_input_file(const std::string& path, const std::string& flag);

/// Writes `text` to stdout when `path` is empty, else atomically to `path`. Throws
/// InputError "--output 'PATH': cannot write: REASON".
void write_output(const std::string& path, const std::string& text);

/// The current UTC time as ISO 8601 ("2026-12-01T10:00:00Z"), for calibration files.
[[nodiscard]] std::string now_iso8601();

}  // namespace trident::cli
