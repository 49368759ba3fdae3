// nccl-tests text output: a scan of lines keeping the latest test name, device block and NCCL
// version; each "# size count type ..." header starts a table read by column name.
#include "validate/nccl_tests_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "topology/errors.h"
#include "topology/text_check.h"
#include "validate/collective_fit.h"
#include "validate/nccl_tests_common.h"

namespace trident {
namespace nccl_tests {

namespace {

/// The nccl-tests binaries trident reads, and the collective each times.
constexpr std::pair<std::string_view, Collective> kTests[] = {
    {"all_reduce_perf", Collective::all_reduce},
    {"all_gather_perf", Collective::all_gather},
    {"reduce_scatter_perf", Collective::reduce_scatter},
    {"sendrecv_perf", Collective::send_recv},
    {"alltoall_perf", Collective::all_to_all},
    {"broadcast_perf", Collective::broadcast}};

std::optional<std::string> first_perf_word(std::string_view text) {
  // What std::regex_search of ([a-z]+(_[a-z]+)*_perf) finds, by a scan: libstdc++'s executor
  // recursed once per character, and a line of ~30,000 letters overflowed the stack (SIGSEGV).
  // A word is lowercase letters joined by single underscores; from each word's start, the
  // match runs to the last "_perf" that starts one of its later parts (the regex is greedy).
  // A later start in the same word sees a subset of those parts, so the scan goes on after it.
  const auto letter = [&](std::size_t i) {
    return i < text.size() && text[i] >= 'a' && text[i] <= 'z';
  };
  std::size_t i = 0;
  while (i < text.size()) {
    if (!letter(i)) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    std::size_t end = std::string_view::npos;  // past the last "_perf" found
    while (letter(i)) ++i;
    while (i < text.size() && text[i] == '_' && letter(i + 1)) {
      if (text.substr(i, 5) == "_perf") end = i + 5;
      ++i;
      while (letter(i)) ++i;
    }
    if (end != std::string_view::npos) return std::string(text.substr(start, end - start));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> find_test_name(const std::string& text) {
  // A known test anywhere in the text, the first to appear (a log named
  // h100_all_reduce_perf.log or nccl_all_reduce_perf.log names all_reduce_perf: a greedy
  // [a-z_]+_perf read them as "_all_reduce_perf" and "nccl_all_reduce_perf"); else the first
  // *_perf word, refused by name.
  std::size_t first = std::string::npos;
  std::string_view found;
  for (const auto& [name, collective] : kTests) {
    const std::size_t at = text.find(name);
    if (at < first) {
      first = at;
      found = name;
    }
  }
  if (!found.empty()) return std::string(found);
  return first_perf_word(text);
}

Collective collective_of(const std::string& test, const std::string& source) {
  for (const auto& [name, collective] : kTests) {
    if (name == test) return collective;
  }
  throw InputError(source + ": " + test +
                   ": not a collective trident models (all_reduce_perf, all_gather_perf, "
                   "reduce_scatter_perf, sendrecv_perf, alltoall_perf, broadcast_perf)");
}

std::string version_of_code(long long code) {
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 +
  // patch before.
  const long long major = code >= 10000 ? code / 10000 : code / 1000;
  const long long minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

void set_hosts(NcclTestsTable& table, const std::vector<std::string>& host_of_rank) {
  std::map<std::string, int> per_host;
  for (const auto& host : host_of_rank) ++per_host[host];
  table.hosts = static_cast<int>(per_host.size());
  table.max_ranks_per_host = 0;
  for (const auto& [host, count] : per_host) {
    table.max_ranks_per_host = std::max(table.max_ranks_per_host, count);
  }
}

void set_ranks(NcclTestsTable& table, const std::vector<RankDevice>& ranks,
               const std::string& source) {
  if (ranks.empty()) return;
  std::map<long long, int> size_of_group;
  for (const RankDevice& r : ranks) ++size_of_group[r.group];
  const long long first = ranks.front().group;
  if (size_of_group.size() > 1) {
    // The odd group is one whose size most groups do not have (the most common size; the
    // larger of two as common).
    std::map<int, int> groups_of_size;
    for (const auto& [group, size] : size_of_group) ++groups_of_size[size];
    const int usual = std::max_element(groups_of_size.begin(), groups_of_size.end(),
                                       [](const auto& a, const auto& b) {
                                         return a.second < b.second ||
                                                (a.second == b.second && a.first < b.first);
                                       })
                          ->first;
    const auto uneven = std::find_if(size_of_group.begin(), size_of_group.end(),
                                     [&](const auto& g) { return g.second != usual; });
    if (uneven != size_of_group.end()) {
      const auto named = std::find_if(ranks.begin(), ranks.end(), [&](const RankDevice& r) {
        return r.group == uneven->first;
      });
      throw InputError(fmt::format(
          "{}: group {}: the ranks split into groups of unequal size (group {} has {} rank{} "
          "where most have {}; NCCL_TESTS_SPLIT_MASK?): nccl-tests averages their times "
          "together; give a log whose groups are equal",
          named->where.empty() ? source : named->where, uneven->first, uneven->first,
          uneven->second, uneven->second == 1 ? "" : "s", usual));
    }
  }
  std::vector<std::string> hosts;
  for (const RankDevice& r : ranks) {
    if (r.group == first) hosts.push_back(r.host);
  }
  table.ranks = static_cast<int>(hosts.size());
  table.groups = static_cast<int>(size_of_group.size());
  table.group = first;
  set_hosts(table, hosts);
}

}  // namespace nccl_tests

namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string token; in >> token;) out.push_back(token);
  return out;
}

/// The whole token as a finite decimal ("12.5", "1.2e+05"), else nullopt.
std::optional<double> finite_decimal(const std::string& token) {
  double value = 0.0;
  const char* last = token.data() + token.size();
  const auto [end, error] = std::from_chars(token.data(), last, value, std::chars_format::general);
  if (error != std::errc() || end != last || !std::isfinite(value)) return std::nullopt;
  return value;
}

/// A number cell: "N/A" -> nullopt; anything else must be a finite decimal, whole ("12.5",
/// "1.2e+05"): nccl-tests prints %f/%g (src/common.cu), never hex ("0x10" read as 16 us through
/// strtod) nor "inf".
std::optional<double> cell(const std::string& token, const std::string& where) {
  if (token == "N/A" || token == "nan" || token == "-nan") return std::nullopt;
  if (const auto value = finite_decimal(token)) return value;
  throw InputError(where + ": expected a number or N/A, got '" + token + "'");
}

/// A cell nccl-tests could have printed as a number: a decimal, "N/A" or "nan" (`cell` refuses
/// the decimals it does not take, "inf" and hex among them).
bool number_cell(const std::string& token) {
  if (token == "N/A" || token == "nan" || token == "-nan") return true;
  double value = 0.0;
  const char* last = token.data() + token.size();
  const auto [end, error] = std::from_chars(token.data(), last, value, std::chars_format::general);
  return end == last && (error == std::errc() || error == std::errc::result_out_of_range);
}

/// Column positions of one header, -1 when absent.
struct Columns {
  int size = -1, count = -1, type = -1, redop = -1;
  int time[2] = {-1, -1}, algbw[2] = {-1, -1}, busbw[2] = {-1, -1}, wrong[2] = {-1, -1};
  int width = 0;
  bool wrong_is_count = false;
  bool timestamp = false;  ///< `-S 1`: a timestamp (of one or more words) ends the row
};

bool is_header(const std::vector<std::string>& t) {
  return t.size() > 3 && t[0] == "#" && t[1] == "size" && t[2] == "count";
}

Columns read_header(const std::vector<std::string>& t) {
  Columns c;
  int seen_time = 0, seen_alg = 0, seen_bus = 0, seen_wrong = 0;
  for (std::size_t i = 1; i < t.size(); ++i) {
    const int col = static_cast<int>(i) - 1;
    const std::string& name = t[i];
    if (name == "size") c.size = col;
    if (name == "count") c.count = col;
    if (name == "type") c.type = col;
    if (name == "redop") c.redop = col;
    if ((name == "time" || name == "cputime") && seen_time < 2) c.time[seen_time++] = col;
    if (name == "algbw" && seen_alg < 2) c.algbw[seen_alg++] = col;
    if (name == "busbw" && seen_bus < 2) c.busbw[seen_bus++] = col;
    if ((name == "#wrong" || name == "error") && seen_wrong < 2) c.wrong[seen_wrong++] = col;
    if (name == "#wrong") c.wrong_is_count = true;
    if (name != "timestamp") c.width = col + 1;
    if (name == "timestamp") c.timestamp = true;
  }
  return c;
}

NcclTestsCell read_cell(const std::vector<std::string>& t, const Columns& c, int which,
                        const std::string& where) {
  NcclTestsCell out;
  const auto get = [&](int col) -> std::optional<double> {
    return col < 0 ? std::nullopt : cell(t[static_cast<std::size_t>(col)], where);
  };
  out.time_us = get(c.time[which]);
  out.algbw_gbps = get(c.algbw[which]);
  out.busbw_gbps = get(c.busbw[which]);
  out.wrong = get(c.wrong[which]);
  return out;
}

NcclTestsRow read_row(const std::vector<std::string>& t, const Columns& c,
                      const std::string& where) {
  // More cells than the header names are another line run into this one (a cell no column
  // reads was ignored), unless a timestamp ends the row.
  if (static_cast<int>(t.size()) < c.width ||
      (!c.timestamp && static_cast<int>(t.size()) > c.width)) {
    throw InputError(where + ": expected " + std::to_string(c.width) + " columns, got " +
                     std::to_string(t.size()));
  }
  NcclTestsRow row;
  row.line = std::atoi(where.c_str() + where.rfind(':') + 1);
  const std::string& size_cell = t[static_cast<std::size_t>(c.size)];
  const auto size = finite_decimal(size_cell);
  if (!size) {
    throw InputError(where + ": size: expected a number of bytes, got '" + one_line(size_cell) +
                     "'");
  }
  row.bytes = *size;
  row.has_count = c.count >= 0;
  if (row.has_count) {
    row.count = cell(t[static_cast<std::size_t>(c.count)], where)
                    .value_or(std::numeric_limits<double>::quiet_NaN());
  }
  if (c.type >= 0) row.type = t[static_cast<std::size_t>(c.type)];
  if (c.redop >= 0) row.redop = t[static_cast<std::size_t>(c.redop)];
  row.out_of_place = read_cell(t, c, 0, where);
  row.in_place = read_cell(t, c, 1, where);
  return row;
}

/// A line under a header with the header's cells, whose count and time read as numbers: a row,
/// whatever its size cell says ("inf", "NaN", a word). Such a row was taken for a line of other
/// output and dropped; now read_row refuses its size.
bool row_shaped(const std::vector<std::string>& t, const Columns& c) {
  const int cells = static_cast<int>(t.size());
  if (cells < c.width || (!c.timestamp && cells > c.width) || c.time[0] < 0) return false;
  return (c.count < 0 || number_cell(t[static_cast<std::size_t>(c.count)])) &&
         number_cell(t[static_cast<std::size_t>(c.time[0])]);
}

/// What the lines before a table said.
struct Context {
  std::optional<std::string> test;
  /// From "#  Rank  3 Group  0 ... on HOST device ...".
  std::map<int, nccl_tests::RankDevice> host_of_rank;
  std::set<std::string> gpus;  ///< the GPU names of those lines
  int repeated_rank = -1;      ///< a rank two lines name, or -1
  std::string gpu;
  int threads_x_gpus = 0;  ///< "# nThread 1 nGpus 8"
  std::string nccl_version;
};

void read_device_line(const std::vector<std::string>& t, Context& context,
                      const std::string& where) {
  // "#  Rank  0 Group  0 Pid 1234 on host device  0 [0000:18:00] NVIDIA H100 80GB HBM3"
  // "#   Rank  0 Pid  12978 on    Orlando device  0 [0x45] GeForce GTX 1080" (old)
  const auto on = std::find(t.begin(), t.end(), "on");
  const auto device = std::find(t.begin(), t.end(), "device");
  if (on == t.end() || on + 1 == t.end() || device == t.end() || t.end() - device < 3) return;
  // The line a full 2048-byte buffer cut ("... device 15 [0000:bd:00] NVIDIA H1..."): its
  // rank's host is its process's (hosts_of_ranks), its name no GPU's.
  if (t.back().ends_with("...")) return;
  // The rank's number ("Rank 3"): nccl-tests numbers them proc x nThread x nGpus + i. A
  // number that is none ("abc", "-3", "3x", 2^32 + 3) is refused: read as the next rank, it
  // hid a missing one.
  int rank = 0;
  const auto [end, error] = std::from_chars(t[2].data(), t[2].data() + t[2].size(), rank);
  if (error != std::errc() || end != t[2].data() + t[2].size() || rank < 0 ||
      rank >= kMaxLogRanks) {
    throw InputError(fmt::format("{}: Rank '{}': expected a rank number 0 to {}", where, t[2],
                                 kMaxLogRanks - 1));
  }
  nccl_tests::RankDevice place{*(on + 1), 0, where};
  if (t.size() > 4 && t[3] == "Group") {  // old logs have none: one group
    const auto [group_end, group_error] =
        std::from_chars(t[4].data(), t[4].data() + t[4].size(), place.group);
    if (group_error != std::errc() || group_end != t[4].data() + t[4].size()) {
      throw InputError(
          fmt::format("{}: Group '{}': expected the process's group number", where, t[4]));
    }
  }
  if (!context.host_of_rank.emplace(rank, place).second) context.repeated_rank = rank;
  std::string gpu;
  for (auto it = device + 3; it != t.end(); ++it) {
    if (!gpu.empty()) gpu += ' ';
    gpu += *it;
  }
  if (gpu.empty()) return;
  context.gpu = gpu;
  context.gpus.insert(gpu);
}

/// Every rank's host: one process prints its nThread x nGpus ranks' lines into one 2048-byte
/// buffer and cuts it with "..." when full (nccl-tests src/util.cu writeDeviceReport,
/// MAX_LINE), so a process driving about 24 GPUs or more lists only its first ones. Its ranks
/// are proc x T x G + i: the ranks run to the last listed process's end, each unlisted one on
/// its process's host. Each process lists its first rank: a log where one does not (a rank
/// listed twice, a trimmed device report) is refused, not guessed. Without "# nThread" every
/// listed line is one rank.
std::vector<nccl_tests::RankDevice> hosts_of_ranks(const Context& context,
                                                   const std::string& source) {
  if (context.host_of_rank.empty()) return {};
  if (context.repeated_rank >= 0) {
    throw InputError(
        fmt::format("{}: the '#  Rank' lines list rank {} twice (two runs' "
                    "devices without a '# Using devices' line between them?)",
                    source, context.repeated_rank));
  }
  const long long per_process = context.threads_x_gpus > 0 ? context.threads_x_gpus : 1;
  const long long last = context.host_of_rank.rbegin()->first;
  const long long ranks = context.threads_x_gpus > 0
                              ? (last / per_process + 1) * per_process
                              : static_cast<long long>(context.host_of_rank.size());
  if (ranks > kMaxLogRanks) {
    throw InputError(fmt::format("{}: the '#  Rank' lines make {} ranks; expected at most {}",
                                 source, ranks, kMaxLogRanks));
  }
  if (context.threads_x_gpus <= 0) {
    std::vector<nccl_tests::RankDevice> hosts;
    for (const auto& [rank, place] : context.host_of_rank) hosts.push_back(place);
    return hosts;
  }
  std::vector<nccl_tests::RankDevice> hosts;
  hosts.reserve(static_cast<std::size_t>(ranks));
  for (long long r = 0; r < ranks; ++r) {
    auto it = context.host_of_rank.find(static_cast<int>(r));
    if (it == context.host_of_rank.end()) {
      const long long first = r / per_process * per_process;
      it = context.host_of_rank.find(static_cast<int>(first));
      if (it == context.host_of_rank.end()) {
        throw InputError(fmt::format(
            "{}: the '#  Rank' lines list no rank {}, the first of a process of {} (nThread x "
            "nGpus): the device report is incomplete; give the whole log",
            source, first, per_process));
      }
    }
    hosts.push_back(it->second);
  }
  return hosts;
}

/// A count in a comment line ("nThread 1"): 0..2^20, else 0 (unknown; found by fuzzing: atoi
/// overflowed, and so did the product of two large counts).
[[nodiscard]] int small_count(const std::string& text) {
  const long long value = std::atoll(text.c_str());
  return value >= 0 && value <= (1 << 20) ? static_cast<int>(value) : 0;
}

void read_comment(const std::string& line, const std::vector<std::string>& t, Context& context,
                  const std::string& where) {
  if (t.size() > 4 && t[1] == "nThread" && t[3] == "nGpus") {
    const long long product = static_cast<long long>(small_count(t[2])) * small_count(t[4]);
    context.threads_x_gpus = product <= (1 << 20) ? static_cast<int>(product) : 0;
  } else if (t.size() > 1 && t[1] == "Using") {
    context.host_of_rank.clear();
    context.gpus.clear();
    context.repeated_rank = -1;
  } else if (t.size() > 2 && t[1] == "Rank") {
    read_device_line(t, context, where);
  }
  const auto library = line.find("nccl-library=");
  if (library != std::string::npos) {
    // NCCL_VERSION_CODE: digits (an unreadable one was recorded as "0.0.0").
    const char* first = line.c_str() + library + 13;
    const char* last = first;
    while (*last != '\0' && *last != ' ' && *last != '\t' && *last != '\r') ++last;
    long long code = 0;
    const auto [end, error] = std::from_chars(first, last, code);
    if (error != std::errc() || end != last || code <= 0) {
      throw InputError(fmt::format("{}: nccl-library '{}': expected NCCL's version code (22105)",
                                   where, one_line(std::string_view(first, last - first))));
    }
    context.nccl_version = nccl_tests::version_of_code(code);
  }
}

/// "NCCL version X.Y.Z" anywhere in a line (the first such), else nullopt; a scan, not a
/// std::regex, whose executor recursed once per digit (a line of long digit runs overflowed the
/// stack as the *_perf pattern did).
std::optional<std::string> nccl_version_in(std::string_view line) {
  constexpr std::string_view kLead = "NCCL version ";
  const auto digits = [&](std::size_t& i) {
    const std::size_t from = i;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    return i > from;
  };
  for (std::size_t at = line.find(kLead); at != std::string_view::npos;
       at = line.find(kLead, at + 1)) {
    const std::size_t start = at + kLead.size();
    std::size_t i = start;
    if (digits(i) && i < line.size() && line[i] == '.' && digits(++i) && i < line.size() &&
        line[i] == '.' && digits(++i)) {
      return std::string(line.substr(start, i - start));
    }
  }
  return std::nullopt;
}

void read_plain(const std::string& line, Context& context) {
  if (auto version = nccl_version_in(line)) context.nccl_version = std::move(*version);
}

/// A row's first cell: a digit, or a sign or point before one ("-256", ".5": read, then refused).
bool starts_number(const std::string& cell) {
  const auto digit = [&](std::size_t i) {
    return i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i])) != 0;
  };
  const char c = cell.front();
  return digit(0) || ((c == '-' || c == '+' || c == '.') && digit(1));
}

