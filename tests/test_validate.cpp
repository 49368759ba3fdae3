// validate/: nccl-tests parser on real-format samples, fits, plan reader, groups, patterns;
// costmodel/calibration_io round trip and error texts.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <sstream>

#include "costmodel/calibration_io.h"
#include "topology/errors.h"
#include "validate/collective_fit.h"
#include "validate/groups.h"
#include "validate/measure.h"
#include "validate/nccl_tests_parser.h"
#include "validate/patterns.h"
#include "validate/plan_reader.h"

using namespace trident;

namespace {

std::string data(const std::string& name) {
  std::ifstream in(std::string(TRIDENT_SOURCE_DIR) + "/tests/data/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

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
        "all_reduce_perf.log:3: size: expected a number of bytes, got N/A");
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
}

TEST_CASE("fit recovers a known latency and bandwidth", "[validate][fit]") {
  // all-reduce on 8 ranks: t(S) = 2(8-1) x 5 us + S x 1.75 / 100 GB/s
  std::vector<CollectiveSample> samples;
  for (const double bytes : {1e3, 1e6, 1e8, 1e9}) {
    const double t = 14 * 5e-6 + bytes * 1.75 / 100e9;
    samples.push_back({Collective::all_reduce, 8, Tier::nvlink, bytes, t, 0.0});
  }
  const auto fit = fit_collective(samples);
  CHECK(fit.latency_s == Approx(5e-6).epsilon(1e-9));
  CHECK(fit.busbw_gbps == Approx(100.0).epsilon(1e-9));
  CHECK(fitted_time_s(fit, 1e6) == Approx(14 * 5e-6 + 1e6 * 1.75 / 100e9));
  samples.push_back({Collective::send_recv, 2, Tier::network, 1e6, 1e-4, 10.0});
  samples.push_back({Collective::all_reduce, 1, Tier::nvlink, 1e6, 1e-4, 0.0});
  CHECK(fit_all(samples).size() == 2);  // the 1-rank group is skipped
}

TEST_CASE("fit: sizes that do not determine a bandwidth leave it undetermined", "[validate][fit]") {
  const auto fit_of = [](const std::vector<std::pair<double, double>>& rows) {
    std::vector<CollectiveSample> samples;
    samples.reserve(rows.size());
    for (const auto& [bytes, t] : rows) {
      samples.push_back({Collective::all_reduce, 8, Tier::nvlink, bytes, t, 0.0});
    }
    return fit_collective(samples);
  };
  // A latency sweep, 8 B to 1 KiB at 19.65-19.91 us: t = 19.65 us + 0.254 ns/B x S; at 1 KiB
  // the S term is 0.26 us of 19.9, below the 19.65 us intercept: no bandwidth (it gave 0.061
  // GB/s, latency 0, and plan then priced a TP all-reduce at 1500x its time).
  const auto latency_only =
      fit_of({{8, 19.652e-6}, {64, 19.668e-6}, {256, 19.717e-6}, {1024, 19.912e-6}});
  CHECK(latency_only.busbw_gbps == 0.0);
  CHECK(latency_only.latency_s == 0.0);
  CHECK(fit_of({{1e6, 1e-4}}).busbw_gbps == 0.0);                 // one size
  CHECK(fit_of({{1e6, 2e-4}, {1e7, 1e-4}}).busbw_gbps == 0.0);    // falling with size
  CHECK(fit_of({{1e6, 1e-4}, {1e6, 1.1e-4}}).busbw_gbps == 0.0);  // one distinct size
  // validate's sweep around the plan's own sizes keeps the line through the origin: the
  // measured times at those sizes (t = S x 1.75 / busbw through the weighted points).
  const auto at_plan_sizes =
      fit_collective({{Collective::all_reduce, 8, Tier::nvlink, 8, 19.652e-6, 0.0},
                      {Collective::all_reduce, 8, Tier::nvlink, 1024, 19.912e-6, 0.0}},
                     FitSizes::plans);
  CHECK(at_plan_sizes.latency_s == 0.0);
  CHECK(at_plan_sizes.busbw_gbps > 0.0);
  CHECK(fitted_time_s(at_plan_sizes, 1024) == Approx(19.912e-6).epsilon(0.02));
  // The cost model skips an undetermined fit (its own rate stays).
  Calibration c;
  c.fits.push_back(latency_only);
  CHECK_FALSE(c.collective_fit(Collective::all_reduce, 8, Tier::nvlink).has_value());
  // Bandwidth-bound with a little noise (negative intercept): through the origin.
  const auto bound = fit_of({{1e8, 1.70e-3}, {1e9, 1.75e-2}});  // intercept -56 us
  CHECK(bound.latency_s == 0.0);
  CHECK(bound.busbw_gbps == Approx(101.5).epsilon(0.02));  // 102.9 and 100.0 GB/s, weighted
}

TEST_CASE("plan reader", "[validate][plan]") {
  const auto plan = read_plan(data("plan_tp2_pp2_dp2.json"), "plan.json");
  CHECK(plan.world_size() == 8);
  CHECK(plan.order == RankOrder::tp_dp_pp);
  CHECK(plan.dtype == Dtype::bf16);
  REQUIRE(plan.tp.has_value());
  CHECK(plan.tp->bytes_per_call == 262144.0);
  CHECK(plan.pp->collectives == std::vector<Collective>{Collective::send_recv});
  CHECK(plan.pp->tier == Tier::network);
  REQUIRE(plan.gemms.size() == 2);
  CHECK(plan.gemms[1].n == 1024);
  CHECK(plan.gemms[0].flops() == 2.0 * 256 * 768 * 512);
  const auto one = read_plan(data("plan_1gpu.json"), "one.json");
  CHECK(one.world_size() == 1);
  CHECK_FALSE(one.tp.has_value());

  std::string text = data("plan_tp2_pp2_dp2.json");
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    out.replace(out.find(from), from.size(), to);
    return out;
  };
  CHECK(error_of([&] { (void)read_plan(replace("\"tp\": 2,", "\"tp\": 0,"), "plan.json"); }) ==
        "plan.json: plans[0].tp: expected a positive integer");
  CHECK(error_of([&] {
          (void)read_plan(replace("\"tp\": 2,", "\"tp\": 16777217,"), "plan.json");
        }) == "plan.json: plans[0].tp: expected at most 16777216");
  CHECK(error_of([&] { (void)read_plan(replace("\"tp\": 2,", ""), "plan.json"); }) ==
        "plan.json: plans[0].tp: missing");
  CHECK(error_of([&] { (void)read_plan(replace("\"tp-dp-pp\"", "\"dp-tp\""), "plan.json"); }) ==
        "plan.json: plans[0].rank_order: expected tp-dp-pp|tp-pp-dp, got 'dp-tp'");
  CHECK(error_of([&] {
          (void)read_plan(replace("\"send-recv\", \"bytes", "\"gossip\", \"bytes"), "plan.json");
        }) == "plan.json: plans[0].comm.pp.collective: unknown collective 'gossip'");
  CHECK(error_of([&] {
          (void)read_plan(
              replace("\"ranks\": 2, \"tier\": \"network\"", "\"ranks\": 3, \"tier\": \"network\""),
              "plan.json");
        }) ==
        "plan.json: plans[0].comm.pp.ranks: expected 2 (a send-recv between two pipeline "
        "stages)");
  CHECK(error_of([&] { (void)read_plan(text, "plan.json", 3); }) ==
        "plan.json: plans[3]: missing (the file has 1 plans; see --plan-index)");
  CHECK(error_of([] {
          (void)read_plan("{\"plans\": [", "plan.json");
        }).rfind("plan.json: invalid JSON at byte 12: ", 0) == 0);
}

