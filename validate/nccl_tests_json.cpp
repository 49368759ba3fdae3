// nccl-tests `-J FILE` output (src/util.cu, JSON_FILE_VERSION 2): {"version", "args": [argv],
// "nccl_version": code, "config": {"nthreads", "ngpus", ..., "devices": [{"rank", "hostname",
// "device_info", ...}]}, "results": [{"size", "count", "type", "redop", "root",
// "out_of_place": {"time"|"cpu_time", "alg_bw", "bus_bw", "nwrong"} | null, "in_place": {...}}]}.
// Doubles are written with %lf; NaN as the string "nan"; nwrong is null without validation.
#include <nlohmann/json.hpp>

#include "topology/errors.h"
#include "topology/json_reader.h"
#include "validate/nccl_tests_common.h"

namespace trident::nccl_tests {
namespace {

using nlohmann::json;

std::optional<double> number(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;  // null, "nan"
  return it->get<double>();
}

NcclTestsCell read_cell(const json& result, const char* key) {
  NcclTestsCell cell;
  const auto it = result.find(key);
  if (it == result.end() || !it->is_object()) return cell;
  cell.time_us = number(*it, "time");
  if (!cell.time_us) cell.time_us = number(*it, "cpu_time");
  cell.algbw_gbps = number(*it, "alg_bw");
  cell.busbw_gbps = number(*it, "bus_bw");
  cell.wrong = number(*it, "nwrong");
  return cell;
}

NcclTestsRow read_result(const json& result, const std::string& where) {
  if (!result.is_object()) throw InputError(where + ": expected an object");
  const auto size = number(result, "size");
  if (!size) throw InputError(where + ".size: expected a number");
  NcclTestsRow row;
  row.bytes = *size;
  row.count = number(result, "count").value_or(0.0);
  if (result.contains("type") && result["type"].is_string()) row.type = result["type"];
  if (result.contains("redop") && result["redop"].is_string()) row.redop = result["redop"];
  row.out_of_place = read_cell(result, "out_of_place");
  row.in_place = read_cell(result, "in_place");
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

/// `config.devices` holds one entry per process, not per rank: writeDeviceReport gathers one
/// line per process and parseRankInfo reads its first "#  Rank" line (nccl-tests src/util.cu
/// @a0b82b2), while each process runs nthreads x ngpus ranks. So `-g 8` on one process lists
/// one device for 8 ranks.
void read_devices(const json& config, NcclTestsTable& table) {
  const auto devices = config.find("devices");
  if (devices == config.end() || !devices->is_array()) return;
  const long long per_process =
      static_cast<long long>(config.value("nthreads", 1)) * config.value("ngpus", 1);
  if (per_process < 1 || per_process > (1 << 20)) return;  // refused below: no rank count
  std::vector<std::string> hosts;
  for (const auto& device : *devices) {
    if (!device.is_object()) continue;
    const std::string host = device.value("hostname", std::string());
    for (long long r = 0; r < per_process && hosts.size() < (1U << 24); ++r) hosts.push_back(host);
    if (table.gpu.empty()) table.gpu = device.value("device_info", std::string());
  }
  table.ranks = static_cast<int>(hosts.size());
  set_hosts(table, hosts);
}

}  // namespace

std::vector<NcclTestsTable> parse_json(const std::string& text, const std::string& source,
                                       std::optional<Collective> given) {
  const json document = json_reader::parse(text, source);
  if (!document.is_object()) throw InputError(source + ": expected a JSON object");
  NcclTestsTable table;
  table.wrong_is_count = true;  // "nwrong": a count of wrong elements
  if (given) {
    table.collective = *given;
    table.test = std::string(to_string(*given)) + " (--collective)";
  } else {
    table.test = test_name(document, source);
    table.collective = collective_of(table.test, source);
  }
  if (document.contains("nccl_version") && document["nccl_version"].is_number_integer()) {
    table.nccl_version = version_of_code(document["nccl_version"].get<long long>());
  }
  const auto config = document.find("config");
  if (config != document.end() && config->is_object()) {
    read_devices(*config, table);
    if (table.ranks == 0) {
      table.ranks = config->value("nthreads", 0) * config->value("ngpus", 0);
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
