// `nvidia-smi topo -m` reader (topology/nvidia_smi_import.h).
#include "topology/nvidia_smi_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "topology/errors.h"
#include "topology/server_import.h"
#include "topology/text_check.h"

namespace trident {
namespace {

struct Line {
  int number = 0;  ///< 1-based
  std::vector<std::string> tokens;
};

/// Drops ANSI escape sequences (ESC [ ... final letter), which nvidia-smi prints around the
/// header on a terminal, and carriage returns.
[[nodiscard]] std::string strip_escapes(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') continue;
    if (text[i] != '\x1b') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    }
  }
  return out;
}

[[nodiscard]] std::vector<Line> split_lines(const std::string& text) {
  std::vector<Line> lines;
  std::istringstream in(strip_escapes(text));
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    Line line{.number = ++number, .tokens = {}};
    std::istringstream words(raw);
    for (std::string word; words >> word;) line.tokens.push_back(word);
    lines.push_back(std::move(line));
  }
  return lines;
}

[[nodiscard]] std::optional<int> gpu_index(std::string_view token) {
  // At most 6 digits: a longer "GPU#" is not an index (and would overflow an int).
  if (token.size() < 4 || token.size() > 9 || token.substr(0, 3) != "GPU") return std::nullopt;
  int value = 0;
  for (const char c : token.substr(3)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

/// The words that start the trailing affinity columns ("CPU Affinity", "NUMA Affinity",
/// "GPU NUMA ID"); the device columns end before the first of them.
[[nodiscard]] bool is_trailer(std::string_view token) {
  return token == "CPU" || token == "NUMA" || token == "GPU" || token == "Affinity";
}

/// One matrix cell: NVLink count for NV#, 0 for a PCIe path, -1 for X (self).
struct Cell {
  int nvlinks = 0;
  std::string path;  ///< "NV18", "PIX", ...
};

constexpr std::array<std::string_view, 8> kPaths{"X",    "PIX", "PXB", "PHB",
                                                 "NODE", "SYS", "SOC", "PSB"};

[[nodiscard]] std::optional<Cell> parse_cell(const std::string& token) {
  if (std::find(kPaths.begin(), kPaths.end(), token) != kPaths.end()) return Cell{0, token};
  if (token.size() < 3 || token.substr(0, 2) != "NV" || token.size() > 5) return std::nullopt;
  int links = 0;
  for (const char c : token.substr(2)) {
    if (c < '0' || c > '9') return std::nullopt;
    links = links * 10 + (c - '0');
  }
  if (links < 1 || links > kMaxNvlinks) return std::nullopt;
  return Cell{links, token};
}

/// GPUs and NICs together: each row holds one cell per column, and rows are looked up by name.
constexpr std::size_t kMaxColumns = 4096;

class Reader {
 public:
  Reader(const std::string& text, const std::string& source)
      : lines_(split_lines(text)), source_(source) {}

  [[nodiscard]] ImportedServer read();

 private:
  [[noreturn]] void fail(int line, const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(line) + ": " + what);
  }
  [[nodiscard]] std::size_t find_header() const;
  void read_columns(const Line& header);
  void read_rows(std::size_t from);
  void read_row(const Line& line, std::size_t column_of_row);
  void read_legend_and_names();
  void choose_nics(ImportedServer& server) const;
  [[nodiscard]] std::string column_range() const {
    return columns_.front() + ".." + columns_.back();
  }

  std::vector<Line> lines_;
  std::string source_;
  std::vector<std::string> columns_;
  std::map<std::string, std::size_t> column_of_;  ///< name -> index in columns_
  int gpus_ = 0;
  std::map<std::size_t, std::vector<Cell>> rows_;  ///< column index of the row -> its cells
  std::map<std::string, std::string> legend_;      ///< NIC0 -> mlx5_0
  std::string device_name_;
  std::string first_gpu_;  ///< the index of the first `nvidia-smi -L` line
};

std::size_t Reader::find_header() const {
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    const auto& tokens = lines_[i].tokens;
    if (tokens.empty() || !gpu_index(tokens.front())) continue;
    // A GPU name followed by a connection is a row: the header, which names the columns, is
    // missing above it (cut off when pasted) or does not start with GPU0.
    if (tokens.size() > 1 && parse_cell(tokens[1])) {
      fail(lines_[i].number,
           "row '" + tokens.front() +
               "' before any header line: expected the header of the matrix (GPU0 GPU1 ... "
               "CPU Affinity, as nvidia-smi topo -m prints it) first");
    }
    return i;
  }
  throw InputError(source_ +
                   ": no `nvidia-smi topo -m` matrix found (expected a header line "
                   "starting with GPU0)");
}

