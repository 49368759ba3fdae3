#include "topology/yaml_util.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <sstream>

#include "topology/errors.h"
#include "topology/text_check.h"

namespace trident::yaml {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_match(std::string_view word,
                                         std::span<const std::string> candidates) {
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best || word.empty()) return best;
  // No near typo: a unique name the word begins ("gpt3" -> "gpt3-175b").
  for (const auto& candidate : candidates) {
    if (!candidate.starts_with(word)) continue;
    if (best) return std::nullopt;
    best = candidate;
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string> candidates) {
  const auto match = closest_match(word, candidates);
  return match ? " (did you mean '" + *match + "'?)" : std::string{};
}

std::string join(std::span<const std::string> items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

std::string position(const std::string& source, int line, std::string_view key) {
  // A key can be any text the file holds (an unknown or repeated one is echoed): one line.
  return source + ":" + std::to_string(line) + ": " + one_line(key);
}

namespace {

void collect_lines(const YAML::Node& node, const std::string& path, KeyLines& lines) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key =
          path.empty() ? entry.first.Scalar() : path + "." + entry.first.Scalar();
      lines.emplace(key, line_of(entry.first, 1));
      collect_lines(entry.second, key, lines);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      const std::string key = path + "[" + std::to_string(i) + "]";
      lines.emplace(key, line_of(node[i], 1));
      collect_lines(node[i], key, lines);
    }
  }
}

}  // namespace

KeyLines key_lines(const YAML::Node& root) {
  KeyLines lines;
  collect_lines(root, "", lines);
  return lines;
}

int line_for_key(const KeyLines& lines, std::string_view key) {
  while (!key.empty()) {
    if (const auto found = lines.find(key); found != lines.end()) return found->second;
    const auto cut = key.find_last_of(".[");
    key = cut == std::string_view::npos ? std::string_view{} : key.substr(0, cut);
  }
  return 1;
}

void throw_problem(const std::string& source, const KeyLines& lines, const std::string& key,
                   const std::string& message) {
  throw InputError(position(source, line_for_key(lines, key), key) + ": " + message);
}

namespace {

/// yaml-cpp keeps a repeated key (the first wins in a lookup): refuse it with both lines.
void reject_duplicate_keys(const YAML::Node& node, const std::string& path,
                           const std::string& source) {
  if (node.IsMap()) {
    std::map<std::string, int> seen;
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
      std::string dotted = path;
      if (!dotted.empty()) dotted += ".";
      dotted += key;
      const int line = line_of(entry.first, 1);
      if (const auto [it, inserted] = seen.emplace(key, line); !inserted) {
        throw InputError(position(source, line, dotted) + ": duplicate key (first at line " +
                         std::to_string(it->second) + ")");
      }
      reject_duplicate_keys(entry.second, dotted, source);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      reject_duplicate_keys(node[i], path + "[" + std::to_string(i) + "]", source);
    }
  }
}

