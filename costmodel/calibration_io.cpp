// Calibration file <-> Calibration. Strict: unknown keys and wrong types are errors that name
// the file and the key path.
#include "costmodel/calibration_io.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <optional>
#include <tuple>

#include "topology/errors.h"
#include "topology/json_reader.h"

namespace trident {
namespace {

using json_reader::any_number;
using json_reader::array_member;
using json_reader::bounded_integer;
using json_reader::bounded_number;
using json_reader::check_keys;
using json_reader::json;
using json_reader::member;
using json_reader::non_negative_number;
using json_reader::optional_string;
using json_reader::Path;
using json_reader::positive_integer;
using json_reader::positive_number;
using json_reader::string_value;

/// "ranks": an integer from 2 (a collective of one rank moves nothing, so a bandwidth fitted
/// over it prices nothing) to 2^24 (a group of a cluster).
int rank_count(const json& object, const Path& path) {
  const long long ranks = bounded_integer(object, path, "ranks", 1LL << 24);
  if (ranks < 2)
    path.child("ranks").fail("expected at least 2 (a collective of one rank moves nothing)");
  return static_cast<int>(ranks);
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
  gemm.dtype = parse_dtype(string_value(entry, path, "dtype"), path.child("dtype"));
  gemm.tflops = bounded_number(entry, path, "tflops", kMinCalibrationRate, kMaxCalibrationRate);
  return gemm;
}

/// `value` (read from `name`), refused above `high`.
double at_most(const Path& path, const char* name, double value, double high) {
  if (value > high) path.child(name).fail(fmt::format("expected at most {:g}", high));
  return value;
}

CollectiveSample parse_sample(const json& entry, const Path& path) {
  check_keys(entry, path, {"collective", "ranks", "tier", "bytes", "time_s", "busbw_gbps"});
  CollectiveSample sample;
  sample.collective = collective_value(entry, path);
  sample.ranks = rank_count(entry, path);
  sample.tier = parse_tier(string_value(entry, path, "tier"), path.child("tier"));
  // A message of at most a petabyte taking at most 1,000 s: beyond, the samples are no GPU's,
  // and calibrate's fit over them could not be read back (it named its own text's line).
  // At least a byte: a fraction of one is no message, and 1e-300 bytes in 1e-300 s weighed
  // infinitely in the fit (weights 1/t^2), which came out NaN.
  sample.bytes = bounded_number(entry, path, "bytes", 1.0, kMaxCalibrationBytes);
  sample.time_s =
      at_most(path, "time_s", positive_number(entry, path, "time_s"), kMaxCalibrationSeconds);
  // A time so short its bus bandwidth (nccl-tests' S / t x factor) is past any link, as the
  // nccl-tests reader refuses such a row: 1e-300 s was read, and calibrate's fit over it said
  // "-nan GB/s and 0 us" with no file or key.
  const double factor = busbw_factor(sample.collective, sample.ranks);
  const double shortest_s = sample.bytes * factor / (kMaxCalibrationRate * 1e9);
  if (sample.time_s < shortest_s) {
    path.child("time_s").fail(
        fmt::format("{:g} s for {:g} bytes is a bus bandwidth above {:g} GB/s, past any link; "
                    "expected at least {:g} s",
                    sample.time_s, sample.bytes, kMaxCalibrationRate, shortest_s));
  }
  sample.busbw_gbps = bounded_number(entry, path, "busbw_gbps", 0.0, kMaxCalibrationRate);
  return sample;
}

}  // namespace

bool fit_in_bounds(const CollectiveFit& fit) {
  return fit.latency_s >= 0.0 && fit.latency_s <= kMaxCalibrationSeconds &&
         fit.busbw_gbps >= kMinCalibrationRate && fit.busbw_gbps <= kMaxCalibrationRate;
}

namespace {

CollectiveFit parse_fit(const json& entry, const Path& path) {
  check_keys(entry, path, {"collective", "ranks", "tier", "latency_s", "busbw_gbps"});
  CollectiveFit fit;
  fit.collective = collective_value(entry, path);
  fit.ranks = rank_count(entry, path);
  fit.tier = parse_tier(string_value(entry, path, "tier"), path.child("tier"));
  fit.latency_s = bounded_number(entry, path, "latency_s", 0.0, kMaxCalibrationSeconds);
  fit.busbw_gbps =
      bounded_number(entry, path, "busbw_gbps", kMinCalibrationRate, kMaxCalibrationRate);
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

/// One fit per collective, rank count and tier: a second would be ignored (the first wins in
/// Calibration's look-up), so it is refused.
void reject_repeated_fits(const std::vector<CollectiveFit>& fits, const Path& path) {
  std::map<std::tuple<Collective, int, Tier>, std::size_t> first;
  for (std::size_t i = 0; i < fits.size(); ++i) {
    const auto key = std::tuple{fits[i].collective, fits[i].ranks, fits[i].tier};
    const auto [at, added] = first.emplace(key, i);
    if (!added) {
      path.index(i).fail("repeats fits[" + std::to_string(at->second) +
                         "] (the same collective, ranks and tier); expected one fit each");
    }
  }
}

template <typename T, typename Fn>
std::vector<T> parse_list(const json& document, const Path& root, const char* name, Fn parse) {
  std::vector<T> out;
  const json& list = array_member(document, root, name);
  const Path path = root.child(name);
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(parse(list[i], path.index(i)));
  return out;
}

}  // namespace

namespace {

std::optional<Tier> find_tier(const std::string& text) {
  for (const Tier tier : {Tier::nvlink, Tier::pcie, Tier::network}) {
    if (text == to_string(tier)) return tier;
  }
  return std::nullopt;
}

std::optional<Dtype> find_dtype(const std::string& text) {
  for (const Dtype dtype : kDtypes) {
    if (text == to_string(dtype)) return dtype;
  }
  return std::nullopt;
}

}  // namespace

Tier parse_tier(const std::string& text, const std::string& what) {
  if (const auto tier = find_tier(text)) return *tier;
  throw InputError(what + ": expected nvlink|pcie|network, got '" + text + "'");
}

Dtype parse_dtype(const std::string& text, const std::string& what) {
  if (const auto dtype = find_dtype(text)) return *dtype;
  throw InputError(what + ": expected " + fmt::format("{}", fmt::join(dtype_names(), "|")) +
                   ", got '" + text + "'");
}

Tier parse_tier(const std::string& text, const json_reader::Path& at) {
  if (const auto tier = find_tier(text)) return *tier;
  return parse_tier(text, at.where());
}

Dtype parse_dtype(const std::string& text, const json_reader::Path& at) {
  if (const auto dtype = find_dtype(text)) return *dtype;
  return parse_dtype(text, at.where());
}

Calibration parse_calibration(const std::string& text, const std::string& source) {
  const json document = json_reader::parse(text, source);
  const Path root = Path::root(source, text);
  if (!document.is_object()) throw InputError(source + ": expected a JSON object");
  check_keys(document, root,
             {"trident_calibration", "gpu", "nccl_version", "date", "source", "backend", "gemms",
              "collectives", "fits", "comparison", "hbm_gbps"});
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
  index_gemms(calibration);
  calibration.collectives =
      parse_list<CollectiveSample>(document, root, "collectives", parse_sample);
  calibration.fits = parse_list<CollectiveFit>(document, root, "fits", parse_fit);
  reject_repeated_fits(calibration.fits, root.child("fits"));
  if (document.contains("comparison")) {
    calibration.comparison = parse_list<ComparisonRow>(document, root, "comparison", parse_row);
  }
  if (document.contains("hbm_gbps")) {
    calibration.hbm_gbps =
        bounded_number(document, root, "hbm_gbps", kMinCalibrationRate, kMaxCalibrationRate);
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
    gemms.push_back(
        {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", to_string(g.dtype)}, {"tflops", g.tflops}});
  }
  json samples = json::array();
  for (const auto& s : calibration.collectives) {
    samples.push_back({{"collective", to_string(s.collective)},
                       {"ranks", s.ranks},
                       {"tier", to_string(s.tier)},
                       {"bytes", s.bytes},
                       {"time_s", s.time_s},
                       {"busbw_gbps", s.busbw_gbps}});
  }
  json fits = json::array();
  for (const auto& f : calibration.fits) {
    if (f.busbw_gbps <= 0.0) continue;  // not determined (collective_fit.h): nothing to use
    fits.push_back({{"collective", to_string(f.collective)},
                    {"ranks", f.ranks},
                    {"tier", to_string(f.tier)},
                    {"latency_s", f.latency_s},
                    {"busbw_gbps", f.busbw_gbps}});
  }
  document["gemms"] = gemms;
  document["collectives"] = samples;
  document["fits"] = fits;
  if (!calibration.comparison.empty()) {
    json rows = json::array();
    for (const auto& r : calibration.comparison) {
      rows.push_back({{"component", r.component},
                      {"predicted_s", r.predicted_s},
                      {"measured_s", r.measured_s},
                      {"error_pct", r.error_pct}});
    }
    document["comparison"] = rows;
  }
  if (calibration.hbm_gbps > 0.0) document["hbm_gbps"] = calibration.hbm_gbps;
  return document.dump(2) + "\n";
}

}  // namespace trident
