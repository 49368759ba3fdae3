#pragma once
// For test_export.cpp: the stored argument definitions of each framework release
// (tests/data/emit/*.txt, scripts/emit-argdefs), parsers for the emitted text, and the
// frameworks' cross-flag rules re-stated with their source lines. Each check returns the
// first violation as a sentence, or "" when the text passes.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace trident::test {

/// One data file: names with their kind ("switch" | "value" | "" for keys) and choices.
struct ArgDefs {
  std::string header;  ///< first line: "# NAME VERSION commit SHA"
  std::map<std::string, std::string> kind;
  std::map<std::string, std::vector<std::string>> choices;
  std::map<std::string, std::map<std::string, long long>> flavors;    ///< torchtitan llama3
  std::map<std::string, std::map<std::string, std::string>> recipes;  ///< NeMo 2.0 recipes
  std::vector<std::string> precisions;  ///< NeMo 2.0 precision plugin factories
};

inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

inline ArgDefs load_argdefs(const std::string& file) {
  std::ifstream in(std::string(TRIDENT_SOURCE_DIR) + "/tests/data/emit/" + file);
  ArgDefs defs;
  std::string line;
  std::getline(in, defs.header);
  while (std::getline(in, line)) {
    const auto words = split(line, ' ');
    if (words.size() < 2 || words[0] == "#") continue;
    if (words[0] == "precision") {
      defs.precisions.push_back(words[1]);
      continue;
    }
    if (words[0] == "recipe") {
      for (std::size_t i = 2; i < words.size(); ++i) {
        const auto kv = split(words[i], '=');
        defs.recipes[words[1]][kv[0]] = kv[1];
      }
      continue;
    }
    if (words[0] == "flavor") {
      for (std::size_t i = 2; i < words.size(); ++i) {
        const auto kv = split(words[i], '=');
        defs.flavors[words[1]][kv[0]] = std::stoll(kv[1]);
      }
      continue;
    }
    const bool is_flag = words[0] == "flag";
    defs.kind[words[1]] = is_flag ? words[2] : "";
    const std::size_t choice_at = is_flag ? 3 : 2;
    if (words.size() > choice_at) defs.choices[words[1]] = split(words[choice_at], '|');
  }
  return defs;
}

/// name -> value ("" for a switch); keys flattened with dots.
using Settings = std::map<std::string, std::string>;

/// The flags after "pretrain_gpt.py"; `env` gets the launcher line (before "torchrun").
inline Settings parse_megatron(const std::string& text, std::string* launcher) {
  Settings out;
  const auto at = text.find("\n  pretrain_gpt.py") + 3;
  const auto line_start = text.rfind('\n', text.find("torchrun")) + 1;
  *launcher = text.substr(line_start, text.find('\n', line_start) - line_start);
  std::stringstream in(text.substr(at + 15));
  std::string word, last;
  while (in >> word) {
    if (word == "\\") continue;
    if (word.rfind("--", 0) == 0) {
      out[word] = "";
      last = word;
    } else {
      out[last] = word;
    }
  }
  return out;
}

inline void flatten_yaml(const YAML::Node& node, const std::string& prefix, Settings& out) {
  for (const auto& item : node) {
    const std::string key = prefix + item.first.as<std::string>();
    if (item.second.IsMap()) {
      out[key] = "{}";
      flatten_yaml(item.second, key + ".", out);
    } else if (item.second.IsScalar()) {
      out[key] = item.second.as<std::string>();
    } else {
      out[key] = "[]";
    }
  }
}

inline void flatten_json(const nlohmann::json& node, const std::string& prefix, Settings& out) {
  for (const auto& [key, value] : node.items()) {
    if (value.is_object()) {
      out[prefix + key] = "{}";
      flatten_json(value, prefix + key + ".", out);
    } else {
      out[prefix + key] = value.dump();
    }
  }
}

/// The JSON a script writes with `cat > NAME <<'EOF'` ... `EOF`, as json.load reads it (strict
/// JSON: a comment or trailing comma throws).
inline Settings parse_heredoc_json(const std::string& text, const std::string& name) {
  const std::string open = "cat > " + name + " <<'EOF'\n";
  const auto start = text.find(open);
  if (start == std::string::npos) return {};
  const auto body = start + open.size();
  const auto end = text.find("\nEOF\n", body);
  Settings out;
  flatten_json(nlohmann::json::parse(text.substr(body, end + 1 - body)), "", out);
  return out;
}

/// hjson as DeepSpeed reads it: the # lines are comments; the rest is JSON.
inline Settings parse_deepspeed(const std::string& text) {
  std::string json;
  for (const auto& line : split(text, '\n')) {
    if (line.rfind('#', 0) != 0) json += line + "\n";
  }
  Settings out;
  flatten_json(nlohmann::json::parse(json), "", out);
  return out;
}

/// NeMo 2.0 script: "recipe.KEY = VALUE" lines (the recipe name and precision plugin under
/// "recipe" and "plugin").
inline Settings parse_nemo2(const std::string& text) {
  Settings out;
  for (const auto& line : split(text, '\n')) {
    const auto eq = line.find(" = ");
    const std::string append = "recipe.trainer.callbacks.append(run.Config(";
    if (line.rfind("recipe = llm.", 0) == 0) {
      out["recipe"] = line.substr(13, line.find(".pretrain_recipe(") - 13);
    } else if (line.rfind(append, 0) == 0) {
      // recipe.trainer.callbacks.append(run.Config(NAME, key=value, ...)): each keyword as
      // recipe.trainer.callbacks.NAME.key.
      const auto args = split(line.substr(append.size(), line.size() - append.size() - 2), ',');
      for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string arg = args[i].substr(args[i].find_first_not_of(' '));
        const auto at = arg.find('=');
        out["recipe.trainer.callbacks." + args[0] + "." + arg.substr(0, at)] = arg.substr(at + 1);
      }
    } else if (line.rfind("recipe.", 0) == 0 && eq != std::string::npos) {
      std::string value = line.substr(eq + 3);
      if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
      out[line.substr(0, eq)] = value;
    }
  }
  return out;
}

/// The TOML subset torchtitan's emitted file uses: [a.b] tables and `key = value` lines.
inline Settings parse_toml(const std::string& text) {
  Settings out;
  std::string table;
  for (const auto& line : split(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      table = line.substr(1, line.size() - 2);
      continue;
    }
    const auto eq = line.find(" = ");
    std::string value = line.substr(eq + 3);
    if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
    out[table + "." + line.substr(0, eq)] = value;
  }
  return out;
}

inline long long num(const Settings& s, const std::string& key) {
  const auto it = s.find(key);
  return it == s.end() || it->second.empty() || it->second == "null" ? 0 : std::stoll(it->second);
}

/// Every name exists in the release's definitions; switches carry no value, value flags one,
/// and a value with choices is one of them.
inline std::string check_names(const Settings& settings, const ArgDefs& defs) {
  for (const auto& [name, value] : settings) {
    const auto kind = defs.kind.find(name);
    if (kind == defs.kind.end()) return name + ": not defined in " + defs.header;
    if (kind->second == "switch" && !value.empty()) return name + ": a switch given " + value;
    if (kind->second == "value" && value.empty()) return name + ": needs a value";
    const auto choices = defs.choices.find(name);
    if (choices == defs.choices.end() || value.empty()) continue;
    bool found = false;
    for (const auto& c : choices->second) found = found || c == value;
    if (!found) return name + " " + value + ": not one of its choices";
  }
  return "";
}

}  // namespace trident::test