/// Counts documents without building them; remembers where the last one started.
class DocumentCounter : public YAML::EventHandler {
 public:
  int line = 1;
  void OnDocumentStart(const YAML::Mark& mark) override { line = mark.line + 1; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

/// Nodes a document may hold, its aliases expanded: far above any real input (a cluster file
/// of 100,000 mesh links is ~700,000: a mapping and six scalars each), far below what would
/// hang a reader.
constexpr double kMaxExpandedNodes = 5e6;

/// Walks the first document's events and refuses what yaml-cpp would build into a graph no
/// reader can walk: an alias inside the node it names (a cycle: "&a [*a]" recursed until the
/// stack overflowed) and aliases that multiply the document past kMaxExpandedNodes ("a
/// billion laughs": each alias is a copy for every reader that walks the tree).
class AliasGuard : public DocumentCounter {
 public:
  explicit AliasGuard(const std::string& source) : source_(source) {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    for (const Open& open : open_) {
      if (open.anchor == anchor) {
        fail(mark, "an alias inside the node its anchor names (a cycle); expected a tree");
      }
    }
    const auto found = sizes_.find(anchor);
    add(mark, found == sizes_.end() ? 1.0 : found->second);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    start(mark, anchor);
  }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    start(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    YAML::anchor_t anchor;
    double nodes;
  };
  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) sizes_[anchor] = 1.0;
    add(mark, 1.0);
  }
  void start(const YAML::Mark& mark, YAML::anchor_t anchor) {
    open_.push_back({anchor, 0.0});
    add(mark, 1.0);
  }
  void close() {
    if (open_.empty()) return;
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) sizes_[done.anchor] = done.nodes;
    if (!open_.empty()) open_.back().nodes += done.nodes;
  }
  /// `nodes` more in the innermost open collection (an alias: the named node's count).
  void add(const YAML::Mark& mark, double nodes) {
    if (!open_.empty()) open_.back().nodes += nodes;
    expanded_ += nodes;
    if (expanded_ > kMaxExpandedNodes) {
      fail(mark, fmt::format("the document, its aliases expanded, has more than {:L} nodes; "
                             "expected plain data",
                             static_cast<long long>(kMaxExpandedNodes)));
    }
  }
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(mark.line + 1) + ": invalid YAML: " + what);
  }

  const std::string& source_;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, double> sizes_;
  double expanded_ = 0.0;  ///< nodes of the document so far, every alias counted in full
};

/// Refuses aliases that make a cycle or a bomb (AliasGuard) and a second document (after
/// '---' or '...'), which a load would ignore. Two steps of the parser at most:
/// YAML::LoadAll looped forever on some malformed input (found by fuzzing).
void check_documents(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  AliasGuard guard(source);
  if (!parser.HandleNextDocument(guard)) return;
  DocumentCounter counter;
  if (!parser.HandleNextDocument(counter)) return;
  throw InputError(source + ":" + std::to_string(counter.line) +
                   ": a second YAML document (after '---' or '...'); expected one document");
}

}  // namespace

YAML::Node parse(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    check_documents(text, source);
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  reject_duplicate_keys(root, "", source);
  return root;
}

int line_of(const YAML::Node& node, int fallback) {
  if (!node.IsDefined()) return fallback;
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : fallback;
}

std::string describe_value(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  return "'" + node.Scalar() + "'";
}

namespace {

[[noreturn]] void expected(const std::string& where, std::string_view what,
                           const YAML::Node& node) {
  throw InputError(where + ": expected " + std::string(what) + ", got " + describe_value(node));
}

/// A quoted scalar ("8", '8': yaml-cpp tags a non-plain scalar "!") is a string, also in a
/// JSON file: where a number or a boolean belongs it is the wrong type, not the number.
/// An explicit tag (`!!str 32`, `!!float 1`, `!foo x`) is not read: yaml-cpp keeps the text
/// and would hand `!!str 32` over as the number 32, where every other YAML reader gives the
/// string. Plain scalars carry "?", quoted ones "!".
void reject_tagged(const YAML::Node& node, std::string_view what, const std::string& where) {
  if (node.IsScalar() && node.Tag() != "?" && node.Tag() != "!") {
    std::string tag = node.Tag();
    constexpr std::string_view kCore = "tag:yaml.org,2002:";  // what `!!` stands for
    if (tag.rfind(kCore, 0) == 0) tag = "!!" + tag.substr(kCore.size());
    throw InputError(where + ": expected " + std::string(what) + ", got '" + node.Scalar() +
                     "' tagged " + tag + " (YAML tags are not read; write the value alone)");
  }
}

void reject_quoted(const YAML::Node& node, std::string_view what, const std::string& where) {
  reject_tagged(node, what, where);
  if (node.IsScalar() && node.Tag() == "!") {
    throw InputError(where + ": expected " + std::string(what) + ", got the string '" +
                     node.Scalar() + "' (write it without quotes)");
  }
}

/// An integer written with a leading zero (`040`, `-07`): YAML 1.1 readers (PyYAML) take
/// `040` for octal 32, from_chars for 40; neither is assumed. (`00.5` is a float to both.)
void reject_leading_zero(const YAML::Node& node, std::string_view what, const std::string& where) {
  const std::string& text = node.Scalar();
  const std::size_t digits = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const bool integer_form =
      text.size() > digits &&
      std::all_of(text.begin() + static_cast<std::ptrdiff_t>(digits), text.end(),
                  [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; });
  if (integer_form && text.size() > digits + 1 && text[digits] == '0') {
    throw InputError(where + ": expected " + std::string(what) + ", got '" + text +
                     "' (a leading zero, which YAML 1.1 reads as octal; write it without)");
  }
}

const char* range_words(Range range, bool integer) {
  switch (range) {
    case Range::positive:
      return integer ? "a positive integer" : "a positive number";
    case Range::non_negative:
      return integer ? "a non-negative integer" : "a non-negative number";
    case Range::at_least_one:
      return integer ? "an integer >= 1" : "a number >= 1";
    case Range::fraction:
      return "a number in (0, 1]";
    case Range::any:
      break;
  }
  return integer ? "an integer" : "a number";
}

bool in_range(double value, Range range) {
  switch (range) {
    case Range::positive:
      return value > 0.0;
    case Range::non_negative:
      return value >= 0.0;
    case Range::at_least_one:
      return value >= 1.0;
    case Range::fraction:
      return value > 0.0 && value <= 1.0;
    case Range::any:
      break;
  }
  return true;
}

}  // namespace

