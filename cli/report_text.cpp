#include "cli/report_text.h"

#include <fmt/format.h>

#include <cmath>

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

std::string hsdp_split(const ParallelConfig& c) {
  return fmt::format("{}x{}", c.dp_shard, c.dp / c.dp_shard);
}

std::string rank_order_text(RankOrder order, const ParallelConfig& c) {
  if (order == RankOrder::tp_pp_dp) return "tp-pp-dp";
  return c.cp > 1 ? "tp-cp-dp-pp" : "tp-dp-pp";
}

std::string recompute_text(const ParallelConfig& c) {
  if (c.recompute == Recompute::full && c.recompute_layers > 0) {
    return fmt::format("full:{}", c.recompute_layers);
  }
  return to_string(c.recompute);
}

std::string split_summary(const ParallelConfig& c, std::string_view zero_label) {
  std::string text = fmt::format("TP{} PP{} DP{} mb{} VP{} {} {}{} SP {}", c.tp, c.pp, c.dp,
                                 c.micro_batch, c.virtual_stages, recompute_text(c), zero_label,
                                 c.zero, c.sequence_parallel ? "on" : "off");
  if (c.cp > 1) text += fmt::format(" CP{}", c.cp);
  if (c.ep > 1) text += fmt::format(" EP{}", c.ep);
  if (c.hybrid_shard()) text += " HSDP " + hsdp_split(c);
  if (c.pinned_stage_ends()) {
    text += fmt::format(" ends {}|{}", c.first_stage_layers, c.last_stage_layers);
  }
  return text;
}

std::string error_percent(double fraction) {
  const double tenths = std::round(1000.0 * fraction);
  return std::fmod(tenths, 10.0) == 0.0 ? fmt::format("{:.0f}%", tenths / 10.0)
                                        : fmt::format("{:.1f}%", tenths / 10.0);
}

std::string join_words(const std::vector<std::string>& items, std::string_view separator,
                       std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? last : separator;
    out += items[i];
  }
  return out;
}

}  // namespace trident::cli
