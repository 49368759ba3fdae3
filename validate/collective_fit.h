#pragma once
/// Latency-bandwidth fit of measured collective times, shared by `validate` and `calibrate`.
#include <vector>

#include "costmodel/calibration.h"

namespace trident {

/// Least-squares fit of t(S) = latency_steps(c, n) * latency_s + S * busbw_factor(c, n) /
/// (busbw_gbps * 1e9) to the samples of one (collective, ranks, tier), weighting each sample
/// by 1/t^2 so small and large messages count alike (relative error). A negative intercept is
/// clamped to zero latency (the slope refitted through the origin). When the samples do not
/// determine a bandwidth (one distinct size, times that do not grow with size, or a largest
/// size still latency-bound: slope x S_max below the intercept), what follows `sizes`:
/// - FitSizes::any (calibrate: logs of any sizes, to price any message): busbw_gbps 0 and
///   latency 0, not determined (Calibration::collective_fit skips it);
/// - FitSizes::plans (validate: a sweep around the plan's own message sizes): the line through
///   the origin, which gives the measured times at those sizes (a CPU backend's loopback
///   times are latency and noise at every size; they still price the plan's messages).
/// Needs at least one sample with time > 0; throws std::invalid_argument otherwise.
enum class FitSizes { any, plans };
[[nodiscard]] CollectiveFit fit_collective(const std::vector<CollectiveSample>& samples,
                                           FitSizes sizes = FitSizes::any);

/// One fit per (collective, ranks, tier) present in `samples`, in order of first appearance;
/// groups of one rank (no traffic) are skipped.
[[nodiscard]] std::vector<CollectiveFit> fit_all(const std::vector<CollectiveSample>& samples,
                                                 FitSizes sizes = FitSizes::any);

/// nccl-tests' bus bandwidth of one run: S / t / 1e9 x busbw_factor (doc/PERFORMANCE.md).
[[nodiscard]] double busbw_gbps(Collective collective, int ranks, double bytes, double time_s);

/// Time the fit predicts for a message of `bytes`.
[[nodiscard]] double fitted_time_s(const CollectiveFit& fit, double bytes);

}  // namespace trident
