#pragma once
/// Where a value of a JSON text sits: its line, found by the key path the JSON readers name it
/// with (json_reader::Path, "plans[0].comm.tp.bytes_per_call"), so their one-line errors can say
/// "FILE:LINE: KEY: ..." as the YAML readers do. nlohmann's DOM keeps no positions, so the text
/// is scanned again, only when a reader fails.
#include <string>
#include <string_view>

namespace trident::json_reader {

/// The 1-based line where the value at `key` starts ("" is the document), or, when no value has
/// that path (a missing member or element), the line of its nearest ancestor that has one.
/// Names are decoded as nlohmann decodes them (\uXXXX too). `text` must be JSON nlohmann
/// accepted; 0 if nothing matches. Linear in the text, memory in the key's depth.
[[nodiscard]] int line_of(std::string_view text, const std::string& key);

}  // namespace trident::json_reader
