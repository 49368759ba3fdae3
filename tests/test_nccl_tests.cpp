// validate/nccl_tests_*: nccl-tests logs (text tables of every layout, -J JSON) read as
// nccl-tests writes them (src/common.cu, src/util.cu @a0b82b2), and refused when they are not.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "topology/errors.h"
#include "validate/nccl_tests_common.h"
#include "validate/nccl_tests_parser.h"
#include "validate_fixture.h"

using namespace trident;
using test::data;
using test::error_of;

TEST_CASE("nccl-tests old text layout (error column, no root)", "[validate][nccl_tests]") {
  const auto tables = parse_nccl_tests(data("nccl_tests/all_reduce_old.txt"), "all_reduce_old.txt");
  REQUIRE(tables.size() == 1);
  const auto& t = tables[0];
  CHECK(t.test == "all_reduce_perf");
  CHECK(t.collective == Collective::all_reduce);
  CHECK(t.ranks == 8);
  CHECK(t.hosts == 1);
  CHECK(t.gpu == "NVIDIA A100-SXM4-80GB");
  CHECK(t.nccl_version == "2.7.8");
  REQUIRE(t.rows.size() == 5);
  CHECK(t.rows[2].bytes == 1048576.0);
  CHECK(t.rows[2].count == 262144.0);
  CHECK(t.rows[2].type == "float");
  CHECK(*t.rows[2].out_of_place.time_us == Approx(61.20));
  CHECK(*t.rows[2].out_of_place.busbw_gbps == Approx(29.98));
  CHECK(*t.rows[2].out_of_place.wrong == Approx(2e-7));
  CHECK(*t.rows[2].in_place.algbw_gbps == Approx(17.23));
  CHECK_FALSE(t.rows[4].out_of_place.wrong.has_value());  // N/A
  CHECK(*t.rows[4].in_place.time_us == Approx(865.0));
  CHECK(infer_tier(t) == Tier::nvlink);
  const auto samples = to_samples(t, infer_tier(t));
  REQUIRE(samples.size() == 5);
  // busbw = 1048576 B / 61.20e-6 s / 1e9 x 2(8-1)/8 = 17.13360 x 1.75 = 29.98380 GB/s
  CHECK(samples[2].busbw_gbps == Approx(29.98380).epsilon(1e-6));
  CHECK(samples[2].time_s == Approx(61.20e-6));
}

