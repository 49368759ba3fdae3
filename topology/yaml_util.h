#pragma once
/// Typed, positioned reads over yaml-cpp for the loaders. Every failure is an InputError of
/// one line: "FILE:LINE: KEY: expected a positive integer, got '-3'", LINE 1-based, KEY the
/// dotted path from the document root ("nvlink.kind", "nvlink.links[2].a").
#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trident::yaml {

/// Levenshtein distance (insertions, deletions, substitutions), for "did you mean".
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` when it is a plausible typo (distance <= 1 for short
/// words, <= a third of the length for longer ones), else the one candidate that starts with
/// `word`; nullopt otherwise.
[[nodiscard]] std::optional<std::string> closest_match(std::string_view word,
                                                       std::span<const std::string> candidates);

/// " (did you mean 'X'?)" or "" when nothing is close.
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       std::span<const std::string> candidates);

/// "a, b, c"
[[nodiscard]] std::string join(std::span<const std::string> items, std::string_view sep = ", ");

/// Parses YAML (or JSON) text; a syntax error becomes "SOURCE:LINE: invalid YAML: WHAT".
[[nodiscard]] YAML::Node parse(const std::string& text, const std::string& source);

/// 1-based line of a node, or `fallback` when yaml-cpp has no position for it.
[[nodiscard]] int line_of(const YAML::Node& node, int fallback);

/// "mapping", "list", "nothing" or the scalar in quotes: what the user wrote, for messages.
[[nodiscard]] std::string describe_value(const YAML::Node& node);

/// Value rules for numbers.
enum class Range { any, positive, non_negative, at_least_one, fraction };

/// A mapping in a document with its dotted path, source name and line, for typed reads.
class MapReader {
 public:
  /// Throws "SOURCE:LINE: PATH: expected a mapping, got ..." when `node` is not a mapping.
  MapReader(const YAML::Node& node, std::string source, std::string path, int line);

  [[nodiscard]] bool has(std::string_view key) const;
  [[nodiscard]] YAML::Node node(std::string_view key) const;
  /// Line of the key's value; the mapping's own line when the key is absent.
  [[nodiscard]] int line(std::string_view key) const;
  [[nodiscard]] std::string path(std::string_view key) const;
  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] int own_line() const { return line_; }

  [[nodiscard]] std::string required_string(std::string_view key) const;
  [[nodiscard]] std::string optional_string(std::string_view key, std::string fallback) const;
  [[nodiscard]] long long required_int(std::string_view key, Range range) const;
  [[nodiscard]] long long optional_int(std::string_view key, long long fallback, Range range) const;
  [[nodiscard]] double required_double(std::string_view key, Range range) const;
  [[nodiscard]] double optional_double(std::string_view key, double fallback, Range range) const;
  [[nodiscard]] bool optional_bool(std::string_view key, bool fallback) const;
  /// One of `names` (e.g. {"switch", "mesh", "none"}); returns its index.
  [[nodiscard]] std::size_t required_choice(std::string_view key,
                                            std::span<const std::string> names) const;
  [[nodiscard]] std::size_t optional_choice(std::string_view key,
                                            std::span<const std::string> names,
                                            std::size_t fallback) const;
  [[nodiscard]] MapReader required_map(std::string_view key) const;
  [[nodiscard]] std::optional<MapReader> optional_map(std::string_view key) const;

  /// Throws on the first key not in `known`: "SOURCE:LINE: PATH.KEY: unknown key (did you
  /// mean 'K'?)" or "... unknown key (known: a, b, c)".
  void reject_unknown(std::span<const std::string> known) const;
  /// Throws "SOURCE:LINE: PATH.KEY: MESSAGE" with the line of `key` (or of the mapping).
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

 private:
  [[nodiscard]] YAML::Node require(std::string_view key) const;

  YAML::Node node_;
  std::string source_;
  std::string path_;
  int line_;
};

/// Typed conversions of one node, used by MapReader and for list items. `where` is
/// "SOURCE:LINE: KEY" (already positioned); errors append ": expected ..., got '...'".
[[nodiscard]] long long to_int(const YAML::Node& node, Range range, const std::string& where);
[[nodiscard]] double to_double(const YAML::Node& node, Range range, const std::string& where);
[[nodiscard]] std::string to_string(const YAML::Node& node, const std::string& where);

/// 1-based line of every key in the document by dotted path ("nvlink.links[2].a"): lets a
/// Problem found after loading (check_cluster) be reported at its line.
using KeyLines = std::map<std::string, int, std::less<>>;
[[nodiscard]] KeyLines key_lines(const YAML::Node& root);
/// Line of `key`, else of its nearest listed parent ("nvlink.links[2]" -> "nvlink"), else 1.
[[nodiscard]] int line_for_key(const KeyLines& lines, std::string_view key);
/// Throws InputError "SOURCE:LINE: KEY: MESSAGE" for a problem found after loading.
[[noreturn]] void throw_problem(const std::string& source, const KeyLines& lines,
                                const std::string& key, const std::string& message);

/// "SOURCE:LINE: KEY"
[[nodiscard]] std::string position(const std::string& source, int line, std::string_view key);

}  // namespace trident::yaml
