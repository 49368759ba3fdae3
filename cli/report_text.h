#pragma once
/// Small text formats shared by the reporters (table, CSV, explain, SVG): written once here.
#include <concepts>
#include <string>
#include <string_view>

namespace trident::cli {

/// `digits` (an optional '-' then decimal digits) with a comma every three digits from the
/// right: "-1234567" -> "-1,234,567".
[[nodiscard]] std::string group_thousands(std::string_view digits);

/// `value` rounded to an integer, grouped: 1234567.4 -> "1,234,567".
[[nodiscard]] std::string thousands(double value);

/// An integer, grouped exactly (no trip through double): 1234567 -> "1,234,567".
template <std::integral Integer>
[[nodiscard]] std::string thousands(Integer value) {
  return group_thousands(std::to_string(value));
}

/// One CSV field per RFC 4180, always quoted: the text in double quotes, each embedded double
/// quote doubled (`say "hi"` -> `"say ""hi"""`); commas and line breaks stay inside the quotes.
[[nodiscard]] std::string csv_quoted(std::string_view text);

}  // namespace trident::cli
