// topology/text_check.h: every input is UTF-8 text without NUL bytes; the first bad byte is
// reported with its line and column.
#include <catch2/catch.hpp>
#include <string>

#include "topology/errors.h"
#include "topology/text_check.h"

using trident::check_text;
using trident::is_clean_text;

namespace {

std::string error_of(const std::string& text) {
  try {
    check_text(text, "f.yaml");
  } catch (const trident::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("text check: valid UTF-8 passes", "[text_check]") {
  CHECK(is_clean_text(""));
  CHECK(is_clean_text("name: h100\n"));
  CHECK(is_clean_text("caf\xc3\xa9"));               // U+00E9, 2 bytes
  CHECK(is_clean_text("\xe2\x82\xac"));              // U+20AC, 3 bytes
  CHECK(is_clean_text("\xf0\x9f\x98\x80"));          // U+1F600, 4 bytes
  CHECK(is_clean_text("\xf4\x8f\xbf\xbf"));          // U+10FFFF, the last code point
  CHECK(is_clean_text("\x1b[4mGPU0\x1b[0m\r\n\t"));  // control characters are text
  CHECK(error_of("a: 1\nb: 2\n").empty());
}

TEST_CASE("text check: NUL and invalid sequences are refused where they are", "[text_check]") {
  // "name: a" is 7 bytes, so the NUL is column 8 of line 1.
  CHECK(error_of(std::string("name: a\0b\n", 10)) ==
        "f.yaml:1: a NUL byte at column 8; expected text");
  // Line 2 starts after "ok\n"; "caf" is columns 1-3, the Latin-1 0xe9 column 4.
  CHECK(error_of("ok\ncaf\xe9\n") == "f.yaml:2: not UTF-8 text (byte 0xe9 at column 4)");
  CHECK_FALSE(is_clean_text("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(is_clean_text("\xe0\x80\xaf"));      // overlong, 3 bytes
  CHECK_FALSE(is_clean_text("\xed\xa0\x80"));      // U+D800, a surrogate
  CHECK_FALSE(is_clean_text("\xf4\x90\x80\x80"));  // U+110000, past the last code point
  CHECK_FALSE(is_clean_text("\xc3"));              // truncated
  CHECK_FALSE(is_clean_text("\x80"));              // a continuation byte alone
  CHECK_FALSE(is_clean_text("\xff"));
  CHECK(error_of("\xff") == "f.yaml:1: not UTF-8 text (byte 0xff at column 1)");
}

TEST_CASE("text check: one_line shows each control character or line break as '?'",
          "[text_check]") {
  CHECK(trident::one_line("plain key") == "plain key");
  CHECK(trident::one_line("a\nb\x1b[31m") == "a?b?[31m");  // newline, ESC: one byte each
  CHECK(trident::one_line("x\xc2\x85y") == "x?y");         // NEL, a C1 control: two bytes, one '?'
  CHECK(trident::one_line("x\xe2\x80\xa8y\x7f") == "x?y?");  // U+2028 (three bytes), DEL
  CHECK(trident::one_line("caf\xc3\xa9") == "caf\xc3\xa9");  // other UTF-8 is kept
  // Bidirectional controls reorder what a terminal shows: U+202E (RLO), U+2066 (LRI).
  CHECK(trident::one_line("a\xd8\x9c"
                          "b") == "a?b");  // U+061C ARABIC LETTER MARK
  CHECK(trident::one_line("a\xe2\x80\xae"
                          "b\xe2\x81\xa6"
                          "c") == "a?b?c");
  try {
    trident::check_one_line("H100\xe2\x80\xae", "f:1: name");
    FAIL("U+202E accepted");
  } catch (const trident::InputError& e) {
    CHECK(std::string(e.what()) ==
          "f:1: name: expected a string without control characters, got a bidirectional "
          "control at byte 5");
  }
  // Invisible characters make two keys or names look the same: U+200B ZERO WIDTH SPACE,
  // U+2060 WORD JOINER, U+FEFF (a byte-order mark past the file's start); ZWJ U+200D is kept
  // (scripts join with it).
  CHECK(trident::one_line("lay\xe2\x80\x8b"
                          "ers") == "lay?ers");
  CHECK(trident::one_line("\xef\xbb\xbf"
                          "dropout\xe2\x81\xa0") == "?dropout?");
  CHECK(trident::one_line("a\xe2\x80\x8d"
                          "b") ==
        "a\xe2\x80\x8d"
        "b");
  try {
    trident::check_one_line(
        "ll\xe2\x80\x8b"
        "ama",
        "f:1: name");
    FAIL("U+200B accepted");
  } catch (const trident::InputError& e) {
    CHECK(std::string(e.what()) ==
          "f:1: name: expected a string without control characters, got an invisible character "
          "at byte 3");
  }
}
