// The JSON reader kit (topology/json_reader.h).
#include "topology/json_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "topology/errors.h"
#include "topology/json_lines.h"
#include "topology/text_check.h"

namespace trident::json_reader {

namespace {

/// nlohmann's DOM builder behind a SAX handler that stops at a key repeated in one object
/// (nlohmann keeps the last; the YAML readers refuse it). A parser callback could do the same,
/// but nlohmann then rescans the parent container at every object's end
/// (json_sax_dom_callback_parser::end_object): quadratic in a long list of objects.
class NoRepeatedKeys {
 public:
  explicit NoRepeatedKeys(json& result) : dom_(result) {}
  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t& text) {
    return dom_.number_float(value, text);
  }
  bool string(json::string_t& value) { return dom_.string(value); }
  bool binary(json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t size) {
    keys_.emplace_back();
    return dom_.start_object(size);
  }
  bool key(json::string_t& name) {
    const std::size_t seen = ++seen_[name];
    if (!keys_.empty() && !keys_.back().insert(name).second) {
      repeated_ = name;
      repeated_occurrence_ = seen;
      return false;
    }
    return dom_.key(name);
  }
  bool end_object() {
    if (!keys_.empty()) keys_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t size) { return dom_.start_array(size); }
  bool end_array() { return dom_.end_array(); }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    return dom_.parse_error(position, token, error);  // throws it
  }
  [[nodiscard]] const std::optional<std::string>& repeated() const { return repeated_; }
  /// Which occurrence of the repeated name, as a key anywhere in the text, repeated it.
  [[nodiscard]] std::size_t repeated_occurrence() const { return repeated_occurrence_; }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<std::unordered_set<std::string>> keys_;
  std::unordered_map<std::string, std::size_t> seen_;
  std::optional<std::string> repeated_;
  std::size_t repeated_occurrence_ = 0;
};

/// The line of the `occurrence`-th `"name"` written as a key (a quoted name, then a colon) in
/// `text`, 0 where it is not found as written (an escaped name).
int key_line(const std::string& text, const std::string& name, std::size_t occurrence) {
  const std::string quoted = "\"" + name + "\"";
  std::size_t count = 0;
  for (std::size_t at = text.find(quoted); at != std::string::npos;
       at = text.find(quoted, at + 1)) {
    std::size_t after = at + quoted.size();
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                   text[after] == '\n' || text[after] == '\r')) {
      ++after;
    }
    if (after >= text.size() || text[after] != ':' || ++count < occurrence) continue;
    return 1 + static_cast<int>(
                   std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  }
  return 0;
}

}  // namespace

/// nlohmann's message without its "[json.exception.NAME.ID] " tag and, for a parse error, its
/// own "parse error at line L, column C: " (the caller says where).
std::string json_reason(const std::string& what) {
  std::string reason = what;
  if (!reason.empty() && reason.front() == '[') {
    const std::size_t tag_end = reason.find("] ");
    if (tag_end != std::string::npos) reason.erase(0, tag_end + 2);
  }
  const std::string where = "parse error at line ";
  if (reason.rfind(where, 0) == 0) {
    const std::size_t colon = reason.find(": ");
    if (colon != std::string::npos) reason.erase(0, colon + 2);
  }
  return one_line(reason);
}

/// "FILE:LINE: invalid JSON at column C" for the byte nlohmann stopped at (1-based; past the
/// end of the text: its last line).
std::string json_position(const std::string& text, const std::string& source, std::size_t byte) {
  const std::size_t at = std::min(byte > 0 ? byte - 1 : 0, text.size());
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  const std::size_t line_start = text.rfind('\n', at > 0 ? at - 1 : 0);
  const std::size_t column = line_start == std::string::npos || at == 0 ? at + 1 : at - line_start;
  return fmt::format("{}:{}: invalid JSON at column {}", source, line, column);
}

json parse(const std::string& text, const std::string& source) {
  json result;
  NoRepeatedKeys handler(result);
  try {
    if (!json::sax_parse(text, &handler) && handler.repeated()) {
      const int line = key_line(text, *handler.repeated(), handler.repeated_occurrence());
      throw InputError((line > 0 ? fmt::format("{}:{}", source, line) : source) +
                       ": invalid JSON: duplicate key '" + one_line(*handler.repeated()) +
                       "' in one object");
    }
  } catch (const json::parse_error& e) {
    throw InputError(json_position(text, source, e.byte) + ": " + json_reason(e.what()));
  } catch (const json::out_of_range& e) {  // a number too large for a double ("1e999")
    throw InputError(source + ": invalid JSON: " + json_reason(e.what()));
  }
  return result;
}

std::string Path::where() const {
  const int line = text != nullptr ? line_of(*text, key) : 0;
  return line > 0 ? fmt::format("{}:{}: {}", source, line, key) : source + ": " + key;
}

void Path::fail(const std::string& what) const { throw InputError(where() + ": " + what); }

void check_keys(const json& object, const Path& path, std::initializer_list<const char*> known) {
  if (!object.is_object()) path.fail("expected an object");
  for (const auto& item : object.items()) {
    bool found = false;
    for (const char* name : known) found = found || item.key() == name;
    if (!found) path.child(one_line(item.key())).fail("unknown key");
  }
}

const json& member(const json& object, const Path& path, const char* name) {
  const auto it = object.find(name);
  if (it == object.end()) path.child(name).fail("missing");
  return *it;
}

const json& array_member(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_array()) path.child(name).fail("expected an array");
  return value;
}

std::string string_value(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_string()) path.child(name).fail("expected a string");
  std::string text = value.get<std::string>();
  // JSON escapes make them: \n, \u001b. The line is looked up only for the error.
  if (!is_one_line(text)) check_one_line(text, path.child(name).where());
  return text;
}

std::string optional_string(const json& object, const Path& path, const char* name) {
  return object.contains(name) ? string_value(object, path, name) : std::string();
}

double any_number(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number()) path.child(name).fail("expected a number");
  return value.get<double>();
}

double positive_number(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number() || value.get<double>() <= 0.0) {
    path.child(name).fail("expected a positive number");
  }
  return value.get<double>();
}

double non_negative_number(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number() || value.get<double>() < 0.0) {
    path.child(name).fail("expected a number >= 0");
  }
  return value.get<double>();
}

double bounded_number(const json& object, const Path& path, const char* name, double low,
                      double high) {
  const double value =
      low > 0.0 ? positive_number(object, path, name) : non_negative_number(object, path, name);
  if (value < low) path.child(name).fail(fmt::format("expected at least {:g}", low));
  if (value > high) path.child(name).fail(fmt::format("expected at most {:g}", high));
  return value;
}

long long positive_integer(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number_integer() || value.get<long long>() <= 0) {
    path.child(name).fail("expected a positive integer");
  }
  return value.get<long long>();
}

long long bounded_integer(const json& object, const Path& path, const char* name, long long most) {
  const long long value = positive_integer(object, path, name);
  if (value > most) path.child(name).fail("expected at most " + std::to_string(most));
  return value;
}

}  // namespace trident::json_reader
