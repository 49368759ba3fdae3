#pragma once
/// Typed, positioned reads over nlohmann::json for the JSON readers (calibration files, plan
/// files, nccl-tests -J output): the one kit, as topology/yaml_util.h is for YAML. Every
/// failure is an InputError of one line: "calib.json: fits[2].busbw_gbps: expected at least
/// 1e-06".
#include <cstddef>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace trident::json_reader {

using nlohmann::json;

/// Parses JSON text: "SOURCE: invalid JSON at byte N: WHAT"; a number beyond a double ("1e999",
/// nlohmann's out_of_range.406) is "SOURCE: invalid JSON: WHAT".
[[nodiscard]] json parse(const std::string& text, const std::string& source);

/// Where a value sits: "calib.json:7: fits[2].busbw_gbps". `text` is the JSON the value was
/// parsed from (it must outlive the Path), which gives the line; without it, no line.
struct Path {
  std::string source;
  std::string key;
  const std::string* text = nullptr;
  /// The document's root in `text`, read from `source`.
  [[nodiscard]] static Path root(const std::string& source, const std::string& text) {
    return {source, "", &text};
  }
  [[nodiscard]] Path child(const std::string& name) const {
    return {source, key.empty() ? name : key + "." + name, text};
  }
  [[nodiscard]] Path index(std::size_t i) const {
    return {source, key + "[" + std::to_string(i) + "]", text};
  }
  /// "SOURCE:LINE: KEY" (for readers that build their own message); the line is that of the
  /// value, or of its nearest enclosing value when it is missing (json_lines.h).
  [[nodiscard]] std::string where() const;
  [[noreturn]] void fail(const std::string& what) const;
};

/// "expected an object", or "KEY.NAME: unknown key" for the first key not in `known`.
void check_keys(const json& object, const Path& path, std::initializer_list<const char*> known);
/// The member `name`; "KEY.NAME: missing".
[[nodiscard]] const json& member(const json& object, const Path& path, const char* name);
[[nodiscard]] const json& array_member(const json& object, const Path& path, const char* name);
[[nodiscard]] std::string string_value(const json& object, const Path& path, const char* name);
/// "" when absent.
[[nodiscard]] std::string optional_string(const json& object, const Path& path, const char* name);

[[nodiscard]] double any_number(const json& object, const Path& path, const char* name);
[[nodiscard]] double positive_number(const json& object, const Path& path, const char* name);
[[nodiscard]] double non_negative_number(const json& object, const Path& path, const char* name);
/// Positive (non-negative when `low` is 0) and within [low, high]: "expected at least 1e-06",
/// "expected at most 1e+15".
[[nodiscard]] double bounded_number(const json& object, const Path& path, const char* name,
                                    double low, double high);
[[nodiscard]] long long positive_integer(const json& object, const Path& path, const char* name);
/// A positive integer at most `most`: "expected at most 16777216".
[[nodiscard]] long long bounded_integer(const json& object, const Path& path, const char* name,
                                        long long most);

}  // namespace trident::json_reader
