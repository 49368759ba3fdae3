// trident calibrate: nccl-tests logs (text or -J JSON) and calibration files written by
// `validate` -> samples and latency/bandwidth fits -> one calibration file for
// `plan --calibration`.
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <optional>

#include "cli/cluster_args.h"
#include "cli/commands.h"
#include "cli/input_file.h"
#include "cli/output_file.h"
#include "costmodel/calibration_io.h"
#include "topology/errors.h"
#include "topology/text_check.h"
#include "validate/collective_fit.h"
#include "validate/nccl_tests_parser.h"

namespace trident::cli {
namespace {

struct CalibrateFlags {
  std::vector<std::string> files;     ///< --nccl-tests
  std::vector<std::string> validate;  ///< --validate: calibration files validate wrote
  std::string tier;                   ///< "" = inferred per table
  std::string collective;             ///< "" = from the log's test name, the file name or the table
  std::string output;
};

/// A --tier that says otherwise than the log's hosts: right for some clusters, wrong for
/// others, so said beside the summary line, not refused. Ranks on several hosts share NVLink
/// only in a rack-scale domain (GB200 NVL72's trays); ranks on one host reach the network only
/// where NCCL was kept off NVLink, PCIe and shared memory.
std::string tier_note(const NcclTestsTable& table, Tier tier) {
  if (table.hosts > 1 && tier == Tier::nvlink) {
    return fmt::format(
        "# note: {}: ranks on {} hosts read as nvlink (--tier): right for one rack-scale NVLink "
        "domain (GB200 NVL72's trays), not for servers that meet over the network, whose fit "
        "would price NVLink at the NICs' rate\n",
        table.source, table.hosts);
  }
  if (table.hosts > 1 && tier == Tier::pcie) {
    return fmt::format(
        "# note: {}: ranks on {} hosts read as pcie (--tier): PCIe does not reach another "
        "host, so their traffic crossed the network; the fit would price PCIe at the NICs' "
        "rate\n",
        table.source, table.hosts);
  }
  if (table.hosts == 1 && tier == Tier::network) {
    return fmt::format(
        "# note: {}: every rank on one host read as network (--tier): its traffic rode NVLink "
        "or PCIe unless NCCL was kept off them (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)\n",
        table.source);
  }
  return "";
}

void add_table(const NcclTestsTable& table, const CalibrateFlags& flags, Calibration& out,
               std::string& report) {
  if (flags.tier.empty() && table.hosts == 0) {
    throw InputError(table.source + ": " + (table.test.empty() ? "the test" : table.test) +
                     ": no '#  Rank N ... on HOST' lines: cannot tell whether its ranks shared a "
                     "host (nvlink) or not (network); give --tier");
  }
  check_one_line(table.gpu, table.source + ": the GPU name of its '#  Rank' lines");
  const Tier tier = flags.tier.empty() ? infer_tier(table) : parse_tier(flags.tier, "--tier");
  if (table.ranks < 2) {
    throw InputError(table.source + ": " + (table.test.empty() ? "the test" : table.test) +
                     " ran on " + std::to_string(table.ranks) +
                     " rank: a collective over one rank moves nothing; run it over 2 or more");
  }
  const std::string groups = table.groups > 1
                                 ? fmt::format(
                                       " (group {}, rank 0's, of {} split groups measured at once, "
                                       "NCCL_TESTS_SPLIT)",
                                       table.group, table.groups)
                                 : "";
  report += fmt::format("{}: {} ranks on {} host(s){}{}{} -> {} as {}\n", table.test, table.ranks,
                        table.hosts, groups, table.gpu.empty() ? "" : ", " + table.gpu,
                        table.nccl_version.empty() ? "" : ", NCCL " + table.nccl_version,
                        to_string(table.collective), to_string(tier));
  report += tier_note(table, tier);
  for (const UntimedRow& row : untimed_rows(table)) {
    report += fmt::format(
        "# note: {}{}: {:.0f} bytes: no time (nan or N/A in both halves): row "
        "left out of the fit\n",
        table.source, row.where, row.bytes);
  }
  // Every input must be of one GPU: the --validate files (read first) or the logs before it
  // (logs of two GPUs were merged under the first's name).
  if (!table.gpu.empty() && !out.gpu.empty() && table.gpu != out.gpu) {
    throw InputError(fmt::format(
        "--nccl-tests {}: measured on '{}', the inputs before it on '{}'; a calibration "
        "describes one GPU type",
        table.source, table.gpu, out.gpu));
  }
  for (const auto& sample : to_samples(table, tier)) out.collectives.push_back(sample);
  if (out.gpu.empty()) out.gpu = table.gpu;
  if (out.nccl_version.empty()) out.nccl_version = table.nccl_version;
}

/// One calibration file `validate` wrote (or `calibrate`), merged into `out`: its samples and
/// GEMMs join the others (the fits are refitted over all of them); its predicted-vs-measured
/// rows describe its own plan and are left out. A file measured on another GPU is refused.
void add_validate_file(const std::string& file, Calibration& out, std::string& report) {
  const auto join_backend = [&out](const std::string& backend) {
    if (backend.empty() || ("+" + out.backend + "+").find("+" + backend + "+") != std::string::npos)
      return;
    out.backend += (out.backend.empty() ? "" : "+") + backend;
  };
  const std::string source = input_source(file);
  const Calibration in = parse_calibration(read_input_file(file, "--validate"), source);
  if (!in.gpu.empty() && !out.gpu.empty() && in.gpu != out.gpu) {
    throw InputError(
        fmt::format("--validate {}: measured on '{}', the files before it on '{}'; "
                    "a calibration describes one GPU type",
                    source, in.gpu, out.gpu));
  }
  report += fmt::format(
      "{}: {} from {}{}: {} collective samples, {} GEMM shapes\n", source,
      in.source.empty() ? "a calibration" : in.source, in.gpu.empty() ? "an unnamed GPU" : in.gpu,
      in.backend.empty() ? "" : " (" + in.backend + ")", in.collectives.size(), in.gemms.size());
  out.collectives.insert(out.collectives.end(), in.collectives.begin(), in.collectives.end());
  out.gemms.insert(out.gemms.end(), in.gemms.begin(), in.gemms.end());
  if (out.gpu.empty()) out.gpu = in.gpu;
  if (out.nccl_version.empty()) out.nccl_version = in.nccl_version;
  if (out.hbm_gbps <= 0.0) out.hbm_gbps = in.hbm_gbps;
  join_backend(in.backend);
}

std::string format_calibration(const Calibration& c) {
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "\n{:<16} {:>5} {:<8} {:>12} {:>12} {:>11}\n", "collective", "ranks", "tier",
                 "bytes", "time_us", "busbw_GB/s");
  for (const auto& s : c.collectives) {
    fmt::format_to(to, "{:<16} {:>5} {:<8} {:>12.0f} {:>12.2f} {:>11.3f}\n",
                   to_string(s.collective), s.ranks, to_string(s.tier), s.bytes, s.time_s * 1e6,
                   s.busbw_gbps);
  }
  fmt::format_to(to,
                 "\nfits: t(S) = steps x latency + S x factor / busbw (least squares, relative)\n");
  fmt::format_to(to, "{:<16} {:>5} {:<8} {:>12} {:>11}\n", "collective", "ranks", "tier",
                 "latency_us", "busbw_GB/s");
  bool undetermined = false;
  for (const auto& f : c.fits) {
    if (f.busbw_gbps <= 0.0) {
      undetermined = true;
      fmt::format_to(to, "{:<16} {:>5} {:<8} {:>12} {:>11}\n", to_string(f.collective), f.ranks,
                     to_string(f.tier), "-", "-");
      continue;
    }
    fmt::format_to(to, "{:<16} {:>5} {:<8} {:>12.3f} {:>11.3f}\n", to_string(f.collective), f.ranks,
                   to_string(f.tier), f.latency_s * 1e6, f.busbw_gbps);
  }
  if (undetermined) {
    out +=
        "- : not determined: the times do not grow with size, or the largest size is still "
        "latency-bound (its S/busbw share below the latency); plan --calibration keeps its own "
        "rates for these (sweep to larger sizes, e.g. -e 1G)\n";
  }
  return out;
}

/// --collective: a name parse_collective knows ("all-reduce", "allreduce", "all_reduce"...).
CLI::Validator collective_check() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        try {
          (void)parse_collective(text);
          return "";
        } catch (const InputError&) {
          return "expected all-reduce|all-gather|reduce-scatter|send-recv|all-to-all|broadcast, "
                 "got '" +
                 text + "'";
        }
      },
      "NAME");
}

