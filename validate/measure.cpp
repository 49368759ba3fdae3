// Orchestration shared by both backends: sweeps, max over ranks, fits, comparison.
#include "validate/measure.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>
#include <string>

#include "costmodel/compute.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "validate/collective_fit.h"
#include "validate/fp8_host.h"
#include "validate/groups.h"
#include "validate/mpi_util.h"
#include "validate/patterns.h"

namespace trident {
namespace {

double round_to(double bytes, double quantum) {
  return std::max(quantum, std::floor(bytes / quantum) * quantum);
}

double error_pct(double predicted_s, double measured_s) {
  return measured_s > 0.0 ? (predicted_s - measured_s) / measured_s * 100.0 : 0.0;
}

/// Measured time of one collective at the plan's size: the sweep point when the plan's size
/// was run, otherwise the fit's prediction.
double measured_at(const std::vector<SweepPoint>& sweep, const CollectiveFit& fit,
                   Collective collective, int ranks, double bytes, bool& extrapolated) {
  for (const auto& p : sweep) {
    const auto& s = p.sample;
    if (s.collective == collective && s.ranks == ranks && s.bytes == bytes) return s.time_s;
  }
  extrapolated = true;
  return fitted_time_s(fit, bytes);  // FitSizes::plans: always a bandwidth
}

const CollectiveFit& fit_for(const std::vector<CollectiveFit>& fits, Collective collective,
                             int ranks, Tier tier) {
  for (const auto& f : fits) {
    if (f.collective == collective && f.ranks == ranks && f.tier == tier) return f;
  }
  throw std::logic_error("measure: no fit for a measured collective");
}

void measure_comm(Backend& backend, const PlanComm& comm, const GroupMembership& group,
                  const MeasureOptions& options, Measurement& out) {
  for (const Collective collective : comm.collectives) {
    for (const double bytes :
         sweep_sizes(comm.bytes_of(collective), comm.ranks, options.max_bytes)) {
      const auto count = static_cast<std::size_t>(bytes / sizeof(float));
      const RunResult run = backend.run_collective(group, collective, count, options.run);
      SweepPoint point;
      point.dimension = comm.name;
      point.sample.collective = collective;
      point.sample.ranks = comm.ranks;
      point.sample.tier = comm.tier;
      point.sample.bytes = bytes;
      point.sample.time_s = world_max(run.time_s, options.run.timeout_s);
      point.sample.busbw_gbps = busbw_gbps(collective, comm.ranks, bytes, point.sample.time_s);
      point.wrong = world_sum(run.wrong, options.run.timeout_s);
      out.sweep.push_back(point);
    }
  }
}

void compare_comm(const PlanComm& comm, const MeasureOptions& options, Measurement& out) {
  double measured_s = 0.0;
  bool extrapolated = false;
  for (const Collective collective : comm.collectives) {
    const double plan_bytes =
        round_to(comm.bytes_of(collective), message_quantum_bytes(comm.ranks));
    const auto& fit = fit_for(out.calibration.fits, collective, comm.ranks, comm.tier);
    measured_s += measured_at(out.sweep, fit, collective, comm.ranks, plan_bytes, extrapolated);
  }
  (void)options;
  if (extrapolated) out.extrapolated.push_back(comm.label());
  out.calibration.comparison.push_back({comm.label(), comm.time_per_call_s, measured_s,
                                        error_pct(comm.time_per_call_s, measured_s)});
}

long long capped(long long dim, long long cap) { return cap > 0 ? std::min(dim, cap) : dim; }

/// One GEMM of the plan at its measured `shape`; operands this rank cannot allocate (a
/// hand-edited plan's 2^30-row GEMM) are said with the GEMM's name, shape and bytes, not as
/// a bare std::bad_alloc.
RunResult run_gemm_named(Backend& backend, const PlanGemm& gemm, const GemmSample& shape,
                         const MeasureOptions& options) {
  try {
    return backend.run_gemm(shape.m, shape.n, shape.k, gemm.dtype, options.run);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  const double elements = static_cast<double>(shape.m) * static_cast<double>(shape.k) +
                          static_cast<double>(shape.k) * static_cast<double>(shape.n) +
                          static_cast<double>(shape.m) * static_cast<double>(shape.n);
  const double bytes = elements * dtype_bytes(shape.dtype);
  throw std::runtime_error(
      "gemm " + gemm.name + " (" + std::to_string(shape.m) + " x " + std::to_string(shape.n) +
      " x " + std::to_string(shape.k) + "): its operands, " +
      std::to_string(static_cast<long long>(std::ceil(bytes / (1024.0 * 1024.0 * 1024.0)))) +
      " GiB in " + to_string(shape.dtype) +
      ", could not be allocated on this rank; cap its dimensions with --max-gemm-dim N");
}

void measure_gemms(Backend& backend, const PlanSpec& plan, const MeasureOptions& options,
                   Measurement& out) {
  for (const auto& gemm : plan.gemms) {
    GemmPoint point;
    point.planned = gemm;
    point.measured = run_shape(gemm, backend.gemm_dtype(gemm.dtype), options.max_gemm_dim);
    const RunResult run = run_gemm_named(backend, gemm, point.measured, options);
    const double time_s = world_max(run.time_s, options.run.timeout_s);
    const PlanGemm shape{gemm.name, point.measured.m, point.measured.n, point.measured.k, 0, 0};
    point.measured.tflops = shape.flops() / time_s / 1e12;
    point.wrong = world_sum(run.wrong, options.run.timeout_s);
    out.gemms.push_back(point);
    const double predicted_s =
        gemm.predicted_tflops > 0.0 ? gemm.flops() / (gemm.predicted_tflops * 1e12) : 0.0;
    const double measured_s = gemm.flops() / (point.measured.tflops * 1e12);
    out.calibration.comparison.push_back(
        {"gemm " + gemm.name, predicted_s, measured_s, error_pct(predicted_s, measured_s)});
    if (point.measured.m != gemm.m || point.measured.n != gemm.n || point.measured.k != gemm.k) {
      out.extrapolated.push_back("gemm " + gemm.name);
    }
  }
}

void measure_memory_copy(Backend& backend, const PlanSpec& plan, const MeasureOptions& options,
                         Measurement& out) {
  if (options.hbm_copy_bytes <= 0.0) return;
  const auto bytes = static_cast<std::size_t>(options.hbm_copy_bytes);
  const RunResult run = backend.run_memory_copy(bytes, options.run);
  MemoryCopyPoint point;
  point.bytes = static_cast<double>(bytes - bytes % sizeof(float));  // whole floats copied
  point.time_s = world_max(run.time_s, options.run.timeout_s);
  point.wrong = world_sum(run.wrong, options.run.timeout_s);
  if (point.time_s <= 0.0) return;  // the backend does not measure it
  point.gbps = 2.0 * point.bytes / point.time_s / 1e9;
  out.memory_copy = point;
  out.calibration.hbm_gbps = point.gbps;
  if (plan.gpu.empty()) return;
  try {
    const double predicted_s = predicted_copy_s(gpu_preset(plan.gpu), point.bytes);
    if (predicted_s > 0.0) {
      out.calibration.comparison.push_back(
          {"hbm copy", predicted_s, point.time_s, error_pct(predicted_s, point.time_s)});
    }
  } catch (const InputError&) {
    // a plan from a custom GPU: no preset to compare with; the rate is still recorded
  }
}

}  // namespace

long long Measurement::wrong() const {
  long long total = 0;
  for (const auto& p : sweep) total += p.wrong;
  for (const auto& g : gemms) total += g.wrong;
  if (memory_copy) total += memory_copy->wrong;
  return total;
}

GemmSample run_shape(const PlanGemm& gemm, Dtype dtype, long long max_dim) {
  GemmSample shape;
  shape.m = capped(gemm.m, max_dim);
  shape.n = capped(gemm.n, max_dim);
  shape.k = capped(gemm.k, max_dim);
  shape.dtype = dtype;
  if (dtype == Dtype::fp8) {
    shape.m = fp8_gemm_dim(shape.m);
    shape.n = fp8_gemm_dim(shape.n);
    shape.k = fp8_gemm_dim(shape.k);
  }
  return shape;
}

double predicted_copy_s(const Gpu& gpu, double bytes) { return hbm_time_s(gpu, 2.0 * bytes); }

std::vector<double> sweep_sizes(double bytes, int ranks, double max_bytes) {
  const double quantum = message_quantum_bytes(ranks);
  std::vector<double> sizes;
  for (const double factor : {0.125, 0.25, 0.5, 1.0, 2.0}) {
    double size = round_to(bytes * factor, quantum);
    if (max_bytes > 0.0) size = std::min(size, round_to(max_bytes, quantum));
    sizes.push_back(size);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

Measurement measure_plan(Backend& backend, const PlanSpec& plan, int world_rank,
                         const MeasureOptions& options) {
  const RankGroups groups = rank_groups(plan, world_rank);
  for (const GroupKind kind :
       {GroupKind::tp, GroupKind::pp, GroupKind::dp, GroupKind::cp, GroupKind::ep}) {
    backend.create_group(groups.get(kind));
  }
  Measurement out;
  const std::optional<PlanComm>* comms[] = {&plan.tp, &plan.pp, &plan.dp, &plan.cp, &plan.ep};
  const GroupKind kinds[] = {GroupKind::tp, GroupKind::pp, GroupKind::dp, GroupKind::cp,
                             GroupKind::ep};
  for (int i = 0; i < 5; ++i) {
    if (*comms[i]) measure_comm(backend, **comms[i], groups.get(kinds[i]), options, out);
  }
  for (const auto& point : out.sweep) out.calibration.collectives.push_back(point.sample);
  out.calibration.fits = fit_all(out.calibration.collectives, FitSizes::plans);
  for (const auto* comm : comms) {
    if (*comm) compare_comm(**comm, options, out);
  }
  measure_gemms(backend, plan, options, out);
  for (const auto& g : out.gemms) out.calibration.gemms.push_back(g.measured);
  measure_memory_copy(backend, plan, options, out);
  out.calibration.gpu = backend.device_name();
  out.calibration.nccl_version = backend.nccl_version();
  out.calibration.backend = backend.name();
  out.calibration.source = "validate";
  return out;
}

}  // namespace trident
