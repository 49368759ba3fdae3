// nccl-tests `-J FILE` output (src/util.cu, JSON_FILE_VERSION 1-3): {"version", "args": [argv],
// "nccl_version": code, "config": {"nthreads", "ngpus", ..., "devices": [{"rank", "hostname",
// "device_info", ...}]}, "results": [{"size", "count", "type", "redop", "root",
// "out_of_place": {"time"|"cpu_time", "alg_bw", "bus_bw", "nwrong"} | null, "in_place": {...}}]}.
// Doubles are written with %lf; NaN as the string "nan"; nwrong is null without validation.
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "topology/errors.h"
#include "topology/json_reader.h"
#include "validate/nccl_tests_common.h"

namespace trident::nccl_tests {
namespace {

using nlohmann::json;

/// nccl-tests src/util.cu JSON_FILE_VERSION at a0b82b2 (NCCL_TESTS_VERSION 2.19.6).
constexpr unsigned long long kLatestJsonVersion = 3;

std::optional<double> number(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;  // null, "nan"
  return it->get<double>();
}

/// A measured value: a number, or what nccl-tests writes for none (null, the string "nan"); any
/// other value is refused naming it (a row it dropped silently left the fit without it).
std::optional<double> measured(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string() && (*it == "nan" || *it == "-nan")) return std::nullopt;
  throw InputError(where + "." + key + ": expected a number, null or \"nan\", got " + it->dump());
}

NcclTestsCell read_cell(const json& result, const char* key, const std::string& where) {
  NcclTestsCell cell;
  const auto it = result.find(key);
  if (it == result.end() || !it->is_object()) return cell;
  const std::string at = where + "." + key;
  cell.time_us = measured(*it, "time", at);
  if (!cell.time_us) cell.time_us = measured(*it, "cpu_time", at);
  cell.algbw_gbps = measured(*it, "alg_bw", at);
  cell.busbw_gbps = measured(*it, "bus_bw", at);
  cell.wrong = measured(*it, "nwrong", at);
  return cell;
}

/// A result's `type` or `redop`: a string, "" where absent; another value (null, a number) is
/// refused, where it was passed over and the row's type and redop went unchecked.
std::string optional_text(const json& result, const char* key, const std::string& where) {
  const auto it = result.find(key);
  if (it == result.end()) return "";
  if (!it->is_string()) {
    throw InputError(fmt::format("{}.{}: expected a string, got {}", where, key, it->type_name()));
  }
  return it->get<std::string>();
}

NcclTestsRow read_result(const json& result, const std::string& where) {
  if (!result.is_object()) throw InputError(where + ": expected an object");
  const auto size = number(result, "size");
  if (!size) throw InputError(where + ".size: expected a number");
  NcclTestsRow row;
  row.bytes = *size;
  row.has_count = result.contains("count");
  row.count = number(result, "count").value_or(std::numeric_limits<double>::quiet_NaN());
  row.type = optional_text(result, "type", where);
  row.redop = optional_text(result, "redop", where);
  row.out_of_place = read_cell(result, "out_of_place", where);
  row.in_place = read_cell(result, "in_place", where);
  return row;
}

std::string test_name(const json& document, const std::string& source) {
  if (document.contains("args") && document["args"].is_array() && !document["args"].empty() &&
      document["args"][0].is_string()) {
    if (auto name = find_test_name(document["args"][0].get<std::string>())) return *name;
  }
  if (auto name = find_test_name(source)) return *name;
  throw InputError(source +
                   ": args: cannot tell which nccl-tests binary wrote this file (no "
                   "'*_perf' name in args[0] nor in the file name)");
}

/// `config.KEY` (nthreads, ngpus): a positive integer, or `fallback` where absent; a fraction,
/// a negative or a string is refused (8.9 was read as 8).
long long config_count(const json& config, const char* key, long long fallback,
                       const std::string& source) {
  const auto it = config.find(key);
  if (it == config.end()) return fallback;
  if (!it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > (1 << 20)) {
    throw InputError(
        fmt::format("{}: config.{}: expected a positive integer, got {}", source, key, it->dump()));
  }
  return it->get<long long>();
}

/// `config.devices[i].KEY` (hostname, device_info): a string, "" where absent. Another value
/// (null, a number) is refused naming it: nlohmann's `value` threw its type_error, reported as
/// an internal error (exit 1).
std::string device_string(const json& device, const char* key, const std::string& source,
                          std::size_t i) {
  const auto it = device.find(key);
  if (it == device.end()) return "";
  if (!it->is_string()) {
    throw InputError(fmt::format("{}: config.devices[{}].{}: expected a string, got {}", source, i,
                                 key, it->type_name()));
  }
  return it->get<std::string>();
}

/// `config.devices` holds one entry per process, not per rank: writeDeviceReport gathers one
/// line per process and parseRankInfo reads its first "#  Rank" line (nccl-tests src/util.cu
/// @a0b82b2), while each process runs nthreads x ngpus ranks. So `-g 8` on one process lists
/// one device for 8 ranks.
void read_devices(const json& config, NcclTestsTable& table, const std::string& source) {
  const auto devices = config.find("devices");
  if (devices == config.end() || !devices->is_array()) return;
  const long long per_process =
      config_count(config, "nthreads", 1, source) * config_count(config, "ngpus", 1, source);
  if (per_process > (1 << 20)) return;  // refused below: no rank count
  std::vector<RankDevice> ranks;
  std::set<long long> first_ranks;
  for (std::size_t i = 0; i < devices->size(); ++i) {
    const json& device = (*devices)[i];
    if (!device.is_object()) continue;
    // Each process's first rank, once: a rank listed twice is two runs' devices in one file.
    const auto rank = device.find("rank");
    if (rank != device.end() && rank->is_number_integer() &&
        !first_ranks.insert(rank->get<long long>()).second) {
      throw InputError(fmt::format("{}: config.devices[{}].rank: rank {} is listed twice", source,
                                   i, rank->get<long long>()));
    }
    // Entry i is process i, whose first rank is i x nthreads x ngpus (writeDeviceReport
    // gathers them in process order): another number is a merged or edited file.
    const long long first = static_cast<long long>(i) * per_process;
    if (rank != device.end() && (!rank->is_number_integer() || rank->get<long long>() != first)) {
      throw InputError(fmt::format(
          "{}: config.devices[{}].rank: {}: expected {}, process {}'s first rank ({} per process)",
          source, i, rank->dump(), first, i, per_process));
    }
    RankDevice place{device_string(device, "hostname", source, i), 0,
                     fmt::format("{}: config.devices[{}]", source, i)};
    if (const auto group = device.find("group"); group != device.end()) {
      if (!group->is_number_integer()) {
        throw InputError(fmt::format("{}: config.devices[{}].group: {}: expected an integer",
                                     source, i, group->dump()));
      }
      place.group = group->get<long long>();
    }
    for (long long r = 0; r < per_process && ranks.size() < (1U << 24); ++r) ranks.push_back(place);
    const std::string gpu = device_string(device, "device_info", source, i);
    if (table.gpu.empty()) {
      table.gpu = gpu;
    } else if (!gpu.empty() && gpu != table.gpu) {
      throw InputError(
          fmt::format("{}: config.devices[{}].device_info: '{}', where the devices "
                      "before it are '{}'; a calibration describes one GPU type",
                      source, i, gpu, table.gpu));
    }
  }
  set_ranks(table, ranks, source);
}

/// Versions 1-3 (src/util.cu JSON_FILE_VERSION, @a0b82b2 3) differ only in the per-iteration
/// keys they add; a later one may move what this reader takes.
void check_version(const json& document, const std::string& source) {
  const auto version = document.find("version");
  if (version != document.end() && version->is_number_integer()) {
    // Non-negative integers parse as unsigned; 0 and negatives are no version either.
    const unsigned long long v =
        version->is_number_unsigned() ? version->get<unsigned long long>() : 0;
    if (v >= 1 && v <= kLatestJsonVersion) return;
    const bool newer = v > kLatestJsonVersion;
    throw InputError(fmt::format("{}: version: {}: expected an nccl-tests -J version 1 to {}{}",
                                 source, version->dump(), kLatestJsonVersion,
                                 newer ? " (a newer nccl-tests writes what this reader has not "
                                         "been checked against)"
                                       : ""));
  }
  throw InputError(source + ": version: expected the integer nccl-tests -J writes (1 to " +
                   std::to_string(kLatestJsonVersion) + ")");
}

}  // namespace

