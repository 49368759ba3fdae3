// cli/report_text.h: the one thousands separator and the one CSV quoting of the reporters.
#include <catch2/catch.hpp>
#include <string>

#include "cli/report_text.h"

using trident::cli::csv_quoted;
using trident::cli::group_thousands;
using trident::cli::thousands;

TEST_CASE("thousands: a comma every three digits from the right, sign kept", "[report_text]") {
  CHECK(group_thousands("") == "");
  CHECK(group_thousands("7") == "7");
  CHECK(group_thousands("999") == "999");
  CHECK(group_thousands("1000") == "1,000");
  CHECK(group_thousands("-1000") == "-1,000");  // no comma right after the sign
  CHECK(group_thousands("-100") == "-100");
  CHECK(group_thousands("123456") == "123,456");
  CHECK(group_thousands("-1234567") == "-1,234,567");
  // Doubles are rounded to an integer first: 1234567.5 -> 1234568 (round half to even of
  // the exactly representable .5 gives 1234568), 999.4 -> 999, 999.6 -> 1000.
  CHECK(thousands(1234567.5) == "1,234,568");
  CHECK(thousands(999.4) == "999");
  CHECK(thousands(999.6) == "1,000");
  CHECK(thousands(-2500000.0) == "-2,500,000");
  // Integers are exact past 2^53 (9007199254740993 is not a double).
  CHECK(thousands(9007199254740993LL) == "9,007,199,254,740,993");
  CHECK(thousands(512) == "512");
  CHECK(thousands(-4096) == "-4,096");
}

TEST_CASE("csv_quoted: RFC 4180 field, embedded quotes doubled", "[report_text]") {
  CHECK(csv_quoted("") == "\"\"");
  CHECK(csv_quoted("plain") == "\"plain\"");
  CHECK(csv_quoted("a, b") == "\"a, b\"");  // the comma stays inside the quotes
  // say "hi" -> "say ""hi""" : the two embedded quotes doubled, one pair around the field.
  CHECK(csv_quoted("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_quoted("\"") == "\"\"\"\"");
  CHECK(csv_quoted("two\nlines") == "\"two\nlines\"");
}