/// test empty: the collective is inferred from the rows once read (finish_table).
NcclTestsTable start_table(const Context& context, const std::string& source,
                           std::optional<Collective> given) {
  NcclTestsTable table;
  table.source = source;
  std::optional<std::string> test = context.test;
  if (!test) test = nccl_tests::find_test_name(source);
  if (given) {
    table.test = test.value_or(std::string(to_string(*given)) + " (--collective)");
    table.collective = *given;
    table.collective_given = true;
  } else if (test) {
    table.test = *test;
    table.collective = nccl_tests::collective_of(*test, source);
  }
  if (context.gpus.size() > 1) {
    throw InputError(fmt::format(
        "{}: the '#  Rank' lines name {} GPU types ('{}', '{}'); a "
        "calibration describes one",
        source, context.gpus.size(), *context.gpus.begin(), *std::next(context.gpus.begin())));
  }
  table.ranks = context.threads_x_gpus;
  nccl_tests::set_ranks(table, hosts_of_ranks(context, source), source);
  table.gpu = context.gpu;
  table.nccl_version = context.nccl_version;
  return table;
}

void check_ranks(const NcclTestsTable& table, const std::string& source, int line_no) {
  if (table.ranks <= 0) {
    throw InputError(source + ":" + std::to_string(line_no) +
                     ": cannot tell the number of ranks (no '# nThread N nGpus M' line and no "
                     "'#  Rank' device lines before the table)");
  }
}