/// A log or file given twice would count each of its samples twice: refused.
void reject_repeated_files(const CalibrateFlags& flags) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& f : flags.validate) inputs.emplace_back("--validate", f);
  for (const auto& f : flags.files) inputs.emplace_back("--nccl-tests", f);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code error;
      if (inputs[i].second == "-" || inputs[j].second == "-" ||
          !std::filesystem::equivalent(inputs[i].second, inputs[j].second, error)) {
        continue;
      }
      throw InputError(
          fmt::format("{} '{}': the same file as {} '{}'; give each once (its "
                      "samples would count twice)",
                      inputs[i].first, inputs[i].second, inputs[j].first, inputs[j].second));
    }
  }
}

void calibrate(const CalibrateFlags& flags) {
  if (!flags.tier.empty()) (void)parse_tier(flags.tier, "--tier");
  const std::optional<Collective> collective =
      flags.collective.empty() ? std::nullopt
                               : std::optional<Collective>(parse_collective(flags.collective));
  if (flags.files.empty() && flags.validate.empty()) {
    throw InputError("calibrate: expected --nccl-tests logs or --validate files (or both)");
  }
  reject_repeated_files(flags);
  RunOutputs files;
  for (const auto& file : flags.validate) files.add_input("--validate", file);
  for (const auto& file : flags.files) files.add_input("--nccl-tests", file);
  if (!flags.output.empty()) files.add_output("--output", flags.output);
  files.check();
  Calibration calibration;
  std::string report;
  const std::string from = std::string(flags.validate.empty() ? "" : " --validate") +
                           (flags.files.empty() ? "" : " --nccl-tests");
  calibration.source = "calibrate" + from;
  calibration.date = now_iso8601();
  for (const auto& file : flags.validate) add_validate_file(file, calibration, report);
  // The backends measured with, distinct, in order: "nccl", "nccl+nccl-tests", "nccl-tests".
  if (!flags.files.empty()) {
    calibration.backend += (calibration.backend.empty() ? "" : "+") + std::string("nccl-tests");
  }
  for (const auto& file : flags.files) {
    const std::string text = read_input_file(file, "--nccl-tests");
    for (const auto& table : parse_nccl_tests(text, input_source(file), collective)) {
      add_table(table, flags, calibration, report);
    }
  }
  if (calibration.collectives.empty() && calibration.gemms.empty()) {
    throw InputError(flags.validate.empty()
                         ? "--nccl-tests: no result row with a time in the given logs"
                         : "calibrate: no collective or GEMM measurement in the given files");
  }
  // validate's files alone: sweeps around their plans' sizes, fitted as validate fits them;
  // with logs of any sizes, a bandwidth only where the samples show one.
  calibration.fits =
      fit_all(calibration.collectives, flags.files.empty() ? FitSizes::plans : FitSizes::any);
  // A fit plan --calibration would refuse is named by its collective, group and tier: the
  // file's text it would be refused in is calibrate's own, which no one sees.
  for (const CollectiveFit& fit : calibration.fits) {
    if (fit.busbw_gbps <= 0.0 || fit_in_bounds(fit)) continue;  // 0: not determined, left out
    throw InputError(fmt::format(
        "calibrate{}: the {} fit over {} ranks ({}) comes out at {:g} GB/s and {:g} us, outside "
        "what plan --calibration reads ({:g} to {:g} GB/s, at most {:g} s): its samples' bytes "
        "and times are no GPU's",
        from, to_string(fit.collective), fit.ranks, to_string(fit.tier), fit.busbw_gbps,
        fit.latency_s * 1e6, kMinCalibrationRate, kMaxCalibrationRate, kMaxCalibrationSeconds));
  }
  const std::string json = to_json(calibration);
  if (json.size() > kMaxInputBytes) {  // plan --calibration would not read it
    throw InputError(fmt::format(
        "calibrate{}: the calibration would be {:.1f} MiB, above the {} MiB plan --calibration "
        "reads; give fewer or shorter logs",
        from, static_cast<double>(json.size()) / (1 << 20), kMaxInputBytes >> 20));
  }
  try {  // what calibrate writes, plan --calibration must accept
    (void)parse_calibration(json, "calibration");
  } catch (const InputError& e) {
    throw InputError("calibrate" + from +
                     ": the measurements give a calibration that plan --calibration would "
                     "refuse: " +
                     e.what());
  }
  report += format_calibration(calibration);
  // The file on standard output (`--output -`) must stay a calibration file: the summary goes
  // to standard error then.
  const bool json_on_stdout = flags.output == "-" || flags.output == "/dev/stdout";
  if (!flags.output.empty()) {
    files.set_text("--output", json);
    if (!json_on_stdout) report += fmt::format("\nwrote {}\n", flags.output);
  } else {
    report += "\nno calibration file written: give --output FILE (or - for standard output)\n";
  }
  if (json_on_stdout) {
    files.add_output("the summary", "/dev/stderr");
    files.set_text("the summary", report);
  } else {
    files.print(report);
  }
  files.commit();
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto flags = std::make_shared<CalibrateFlags>();
  auto* sub = app.add_subcommand(
      "calibrate",
      "Build a calibration file from nccl-tests logs (text output or -J JSON) and calibration "
      "files validate wrote (merged, the fits refitted over every sample)");
  sub->add_option("--nccl-tests", flags->files, "nccl-tests output files");
  sub->add_option("--validate", flags->validate,
                  "calibration files written by validate (runs of several plans, scales or "
                  "nodes) to merge; all from one GPU type");
  sub->add_option("--tier", flags->tier,
                  "link tier of the measured ranks: nvlink|network|pcie (default: nvlink when "
                  "all ranks are on one host, else network)")
      ->check(choice_check({"nvlink", "pcie", "network"}));
  sub->add_option("--collective", flags->collective,
                  "the collective the logs measured: all-reduce|all-gather|reduce-scatter|"
                  "send-recv|all-to-all|broadcast (default: the '*_perf' name in the log or the "
                  "file name, else inferred from the table's count, type and redop)")
      ->check(collective_check());
  sub->add_option("--output", flags->output, "calibration file to write");
  sub->callback([flags] { calibrate(*flags); });
}

}  // namespace trident::cli