long long to_int(const YAML::Node& node, Range range, const std::string& where) {
  const char* words = range_words(range, true);
  if (!node.IsScalar()) expected(where, words, node);
  reject_quoted(node, words, where);
  reject_leading_zero(node, words, where);
  const std::string& text = node.Scalar();
  long long value = 0;
  const char* end = text.data() + text.size();
  const bool plus = text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+';
  const auto [ptr, ec] = std::from_chars(text.data() + (plus ? 1 : 0), end, value);
  if (ec != std::errc{} || ptr != end || !in_range(static_cast<double>(value), range)) {
    expected(where, words, node);
  }
  return value;
}

double to_double(const YAML::Node& node, Range range, const std::string& where) {
  const char* words = range_words(range, false);
  if (!node.IsScalar()) expected(where, words, node);
  reject_quoted(node, words, where);
  reject_leading_zero(node, words, where);
  const std::string& text = node.Scalar();
  double value = 0.0;
  const char* end = text.data() + text.size();
  // YAML's core schema writes a float with an optional sign, `+0.5` as `0.5`; from_chars takes
  // only `-`.
  const bool plus = text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+';
  const auto [ptr, ec] = std::from_chars(text.data() + (plus ? 1 : 0), end, value);
  if (ec != std::errc{} || ptr != end || !std::isfinite(value) || !in_range(value, range)) {
    expected(where, words, node);
  }
  return value;
}

std::string to_string(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar() || node.Scalar().empty()) expected(where, "a string", node);
  reject_tagged(node, "a string", where);
  const std::string& text = node.Scalar();
  check_one_line(text, where);  // YAML escapes make them: \n, \0, \L
  return text;
}

MapReader::MapReader(const YAML::Node& node, std::string source, std::string path, int line)
    : node_(node), source_(std::move(source)), path_(std::move(path)), line_(line) {
  if (!node_.IsMap()) {
    const std::string where = position(source_, line_, path_.empty() ? "document" : path_);
    expected(where, "a mapping", node_);
  }
}

bool MapReader::has(std::string_view key) const { return node_[std::string(key)].IsDefined(); }

YAML::Node MapReader::node(std::string_view key) const {
  // yaml-cpp answers an absent key with an invalid "zombie" node whose IsMap() etc. throw
  // YAML::InvalidNode; hand out an Undefined node instead (IsDefined() false, the rest safe).
  YAML::Node found = node_[std::string(key)];
  return found.IsDefined() ? found : YAML::Node(YAML::NodeType::Undefined);
}

int MapReader::line(std::string_view key) const {
  // The key's own line: for a nested mapping the value's mark is its first inner key.
  for (const auto& entry : node_) {
    if (entry.first.Scalar() == key) return line_of(entry.first, line_);
  }
  return line_;
}