/// A table without a test name gets the collective its rows show; a named one must not show
/// another's (an all-gather table after a named all-reduce one inherited its name).
void finish_table(NcclTestsTable& table, const std::string& source, int line_no,
                  bool collective_given) {
  if (collective_given) return;
  if (!table.test.empty()) {
    if (const auto problem = named_table_problem(table)) throw InputError(*problem);
    return;
  }
  const auto inferred = infer_collective(table);
  if (!inferred) {
    throw InputError(source + ":" + std::to_string(line_no) +
                     ": cannot tell which collective this table measured (no '*_perf' name in "
                     "the log or the file name; only a reduce-scatter's rows are its own: an "
                     "all-reduce's read as a send-recv's or a reduce's, an all-gather's as an "
                     "all-to-all's); give --collective");
  }
  table.collective = *inferred;
  table.test = std::string(to_string(*inferred)) + " (inferred from the table)";
}

/// A launcher's label before a line: `srun -l` ("0: ", " 12: "), Open MPI's `--tag-output`
/// ("[1,0]<stdout>:") or MPICH/Intel MPI's `-l` ("[0] "). nccl-tests prints its report from
/// process 0 only (src/common.cu is_main_proc), so its lines carry task 0's label and the other
/// tasks' labelled lines (NCCL INFO, warnings) are not the report's.
struct Label {
  std::size_t length = 0;  ///< 0: no label
  bool main_process = true;
};

