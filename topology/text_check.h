#pragma once
/// Every input file is text: UTF-8 without NUL bytes. Checked once, before any parser sees the
/// bytes, so no parser has to cope with a NUL inside a key or a name that cannot be written
/// back as JSON.
#include <string>
#include <string_view>

namespace trident {

/// Throws InputError "SOURCE:LINE: not UTF-8 text (byte 0xff at column 7)" or "SOURCE:LINE: a
/// NUL byte at column 3; expected text" at the first offending byte (LINE and column 1-based).
void check_text(std::string_view text, const std::string& source);

/// True when `text` is valid UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
/// U+10FFFF) without NUL bytes.
[[nodiscard]] bool is_clean_text(std::string_view text);

/// Throws InputError "WHERE: expected a string without control characters, got byte 0x0a at
/// byte 3" (or "got a line-breaking character": a C1 control, U+2028, U+2029; "a bidirectional
/// control"; "an invisible character": U+200B, U+2060, U+FEFF), then "WHERE:
/// expected UTF-8 text", for a string value read from a file: names reach tables, JSON, SVG
/// and launch scripts, where any of these would split a line. The value is not echoed.
void check_one_line(std::string_view text, const std::string& where);

/// True when check_one_line would accept `text` (a reader checks first and builds the error's
/// WHERE only when it fails).
[[nodiscard]] bool is_one_line(std::string_view text);

/// `text` with each control character or line break (as check_one_line finds them) replaced
/// by '?': for echoing a key the reader does not know, which no check has cleaned.
[[nodiscard]] std::string one_line(std::string_view text);

}  // namespace trident