TEST_CASE("nccl-tests new text layout (root, #wrong, exponents, two hosts)",
          "[validate][nccl_tests]") {
  const auto tables = parse_nccl_tests(data("nccl_tests/all_gather_new.txt"), "log.txt");
  REQUIRE(tables.size() == 1);
  const auto& t = tables[0];
  CHECK(t.test == "all_gather_perf");
  CHECK(t.collective == Collective::all_gather);
  CHECK(t.ranks == 8);
  CHECK(t.hosts == 2);
  CHECK(t.max_ranks_per_host == 4);
  CHECK(t.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(t.nccl_version == "2.21.5");  // nccl-library=22105
  REQUIRE(t.rows.size() == 5);
  CHECK(t.rows[0].redop == "none");
  CHECK(*t.rows[0].out_of_place.time_us == Approx(48.12));
  CHECK(*t.rows[0].out_of_place.wrong == 0.0);
  CHECK(*t.rows[4].out_of_place.time_us == Approx(1.3e5));  // "1.3e+05"
  CHECK_FALSE(t.rows[4].in_place.wrong.has_value());
  CHECK(infer_tier(t) == Tier::network);
}

namespace {

/// One process's device report as nccl-tests writes it (src/util.cu writeDeviceReport @a0b82b2):
/// its ranks' lines into a 2048-byte buffer; when full, the first 2043 bytes and "...\n".
std::string device_report(int process, int per_process, const std::string& host) {
  std::string lines;
  for (int i = 0; i < per_process; ++i) {
    lines += fmt::format(
        "#  Rank {:2d} Group {:2d} Pid {:6d} on {:>10} device {:2d} "
        "[{:04x}:{:02x}:{:02x}] {}\n",
        process * per_process + i, 0, 4242 + process, host, i, 0, 0x18 + i, 0,
        "NVIDIA H100 80GB HBM3");
  }
  if (lines.size() >= 2047) lines = lines.substr(0, 2043) + "...\n";
  return lines;
}

}  // namespace

TEST_CASE("nccl-tests: a process's device lines cut at 2048 bytes", "[validate][nccl_tests]") {
  // Two processes of nThread 2 x nGpus 16 (ranks 0-31 and 32-63) on hosts "node" (padded to 10
  // by %10s): each report is cut after 20-odd lines, the last one mid-line. The ranks run to
  // the last process's end, 2 x 32, each unlisted one on its process's host.
  const auto log = [](const std::string& first_host, const std::string& second_host) {
    return "# Collective test starting: all_gather_perf\n"
           "# nThread 2 nGpus 16 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5\n"
           "# Using devices\n" +
           device_report(0, 32, first_host) + device_report(1, 32, second_host) +
           // 64 ranks x 16384 floats x 4 bytes = 4 MiB.
           "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
           "4194304 16384 float none -1 100.0 0.1 0.1 0 100.0 0.1 0.1 0\n";
  };
  REQUIRE(log("node", "node2").find("...\n") != std::string::npos);
  const auto table = parse_nccl_tests(log("node", "node2"), "log.txt").front();
  CHECK(table.ranks == 64);
  CHECK(table.hosts == 2);
  CHECK(table.max_ranks_per_host == 32);
  CHECK(table.gpu == "NVIDIA H100 80GB HBM3");  // the cut line's tail is no GPU name
  CHECK(to_samples(table, Tier::network).size() == 1);
  const auto one_host = parse_nccl_tests(log("node-17", "node-17"), "log.txt").front();
  CHECK(one_host.ranks == 64);
  CHECK(one_host.hosts == 1);
  // A log whose device lines name two GPU types is refused.
  std::string mixed = log("node", "node2");
  mixed.replace(mixed.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA H200");
  CHECK(error_of([&] { (void)parse_nccl_tests(mixed, "log.txt"); }) ==
        "log.txt: the '#  Rank' lines name 2 GPU types ('NVIDIA H100 80GB HBM3', 'NVIDIA "
        "H200'); a calibration describes one");
  // A trimmed report (process 0's lines gone) or a rank listed twice is refused, not guessed.
  std::string trimmed = log("node", "node2");
  const auto second = trimmed.find("#  Rank 32 ");
  const auto first = trimmed.find("#  Rank  0 ");
  trimmed.erase(first, second - first);
  CHECK(error_of([&] { (void)parse_nccl_tests(trimmed, "log.txt"); }) ==
        "log.txt: the '#  Rank' lines list no rank 0, the first of a process of 32 (nThread x "
        "nGpus): the device report is incomplete; give the whole log");
  std::string twice = log("node", "node2");
  twice.replace(twice.find("#  Rank 32 "), 11, "#  Rank  0 ");
  CHECK(error_of([&] {
          (void)parse_nccl_tests(twice, "log.txt");
        }).starts_with("log.txt: the '#  Rank' lines list rank 0 twice"));
}

TEST_CASE("nccl-tests -J JSON", "[validate][nccl_tests]") {
  const auto tables = parse_nccl_tests(data("nccl_tests/sendrecv.json"), "sendrecv.json");
  REQUIRE(tables.size() == 1);
  const auto& t = tables[0];
  CHECK(t.test == "sendrecv_perf");
  CHECK(t.collective == Collective::send_recv);
  CHECK(t.ranks == 2);
  CHECK(t.gpu == "NVIDIA H200");
  CHECK(t.nccl_version == "2.27.3");
  REQUIRE(t.rows.size() == 4);
  CHECK(*t.rows[1].out_of_place.time_us == Approx(12.4));
  CHECK_FALSE(t.rows[2].out_of_place.time_us.has_value());  // "nan"
  const auto samples = to_samples(t, Tier::nvlink);
  REQUIRE(samples.size() == 4);
  CHECK(samples[2].time_s == Approx(39.1e-6));  // in-place when out-of-place is nan
  // Any other string is refused at its place, not dropped with its row.
  std::string garbage = data("nccl_tests/sendrecv.json");
  garbage.replace(garbage.find("\"time\":\"nan\""), 12, "\"time\":\"abc\"");
  CHECK(error_of([&] { (void)parse_nccl_tests(garbage, "sendrecv.json"); })
            .ends_with(
                "results[2].out_of_place.time: expected a number, null or \"nan\", got \"abc\""));
  // One process running both GPUs (-g 2): config.devices lists one entry per process (its
  // first rank), so the ranks are entries x nthreads x ngpus, 1 x 1 x 2 (it read 1 rank).
  std::string one_process = data("nccl_tests/sendrecv.json");
  const std::string second =
      ",{\"rank\":1,\"group\":0,\"pid\":5512,\"hostname\":\"gpu-h200-03\","
      "\"device\":1,\"device_hex\":\"0000:3b:00\",\"device_info\":"
      "\"NVIDIA H200\"}";
  REQUIRE(one_process.find(second) != std::string::npos);
  one_process.erase(one_process.find(second), second.size());
  one_process.replace(one_process.find("\"ngpus\":1"), 9, "\"ngpus\":2");
  const auto g2 = parse_nccl_tests(one_process, "sendrecv.json").front();
  CHECK(g2.ranks == 2);
  CHECK(g2.hosts == 1);
  // Counts and the version code as nccl-tests writes them; anything else refused at its key
  // (ngpus 8.9 was read as 8, nccl_version -1 written as "NCCL 0.0.-1", "2.27" dropped).
  std::string fraction = one_process;
  fraction.replace(fraction.find("\"ngpus\":2"), 9, "\"ngpus\":2.5");
  CHECK(error_of([&] { (void)parse_nccl_tests(fraction, "sendrecv.json"); }) ==
        "sendrecv.json: config.ngpus: expected a positive integer, got 2.5");
  const std::string code = "\"nccl_version\":22703";
  for (const std::string bad : {"-1", "\"2.27\"", "27"}) {
    std::string version = data("nccl_tests/sendrecv.json");
    REQUIRE(version.find(code) != std::string::npos);
    version.replace(version.find(code), code.size(), "\"nccl_version\":" + bad);
    CHECK(error_of([&] { (void)parse_nccl_tests(version, "sendrecv.json"); }) ==
          "sendrecv.json: nccl_version: expected NCCL's version code (an integer such as 22703), "
          "got " +
              bad);
  }
  // Versions 1-3 read alike (3 at nccl-tests a0b82b2 adds per-iteration keys); a later one,
  // or none, is refused rather than read as if it were.
  const std::string file = data("nccl_tests/sendrecv.json");
  auto with_version = [&](const std::string& version) {
    std::string text = file;
    text.replace(text.find("\"version\":2"), 11, version);
    return text;
  };
  CHECK(parse_nccl_tests(with_version("\"version\":3"), "sendrecv.json").front().ranks == 2);
  CHECK(error_of([&] {
          (void)parse_nccl_tests(with_version("\"version\":4"), "sendrecv.json");
        }).starts_with("sendrecv.json: version: 4: expected an nccl-tests -J version 1 to 3"));
  CHECK(error_of([&] { (void)parse_nccl_tests(with_version("\"version\":0"), "sendrecv.json"); }) ==
        "sendrecv.json: version: 0: expected an nccl-tests -J version 1 to 3");
  CHECK(error_of([&] { (void)parse_nccl_tests(with_version("\"versio\":2"), "sendrecv.json"); }) ==
        "sendrecv.json: version: expected the integer nccl-tests -J writes (1 to 3)");
  // Two device entries of rank 0: two runs' devices in one file.
  std::string twice = file;
  twice.replace(twice.find("{\"rank\":1,"), 10, "{\"rank\":0,");
  CHECK(error_of([&] { (void)parse_nccl_tests(twice, "sendrecv.json"); }) ==
        "sendrecv.json: config.devices[1].rank: rank 0 is listed twice");
  CHECK(error_of([&] {
          (void)parse_nccl_tests(with_version("\"version\":18446744073709551615"), "sendrecv.json");
        }).starts_with("sendrecv.json: version: 18446744073709551615: expected"));
  // Two GPU types among the devices; a row named by its place in "results".
  std::string mixed = file;
  mixed.replace(mixed.rfind("\"NVIDIA H200\""), 13, "\"NVIDIA H100\"");
  CHECK(error_of([&] { (void)parse_nccl_tests(mixed, "sendrecv.json"); }) ==
        "sendrecv.json: config.devices[1].device_info: 'NVIDIA H100', where the devices before "
        "it are 'NVIDIA H200'; a calibration describes one GPU type");
  std::string miscounted = file;
  miscounted.replace(miscounted.find("\"count\":16384"), 13, "\"count\":16385");
  CHECK(error_of([&] {
          (void)to_samples(parse_nccl_tests(miscounted, "sendrecv.json").front(), Tier::nvlink);
        }).starts_with("sendrecv.json: results[1]: count 16385 of float is 65540 bytes"));
}

TEST_CASE("nccl-tests: the collective inferred from the table, or given",
          "[validate][nccl_tests]") {
  // 2 ranks, float = 4 bytes. Reduce-scatter: count x 4 x ranks = size (128 x 4 x 2 = 1024)
  // with a reducing redop: its own. All-reduce: count x 4 = size (256 x 4 = 1024) with a
  // reducing redop, as sendrecv_perf's and reduce_perf's rows read; all-gather: 128 with redop
  // none, as alltoall_perf's: refused, asking for the name.
  const std::string head =
      "# nThread 1 nGpus 2\n#  size count type redop root time algbw busbw #wrong time algbw "
      "busbw #wrong\n";
  const auto row = [](const char* count, const char* redop) {
    return std::string("1024 ") + count + " float " + redop + " -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n";
  };
  const auto collective = [&](const std::string& rows) {
    return parse_nccl_tests(head + rows, "log.txt").front().collective;
  };
  CHECK(collective(row("128", "sum")) == Collective::reduce_scatter);
  CHECK(collective(row("128", "sum") + row("128", "max")) == Collective::reduce_scatter);
  CHECK(error_of([&] { (void)collective(row("256", "sum")); }).ends_with("give --collective"));
  CHECK(error_of([&] { (void)collective(row("128", "none")); }).ends_with("give --collective"));
  // A size-0 row (nccl-tests prints them when -b is below ranks x type) says nothing.
  const std::string zero = "0 0 float sum -1 1.0 0.0 0.0 0 1.0 0.0 0.0 0\n";
  CHECK(collective(zero + row("128", "sum")) == Collective::reduce_scatter);
  // A named table whose rows show another collective's redop: an all-gather table after a
  // named all-reduce one inherited the name and was fitted as an all-reduce.
  CHECK(
      error_of([&] { (void)parse_nccl_tests(head + row("128", "none"), "all_reduce_perf.log"); }) ==
      "all_reduce_perf.log:3: redop 'none', which no all-reduce has: this table is "
      "another test's (a log with several tests names each: check it, or give "
      "--collective)");
  // Rows that disagree, or fit nothing (100 x 4 = 400 is neither 1024 nor 1024 / 2):
  CHECK(error_of([&] {
          (void)collective(row("256", "sum") + row("128", "none"));
        }).ends_with("give --collective"));
  CHECK(error_of([&] { (void)collective(row("100", "sum")); }).ends_with("give --collective"));
  // --collective wins over the table and the name.
  CHECK(parse_nccl_tests(head + row("128", "none"), "all_reduce_perf.log", Collective::broadcast)
            .front()
            .collective == Collective::broadcast);
}

TEST_CASE("nccl-tests: a row with no time in either half is named, not dropped unseen",
          "[validate][nccl_tests]") {
  const std::string head =
      "# nThread 1 nGpus 2\n#  size count type redop root time algbw busbw #wrong time algbw "
      "busbw #wrong\n";
  const auto tables = parse_nccl_tests(head +
                                           "1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n"
                                           "2048 512 float sum -1 nan nan nan 0 nan nan nan 0\n"
                                           "4096 1024 float sum -1 nan nan nan 0 12.0 0.3 0.3 0\n",
                                       "all_reduce_perf.log");
  // Line 4 has no time at all; line 5's in-place half is a sample.
  CHECK(to_samples(tables.front(), Tier::nvlink).size() == 2);
  const auto untimed = untimed_rows(tables.front());
  REQUIRE(untimed.size() == 1);
  CHECK(untimed[0].where == ":4");
  CHECK(untimed[0].bytes == 2048.0);
}

TEST_CASE("nccl-tests: rows with wrong results or impossible numbers", "[validate][nccl_tests]") {
  const std::string head =
      "# nThread 1 nGpus 2\n#  size count type redop root time algbw busbw #wrong time algbw "
      "busbw #wrong\n";
  const auto samples = [&](const std::string& row) {
    const auto tables = parse_nccl_tests(head + row, "all_reduce_perf.log");
    return to_samples(tables.front(), Tier::nvlink);
  };
  CHECK(samples("1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n").size() == 1);
  CHECK(error_of([&] { (void)samples("1024 256 float sum -1 10.0 0.1 0.1 2 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: #wrong is 2 at 1024 bytes: the collective gave wrong results; fix "
        "the run before calibrating on it");
  CHECK(error_of([&] { (void)samples("1024 256 float sum -1 inf 0.1 0.1 0 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: expected a number or N/A, got 'inf'");
  CHECK(error_of([&] { (void)samples("1024 256 float sum -1 0x10 0.1 0.1 0 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: expected a number or N/A, got '0x10'");
  // An all-reduce prints size = count x type: 256 floats = 1024 bytes. 128 floats are 512
  // bytes (an all-gather's or reduce-scatter's row over 2 ranks: 128 x 4 x 2 = 1024).
  CHECK(error_of([&] { (void)samples("1024 128 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: count 128 of float is 512 bytes for all-reduce over 2 ranks, not "
        "the size 1024: the row is another test's or the ranks are misread (check the log, or "
        "give --collective)");
  // Counts print whole: 262145 floats are 1048580 bytes, not 1048576 (both 1.04858e+06 in %g).
  CHECK(error_of(
            [&] { (void)samples("1048576 262145 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n"); })
            .starts_with("all_reduce_perf.log:3: count 262145 of float is 1048580 bytes for "
                         "all-reduce over 2 ranks, not the size 1048576:"));
  // A count that is none, 0 or negative beside a size is refused, and so is a size of N/A.
  for (const char* count : {"N/A", "0", "-256"}) {
    INFO(count);
    CHECK(error_of([&] {
            (void)samples(std::string("1024 ") + count +
                          " float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n");
          })
              .starts_with("all_reduce_perf.log:3: count: expected a whole number of elements "
                           "above 0 for the size 1024, got "));
  }
  CHECK(error_of([&] { (void)samples("nan 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: size: expected a number of bytes, got 'nan'");
  // --collective given: the hint does not ask for it again.
  const auto given = [&](const std::string& row) {
    return to_samples(parse_nccl_tests(head + row, "log.txt", Collective::all_reduce).front(),
                      Tier::nvlink);
  };
  CHECK(error_of([&] {
          (void)given("1024 128 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n");
        }).ends_with("(check the log and --collective)"));
  // 512 halves (2 bytes) = 1024: sound; an unknown type is refused.
  CHECK(samples("1024 512 half sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n").size() == 1);
  CHECK(error_of([&] {
          (void)samples("1024 256 fp32 sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n");
        }).starts_with("all_reduce_perf.log:3: type 'fp32': expected an nccl-tests type (int8, "));
  CHECK(error_of([&] { (void)samples("1e16 256 float sum -1 10 0.1 0.1 0 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: size: expected at most 1e+15 bytes, got 1e+16");
  // The in-place half's #wrong counts too; sizes are whole bytes, 0 or more.
  CHECK(error_of([&] { (void)samples("1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 5\n"); }) ==
        "all_reduce_perf.log:3: #wrong is 5 (in place) at 1024 bytes: the collective gave wrong "
        "results; fix the run before calibrating on it");
  CHECK(error_of([&] { (void)samples("-256 256 float sum -1 10 0.1 0.1 0 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: size: expected a whole number of bytes, 0 or more, got -256");
  CHECK(error_of([&] { (void)samples("3.5 256 float sum -1 10 0.1 0.1 0 10.0 0.1 0.1 0\n"); }) ==
        "all_reduce_perf.log:3: size: expected a whole number of bytes, 0 or more, got 3.5");
}

TEST_CASE("nccl-tests errors", "[validate][nccl_tests]") {
  CHECK(error_of([] { (void)parse_nccl_tests("hello\n", "x.log"); }) ==
        "x.log: no nccl-tests result table (a '#  size  count  type ...' header followed by rows)");
  const std::string header =
      "# nThread 1 nGpus 2\n#  size count type redop root time algbw busbw #wrong time algbw busbw "
      "#wrong\n";
  CHECK(error_of([&] { (void)parse_nccl_tests(header, "x.log"); }) ==
        "x.log:2: cannot tell which collective this table measured (no '*_perf' name in the log "
        "or the file name; only a reduce-scatter's rows are its own: an all-reduce's read as a "
        "send-recv's or a reduce's, an all-gather's as an all-to-all's); give --collective");
  CHECK(error_of([&] {
          (void)parse_nccl_tests(header + "8 2 float sum -1 1.0 0.1 x\n", "all_reduce_perf.log");
        }) == "all_reduce_perf.log:3: expected 13 columns, got 8");
  CHECK(error_of([&] {
          (void)parse_nccl_tests(header + "8 2 float sum -1 1.0 0.1 0.1 0 1.0 0.1 abc 0\n",
                                 "all_reduce_perf.log");
        }) == "all_reduce_perf.log:3: expected a number or N/A, got 'abc'");
  // A cell past the header's columns is another line run into the row (it was ignored), but
  // a timestamp (-S 1, one or more words) may end it.
  CHECK(error_of([&] {
          (void)parse_nccl_tests(header + "8 2 float sum -1 1.0 0.1 0.1 0 1.0 0.1 0.1 0 12.5\n",
                                 "all_reduce_perf.log");
        }) == "all_reduce_perf.log:3: expected 13 columns, got 14");
  const std::string stamped =
      "# nThread 1 nGpus 2\n#  size count type redop root time algbw busbw #wrong time algbw "
      "busbw #wrong timestamp\n";
  CHECK(parse_nccl_tests(stamped + "8 2 float sum -1 1.0 0.1 0.1 0 1.0 0.1 0.1 0 "
                                   "2026-12-04 01:02:03\n",
                         "all_reduce_perf.log")
            .front()
            .rows.size() == 1);
  // A device line's rank is a number (read as the next rank, a bad one hid a missing rank);
  // the NCCL version code is digits (an unreadable one was "0.0.0").
  const std::string devices =
      "# nThread 1 nGpus 1\n# Using devices\n"
      "#  Rank  0 Group  0 Pid 1 on host device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n";
  for (const std::string rank : {"abc", "-3", "3x", "4294967299", "1048576"}) {
    INFO(rank);
    std::string log = devices;
    log += "#  Rank ";
    log += rank;
    log += " Group  0 Pid 2 on host device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n";
    log += header.substr(header.find('\n') + 1);
    CHECK(error_of([&] { (void)parse_nccl_tests(log, "all_reduce_perf.log"); }) ==
          "all_reduce_perf.log:4: Rank '" + rank + "': expected a rank number 0 to 1048575");
  }
  CHECK(error_of([&] {
          (void)parse_nccl_tests(
              devices + "#  Rank  1 Group  x Pid 2 on host device  1 [0000:2a:00] NVIDIA H100\n",
              "all_reduce_perf.log");
        }) == "all_reduce_perf.log:4: Group 'x': expected the process's group number");
  CHECK(error_of([&] {
          (void)parse_nccl_tests(
              "# nccl-tests version 2.18.3 nccl-headers=22105 nccl-library=abc\n" + header,
              "all_reduce_perf.log");
        }) == "all_reduce_perf.log:1: nccl-library 'abc': expected NCCL's version code (22105)");
}

TEST_CASE("nccl-tests: rows that are not the collective the log or --collective names",
          "[validate][nccl_tests]") {
  // all_reduce_perf's rows (redop sum) given as a broadcast, whose rows print redop none
  // (nccl-tests src/broadcast.cu BroadcastRunTest): refused at the row, as a named table is.
  const std::string log = data("nccl_tests/all_reduce_old.txt");
  const auto as_broadcast =
      parse_nccl_tests(log, "all_reduce_old.txt", Collective::broadcast).front();
  CHECK(error_of([&] { (void)to_samples(as_broadcast, Tier::nvlink); }) ==
        "all_reduce_old.txt:18: redop 'sum', which no broadcast has: the rows are another test's "
        "than --collective says (check it)");
  // The -J form: a row of a named all-gather file with redop sum, by its place in results.
  std::string json = data("nccl_tests/sendrecv.json");
  json.replace(json.find("sendrecv_perf"), 13, "all_gather_perf");
  const auto gather = parse_nccl_tests(json, "ag.json").front();
  CHECK(error_of([&] { (void)to_samples(gather, Tier::nvlink); }) ==
        "ag.json: results[0]: redop 'sum', which no all-gather has: this table is another test's "
        "(a log with several tests names each: check it, or give --collective)");
  // Entry i of config.devices is process i: its rank is i x nthreads x ngpus.
  std::string renumbered = data("nccl_tests/sendrecv.json");
  renumbered.replace(renumbered.find("{\"rank\":1,"), 10, "{\"rank\":9,");
  CHECK(error_of([&] { (void)parse_nccl_tests(renumbered, "sendrecv.json"); }) ==
        "sendrecv.json: config.devices[1].rank: 9: expected 1, process 1's first rank (1 per "
        "process)");
}

TEST_CASE("nccl-tests: logs labelled by srun -l, mpirun --tag-output or MPICH -l",
          "[validate][nccl_tests]") {
  // nccl-tests prints its report from process 0 only: its lines carry task 0's label; another
  // task's labelled lines (NCCL INFO, warnings) are not the report's.
  const std::string plain = data("nccl_tests/all_gather_new.txt");
  const auto expected = parse_nccl_tests(plain, "all_gather_new.txt").front();
  const auto labelled = [&](const std::string& label, const std::string& other) {
    std::istringstream in(plain);
    std::string out;
    for (std::string line; std::getline(in, line);) out += label + line + "\n";
    // Another task's line that would otherwise read as a device line of a 9th rank.
    return other +
           "#  Rank  8 Group  0 Pid 9 on  node-019 device  0 [0000:18:00] NVIDIA H100 "
           "80GB HBM3\n" +
           out;
  };
  for (const auto& [label, other] : {std::pair<std::string, std::string>{"0: ", "1: "},
                                     {" 0: ", "12: "},
                                     {"[1,0]<stdout>:", "[1,3]<stdout>:"},
                                     {"[1,0]<stdout>: ", "[1,3]<stderr>: "},
                                     {"[0] ", "[7] "}}) {
    INFO("label '" << label << "'");
    const auto t = parse_nccl_tests(labelled(label, other), "all_gather_perf.log").front();
    CHECK(t.ranks == expected.ranks);  // 8: the other task's line is not read
    CHECK(t.hosts == 2);
    REQUIRE(t.rows.size() == expected.rows.size());
    CHECK(t.rows[2].line == expected.rows[2].line + 1);  // the file's own line numbers
    CHECK(*t.rows[2].out_of_place.time_us == *expected.rows[2].out_of_place.time_us);
  }
  // A row is no label: "     1048576  ..." has digits but no ": " after them.
  CHECK(expected.rows.front().bytes == 1048576.0);
}

TEST_CASE("nccl-tests: NCCL_TESTS_SPLIT_MASK runs describe rank 0's group",
          "[validate][nccl_tests]") {
  // 16 processes on 2 hosts, NCCL_TESTS_SPLIT_MASK=0x7: color = proc & 7, 8 groups of 2 ranks,
  // each pair {r, r+8} spanning both hosts (src/common.cu @a0b82b2); busbw uses the split
  // communicator's 2 ranks, so the table is a 2-rank all-reduce over the network.
  const auto log = [](int mask) {
    std::string text =
        "# Collective test starting: all_reduce_perf\n"
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5\n"
        "# Using devices\n";
    for (int r = 0; r < 16; ++r) {
      text += fmt::format(
          "#  Rank {:2} Group {:2} Pid {:6} on {:>10} device {:2} [0000:18:00] "
          "NVIDIA H100 80GB HBM3\n",
          r, r & mask, 100 + r, r < 8 ? "node-1" : "node-2", r % 8);
    }
    // 2 ranks: busbw = 1048576 B / 100 us x 2(2 - 1)/2 = 10.49 GB/s.
    return text +
           "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
           "1048576 262144 float sum -1 100.0 10.49 10.49 0 100.0 10.49 10.49 0\n";
  };
  const auto t = parse_nccl_tests(log(7), "split.log").front();
  CHECK(t.ranks == 2);
  CHECK(t.groups == 8);
  CHECK(t.group == 0);  // rank 0's color
  CHECK(t.hosts == 2);
  CHECK(t.max_ranks_per_host == 1);
  CHECK(infer_tier(t) == Tier::network);
  const auto samples = to_samples(t, Tier::network);
  REQUIRE(samples.size() == 1);
  CHECK(samples[0].ranks == 2);
  CHECK(samples[0].busbw_gbps == Approx(10.48576));  // x 2(2-1)/2 = 1, not 2(16-1)/16
  // Mask 0x8: color = proc & 8, two groups of 8, each on one host: NVLink.
  const auto by_host = parse_nccl_tests(log(8), "split.log").front();
  CHECK(by_host.ranks == 8);
  CHECK(by_host.groups == 2);
  CHECK(infer_tier(by_host) == Tier::nvlink);
  // NCCL_TESTS_SPLIT "OR 8" (color = proc | 8): rank 0 is in group 8, the table is its.
  std::string or_split = log(7);
  for (int r = 0; r < 16; ++r) {
    const std::string from = fmt::format("Rank {:2} Group {:2}", r, r & 7);
    or_split.replace(or_split.find(from), from.size(),
                     fmt::format("Rank {:2} Group {:2}", r, r | 8));
  }
  const auto ored = parse_nccl_tests(or_split, "split.log").front();
  CHECK(ored.group == 8);
  CHECK(ored.groups == 8);
  CHECK(ored.ranks == 2);  // {0, 8} both color 8
  // Groups of unequal size (rank 15 moved to a group of its own, as NCCL_TESTS_SPLIT "DIV"
  // can make):
  // nccl-tests averages their times together, so no one size describes the table.
  std::string uneven = log(7);
  uneven.replace(uneven.find("Rank 15 Group  7"), 16, "Rank 15 Group  9");
  // The message names the line of the uneven group's first rank (rank 7: the log's line 11).
  CHECK(error_of([&] { (void)parse_nccl_tests(uneven, "split.log"); })
            .starts_with("split.log:11: group 7: the ranks split into groups of unequal "
                         "size (group 7 has 1 rank where most have 2;"));
  // Rank 0's group the odd one (ranks 0 and 8 apart): it is the one named, not group 1.
  std::string odd_first = log(7);
  odd_first.replace(odd_first.find("Rank  8 Group  0"), 16, "Rank  8 Group  1");
  CHECK(error_of([&] { (void)parse_nccl_tests(odd_first, "split.log"); })
            .starts_with("split.log:4: group 0: the ranks split into groups of unequal size "
                         "(group 0 has 1 rank where most have 2;"));
  // The -J form: each device entry is one process, its "group" the same color.
  std::string json = data("nccl_tests/sendrecv.json");
  const std::string group = "{\"rank\":1,\"group\":0";
  json.replace(json.find(group), group.size(), "{\"rank\":1,\"group\":\"a\"");
  CHECK(error_of([&] { (void)parse_nccl_tests(json, "sendrecv.json"); }) ==
        "sendrecv.json: config.devices[1].group: \"a\": expected an integer");
  // A third process in a group of its own: groups {0: 2 ranks, 1: 1}; the entry is named.
  std::string three = data("nccl_tests/sendrecv.json");
  const std::string last = "\"device_info\":\"NVIDIA H200\"}]";
  REQUIRE(three.find(last) != std::string::npos);
  three.replace(three.find(last), last.size(),
                "\"device_info\":\"NVIDIA H200\"},{\"rank\":2,\"group\":1,\"hostname\":"
                "\"gpu-h200-03\",\"device_info\":\"NVIDIA H200\"}]");
  CHECK(error_of([&] { (void)parse_nccl_tests(three, "sendrecv.json"); })
            .starts_with("sendrecv.json: config.devices[2]: group 1: the ranks split into groups "
                         "of unequal size (group 1 has 1 rank where most have 2;"));
}

TEST_CASE("nccl-tests: the test named inside a longer file or argument name",
          "[validate][nccl_tests]") {
  // A helper's find (2026-12-07): h100_all_reduce_perf.log was read as "_all_reduce_perf" and
  // refused; a prefix of letters (nccl_all_reduce_perf) as "nccl_all_reduce_perf".
  CHECK(nccl_tests::find_test_name("h100_all_reduce_perf.log") == "all_reduce_perf");
  CHECK(nccl_tests::find_test_name("run1_all_gather_perf.txt") == "all_gather_perf");
  CHECK(nccl_tests::find_test_name("nccl_reduce_scatter_perf.log") == "reduce_scatter_perf");
  CHECK(nccl_tests::find_test_name("./build/alltoall_perf -b 8") == "alltoall_perf");
  // An unknown test is still named as written, whole, for the refusal to list the known ones.
  CHECK(nccl_tests::find_test_name("nccl_ar_perf.log") == "nccl_ar_perf");
  CHECK_FALSE(nccl_tests::find_test_name("results.log"));
}

TEST_CASE("nccl-tests: a long word or digit run is scanned, not matched by a recursive regex",
          "[validate][nccl_tests]") {
  // std::regex ([a-z]+(_[a-z]+)*_perf) recursed once per character: a line of ~30,000 letters
  // (or -J's args[0] of 40,000) overflowed the stack, and calibrate died of SIGSEGV. So did
  // "NCCL version" followed by a long run of digits.
  const std::string letters(200000, 'x');
  CHECK_FALSE(nccl_tests::find_test_name(letters));
  CHECK(nccl_tests::find_test_name(letters + "_perf") == letters + "_perf");
  CHECK(error_of([&] { (void)parse_nccl_tests(letters + "\n", "long.txt"); }) ==
        "long.txt: no nccl-tests result table (a '#  size  count  type ...' header followed by "
        "rows)");
  const std::string json = "{\"version\":2,\"args\":[\"./build/" + letters +
                           "\"],\"config\":{\"nthreads\":1,\"ngpus\":2},\"results\":[]}";
  CHECK(error_of([&] { (void)parse_nccl_tests(json, "run.json"); }) ==
        "run.json: args: cannot tell which nccl-tests binary wrote this file (no '*_perf' name in "
        "args[0] nor in the file name)");
  const std::string head =
      "# nThread 1 nGpus 2\n#  size count type redop root time algbw busbw #wrong time algbw "
      "busbw #wrong\n1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n";
  const std::string digits(200000, '7');
  CHECK(parse_nccl_tests("NCCL version " + digits + "\n" + head, "all_reduce_perf.log")
            .front()
            .nccl_version.empty());
  CHECK(parse_nccl_tests("NCCL version 2.27." + digits + "\n" + head, "all_reduce_perf.log")
            .front()
            .nccl_version == "2.27." + digits);
  // What the regex found, the scan finds: the leftmost word, to its last "_perf" part.
  CHECK(nccl_tests::find_test_name("Xab_perf") == "ab_perf");
  CHECK(nccl_tests::find_test_name("a__b_perf") == "b_perf");
  CHECK(nccl_tests::find_test_name("my_perf_perfx more_perf") == "my_perf_perf");
  CHECK(nccl_tests::find_test_name("foo_performance") == "foo_perf");
  CHECK_FALSE(nccl_tests::find_test_name("_perf perf x_ x_1perf"));
  CHECK(parse_nccl_tests("srun: NCCL version 2.18.1+cuda12.2 NCCL version 9\n" + head,
                         "all_reduce_perf.log")
            .front()
            .nccl_version == "2.18.1");
}

TEST_CASE("nccl-tests: a row whose size is inf, NaN or a word is refused, not dropped",
          "[validate][nccl_tests]") {
  // Rows were recognised by a first cell that starts a number (or is nan or N/A): "inf",
  // "NaN" or "abc" in the size column made the row a line of other output, dropped (exit 0).
  const std::string head =
      "# nThread 1 nGpus 2\n#  size count type redop root time algbw busbw #wrong time algbw "
      "busbw #wrong\n1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n";
  for (const std::string size : {"inf", "-inf", "NaN", "abc", "N/A", "nan"}) {
    INFO(size);
    CHECK(error_of([&] {
            (void)parse_nccl_tests(
                head + size + " 512 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n",
                "all_reduce_perf.log");
          }) == "all_reduce_perf.log:4: size: expected a number of bytes, got '" + size + "'");
  }
  // Other output between rows (NCCL INFO lines, warnings) is still passed over.
  const auto tables = parse_nccl_tests(
      head + "host:1:1 [0] NCCL INFO Channel 00/02 : 0 1 2 3 4 5 6 7 8\n", "all_reduce_perf.log");
  CHECK(tables.front().rows.size() == 1);
}

TEST_CASE("nccl-tests: a UTF-8 byte order mark before a log is skipped", "[validate][nccl_tests]") {
  // An editor's BOM made the first line no comment: its "nccl-library=22105" was not read
  // (nccl_version "").
  const std::string log =
      "# nccl-tests version 2.13.11 nccl-headers=22105 nccl-library=22105\n# nThread 1 nGpus "
      "2\n#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n1024 "
      "256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n";
  const std::string bom = "\xEF\xBB\xBF";
  CHECK(parse_nccl_tests(log, "all_reduce_perf.log").front().nccl_version == "2.21.5");
  const auto table = parse_nccl_tests(bom + log, "all_reduce_perf.log").front();
  CHECK(table.nccl_version == "2.21.5");
  CHECK(table.rows.size() == 1);
  // The -J form behind a BOM is still JSON (it was read as a text log without a table).
  const auto json = parse_nccl_tests(bom + data("nccl_tests/sendrecv.json"), "sendrecv.json");
  CHECK(json.front().nccl_version == "2.27.3");
}

TEST_CASE("nccl-tests -J: a device's hostname or device_info that is not a string",
          "[validate][nccl_tests]") {
  // nlohmann's value() threw type_error.302 for null: "trident: error: internal: ..." (exit 1).
  const std::string file = data("nccl_tests/sendrecv.json");
  for (const std::string key : {"hostname", "device_info"}) {
    for (const std::string bad : {"null", "7"}) {
      INFO(key << " " << bad);
      std::string text = file;
      const std::size_t at = text.find("\"" + key + "\":");
      REQUIRE(at != std::string::npos);
      const std::size_t value = at + key.size() + 3;
      text.replace(value, text.find('"', value + 1) + 1 - value, bad);
      CHECK(error_of([&] { (void)parse_nccl_tests(text, "sendrecv.json"); }) ==
            "sendrecv.json: config.devices[0]." + key + ": expected a string, got " +
                (bad == "null" ? "null" : "number"));
    }
  }
  // A result's type and redop alike (passed over, the row's type went unchecked).
  std::string type = file;
  type.replace(type.find("\"type\":\"float\""), 14, "\"type\":null");
  CHECK(error_of([&] { (void)parse_nccl_tests(type, "sendrecv.json"); }) ==
        "sendrecv.json: results[0].type: expected a string, got null");
}