TEST_CASE("groups follow the planner's tp-dp-pp placement", "[validate][groups]") {
  const auto plan = read_plan(data("plan_tp2_pp2_dp2.json"), "plan.json");
  // tp-dp-pp: rank = tp + 2 dp + 4 pp, so rank 5 = (tp 1, dp 0, pp 1)
  const auto g = rank_groups(plan, 5);
  CHECK(g.coord.tp == 1);
  CHECK(g.coord.dp == 0);
  CHECK(g.coord.pp == 1);
  CHECK(g.tp.members == std::vector<int>{4, 5});
  CHECK(g.dp.members == std::vector<int>{5, 7});
  CHECK(g.pp.members == std::vector<int>{1, 5});
  CHECK(g.pp.group_rank == 1);
  CHECK(g.pp.color == 1);
  CHECK(g.tp.describe() == "tp group (ranks 4,5)");
}

TEST_CASE("plan reader and groups with context and expert parallelism", "[validate][plan]") {
  // tests/data/plan_cp2_ep4.json: trident plan --gpus 8 --servers 1 --model
  // tests/data/tiny-moe.yaml --cp 2 --ep 4 --tp 2 --dp 2 --top 1 --format json
  const auto plan = read_plan(data("plan_cp2_ep4.json"), "plan.json");
  CHECK(plan.world_size() == 8);
  CHECK(plan.config.cp == 2);
  CHECK(plan.config.ep == 4);
  REQUIRE(plan.cp.has_value());
  CHECK(plan.cp->collectives == std::vector<Collective>{Collective::send_recv});
  REQUIRE(plan.ep.has_value());
  CHECK(plan.ep->collectives == std::vector<Collective>{Collective::all_to_all});
  CHECK(plan.ep->ranks == 4);
  CHECK(plan.dp->ranks == 4);  // DP x CP
  // tp-cp-dp-pp: rank = tp + 2 (cp + 2 dp); rank 5 = (tp 1, cp 0, dp 1).
  const auto g = rank_groups(plan, 5);
  CHECK(g.coord.cp == 0);
  CHECK(g.coord.dp == 1);
  CHECK(g.cp.members == std::vector<int>{5, 7});
  CHECK(g.dp.members == std::vector<int>{1, 3, 5, 7});
  CHECK(g.ep.members == std::vector<int>{4, 5, 6, 7});
  CHECK(g.ep.describe() == "ep group (ranks 4,5,6,7)");
}

