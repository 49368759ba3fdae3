#pragma once
/// Small text formats shared by the reporters (table, CSV, explain, SVG): written once here.
#include <concepts>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/parallel_config.h"
#include "costmodel/placement.h"

namespace trident::cli {

/// `digits` (an optional '-' then decimal digits) with a comma every three digits from the
/// right: "-1234567" -> "-1,234,567".
[[nodiscard]] std::string group_thousands(std::string_view digits);

/// A measured error (a fraction) as the percent the band uses, one decimal where it has one:
/// 0.059 -> "5.9%", 0.06 -> "6%" (rounded to a whole percent, 4.5% read as 4%).
[[nodiscard]] std::string error_percent(double fraction);

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

/// An HSDP split, "8x64": DP ranks per shard group x replicas (c.hybrid_shard()).
[[nodiscard]] std::string hsdp_split(const ParallelConfig& c);

/// The rank order in words, CP beside TP where the split has it (Megatron-Core's tp-cp-dp-pp,
/// costmodel/placement.h): "tp-dp-pp", "tp-cp-dp-pp", "tp-pp-dp". The JSON's and the CSV's
/// `rank_order` keep the two orders' names (docs/cli.md), which validate reads back.
[[nodiscard]] std::string rank_order_text(RankOrder order, const ParallelConfig& c);

/// The recompute knob in a cell: "none", "selective", "full", or "full:N" when full
/// recompute repeats N layers per model chunk (partial).
[[nodiscard]] std::string recompute_text(const ParallelConfig& c);

/// Items as words: "a, b and c" with `separator` ", " and `last` " and " (one item alone, none
/// empty).
[[nodiscard]] std::string join_words(const std::vector<std::string>& items,
                                     std::string_view separator, std::string_view last);

/// A split in one line: "TP4 PP16 DP8 mb2 VP6 none ZeRO1 SP on", then " CP2" and " EP8" when
/// used. `zero_label` spells the ZeRO stage's prefix ("ZeRO" in the what-if table, "ZeRO-" in
/// the emit report).
[[nodiscard]] std::string split_summary(const ParallelConfig& c, std::string_view zero_label);

}  // namespace trident::cli
