#include "topology/text_check.h"

#include <fmt/format.h>

#include <cstddef>

#include "topology/errors.h"

namespace trident {

namespace {

/// Length of the valid UTF-8 sequence starting at `at`, or 0 when it is not one (RFC 3629
/// table 3-7: the second byte's range depends on the first byte).
std::size_t sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

/// Offset of the first NUL or invalid byte; npos when the text is clean.
std::size_t first_bad_byte(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    if (text[at] == '\0') return at;
    const std::size_t length = sequence_length(text, at);
    if (length == 0) return at;
    at += length;
  }
  return std::string_view::npos;
}

}  // namespace

bool is_clean_text(std::string_view text) { return first_bad_byte(text) == std::string_view::npos; }

void check_text(std::string_view text, const std::string& source) {
  const std::size_t at = first_bad_byte(text);
  if (at == std::string_view::npos) return;
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  const std::size_t column = at - line_start + 1;
  if (text[at] == '\0') {
    throw InputError(
        fmt::format("{}:{}: a NUL byte at column {}; expected text", source, line, column));
  }
  throw InputError(fmt::format("{}:{}: not UTF-8 text (byte 0x{:02x} at column {})", source, line,
                               static_cast<unsigned char>(text[at]), column));
}

namespace {

/// U+200E, U+200F, U+202A-U+202E, U+2066-U+2069 (E2 80 8E..; E2 81 A6..): bidirectional
/// controls, which reorder what a terminal shows (a name can read as another).
bool bidi_control(int next, int third) {
  if (next == 0x80) return third == 0x8e || third == 0x8f || (third >= 0xaa && third <= 0xae);
  return next == 0x81 && third >= 0xa6 && third <= 0xa9;
}

/// U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER (E2 80 8B; E2 81 A0) and U+FEFF (EF BB BF, a
/// byte-order mark past the file's start): invisible, so `lay<U+200B>ers` prints as `layers`.
bool invisible(int byte, int next, int third) {
  if (byte == 0xe2) return (next == 0x80 && third == 0x8b) || (next == 0x81 && third == 0xa0);
  return byte == 0xef && next == 0xbb && third == 0xbf;
}

enum class ControlKind { none, byte, line_break, bidi, invisible };

/// A control character or line break starting at `text[i]`: what it is (a C0 control or DEL;
/// a C1 control, U+2028, U+2029; a bidirectional control) and its length in bytes.
struct Control {
  ControlKind kind = ControlKind::none;
  std::size_t length = 0;
};

Control control_at(std::string_view text, std::size_t i) {
  const auto byte = static_cast<unsigned char>(text[i]);
  const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
  const auto third = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
  if (byte < 0x20 || byte == 0x7f) return {ControlKind::byte, 1};
  if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) return {ControlKind::line_break, 2};
  if (byte == 0xe2 && next == 0x80 && (third == 0xa8 || third == 0xa9)) {
    return {ControlKind::line_break, 3};
  }
  if (byte == 0xe2 && bidi_control(next, third)) return {ControlKind::bidi, 3};
  if (invisible(byte, next, third)) return {ControlKind::invisible, 3};
  if (byte == 0xd8 && next == 0x9c) return {ControlKind::bidi, 2};  // U+061C ARABIC LETTER MARK
  return {};
}

}  // namespace

void check_one_line(std::string_view text, const std::string& where) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const Control control = control_at(text, i);
    if (control.kind == ControlKind::none) continue;
    const std::string what =
        control.kind == ControlKind::bidi        ? std::string("a bidirectional control")
        : control.kind == ControlKind::invisible ? std::string("an invisible character")
        : control.kind == ControlKind::line_break
            ? std::string("a line-breaking character")
            : fmt::format("byte 0x{:02x}", static_cast<unsigned char>(text[i]));
    throw InputError(
        fmt::format("{}: expected a string without control characters, got {} at "
                    "byte {}",
                    where, what, i + 1));
  }
  if (!is_clean_text(text)) throw InputError(where + ": expected UTF-8 text");
}

bool is_one_line(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (control_at(text, i).kind != ControlKind::none) return false;
  }
  return is_clean_text(text);
}

std::string one_line(std::string_view text) {
  std::string shown;
  shown.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const Control control = control_at(text, i);
    shown += control.kind == ControlKind::none ? text[i] : '?';
    i += control.kind == ControlKind::none ? 1 : control.length;
  }
  return shown;
}

}  // namespace trident
