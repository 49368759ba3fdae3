#pragma once
/// The calibration file (JSON, format in docs/architecture.md and docs/validate.md): written by
/// `validate` and `calibrate`, read by `plan --calibration`.
#include <string>

#include "costmodel/calibration.h"

namespace trident::json_reader {
struct Path;  // topology/json_reader.h
}  // namespace trident::json_reader

namespace trident {

/// Format version written in "trident_calibration".
inline constexpr int kCalibrationFormat = 1;

/// Bounds on measured values (TFLOP/s, GB/s, seconds, bytes) a calibration file may hold: far
/// outside any real hardware, inside what keeps a predicted step time finite (a busbw of
/// 1e-308 GB/s made the step NaN).
inline constexpr double kMinCalibrationRate = 1e-6;
inline constexpr double kMaxCalibrationRate = 1e6;
inline constexpr double kMaxCalibrationSeconds = 1e3;
inline constexpr double kMaxCalibrationBytes = 1e15;

/// Whether a determined fit (busbw above 0) is one parse_calibration reads back.
[[nodiscard]] bool fit_in_bounds(const CollectiveFit& fit);

/// Parses a calibration file. Throws InputError naming `source` and the key
/// ("calib.json: fits[2].busbw_gbps: expected a positive number").
[[nodiscard]] Calibration parse_calibration(const std::string& text, const std::string& source);

/// Writes the calibration as pretty JSON; "comparison" only when it has rows; a fit whose
/// bandwidth was not determined (busbw_gbps 0, validate/collective_fit.h) is left out.
[[nodiscard]] std::string to_json(const Calibration& calibration);

/// "nvlink" | "pcie" | "network" -> Tier; throws InputError "<what>: expected
/// nvlink|pcie|network, got 'x'".
[[nodiscard]] Tier parse_tier(const std::string& text, const std::string& what);
/// "bf16" | "fp16" | "fp8" | "tf32" | "fp32" -> Dtype; throws InputError like parse_tier.
[[nodiscard]] Dtype parse_dtype(const std::string& text, const std::string& what);
/// The same for a JSON value at `at`: the error names its file, line and key path, looked up
/// only when the text is not a name.
[[nodiscard]] Tier parse_tier(const std::string& text, const json_reader::Path& at);
[[nodiscard]] Dtype parse_dtype(const std::string& text, const json_reader::Path& at);

}  // namespace trident
