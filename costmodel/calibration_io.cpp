// Calibration file <-> Calibration. Strict: unknown keys and wrong types are errors that name
// the file and the key path.
#include "costmodel/calibration_io.h"

#include <cstdio>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "topology/errors.h"

namespace trident {
namespace {

using nlohmann::json;

/// Where a value sits: "calib.json: fits[2].busbw_gbps".
struct Path {
  const std::string& source;
  std::string key;
  [[nodiscard]] Path child(const std::string& name) const {
    return {source, key.empty() ? name : key + "." + name};
  }
  [[nodiscard]] Path index(std::size_t i) const {
    return {source, key + "[" + std::to_string(i) + "]"};
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source + ": " + key + ": " + what);
  }
};

void check_keys(const json& object, const Path& path, std::initializer_list<const char*> known) {
  if (!object.is_object()) path.fail("expected an object");
  for (const auto& item : object.items()) {
    bool found = false;
    for (const char* name : known) found = found || item.key() == name;
    if (!found) path.child(item.key()).fail("unknown key");
  }
}

const json& member(const json& object, const Path& path, const char* name) {
  const auto it = object.find(name);
  if (it == object.end()) path.child(name).fail("missing");
  return *it;
}

/// Bounds on measured values (TFLOP/s, GB/s, seconds): far outside any real hardware, inside
/// what keeps a predicted step time finite.
constexpr double kMinRate = 1e-6;
constexpr double kMaxRate = 1e6;
constexpr double kMaxLatencyS = 1e3;

double positive_number(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number() || value.get<double>() <= 0.0) {
    path.child(name).fail("expected a positive number");
  }
  return value.get<double>();
}

double non_negative_number(const json& object, const Path& path, const char* name);

/// "1e+06": a bound for messages.
std::string bound_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

/// A measured rate or latency: positive (or >= 0 when `low` is 0) and within [low, high], so
/// that the times predicted from it stay finite (a busbw of 1e-308 GB/s made the step NaN).
double measured_number(const json& object, const Path& path, const char* name, double low,
                       double high) {
  const double value = low > 0.0 ? positive_number(object, path, name)
                                  : non_negative_number(object, path, name);
  if (value < low) path.child(name).fail("expected at least " + bound_text(low));
  if (value > high) path.child(name).fail("expected at most " + bound_text(high));
  return value;
}

double non_negative_number(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number() || value.get<double>() < 0.0) {
    path.child(name).fail("expected a number >= 0");
  }
  return value.get<double>();
}

double any_number(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number()) path.child(name).fail("expected a number");
  return value.get<double>();
}

long long positive_integer(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_number_integer() || value.get<long long>() <= 0) {
    path.child(name).fail("expected a positive integer");
  }
  return value.get<long long>();
}

/// "ranks": a positive integer that fits a group of a cluster (at most 2^24).
int rank_count(const json& object, const Path& path) {
  const long long ranks = positive_integer(object, path, "ranks");
  if (ranks > (1LL << 24)) path.child("ranks").fail("expected at most 16777216");
  return static_cast<int>(ranks);
}

std::string string_value(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_string()) path.child(name).fail("expected a string");
  return value.get<std::string>();
}

std::string optional_string(const json& object, const Path& path, const char* name) {
  return object.contains(name) ? string_value(object, path, name) : std::string();
}

const json& array_member(const json& object, const Path& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_array()) path.child(name).fail("expected an array");
  return value;
}

Collective collective_value(const json& object, const Path& path) {
  const std::string name = string_value(object, path, "collective");
  try {
    return parse_collective(name);
  } catch (const InputError&) {
    path.child("collective").fail("unknown collective '" + name + "'");
  }
}

GemmSample parse_gemm(const json& entry, const Path& path) {
  check_keys(entry, path, {"m", "n", "k", "dtype", "tflops"});
  GemmSample gemm;
  gemm.m = positive_integer(entry, path, "m");
  gemm.n = positive_integer(entry, path, "n");
  gemm.k = positive_integer(entry, path, "k");
  gemm.dtype = parse_dtype(string_value(entry, path, "dtype"), path.source + ": " +
                                                                   path.child("dtype").key);
  gemm.tflops = measured_number(entry, path, "tflops", kMinRate, kMaxRate);
  return gemm;
}

CollectiveSample parse_sample(const json& entry, const Path& path) {
  check_keys(entry, path, {"collective", "ranks", "tier", "bytes", "time_s", "busbw_gbps"});
  CollectiveSample sample;
  sample.collective = collective_value(entry, path);
  sample.ranks = rank_count(entry, path);
  sample.tier = parse_tier(string_value(entry, path, "tier"),
                           path.source + ": " + path.child("tier").key);
  sample.bytes = positive_number(entry, path, "bytes");
  sample.time_s = positive_number(entry, path, "time_s");
  sample.busbw_gbps = non_negative_number(entry, path, "busbw_gbps");
  return sample;
}

