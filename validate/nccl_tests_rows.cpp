// The rows of an nccl-tests table: each checked against the size nccl-tests prints for its
// count, type and ranks, the collective inferred where the log names none, and the samples
// (busbw recomputed from size and time) a calibration fits.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/errors.h"
#include "validate/collective_fit.h"
#include "validate/nccl_tests_parser.h"

namespace trident {

namespace {

/// Bytes per element of an nccl-tests type name (src/common.cu test_typenames @a0b82b2, and
/// "char" and "int" of its NCCL 1 list); 0 when unknown.
double type_bytes(const std::string& type) {
  static const std::map<std::string, double> sizes = {
      {"int8", 1},  {"uint8", 1},    {"char", 1},   {"f8e4m3", 1}, {"f8e5m2", 1},
      {"half", 2},  {"bfloat16", 2}, {"int32", 4},  {"uint32", 4}, {"int", 4},
      {"float", 4}, {"int64", 8},    {"uint64", 8}, {"double", 8}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? 0.0 : it->second;
}

/// The size nccl-tests prints for `count` elements of `element_bytes`: setupArgs prints
/// max(send, receive) bytes and count = the per-rank parameter count (src/common.cu), which
/// the all-gather, reduce-scatter and all-to-all tests take as size / ranks
/// (src/{all_gather,reduce_scatter,alltoall}.cu GetCollByteCount @a0b82b2).
double printed_bytes(Collective collective, int ranks, double count, double element_bytes) {
  const bool per_rank = collective == Collective::all_gather ||
                        collective == Collective::reduce_scatter ||
                        collective == Collective::all_to_all;
  return count * element_bytes * (per_rank ? ranks : 1);
}

/// A row whose type is unknown, or whose count does not make its size for the table's
/// collective and ranks (another test's row, or the ranks misread): nullopt when sound.
std::optional<std::string> row_count_problem(const NcclTestsTable& table, const NcclTestsRow& row,
                                             const std::string& where) {
  if (row.type.empty()) return std::nullopt;  // a layout without the type column
  const double element = type_bytes(row.type);
  if (element == 0.0) {
    return fmt::format(
        "{}{}: type '{}': expected an nccl-tests type (int8, uint8, int32, uint32, int64, "
        "uint64, half, float, double, bfloat16, f8e4m3, f8e5m2)",
        table.source, where, row.type);
  }
  if (!row.has_count || row.bytes <= 0.0) return std::nullopt;  // no count column; size 0
  if (!(row.count > 0.0) || row.count != std::floor(row.count) || row.count > kMaxRowBytes) {
    return fmt::format(
        "{}{}: count: expected a whole number of elements above 0 for the size {:.0f}, got {}",
        table.source, where, row.bytes,
        std::isnan(row.count) ? std::string("N/A") : fmt::format("{:.10g}", row.count));
  }
  const double expected = printed_bytes(table.collective, table.ranks, row.count, element);
  if (expected == row.bytes) return std::nullopt;
  return fmt::format(
      "{}{}: count {:.0f} of {} is {:.0f} bytes for {} over {} ranks, not the size {:.0f}: "
      "the row is another test's or the ranks are misread ({})",
      table.source, where, row.count, row.type, expected, to_string(table.collective), table.ranks,
      row.bytes,
      table.collective_given ? "check the log and --collective"
                             : "check the log, or give --collective");
}

/// The collective a row's columns can only come from. An all-reduce row (count x type = size,
/// a reducing redop) reads exactly as sendrecv_perf's (it runs its op list: nccl-tests
/// src/sendrecv.cu SendRecvRunTest, root -1) and reduce_perf's; an all-gather row (redop none,
/// count x type x ranks = size) as alltoall_perf's: only a reduce-scatter row is its own.
std::optional<Collective> infer_row(const NcclTestsRow& row, int ranks) {
  const double element = type_bytes(row.type);
  if (element == 0.0 || row.bytes <= 0.0 || row.redop.empty() || row.redop == "none") {
    return std::nullopt;
  }
  const bool fits =
      printed_bytes(Collective::reduce_scatter, ranks, row.count, element) == row.bytes;
  if (ranks > 1 && fits) return Collective::reduce_scatter;
  return std::nullopt;
}

}  // namespace

std::optional<Collective> infer_collective(const NcclTestsTable& table) {
  std::optional<Collective> found;
  for (const auto& row : table.rows) {
    if (row.bytes == 0.0) continue;  // nccl-tests prints size 0 when -b is below ranks x type
    const auto collective = infer_row(row, table.ranks);
    if (!collective || (found && *found != *collective)) return std::nullopt;
    found = collective;
  }
  return found;
}

namespace {

/// A row whose redop the table's collective never prints (all-reduce and reduce-scatter a
/// reducing op, all-gather, all-to-all and broadcast "none": nccl-tests src/*.cu RunTest);
/// nullopt when it fits or has no redop column.
std::optional<std::string> row_redop_problem(const NcclTestsTable& table, const NcclTestsRow& row,
                                             const std::string& where) {
  if (row.redop.empty()) return std::nullopt;
  const bool reduces =
      table.collective == Collective::all_reduce || table.collective == Collective::reduce_scatter;
  const bool copies = table.collective == Collective::all_gather ||
                      table.collective == Collective::all_to_all ||
                      table.collective == Collective::broadcast;
  if ((!reduces || row.redop != "none") && (!copies || row.redop == "none")) return std::nullopt;
  return fmt::format("{}{}: redop '{}', which no {} has: {}", table.source, where, row.redop,
                     to_string(table.collective),
                     table.collective_given
                         ? "the rows are another test's than --collective says (check it)"
                         : "this table is another test's (a log with several tests names each: "
                           "check it, or give --collective)");
}

/// A text row by its line, a -J row by its place in "results".
std::string row_where(const NcclTestsRow& row, std::size_t i) {
  return row.line > 0 ? fmt::format(":{}", row.line) : fmt::format(": results[{}]", i);
}

}  // namespace

std::optional<std::string> named_table_problem(const NcclTestsTable& table) {
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    if (auto problem = row_redop_problem(table, table.rows[i], row_where(table.rows[i], i))) {
      return problem;
    }
  }
  return std::nullopt;
}

Tier infer_tier(const NcclTestsTable& table) {
  return table.hosts > 1 ? Tier::network : Tier::nvlink;
}

namespace {
/// The half a row's sample takes its time from: out-of-place, else in-place.
const NcclTestsCell& timed_half(const NcclTestsRow& row) {
  return row.out_of_place.time_us ? row.out_of_place : row.in_place;
}
/// A row to_samples leaves out without an error: a size of 0, or no time in either half.
bool untimed(const NcclTestsRow& row) { return !timed_half(row).time_us || row.bytes <= 0.0; }
}  // namespace

std::vector<UntimedRow> untimed_rows(const NcclTestsTable& table) {
  std::vector<UntimedRow> out;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const NcclTestsRow& row = table.rows[i];
    if (row.bytes > 0.0 && untimed(row)) out.push_back({row_where(row, i), row.bytes});
  }
  return out;
}