/// Digits at `i` (at most 9): their value, and `i` moved past them; nullopt when none.
std::optional<long> digits_at(const std::string& line, std::size_t& i) {
  const std::size_t start = i;
  long value = 0;
  while (i < line.size() && i - start < 9 && std::isdigit(static_cast<unsigned char>(line[i]))) {
    value = value * 10 + (line[i++] - '0');
  }
  if (i == start) return std::nullopt;
  return value;
}

Label launcher_label(const std::string& line) {
  std::size_t i = line.find_first_not_of(' ');
  if (i == std::string::npos) return {};
  if (line[i] != '[') {  // srun -l: " 3: "
    const auto task = digits_at(line, i);
    if (!task || line.compare(i, 2, ": ") != 0) return {};
    return {i + 2, *task == 0};
  }
  ++i;
  const auto first = digits_at(line, i);
  if (!first || i >= line.size()) return {};
  if (line.compare(i, 2, "] ") == 0) return {i + 2, *first == 0};  // MPICH: "[0] "
  if (line[i] != ',') return {};
  ++i;
  const auto rank = digits_at(line, i);  // Open MPI: "[JOB,RANK]<stdout>:"
  if (!rank) return {};
  for (const std::string tag : {"]<stdout>:", "]<stderr>:"}) {
    if (line.compare(i, tag.size(), tag) == 0) {
      i += tag.size();
      if (i < line.size() && line[i] == ' ') ++i;  // Open MPI 5 adds a space
      return {i, *rank == 0};
    }
  }
  return {};
}

