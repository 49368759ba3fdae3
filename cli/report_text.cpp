#include "cli/report_text.h"

#include <fmt/format.h>

namespace trident::cli {

std::string group_thousands(std::string_view digits) {
  const std::size_t sign = !digits.empty() && digits.front() == '-' ? 1 : 0;
  std::string out(digits.substr(0, sign));
  for (std::size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string thousands(double value) { return group_thousands(fmt::format("{:.0f}", value)); }

std::string csv_quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace trident::cli