std::vector<CollectiveSample> to_samples(const NcclTestsTable& table, Tier tier) {
  std::vector<CollectiveSample> out;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const NcclTestsRow& row = table.rows[i];
    const NcclTestsCell& chosen = timed_half(row);
    const std::string where = row_where(row, i);
    // Either half wrong is a wrong collective: the in-place run too.
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (table.wrong_is_count && half->wrong && *half->wrong != 0.0) {
        throw InputError(
            fmt::format("{}{}: #wrong is {}{} at {} bytes: the collective gave wrong "
                        "results; fix the run before calibrating on it",
                        table.source, where, *half->wrong,
                        half == &row.in_place ? " (in place)" : "", row.bytes));
      }
    }
    if (!std::isfinite(row.bytes) || row.bytes > kMaxRowBytes) {
      throw InputError(fmt::format("{}{}: size: expected at most {:g} bytes, got {:g}",
                                   table.source, where, kMaxRowBytes, row.bytes));
    }
    if (row.bytes < 0.0 || row.bytes != std::floor(row.bytes)) {
      throw InputError(
          fmt::format("{}{}: size: expected a whole number of bytes, 0 or more, got {:g}",
                      table.source, where, row.bytes));
    }
    if (chosen.time_us && (!std::isfinite(*chosen.time_us) || *chosen.time_us > kMaxRowTimeUs)) {
      throw InputError(
          fmt::format("{}{}: time: expected a finite time of at most {:g} us, got {:g}",
                      table.source, where, kMaxRowTimeUs, *chosen.time_us));
    }
    if (const auto problem = row_redop_problem(table, row, where)) throw InputError(*problem);
    if (const auto problem = row_count_problem(table, row, where)) throw InputError(*problem);
    if (untimed(row)) continue;  // "N/A", or a size-0 row (untimed_rows names the former)
    if (*chosen.time_us <= 0.0) {
      throw InputError(fmt::format("{}{}: time: expected a positive time at {:g} bytes, got {:g}",
                                   table.source, where, row.bytes, *chosen.time_us));
    }
    CollectiveSample sample;
    sample.collective = table.collective;
    sample.ranks = table.ranks;
    sample.tier = tier;
    sample.bytes = row.bytes;
    sample.time_s = *chosen.time_us * 1e-6;
    sample.busbw_gbps = busbw_gbps(table.collective, table.ranks, row.bytes, sample.time_s);
    // A time so short its bus bandwidth is past any link (1e6 GB/s, what a calibration file
    // holds) is no measurement: refused at its line, not later as "calibration: collectives[4]".
    if (!(sample.busbw_gbps <= kMaxRowBusbwGbps)) {
      throw InputError(fmt::format(
          "{}{}: time: {:g} us at {:g} bytes is a bus bandwidth of {:g} "
          "GB/s; expected at most {:g}",
          table.source, where, *chosen.time_us, row.bytes, sample.busbw_gbps, kMaxRowBusbwGbps));
    }
    out.push_back(sample);
  }
  return out;
}

}  // namespace trident
