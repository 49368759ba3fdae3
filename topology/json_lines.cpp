// Line of a value in JSON text by its key path (topology/json_lines.h).
#include "topology/json_lines.h"

#include <cstddef>
#include <string>
#include <vector>

namespace trident::json_reader {

namespace {

/// One open object or array on the way to the key: the length of its path (a prefix of the
/// one path string) and, in an array, the next element's index.
struct Frame {
  std::size_t path_length = 0;
  bool array = false;
  std::size_t next_index = 0;
};

/// Walks valid JSON without recursion, keeping the line count. Only the containers on the
/// way to the key are entered; every other value is skipped whole with a depth count, so time
/// is linear in the text and memory in the key's depth, however deep the text nests.
class Scanner {
 public:
  Scanner(std::string_view text, const std::string& key) : text_(text), key_(key) {}

  /// The line of the key's value, else of the deepest of its ancestors present; 0 if none.
  int find() {
    int best_line = 0;
    std::size_t best_length = 0;
    std::vector<Frame> stack;
    std::string path;  // the path of the value about to start
    bool have_path = true;
    while (true) {
      skip_space();
      if (at_ >= text_.size()) break;
      const char c = text_[at_];
      if (c == ',' || c == ':') {
        ++at_;
        continue;
      }
      if (c == '}' || c == ']') {  // the end of a container on the way: the key is not in it
        ++at_;
        if (!stack.empty()) stack.pop_back();
        if (stack.empty()) break;
        path.resize(stack.back().path_length);
        continue;
      }
      if (!stack.empty() && !stack.back().array && !have_path) {  // a member's name
        path.resize(stack.back().path_length);
        append_child(path, read_string());
        have_path = true;
        continue;
      }
      if (!stack.empty() && stack.back().array) {
        path.resize(stack.back().path_length);
        path += '[';
        path += std::to_string(stack.back().next_index++);
        path += ']';
      }
      have_path = false;
      if (!is_ancestor_or_self(path, stack.empty() ? 0 : stack.back().path_length)) {
        skip_value();
        continue;
      }
      if (best_line == 0 || path.size() >= best_length) {  // a "" member's path is its parent's
        best_line = line_;
        best_length = path.size();
      }
      if (path.size() == key_.size()) return best_line;
      if (c == '{' || c == '[') {
        stack.push_back({path.size(), c == '[', 0});
        ++at_;
      } else {
        skip_value();  // a scalar on the way cannot hold the key
      }
    }
    return best_line;
  }

 private:
  static void append_child(std::string& path, const std::string& name) {
    if (!path.empty()) path += '.';
    path += name;
  }

  /// `path` is the key or one of its ancestors: a prefix ending where the key goes on with '.'
  /// or '['. Its first `known` characters (its container's path, on the key's way) already
  /// match, so only the rest is compared.
  [[nodiscard]] bool is_ancestor_or_self(const std::string& path, std::size_t known) const {
    if (path.empty()) return true;
    if (path.size() > key_.size()) return false;
    if (key_.compare(known, path.size() - known, path, known, path.size() - known) != 0) {
      return false;
    }
    return key_.size() == path.size() || key_[path.size()] == '.' || key_[path.size()] == '[';
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
    const auto byte = static_cast<unsigned char>(c);
    return at_ < 3 && (byte == 0xEF || byte == 0xBB || byte == 0xBF);
  }

  /// Past the value starting at text_[at_]: a string, a literal, or a container with all it
  /// holds (strings inside may hold brackets), counting the lines it spans.
  void skip_value() {
    std::size_t depth = 0;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (depth == 0 && ends_literal(c)) return;
      if (c == '"') {
        skip_string();
        if (depth == 0) return;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          ++at_;
          return;
        }
      } else if (c == '\n') {
        ++line_;
      }
      ++at_;
    }
  }

  static bool ends_literal(char c) {
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
  }

  /// Past a string at text_[at_] == '"' (JSON strings hold no raw line breaks).
  void skip_string() {
    ++at_;
    while (at_ < text_.size() && text_[at_] != '"') at_ += text_[at_] == '\\' ? 2 : 1;
    ++at_;
  }

  /// A string at text_[at_] == '"', its escapes decoded as nlohmann decodes a member's name
  /// (\uXXXX and surrogate pairs to UTF-8).
  std::string read_string() {
    std::string out;
    ++at_;  // the opening quote
    while (at_ < text_.size() && text_[at_] != '"') {
      if (text_[at_] != '\\' || at_ + 1 >= text_.size()) {
        out += text_[at_++];
      } else if (text_[at_ + 1] == 'u') {
        append_utf8(out, read_code_point());
      } else {
        out += unescape(text_[at_ + 1]);
        at_ += 2;
      }
    }
    ++at_;  // the closing quote
    return out;
  }

  /// The code point of \uXXXX at text_[at_] (with its low surrogate's \uXXXX when it is a
  /// high surrogate), and past it.
  unsigned read_code_point() {
    const unsigned first = hex4(at_ + 2);
    at_ += 6;
    if (first >= 0xD800 && first <= 0xDBFF && at_ + 1 < text_.size() && text_[at_] == '\\' &&
        text_[at_ + 1] == 'u') {
      const unsigned second = hex4(at_ + 2);
      if (second >= 0xDC00 && second <= 0xDFFF) {
        at_ += 6;
        return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
      }
    }
    return first;
  }

  /// Four hex digits at text_[from] (0 past the end or at a non-digit: JSON nlohmann accepted
  /// has none).
  [[nodiscard]] unsigned hex4(std::size_t from) const {
    unsigned value = 0;
    for (std::size_t i = from; i < from + 4; ++i) {
      const char c = i < text_.size() ? text_[i] : '0';
      const unsigned digit = c >= '0' && c <= '9'   ? static_cast<unsigned>(c - '0')
                             : c >= 'a' && c <= 'f' ? static_cast<unsigned>(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? static_cast<unsigned>(c - 'A' + 10)
                                                    : 0U;
      value = value * 16 + digit;
    }
    return value;
  }

  static void append_utf8(std::string& out, unsigned point) {
    const auto byte = [&out](unsigned value) { out += static_cast<char>(value); };
    if (point < 0x80) {
      byte(point);
    } else if (point < 0x800) {
      byte(0xC0 | (point >> 6));
      byte(0x80 | (point & 0x3F));
    } else if (point < 0x10000) {
      byte(0xE0 | (point >> 12));
      byte(0x80 | ((point >> 6) & 0x3F));
      byte(0x80 | (point & 0x3F));
    } else {
      byte(0xF0 | (point >> 18));
      byte(0x80 | ((point >> 12) & 0x3F));
      byte(0x80 | ((point >> 6) & 0x3F));
      byte(0x80 | (point & 0x3F));
    }
  }

  static char unescape(char c) {
    switch (c) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      default:
        return c;  // \" \\ \/
    }
  }

  std::string_view text_;
  const std::string& key_;
  std::size_t at_ = 0;
  int line_ = 1;
};

}  // namespace

int line_of(std::string_view text, const std::string& key) { return Scanner(text, key).find(); }

}  // namespace trident::json_reader