void Reader::read_columns(const Line& header) {
  for (const std::string& token : header.tokens) {
    if (is_trailer(token)) break;
    if (gpu_index(token) && columns_.size() > static_cast<std::size_t>(gpus_)) {
      fail(header.number, "column '" + token + "' after the NIC column '" + columns_.back() +
                              "': expected the GPU columns first");
    }
    if (gpus_ >= kMaxImportGpus && gpu_index(token)) {
      fail(header.number, "more than " + std::to_string(kMaxImportGpus) + " GPU columns");
    }
    if (columns_.size() >= kMaxColumns) {
      fail(header.number, "more than " + std::to_string(kMaxColumns) + " columns");
    }
    if (column_of_.count(token) != 0) fail(header.number, "column '" + token + "' appears twice");
    column_of_[token] = columns_.size();
    const auto gpu = gpu_index(token);
    if (gpu && *gpu != gpus_) {
      fail(header.number, "column '" + token + "': expected GPU" + std::to_string(gpus_) +
                              " (GPU columns in order, before the NICs)");
    }
    if (gpu) ++gpus_;
    columns_.push_back(token);
  }
}

void Reader::read_row(const Line& line, std::size_t column_of_row) {
  const std::string& name = line.tokens.front();
  if (rows_.count(column_of_row) != 0) fail(line.number, "row '" + name + "' appears twice");
  if (line.tokens.size() < columns_.size() + 1) {
    fail(line.number, "row '" + name + "': expected " + std::to_string(columns_.size()) +
                          " cells (one per column " + column_range() + "), got " +
                          std::to_string(line.tokens.size() - 1));
  }
  // After the matrix come the affinity columns ("0-7", "3", "N/A"), never a connection: one
  // there is a row with a cell more than the header has columns (an edited or merged file).
  if (line.tokens.size() > columns_.size() + 1 && parse_cell(line.tokens[columns_.size() + 1])) {
    fail(line.number, "row '" + name + "': a connection '" + line.tokens[columns_.size() + 1] +
                          "' past the last column (" + column_range() + "): expected " +
                          std::to_string(columns_.size()) + " cells");
  }
  std::vector<Cell> cells;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const std::string& token = line.tokens[c + 1];
    const auto cell = parse_cell(token);
    if (!cell) {
      std::string message = "row '" + name;
      message += "', column '";
      message += columns_[c];
      message += "': unknown connection '";
      message += token;
      message += "' (expected X, NV1..NV" + std::to_string(kMaxNvlinks);
      message += ", PIX, PXB, PHB, NODE or SYS)";
      fail(line.number, message);
    }
    if ((cell->path == "X") != (c == column_of_row)) {
      std::string message = "row '" + name;
      message += "', column '";
      message += columns_[c];
      message += "': '";
      message += token;
      message += c == column_of_row ? "' on the diagonal: expected X"
                                    : "' off the diagonal: X marks a device itself";
      fail(line.number, message);
    }
    cells.push_back(*cell);
  }
  rows_[column_of_row] = std::move(cells);
}

void Reader::read_rows(std::size_t from) {
  for (std::size_t i = from; i < lines_.size(); ++i) {
    const Line& line = lines_[i];
    if (line.tokens.empty()) continue;
    if (line.tokens.front() == "Legend:") break;
    const auto column = column_of_.find(line.tokens.front());
    if (column != column_of_.end()) read_row(line, column->second);
  }
  for (int g = 0; g < gpus_; ++g) {
    if (rows_.count(g) == 0) {
      throw InputError(source_ + ": row 'GPU" + std::to_string(g) + "' is missing");
    }
  }
}

