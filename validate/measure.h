#pragma once
/// The measurement engine of `trident validate`: for each of the plan's dimensions, a short
/// sweep of sizes around the plan's message size on this rank's group; each of the plan's
/// GEMMs; times reduced across ranks (max) and wrong elements summed; then fits, the
/// calibration and the predicted-vs-measured comparison.
#include <optional>
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "validate/backend.h"
#include "validate/plan_reader.h"

namespace trident {

struct MeasureOptions {
  RunOptions run;
  double max_bytes = 0.0;       ///< sweep cap per message (S); larger plan sizes use the fit
  long long max_gemm_dim = 0;   ///< cap on each GEMM dimension; 0 = none
  double hbm_copy_bytes = 0.0;  ///< device-to-device copy measured (GPU backend); 0 = none
};

/// One point of a sweep, as every rank agreed on it.
struct SweepPoint {
  std::string dimension;  ///< "tp" | "pp" | "dp"
  CollectiveSample sample;
  long long wrong = 0;
};

struct GemmPoint {
  PlanGemm planned;
  GemmSample measured;  ///< the shape actually run (capped) and its TFLOP/s
  long long wrong = 0;
};

/// The device-to-device copy (time_s: max over ranks; gbps = 2 x bytes / time_s).
struct MemoryCopyPoint {
  double bytes = 0.0;
  double time_s = 0.0;
  double gbps = 0.0;
  long long wrong = 0;
};

struct Measurement {
  std::vector<SweepPoint> sweep;
  std::vector<GemmPoint> gemms;
  std::optional<MemoryCopyPoint> memory_copy;  ///< absent: not measured (CPU backend)
  Calibration calibration;                ///< gpu, nccl_version, backend, samples, fits, comparison
  std::vector<std::string> extrapolated;  ///< components measured at a capped size
  [[nodiscard]] long long wrong() const;
};

/// Sizes (bytes) of the sweep around `bytes` on `ranks` ranks: x1/8, x1/4, x1/2, x1, x2,
/// each rounded down to a multiple of 4 x ranks (floats per rank), at least that, at most
/// `max_bytes` (0 = no cap); sorted, without repeats.
[[nodiscard]] std::vector<double> sweep_sizes(double bytes, int ranks, double max_bytes);

/// The shape a GEMM of `dtype` runs at: each dimension capped at `max_dim` (0 = no cap),
/// then for fp8 rounded up to a multiple of 16 (fp8_gemm_dim: cuBLASLt's FP8 alignment).
[[nodiscard]] GemmSample run_shape(const PlanGemm& gemm, Dtype dtype, long long max_dim);

/// Predicted time of the device-to-device copy of `bytes` on `gpu`: 2 x bytes at the cost
/// model's memory-bound rate, memory_gbps x kHbmAchievableFraction (costmodel/compute.h).
[[nodiscard]] double predicted_copy_s(const Gpu& gpu, double bytes);

/// Runs everything on every rank (collective over MPI_COMM_WORLD; all ranks call it alike).
[[nodiscard]] Measurement measure_plan(Backend& backend, const PlanSpec& plan, int world_rank,
                                       const MeasureOptions& options);

}  // namespace trident