TEST_CASE("all-to-all pattern: chunk j comes from peer j", "[validate][measure]") {
  // 4 ranks, 8 floats each (chunks of 2): rank 1 receives peer j's elements 2..3.
  std::vector<float> recv(8);
  for (int peer = 0; peer < 4; ++peer) {
    const auto sent = input_pattern(Collective::all_to_all, 4, peer, 8);
    for (std::size_t k = 0; k < 2; ++k) {
      recv[static_cast<std::size_t>(peer) * 2 + k] = sent[2 + k];
    }
  }
  CHECK(count_wrong(Collective::all_to_all, 4, 1, 0, 8, recv) == 0);
  recv[5] += 1.0f;
  CHECK(count_wrong(Collective::all_to_all, 4, 1, 0, 8, recv) == 1);
  CHECK(buffer_counts(Collective::all_to_all, 4, 8).recv == 8);
}

TEST_CASE("sweep sizes and result checks", "[validate][measure]") {
  CHECK(sweep_sizes(262144, 2, 16777216) ==
        std::vector<double>{32768, 65536, 131072, 262144, 524288});
  CHECK(sweep_sizes(262144, 2, 100000) == std::vector<double>{32768, 65536, 100000});
  // all-reduce on 4 ranks of 8 floats: element i = (i%13+1) x (1+2+3+4)
  std::vector<float> out(8);
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<float>((i % 13 + 1) * 10);
  CHECK(count_wrong(Collective::all_reduce, 4, 0, 3, 8, out) == 0);
  out[3] = 0.0f;
  CHECK(count_wrong(Collective::all_reduce, 4, 0, 3, 8, out) == 1);
  const auto input = input_pattern(Collective::send_recv, 2, 1, 4);
  CHECK(count_wrong(Collective::send_recv, 2, 0, 1, 4, input) == 0);
}