void Reader::read_legend_and_names() {
  for (const Line& line : lines_) {
    const auto& t = line.tokens;
    // NIC legend: "NIC0: mlx5_0". Its names reach the YAML's comments: one line each, one
    // name per NIC of the matrix (a name with a terminal escape was copied raw).
    if (!t.empty() && t[0].size() > 4 && t[0].rfind("NIC", 0) == 0 && t[0].back() == ':') {
      const std::string nic = t[0].substr(0, t[0].size() - 1);
      const std::string where = source_ + ":" + std::to_string(line.number) + ": " + nic;
      if (t.size() != 2) throw InputError(where + ": expected one device name ('NIC0: mlx5_0')");
      check_one_line(t[1], where);
      if (column_of_.count(nic) == 0) {
        throw InputError(where + ": in the NIC legend but not a column of the matrix (" +
                         column_range() + ")");
      }
      if (!legend_.emplace(nic, t[1]).second) {
        throw InputError(where + ": named twice in the NIC legend");
      }
      // One device per NIC: a name the legend gives two NICs is an edited or merged file.
      for (const auto& [other, device] : legend_) {
        if (other != nic && device == t[1]) {
          throw InputError(fmt::format(
              "{}: '{}' is also {}'s device in the NIC legend; each NIC is its own device", where,
              t[1], other));
        }
      }
    }
    // nvidia-smi -L: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"
    if (t.size() >= 3 && t[0] == "GPU" && t[1].back() == ':') {
      std::string name;
      for (std::size_t k = 2; k < t.size() && t[k] != "(UUID:"; ++k) {
        name += (name.empty() ? "" : " ") + t[k];
      }
      check_one_line(name, source_ + ":" + std::to_string(line.number) + ": GPU name");
      // One GPU type per server: the cluster YAML names one.
      if (!device_name_.empty() && name != device_name_) {
        throw InputError(source_ + ":" + std::to_string(line.number) + ": GPU " +
                         t[1].substr(0, t[1].size() - 1) + " is '" + name + "' where GPU " +
                         first_gpu_ + " is '" + device_name_ +
                         "'; a server of one GPU type is expected");
      }
      if (device_name_.empty()) first_gpu_ = t[1].substr(0, t[1].size() - 1);
      device_name_ = name;
    }
  }
}

/// NICs behind the same PCIe switch as some GPU (PIX/PXB) carry the GPUs' traffic; the rest
/// (storage, management) are left out. When none is that close, all count.
void Reader::choose_nics(ImportedServer& server) const {
  std::vector<std::string> near;
  std::vector<std::string> far;
  for (std::size_t c = gpus_; c < columns_.size(); ++c) {
    bool close = false;
    for (int g = 0; g < gpus_; ++g) {
      const std::string& path = rows_.at(g)[c].path;
      close = close || path == "PIX" || path == "PXB";
    }
    const auto legend = legend_.find(columns_[c]);
    const std::string name =
        legend == legend_.end() ? columns_[c] : columns_[c] + " (" + legend->second + ")";
    (close ? near : far).push_back(name);
  }
  if (near.empty()) {
    server.nics = far;
    server.no_nic_near_gpu = !far.empty();
    return;
  }
  server.nics = near;
  for (const auto& name : far) {
    server.other_nics.push_back(name +
                                ": no GPU behind the same PCIe switch (storage or "
                                "management)");
  }
}

ImportedServer Reader::read() {
  const std::size_t header = find_header();
  read_columns(lines_[header]);
  read_rows(header + 1);
  read_legend_and_names();
  ImportedServer server;
  server.source = source_;
  server.format = "nvidia-smi topo -m";
  server.gpus = gpus_;
  server.pair_links.assign(gpus_, std::vector<int>(gpus_, 0));
  for (int i = 0; i < gpus_; ++i) {
    for (int j = 0; j < gpus_; ++j) {
      if (i != j) server.pair_links[i][j] = rows_.at(i)[j].nvlinks;
    }
  }
  choose_nics(server);
  server.device_name = device_name_;
  return server;
}

}  // namespace

ImportedServer parse_nvidia_smi_topo(const std::string& text, const std::string& source) {
  // A UTF-8 byte order mark (an editor's save) before the header, as the YAML and XML readers
  // take it: the header line was read as a row before any header.
  const std::string_view bom = "\xEF\xBB\xBF";
  if (text.starts_with(bom)) return Reader(text.substr(bom.size()), source).read();
  return Reader(text, source).read();
}

}  // namespace trident