std::string MapReader::path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void MapReader::fail(std::string_view key, const std::string& message) const {
  throw InputError(position(source_, line(key), path(key)) + ": " + message);
}

YAML::Node MapReader::require(std::string_view key) const {
  YAML::Node value = node(key);
  if (!value.IsDefined()) fail(key, "missing required key");
  return value;
}

std::string MapReader::required_string(std::string_view key) const {
  return to_string(require(key), position(source_, line(key), path(key)));
}

std::string MapReader::optional_string(std::string_view key, std::string fallback) const {
  return has(key) ? required_string(key) : std::move(fallback);
}

long long MapReader::required_int(std::string_view key, Range range) const {
  return to_int(require(key), range, position(source_, line(key), path(key)));
}

long long MapReader::optional_int(std::string_view key, long long fallback, Range range) const {
  return has(key) ? required_int(key, range) : fallback;
}

double MapReader::required_double(std::string_view key, Range range) const {
  return to_double(require(key), range, position(source_, line(key), path(key)));
}

double MapReader::optional_double(std::string_view key, double fallback, Range range) const {
  return has(key) ? required_double(key, range) : fallback;
}

bool MapReader::optional_bool(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  const YAML::Node value = node(key);
  bool result = false;
  const std::string where = position(source_, line(key), path(key));
  // YAML 1.2's booleans only: yaml-cpp also takes YAML 1.1's y/n/yes/no/on/off, which would
  // turn `tied_embeddings: y` into a different model without a word.
  static constexpr std::string_view kBooleans[] = {"true",  "True",  "TRUE",
                                                   "false", "False", "FALSE"};
  const bool boolean = value.IsScalar() && std::find(std::begin(kBooleans), std::end(kBooleans),
                                                     value.Scalar()) != std::end(kBooleans);
  // A quoted "true" is told to drop its quotes; a quoted "yes" is not a boolean either way.
  if (boolean) reject_quoted(value, "true or false", where);
  reject_tagged(value, "true or false", where);
  if (!boolean || !YAML::convert<bool>::decode(value, result)) {
    expected(where, "true or false", value);
  }
  return result;
}

std::size_t MapReader::required_choice(std::string_view key,
                                       std::span<const std::string> names) const {
  const YAML::Node value = require(key);
  const std::string choices = join(names, "|");
  if (!value.IsScalar()) expected(position(source_, line(key), path(key)), choices, value);
  reject_tagged(value, choices, position(source_, line(key), path(key)));
  const auto found = std::find(names.begin(), names.end(), value.Scalar());
  if (found == names.end()) {
    fail(key, "expected " + choices + ", got '" + value.Scalar() + "'" +
                  did_you_mean(value.Scalar(), names));
  }
  return static_cast<std::size_t>(found - names.begin());
}

std::size_t MapReader::optional_choice(std::string_view key, std::span<const std::string> names,
                                       std::size_t fallback) const {
  return has(key) ? required_choice(key, names) : fallback;
}

MapReader MapReader::required_map(std::string_view key) const {
  return MapReader(require(key), source_, path(key), line(key));
}

std::optional<MapReader> MapReader::optional_map(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return required_map(key);
}

void MapReader::reject_unknown(std::span<const std::string> known) const {
  for (const auto& entry : node_) {
    // `? [a, b] : 1`: a key that is a list or a mapping; `~: 1`, `null: 1`: a null key.
    if (!entry.first.IsScalar()) {
      const int line = line_of(entry.first, line_);
      const std::string at =
          path_.empty() ? source_ + ":" + std::to_string(line) : position(source_, line, path_);
      const char* kind = entry.first.IsSequence() ? "a list"
                         : entry.first.IsMap()    ? "a mapping"
                                                  : "null";
      throw InputError(at + ": expected plain keys, got " + kind + " as a key");
    }
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string hint = did_you_mean(one_line(key), known);
    const std::string where = position(source_, line_of(entry.first, line_), path(key));
    throw InputError(where + ": unknown key" +
                     (hint.empty() ? " (known: " + join(known) + ")" : hint));
  }
}

}  // namespace trident::yaml
