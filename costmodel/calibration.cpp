#include "costmodel/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace trident {

namespace {

/// A factor of 2 in every dimension, as a natural log (with room for rounding).
constexpr double kWithinLog = 0.69314718055994531 + 1e-9;

IndexedGemm point_of(const GemmSample& sample, std::size_t order) {
  return {std::log(static_cast<double>(sample.m)),
          std::log(static_cast<double>(sample.n)),
          std::log(static_cast<double>(sample.k)),
          sample.dtype,
          sample.tflops,
          order};
}

bool usable(const GemmSample& sample) { return sample.m > 0 && sample.n > 0 && sample.k > 0; }

/// The largest per-dimension |log ratio| between a measured shape and a wanted one.
double shape_distance(const IndexedGemm& point, const IndexedGemm& wanted) {
  return std::max({std::abs(point.log_m - wanted.log_m), std::abs(point.log_n - wanted.log_n),
                   std::abs(point.log_k - wanted.log_k)});
}

/// The nearest measured point so far (by value: the lookup offers points built on the fly).
struct Nearest {
  bool found = false;
  double distance = 0.0;
  std::size_t order = 0;
  double tflops = 0.0;

  /// Keeps `candidate` when it lies within the factor and is nearer; of equals, the later.
  void offer(const IndexedGemm& candidate, const IndexedGemm& wanted) {
    const double d = shape_distance(candidate, wanted);
    if (d > kWithinLog) return;
    if (!found || d < distance || (d == distance && candidate.order > order)) {
      found = true;
      distance = d;
      order = candidate.order;
      tflops = candidate.tflops;
    }
  }
  [[nodiscard]] std::optional<double> result() const {
    return found ? std::optional<double>(tflops) : std::nullopt;
  }
};

bool before(const IndexedGemm& a, const IndexedGemm& b) {
  if (a.dtype != b.dtype) return static_cast<int>(a.dtype) < static_cast<int>(b.dtype);
  return a.log_m < b.log_m;
}

}  // namespace

void index_gemms(Calibration& calibration) {
  GemmIndex index;
  index.source_size = calibration.gemms.size();
  for (std::size_t i = 0; i < calibration.gemms.size(); ++i) {
    if (usable(calibration.gemms[i])) index.points.push_back(point_of(calibration.gemms[i], i));
  }
  std::sort(index.points.begin(), index.points.end(), before);
  calibration.gemm_index = std::move(index);
}

std::optional<double> Calibration::gemm_tflops(long long m, long long n, long long k,
                                               Dtype dtype) const {
  if (m <= 0 || n <= 0 || k <= 0) return std::nullopt;
  const IndexedGemm wanted = point_of({m, n, k, dtype, 0.0}, 0);
  Nearest nearest;
  if (gemm_index.source_size == gemms.size() && !gemms.empty()) {
    // Only the points of this dtype whose m lies within the factor: a window of the sort.
    IndexedGemm low = wanted;
    low.log_m -= kWithinLog;
    const auto& points = gemm_index.points;
    for (auto it = std::lower_bound(points.begin(), points.end(), low, before);
         it != points.end() && it->dtype == dtype && it->log_m <= wanted.log_m + kWithinLog; ++it) {
      nearest.offer(*it, wanted);
    }
    return nearest.result();
  }
  // Not indexed (a calibration built in code): every shape of the dtype, in order.
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    if (gemms[i].dtype == dtype && usable(gemms[i])) nearest.offer(point_of(gemms[i], i), wanted);
  }
  return nearest.result();
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