std::vector<NcclTestsTable> parse_text(const std::string& text, const std::string& source,
                                       std::optional<Collective> given) {
  std::vector<NcclTestsTable> tables;
  int table_line = 0;
  std::optional<Columns> columns;
  Context context;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const Label label = launcher_label(line);
    if (!label.main_process) continue;
    line.erase(0, label.length);
    const auto t = tokens(line);
    if (t.empty()) continue;
    if (const auto test = nccl_tests::find_test_name(line)) context.test = test;
    if (is_header(t)) {
      if (!tables.empty()) finish_table(tables.back(), source, table_line, given.has_value());
      tables.push_back(start_table(context, source, given));
      check_ranks(tables.back(), source, line_no);
      table_line = line_no;
      columns = read_header(t);
      tables.back().wrong_is_count = columns->wrong_is_count;
    } else if (t[0].front() == '#') {
      read_comment(line, t, context, source + ":" + std::to_string(line_no));
    } else if (columns && (starts_number(t[0]) || t[0] == "nan" || t[0] == "-nan" ||
                           t[0] == "N/A" || row_shaped(t, *columns))) {
      tables.back().rows.push_back(read_row(t, *columns, source + ":" + std::to_string(line_no)));
    } else {
      read_plain(line, context);
    }
  }
  if (tables.empty()) {
    throw InputError(source +
                     ": no nccl-tests result table (a '#  size  count  type ...' "
                     "header followed by rows)");
  }
  finish_table(tables.back(), source, table_line, given.has_value());
  return tables;
}

}  // namespace

std::vector<NcclTestsTable> parse_nccl_tests(const std::string& text, const std::string& source,
                                             std::optional<Collective> collective) {
  // A UTF-8 byte order mark (an editor's save) is no part of the log: kept, it hid the first
  // line ("NCCL version 2.27.3" was read as none) and a -J file's opening brace.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const std::size_t skip = std::string_view(text).starts_with(kBom) ? kBom.size() : 0;
  const auto first = text.find_first_not_of(" \t\r\n", skip);
  if (first != std::string::npos && text[first] == '{') {
    auto tables = nccl_tests::parse_json(text, source, collective);
    for (auto& table : tables) table.source = source;
    return tables;
  }
  return parse_text(skip == 0 ? text : text.substr(skip), source, collective);
}

}  // namespace trident
