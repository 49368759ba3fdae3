// Weighted linear least squares: t = a + b S with weights 1/t^2; latency = a / steps,
// busbw = factor / b.
#include "validate/collective_fit.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace trident {
namespace {

struct Line {
  double intercept = 0.0;
  double slope = 0.0;
};

/// Weighted least squares of y = a + b x. A negative intercept (bandwidth-bound data, a little
/// noise) refits the line through the origin; nullopt when the sizes cannot give a slope: one
/// distinct size, or times that do not grow with size.
/// The weighted least-squares line through the origin, y = b x.
Line through_origin(const std::vector<double>& x, const std::vector<double>& y) {
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (y[i] * y[i]);
    sxx += w * x[i] * x[i];
    sxy += w * x[i] * y[i];
  }
  return {0.0, sxy / sxx};
}

std::optional<Line> weighted_fit(const std::vector<double>& x, const std::vector<double>& y) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (y[i] * y[i]);
    sw += w;
    sx += w * x[i];
    sy += w * y[i];
    sxx += w * x[i] * x[i];
    sxy += w * x[i] * y[i];
  }
  const double det = sw * sxx - sx * sx;
  if (!(det > 1e-12 * sw * sxx)) return std::nullopt;  // one distinct size
  const Line line{(sxx * sy - sx * sxy) / det, (sw * sxy - sx * sy) / det};
  if (!(line.slope > 0.0)) return std::nullopt;  // times flat or falling with size
  if (line.intercept >= 0.0) return line;
  return through_origin(x, y);
}

bool same_key(const CollectiveSample& a, const CollectiveSample& b) {
  return a.collective == b.collective && a.ranks == b.ranks && a.tier == b.tier;
}

}  // namespace

double busbw_gbps(Collective collective, int ranks, double bytes, double time_s) {
  return bytes / time_s / 1e9 * busbw_factor(collective, ranks);
}

double fitted_time_s(const CollectiveFit& fit, double bytes) {
  return alpha_beta_time_s(fit.collective, bytes, fit.ranks, fit.busbw_gbps, fit.latency_s);
}

CollectiveFit fit_collective(const std::vector<CollectiveSample>& samples, FitSizes sizes) {
  std::vector<double> x;
  std::vector<double> y;
  for (const auto& s : samples) {
    if (s.time_s > 0.0 && s.bytes > 0.0) {
      x.push_back(s.bytes);
      y.push_back(s.time_s);
    }
  }
  if (x.empty()) throw std::invalid_argument("fit_collective: no sample with time > 0");
  const CollectiveSample& first = samples.front();
  CollectiveFit fit;
  fit.collective = first.collective;
  fit.ranks = first.ranks;
  fit.tier = first.tier;
  std::optional<Line> line = weighted_fit(x, y);
  const double largest = *std::max_element(x.begin(), x.end());
  // The bandwidth is only measured where it shows: at the largest size the S/busbw term must
  // carry at least as much of the time as the latency (else a sweep of 8 B-1 KiB, all
  // latency, gave "61 MB/s"). Otherwise busbw stays 0: not determined, which
  // Calibration::collective_fit skips (the cost model keeps its own rate for this group);
  // a sweep around the plan's own sizes keeps the line through the origin instead.
  if (!line || line->slope * largest < line->intercept) {
    if (sizes == FitSizes::any) return fit;
    line = through_origin(x, y);
  }
  const double steps = latency_steps(first.collective, first.ranks);
  fit.latency_s = steps > 0.0 ? line->intercept / steps : 0.0;
  fit.busbw_gbps = busbw_factor(first.collective, first.ranks) / line->slope / 1e9;
  return fit;
}

std::vector<CollectiveFit> fit_all(const std::vector<CollectiveSample>& samples, FitSizes sizes) {
  std::vector<CollectiveFit> fits;
  std::vector<const CollectiveSample*> keys;
  for (const auto& s : samples) {
    if (s.ranks < 2) continue;
    const bool seen = std::any_of(keys.begin(), keys.end(),
                                  [&](const CollectiveSample* k) { return same_key(*k, s); });
    if (seen) continue;
    keys.push_back(&s);
    std::vector<CollectiveSample> group;
    std::copy_if(samples.begin(), samples.end(), std::back_inserter(group),
                 [&](const CollectiveSample& t) { return same_key(s, t); });
    fits.push_back(fit_collective(group, sizes));
  }
  return fits;
}

}  // namespace trident