std::vector<NcclTestsTable> parse_json(const std::string& text, const std::string& source,
                                       std::optional<Collective> given) {
  const json document = json_reader::parse(text, source);
  if (!document.is_object()) throw InputError(source + ": expected a JSON object");
  check_version(document, source);
  NcclTestsTable table;
  table.wrong_is_count = true;  // "nwrong": a count of wrong elements
  if (given) {
    table.collective = *given;
    table.collective_given = true;
    table.test = std::string(to_string(*given)) + " (--collective)";
  } else {
    table.test = test_name(document, source);
    table.collective = collective_of(table.test, source);
  }
  // NCCL_VERSION_CODE (2.27.3: 22703; before 2.9, 2.8.4: 2804); refused as the text log's
  // unreadable version is ("-1" was written as NCCL 0.0.-1, a string dropped).
  if (const auto version = document.find("nccl_version"); version != document.end()) {
    if (!version->is_number_integer() || version->get<long long>() < 1000 ||
        version->get<long long>() > 999999) {
      throw InputError(fmt::format(
          "{}: nccl_version: expected NCCL's version code (an integer such as 22703), got {}",
          source, version->dump()));
    }
    table.nccl_version = version_of_code(version->get<long long>());
  }
  const auto config = document.find("config");
  if (config != document.end() && config->is_object()) {
    read_devices(*config, table, source);
    if (table.ranks == 0) {
      const long long ranks =
          config_count(*config, "nthreads", 0, source) * config_count(*config, "ngpus", 0, source);
      if (ranks > (1 << 24)) {
        throw InputError(fmt::format(
            "{}: config: nthreads x ngpus = {} ranks; expected at most 16777216", source, ranks));
      }
      table.ranks = static_cast<int>(ranks);
    }
  }
  if (table.ranks <= 0) {
    throw InputError(source + ": config.devices: cannot tell the number of ranks");
  }
  const auto results = document.find("results");
  if (results == document.end() || !results->is_array()) {
    throw InputError(source + ": results: expected an array");
  }
  for (std::size_t i = 0; i < results->size(); ++i) {
    table.rows.push_back(
        read_result((*results)[i], source + ": results[" + std::to_string(i) + "]"));
  }
  return {table};
}

}  // namespace trident::nccl_tests
