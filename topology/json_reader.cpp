// The JSON reader kit (topology/json_reader.h).
#include "topology/json_reader.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "topology/errors.h"

namespace trident::json_reader {

json parse(const std::string& text, const std::string& source) {
  // nlohmann keeps the last of a repeated key: refuse it, as the YAML readers do.
  std::vector<std::set<std::string>> open_objects;
  const json::parser_callback_t no_duplicates = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(parsed.get<std::string>()).second) {
      std::string key = parsed.get<std::string>();
      for (char& c : key) {
        if (static_cast<unsigned char>(c) < 0x20) c = '?';  // one line, whatever the key
      }
      throw InputError(source + ": invalid JSON: duplicate key '" + key + "' in one object");
    }
    return true;
  };
  try {
    return json::parse(text, no_duplicates);
  } catch (const json::parse_error& e) {
    throw InputError(source + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const json::out_of_range& e) {  // a number too large for a double ("1e999")
    throw InputError(source + ": invalid JSON: " + e.what());
  }
}

void Path::fail(const std::string& what) const { throw InputError(where() + ": " + what); }

void check_keys(const json& object, const Path& path, std::initializer_list<const char*> known) {
  if (!object.is_object()) path.fail("expected an object");
  for (const auto& item : object.items()) {
    bool found = false;
    for (const char* name : known) found = found || item.key() == name;
    if (!found) path.child(item.key()).fail("unknown key");
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
  return value.get<std::string>();
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
