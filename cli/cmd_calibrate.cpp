// trident calibrate: nccl-tests logs (text or -J JSON) -> samples and latency/bandwidth fits ->
// a calibration file for `plan --calibration`.
#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "costmodel/calibration_io.h"
#include "topology/errors.h"
#include "validate/collective_fit.h"
#include "validate/nccl_tests_parser.h"

namespace trident::cli {
namespace {

struct CalibrateFlags {
  std::vector<std::string> files;
  std::string tier;  ///< "" = inferred per table
  std::string output;
};

void add_table(const NcclTestsTable& table, const CalibrateFlags& flags, Calibration& out) {
  const Tier tier = flags.tier.empty() ? infer_tier(table) : parse_tier(flags.tier, "--tier");
  fmt::print("{}: {} ranks on {} host(s){}{} -> {} as {}\n", table.test, table.ranks,
             table.hosts, table.gpu.empty() ? "" : ", " + table.gpu,
             table.nccl_version.empty() ? "" : ", NCCL " + table.nccl_version,
             to_string(table.collective), to_string(tier));
  for (const auto& sample : to_samples(table, tier)) out.collectives.push_back(sample);
  if (out.gpu.empty()) out.gpu = table.gpu;
  if (out.nccl_version.empty()) out.nccl_version = table.nccl_version;
}

void print_calibration(const Calibration& c) {
  fmt::print("\n{:<16} {:>5} {:<8} {:>12} {:>12} {:>11}\n", "collective", "ranks", "tier",
             "bytes", "time_us", "busbw_GB/s");
  for (const auto& s : c.collectives) {
    fmt::print("{:<16} {:>5} {:<8} {:>12.0f} {:>12.2f} {:>11.3f}\n", to_string(s.collective),
               s.ranks, to_string(s.tier), s.bytes, s.time_s * 1e6, s.busbw_gbps);
  }
  fmt::print("\nfits: t(S) = steps x latency + S x factor / busbw (least squares, relative)\n");
  fmt::print("{:<16} {:>5} {:<8} {:>12} {:>11}\n", "collective", "ranks", "tier", "latency_us",
             "busbw_GB/s");
  for (const auto& f : c.fits) {
    fmt::print("{:<16} {:>5} {:<8} {:>12.3f} {:>11.3f}\n", to_string(f.collective), f.ranks,
               to_string(f.tier), f.latency_s * 1e6, f.busbw_gbps);
  }
}

void calibrate(const CalibrateFlags& flags) {
  if (!flags.tier.empty()) (void)parse_tier(flags.tier, "--tier");
  Calibration calibration;
  calibration.source = "calibrate --nccl-tests";
  calibration.backend = "nccl-tests";
  calibration.date = now_iso8601();
  for (const auto& file : flags.files) {
    const std::string text = read_input_file(file, "--nccl-tests");
    for (const auto& table : parse_nccl_tests(text, file)) add_table(table, flags, calibration);
  }
  if (calibration.collectives.empty()) {
    throw InputError("--nccl-tests: no result row with a time in the given logs");
  }
  calibration.fits = fit_all(calibration.collectives);
  print_calibration(calibration);
  if (!flags.output.empty()) {
    write_output(flags.output, to_json(calibration));
    fmt::print("\nwrote {}\n", flags.output);
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto flags = std::make_shared<CalibrateFlags>();
  auto* sub = app.add_subcommand(
      "calibrate", "Build a calibration file from nccl-tests logs (text output or -J JSON)");
  sub->add_option("--nccl-tests", flags->files, "nccl-tests output files")->required();
  sub->add_option("--tier", flags->tier,
                  "link tier of the measured ranks: nvlink|network|pcie (default: nvlink when "
                  "all ranks are on one host, else network)");
  sub->add_option("--output", flags->output, "calibration file to write");
  sub->callback([flags] { calibrate(*flags); });
}

}  // namespace trident::cli