TEST_CASE("calibration file round trip and errors", "[validate][calibration_io]") {
  Calibration c;
  c.gpu = "NVIDIA H200";
  c.nccl_version = "2.27.3";
  c.date = "2026-12-01T10:00:00Z";
  c.source = "validate";
  c.backend = "nccl";
  c.gemms.push_back({8192, 8192, 8192, Dtype::bf16, 780.0});
  c.collectives.push_back({Collective::all_reduce, 8, Tier::nvlink, 1e9, 0.005, 350.0});
  c.fits.push_back({Collective::all_reduce, 8, Tier::nvlink, 1e-5, 360.0});
  c.comparison.push_back({"tp all-reduce", 0.001, 0.0011, -9.1});
  const Calibration back = parse_calibration(to_json(c), "calib.json");
  CHECK(back.gpu == c.gpu);
  CHECK(back.backend == "nccl");
  REQUIRE(back.gemms.size() == 1);
  CHECK(back.gemms[0].tflops == 780.0);
  CHECK(back.collectives[0].busbw_gbps == 350.0);
  CHECK(back.fits[0].latency_s == 1e-5);
  REQUIRE(back.comparison.size() == 1);
  CHECK(back.comparison[0].error_pct == -9.1);
  CHECK(to_json(back) == to_json(c));

  Calibration no_rows = c;
  no_rows.comparison.clear();
  CHECK(to_json(no_rows).find("comparison") == std::string::npos);

  // A fit whose bandwidth was not determined (busbw 0) is not written.
  Calibration undetermined = c;
  undetermined.fits[0].busbw_gbps = 0.0;
  CHECK(parse_calibration(to_json(undetermined), "calib.json").fits.empty());

  for (int i = 0; i < 2; ++i) c.fits.push_back(c.fits[0]);
  c.fits[2].busbw_gbps = 12345.0;  // written, then made negative in the text
  std::string negative = to_json(c);
  negative.replace(negative.find("12345.0"), 7, "-1.0");
  CHECK(error_of([&] { (void)parse_calibration(negative, "calib.json"); }) ==
        "calib.json: fits[2].busbw_gbps: expected a positive number");
  CHECK(error_of([] {
          (void)parse_calibration("{\"trident_calibration\": 1, \"gemms\": []}", "c.json");
        }) == "c.json: collectives: missing");
  CHECK(error_of([] {
          (void)parse_calibration(
              "{\"trident_calibration\": 1, \"gemms\": [], \"collectives\": "
              "[], \"fits\": [], \"colour\": 1}",
              "c.json");
        }) == "c.json: colour: unknown key");
  CHECK(error_of([] {
          (void)parse_calibration(
              "{\"trident_calibration\": 1, \"gemms\": [{\"m\": 1, \"n\": 1, "
              "\"k\": 1, \"dtype\": \"bf17\", \"tflops\": 1}], "
              "\"collectives\": [], \"fits\": []}",
              "c.json");
        }) == "c.json: gemms[0].dtype: expected bf16|fp16|fp8|tf32|fp32, got 'bf17'");
}

TEST_CASE("plan reader and groups under hybrid sharding (HSDP)", "[validate][plan]") {
  // tests/data/plan_hsdp2.json: trident plan --model llama3-8b --seq-len 2048 --gpus 8
  // --servers 1 --global-batch 16 --stack torchtitan --dp-shard 2 --tp 1 --pp 1 --top 1
  // --format json: ZeRO-3 sharded over 2 DP ranks, 4 replicas.
  const auto plan = read_plan(data("plan_hsdp2.json"), "plan.json");
  CHECK(plan.config.dp == 8);
  CHECK(plan.config.dp_shard == 2);
  REQUIRE(plan.dp.has_value());
  CHECK(plan.dp->ranks == 2);  // the per-unit collectives run in the shard group
  // tp-dp-pp with tp 1: rank = dp; rank 5's shard group is DP ranks 4-5.
  const auto g = rank_groups(plan, 5);
  CHECK(g.dp.members == std::vector<int>{4, 5});
  // A plan without the key (written before HSDP) shards over all of DP.
  const auto plain = read_plan(data("plan_tp2_pp2_dp2.json"), "plan.json");
  CHECK(plain.config.dp_shard == 0);
}
