#pragma once
/// Measured data that replaces default efficiencies: GEMM throughput by shape and collective
/// bandwidth/latency by (collective, group size, tier, message size). Written by `validate`
/// and `calibrate` as JSON (costmodel/calibration_io.h), read by `plan --calibration`.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/collective.h"
#include "topology/gpu.h"
#include "topology/link_tier.h"

namespace trident {

struct GemmSample {
  long long m = 0;
  long long n = 0;
  long long k = 0;
  Dtype dtype = Dtype::bf16;
  double tflops = 0.0;  ///< measured TFLOP/s (2mnk / time)
};

struct CollectiveSample {
  Collective collective = Collective::all_reduce;
  int ranks = 0;
  Tier tier = Tier::nvlink;
  double bytes = 0.0;  ///< nccl-tests "size" (S)
  double time_s = 0.0;
  double busbw_gbps = 0.0;  ///< nccl-tests busbw, GB/s
};

/// Latency-bandwidth fit of one (collective, ranks, tier): t(S) = steps*latency + S*factor/busbw.
struct CollectiveFit {
  Collective collective = Collective::all_reduce;
  int ranks = 0;
  Tier tier = Tier::nvlink;
  double latency_s = 0.0;   ///< per ring step
  double busbw_gbps = 0.0;  ///< asymptotic bus bandwidth
};

/// One predicted-vs-measured line written by `validate` (optional in the file).
struct ComparisonRow {
  std::string component;  ///< "tp all-reduce", "gemm qkv", ...
  double predicted_s = 0.0;
  double measured_s = 0.0;
  double error_pct = 0.0;  ///< (predicted - measured) / measured x 100
};

/// One measured GEMM as the nearest-shape lookup reads it: its sizes' natural logs.
struct IndexedGemm {
  double log_m = 0.0;
  double log_n = 0.0;
  double log_k = 0.0;
  Dtype dtype = Dtype::bf16;
  double tflops = 0.0;
  std::size_t order = 0;  ///< its place in Calibration::gemms (the later wins a tie)
};

/// The measured GEMMs sorted by (dtype, log m), so that a lookup reads only the shapes within a
/// factor of 2 in m instead of the whole list (a validate file of 16,000 shapes planned in 114 s
/// when every lookup scanned every shape). Built by index_gemms from exactly Calibration::gemms.
struct GemmIndex {
  std::vector<IndexedGemm> points;
  std::size_t source_size = 0;  ///< gemms.size() when built: a changed list is not read
};

struct Calibration {
  std::string gpu;           ///< GPU name as measured
  std::string nccl_version;  ///< "" for the CPU/MPI backend
  std::string backend;       ///< "nccl", "mpi" (validate) or "nccl-tests" (calibrate)
  std::string date;          ///< ISO 8601
  std::string source;        ///< "validate", "calibrate --nccl-tests", ...
  std::vector<GemmSample> gemms;
  std::vector<CollectiveSample> collectives;
  std::vector<CollectiveFit> fits;
  std::vector<ComparisonRow> comparison;  ///< empty unless written by validate
  /// gemms sorted for the lookup (index_gemms); when it does not cover gemms, the lookup reads
  /// gemms in order instead, with the same answer.
  GemmIndex gemm_index;
  /// Device-to-device copy rate measured by validate on GPUs, (read + write bytes) / time in
  /// GB/s, beside which the cost model's memory_gbps x kHbmAchievableFraction is printed;
  /// 0 = not measured (optional key "hbm_gbps"; recorded, not yet read by the cost model).
  double hbm_gbps = 0.0;

  /// Measured TFLOP/s for the nearest measured shape of this dtype, when one lies within a
  /// factor of 2 in every dimension (nearest: the smallest largest |log ratio| of a dimension;
  /// of equals, the later in gemms); nullopt otherwise.
  [[nodiscard]] std::optional<double> gemm_tflops(long long m, long long n, long long k,
                                                  Dtype dtype) const;
  /// The fit for (collective, tier) with the nearest group size; nullopt when none.
  [[nodiscard]] std::optional<CollectiveFit> collective_fit(Collective collective, int ranks,
                                                            Tier tier) const;
  [[nodiscard]] bool empty() const { return gemms.empty() && fits.empty(); }
};

/// Builds calibration.gemm_index from calibration.gemms (the loaders call it once).
void index_gemms(Calibration& calibration);

}  // namespace trident
