#include "costmodel/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace trident {

namespace {

/// |log(a / b)|: how far apart two sizes are, symmetric in a and b.
double log_ratio(double a, double b) { return std::abs(std::log(a / b)); }

/// The largest per-dimension log-distance between a measured shape and a wanted one.
double shape_distance(const GemmSample& sample, long long m, long long n, long long k) {
  const double dm = log_ratio(static_cast<double>(sample.m), static_cast<double>(m));
  const double dn = log_ratio(static_cast<double>(sample.n), static_cast<double>(n));
  const double dk = log_ratio(static_cast<double>(sample.k), static_cast<double>(k));
  return std::max(dm, std::max(dn, dk));
}

}  // namespace

std::optional<double> Calibration::gemm_tflops(long long m, long long n, long long k,
                                               Dtype dtype) const {
  if (m <= 0 || n <= 0 || k <= 0) return std::nullopt;
  const double within = std::log(2.0) + 1e-9;  // a factor of 2 in every dimension
  std::optional<double> best;
  double best_distance = within;
  for (const auto& sample : gemms) {
    if (sample.dtype != dtype || sample.m <= 0 || sample.n <= 0 || sample.k <= 0) continue;
    const double distance = shape_distance(sample, m, n, k);
    if (distance <= best_distance) {
      best_distance = distance;
      best = sample.tflops;
    }
  }
  return best;
}

std::optional<CollectiveFit> Calibration::collective_fit(Collective collective, int ranks,
                                                         Tier tier) const {
  std::optional<CollectiveFit> best;
  int best_gap = 0;
  for (const auto& fit : fits) {
    if (fit.collective != collective || fit.tier != tier || fit.busbw_gbps <= 0.0) continue;
    const int gap = std::abs(fit.ranks - ranks);
    if (!best || gap < best_gap) {
      best = fit;
      best_gap = gap;
    }
  }
  return best;
}

}  // namespace trident
