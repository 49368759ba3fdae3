#pragma once
/// nccl-tests output (NVIDIA/nccl-tests) -> measured collective samples. Accepts the text
/// table of every layout since 2.x (old: "... redop time algbw busbw error ..." without
/// "root"; new: "... redop root time algbw busbw #wrong ..."), "N/A" cells, exponent forms
/// ("1.2e+05"), several tables in one file, and the JSON file written with `-J FILE`.
#include <optional>
#include <string>
#include <vector>

#include "costmodel/calibration.h"

namespace trident {

/// One measurement of one table row, out-of-place or in-place; nullopt = "N/A" or absent.
struct NcclTestsCell {
  std::optional<double> time_us;
  std::optional<double> algbw_gbps;
  std::optional<double> busbw_gbps;
  std::optional<double> wrong;  ///< "#wrong" (new) or max error (old "error" column)
};

struct NcclTestsRow {
  int line = 0;            ///< 1-based line in the text log; 0 in the JSON form
  double bytes = 0.0;      ///< "size" (S)
  double count = 0.0;      ///< the count column; NaN when it reads N/A or nan
  bool has_count = false;  ///< the log has a count column (the JSON form a "count")
  std::string type;
  std::string redop;
  NcclTestsCell out_of_place;
  NcclTestsCell in_place;
};

struct NcclTestsTable {
  std::string source;  ///< the file, for errors
  std::string test;    ///< "all_reduce_perf"
  Collective collective = Collective::all_reduce;
  int ranks = 0;        ///< of one group in a split run (`groups`)
  int groups = 1;       ///< communicators measured at once (NCCL_TESTS_SPLIT_MASK), each of `ranks`
  long long group = 0;  ///< rank 0's group (its process's color), the one the table describes
  std::string gpu;      ///< from the device lines, "" when absent
  int max_ranks_per_host = 0;  ///< 0 when no device lines
  int hosts = 0;
  std::string nccl_version;       ///< "2.19.3", "" when absent
  bool wrong_is_count = false;    ///< the column is "#wrong" (a count; old logs: max "error")
  bool collective_given = false;  ///< by --collective (not read from the log)
  std::vector<NcclTestsRow> rows;
};

/// Largest message size and time a row may hold (1 PB, 1000 s): beyond them the busbw is no
/// rate a calibration file can hold (costmodel/calibration_io.h bounds).
inline constexpr double kMaxRowBytes = 1e15;
inline constexpr double kMaxRowTimeUs = 1e9;
/// The most ranks a log's device lines may make (2^20: beyond any job trident plans).
inline constexpr long long kMaxLogRanks = 1 << 20;
/// The largest bus bandwidth a row's time may give, GB/s (a calibration file's bound).
inline constexpr double kMaxRowBusbwGbps = 1e6;

/// Parses a text log or a `-J` JSON file (detected by a leading '{'). The collective is
/// `collective` when given, else the test name in the log, else in `source` ("all_gather_perf
/// .log"), else inferred from the table (infer_collective). Throws InputError ("log.txt:12:
/// expected 13 columns, got 9").
[[nodiscard]] std::vector<NcclTestsTable> parse_nccl_tests(
    const std::string& text, const std::string& source,
    std::optional<Collective> collective = std::nullopt);

/// The collective a table's rows show, for logs without a test name: redop "sum"/"prod"/
/// "max"/"min"/"avg" with count x type size = size is an all-reduce, with count x type size x
/// ranks = size a reduce-scatter; redop "none" with count x type size x ranks = size an
/// all-gather. nullopt when the rows fit none of these (or disagree).
[[nodiscard]] std::optional<Collective> infer_collective(const NcclTestsTable& table);

/// "LOG:LINE: redop 'none', which no all-reduce has: ..." when a row of a table its test name
/// labels shows another collective's redop; nullopt when every row fits.
[[nodiscard]] std::optional<std::string> named_table_problem(const NcclTestsTable& table);

/// Tier from the log: all ranks on one host -> nvlink, otherwise network.
[[nodiscard]] Tier infer_tier(const NcclTestsTable& table);

/// One sample per row with a time: out-of-place, else in-place; busbw recomputed from size
/// and time as nccl-tests defines it (the printed column is rounded to 0.01 GB/s). Throws
/// InputError for a row whose "#wrong" is not 0 (the collective gave wrong results) or whose
/// size or time is not finite or past kMaxRowBytes / kMaxRowTimeUs.
[[nodiscard]] std::vector<CollectiveSample> to_samples(const NcclTestsTable& table, Tier tier);

/// A row of a size above 0 with no time in either half (nan, N/A, null): measured, but not a
/// sample, so to_samples leaves it out. `where`: ":LINE" in a text log, ": results[i]" in JSON.
struct UntimedRow {
  std::string where;
  double bytes = 0.0;
};
[[nodiscard]] std::vector<UntimedRow> untimed_rows(const NcclTestsTable& table);

}  // namespace trident