CollectiveFit parse_fit(const json& entry, const Path& path) {
  check_keys(entry, path, {"collective", "ranks", "tier", "latency_s", "busbw_gbps"});
  CollectiveFit fit;
  fit.collective = collective_value(entry, path);
  fit.ranks = rank_count(entry, path);
  fit.tier = parse_tier(string_value(entry, path, "tier"),
                        path.source + ": " + path.child("tier").key);
  fit.latency_s = measured_number(entry, path, "latency_s", 0.0, kMaxLatencyS);
  fit.busbw_gbps = measured_number(entry, path, "busbw_gbps", kMinRate, kMaxRate);
  return fit;
}

ComparisonRow parse_row(const json& entry, const Path& path) {
  check_keys(entry, path, {"component", "predicted_s", "measured_s", "error_pct"});
  ComparisonRow row;
  row.component = string_value(entry, path, "component");
  row.predicted_s = non_negative_number(entry, path, "predicted_s");
  row.measured_s = non_negative_number(entry, path, "measured_s");
  row.error_pct = any_number(entry, path, "error_pct");
  return row;
}

template <typename T, typename Fn>
std::vector<T> parse_list(const json& document, const Path& root, const char* name, Fn parse) {
  std::vector<T> out;
  const json& list = array_member(document, root, name);
  const Path path = root.child(name);
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(parse(list[i], path.index(i)));
  return out;
}

json parse_text(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(source + ": invalid JSON at byte " + std::to_string(e.byte) + ": " +
                     e.what());
  } catch (const json::out_of_range& e) {  // a number too large for a double ("1e999")
    throw InputError(source + ": invalid JSON: " + e.what());
  }
}

}  // namespace

Tier parse_tier(const std::string& text, const std::string& what) {
  for (const Tier tier : {Tier::nvlink, Tier::pcie, Tier::network}) {
    if (text == to_string(tier)) return tier;
  }
  throw InputError(what + ": expected nvlink|pcie|network, got '" + text + "'");
}

Dtype parse_dtype(const std::string& text, const std::string& what) {
  for (const Dtype dtype : {Dtype::bf16, Dtype::fp16, Dtype::fp8, Dtype::tf32, Dtype::fp32}) {
    if (text == to_string(dtype)) return dtype;
  }
  throw InputError(what + ": expected bf16|fp16|fp8|tf32|fp32, got '" + text + "'");
}

Calibration parse_calibration(const std::string& text, const std::string& source) {
  const json document = parse_text(text, source);
  const Path root{source, ""};
  if (!document.is_object()) throw InputError(source + ": expected a JSON object");
  check_keys(document, root,
             {"trident_calibration", "gpu", "nccl_version", "date", "source", "backend", "gemms",
              "collectives", "fits", "comparison"});
  const json& version = member(document, root, "trident_calibration");
  if (!version.is_number_integer() || version.get<long long>() != kCalibrationFormat) {
    root.child("trident_calibration").fail("expected 1");
  }
  Calibration calibration;
  calibration.gpu = optional_string(document, root, "gpu");
  calibration.nccl_version = optional_string(document, root, "nccl_version");
  calibration.date = optional_string(document, root, "date");
  calibration.source = optional_string(document, root, "source");
  calibration.backend = optional_string(document, root, "backend");
  calibration.gemms = parse_list<GemmSample>(document, root, "gemms", parse_gemm);
  calibration.collectives =
      parse_list<CollectiveSample>(document, root, "collectives", parse_sample);
  calibration.fits = parse_list<CollectiveFit>(document, root, "fits", parse_fit);
  if (document.contains("comparison")) {
    calibration.comparison = parse_list<ComparisonRow>(document, root, "comparison", parse_row);
  }
  return calibration;
}

std::string to_json(const Calibration& calibration) {
  json document = {{"trident_calibration", kCalibrationFormat},
                   {"gpu", calibration.gpu},
                   {"nccl_version", calibration.nccl_version},
                   {"date", calibration.date},
                   {"source", calibration.source},
                   {"backend", calibration.backend}};
  json gemms = json::array();
  for (const auto& g : calibration.gemms) {
    gemms.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", to_string(g.dtype)},
                     {"tflops", g.tflops}});
  }
  json samples = json::array();
  for (const auto& s : calibration.collectives) {
    samples.push_back({{"collective", to_string(s.collective)}, {"ranks", s.ranks},
                       {"tier", to_string(s.tier)}, {"bytes", s.bytes}, {"time_s", s.time_s},
                       {"busbw_gbps", s.busbw_gbps}});
  }
  json fits = json::array();
  for (const auto& f : calibration.fits) {
    fits.push_back({{"collective", to_string(f.collective)}, {"ranks", f.ranks},
                    {"tier", to_string(f.tier)}, {"latency_s", f.latency_s},
                    {"busbw_gbps", f.busbw_gbps}});
  }
  document["gemms"] = gemms;
  document["collectives"] = samples;
  document["fits"] = fits;
  if (!calibration.comparison.empty()) {
    json rows = json::array();
    for (const auto& r : calibration.comparison) {
      rows.push_back({{"component", r.component}, {"predicted_s", r.predicted_s},
                      {"measured_s", r.measured_s}, {"error_pct", r.error_pct}});
    }
    document["comparison"] = rows;
  }
  return document.dump(2) + "\n";
}

}  // namespace trident
