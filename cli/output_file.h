#pragma once
/// Files the plan command reads and writes. Writing is atomic: the text goes to a temporary
/// file beside the target, then is renamed over it, so an error never leaves a partial file.
#include <string>

namespace trident::cli {

/// The whole file; throws InputError "FLAG 'PATH': cannot read: REASON".
[[nodiscard]] std::string read_input_file(const std::string& path, const std::string& flag);

/// Writes `text` to stdout when `path` is empty, else atomically to `path`. Throws
/// InputError "--output 'PATH': cannot write: REASON".
void write_output(const std::string& path, const std::string& text);

}  // namespace trident::cli
