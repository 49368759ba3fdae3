// Line of a value in JSON text by its key path (topology/json_lines.h).
#include "topology/json_lines.h"

#include <cstddef>
#include <string>
#include <vector>

namespace trident::json_reader {

namespace {

/// One open object or array: the path of the container and, in an array, the next index.
struct Frame {
  std::string path;
  bool array = false;
  std::size_t next_index = 0;
};

/// Walks valid JSON without recursion (a deeply nested file must not overflow the stack),
/// keeping the line count and the path of the value about to start.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  /// The line of `key`'s value, else of the longest ancestor of `key` seen; 0 if none.
  int find(const std::string& key) {
    int best_line = 0;
    std::size_t best_length = 0;
    std::vector<Frame> stack;
    std::string pending;  // path of the next value
    bool have_pending = true;
    while (true) {
      skip_space();
      if (at_ >= text_.size()) break;
      const char c = text_[at_];
      if (c == ',' || c == ':') {
        ++at_;
        continue;
      }
      if (c == '}' || c == ']') {
        ++at_;
        if (!stack.empty()) stack.pop_back();
        continue;
      }
      if (!stack.empty() && !stack.back().array && !have_pending) {
        pending = child_path(stack.back().path, read_string());  // a member's name
        have_pending = true;
        continue;
      }
      if (!stack.empty() && stack.back().array) {
        pending = stack.back().path + "[" + std::to_string(stack.back().next_index++) + "]";
      }
      if (is_ancestor_or_self(pending, key) && (best_line == 0 || pending.size() >= best_length)) {
        best_line = line_;
        best_length = pending.size();
        if (pending == key) return best_line;
      }
      have_pending = false;
      if (c == '{' || c == '[') {
        stack.push_back({pending, c == '[', 0});
        ++at_;
      } else if (c == '"') {
        read_string();
      } else {
        skip_literal();
      }
    }
    return best_line;
  }

 private:
  static std::string child_path(const std::string& parent, const std::string& name) {
    return parent.empty() ? name : parent + "." + name;
  }

  /// `path` is `key` or one of its ancestors: a prefix ending where `key` goes on with '.' or '['.
  static bool is_ancestor_or_self(const std::string& path, const std::string& key) {
    if (path.empty()) return true;
    if (key.compare(0, path.size(), path) != 0) return false;
    return key.size() == path.size() || key[path.size()] == '.' || key[path.size()] == '[';
  }

  void skip_space() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\n') {
        ++line_;
      } else if (c != ' ' && c != '\t' && c != '\r' && !is_bom_byte(c)) {
        return;
      }
      ++at_;
    }
  }

  /// The UTF-8 byte order mark nlohmann skips at the start of a text.
  [[nodiscard]] bool is_bom_byte(char c) const {
    return at_ < 3 &&
           (static_cast<unsigned char>(c) == 0xEF || static_cast<unsigned char>(c) == 0xBB ||
            static_cast<unsigned char>(c) == 0xBF);
  }

  void skip_literal() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        return;
      }
      ++at_;
    }
  }

  /// A string at text_[at_] == '"', its simple escapes decoded (\uXXXX kept as written: a name
  /// so written then matches no reader's key, and its ancestor's line is given).
  std::string read_string() {
    std::string out;
    ++at_;  // the opening quote
    while (at_ < text_.size() && text_[at_] != '"') {
      if (text_[at_] == '\\' && at_ + 1 < text_.size()) {
        out += unescape(text_[at_ + 1]);
        at_ += 2;
      } else {
        out += text_[at_++];
      }
    }
    ++at_;  // the closing quote
    return out;
  }

  static std::string unescape(char c) {
    switch (c) {
      case 'n':
        return "\n";
      case 't':
        return "\t";
      case 'r':
        return "\r";
      case 'b':
        return "\b";
      case 'f':
        return "\f";
      case 'u':
        return "\\u";
      default:
        return std::string(1, c);  // \" \\ \/
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
  int line_ = 1;
};

}  // namespace

int line_of(std::string_view text, const std::string& key) { return Scanner(text).find(key); }

}  // namespace trident::json_reader
