// A calibration file's rates against the cluster and GPU they are used on
// (cli/calibration_checks.h).
#include "cli/calibration_checks.h"

#include <fmt/format.h>

#include "configs/presets.h"
#include "topology/errors.h"
#include "topology/json_reader.h"
#include "topology/server_import.h"
#include "topology/text_check.h"

namespace trident::cli {

namespace {

/// A fit's bus bandwidth may exceed its link's (NCCL's NVLS in-switch and SHARP in-network
/// reductions lift an all-reduce's busbw above the per-GPU link rate, by less than 2x): a fit
/// above this multiple of the cluster's link was measured on another link; one below its
/// 1/1000 on no working link. Bounds of a check, not of the cost model.
constexpr double kFitAboveLinkRatio = 3.0;
constexpr double kFitBelowLinkRatio = 1e-3;
/// A measured GEMM under this share of the peak is not a rate in TFLOP/s.
constexpr double kGemmBelowPeakRatio = 1e-5;

/// validate's CPU backend (backend "mpi", gpu "cpu" or "cpu: MODEL") measures no GPU and no
/// GPU link: its rates calibrate a CPU cluster (or a test), not this one's links.
bool cpu_backend(const Calibration& calibration) {
  return calibration.backend == "mpi" || calibration.gpu == "cpu" ||
         calibration.gpu.starts_with("cpu: ");
}

/// The cluster's per-GPU, one-direction rate of `tier` (GB/s); 0 when it has no such tier.
double tier_gbps(const Cluster& cluster, Tier tier) {
  switch (tier) {
    case Tier::nvlink:
      return cluster.nvlink.kind == NvlinkKind::none ? 0.0 : cluster.nvlink.switch_gbps_per_gpu();
    case Tier::pcie:
      return cluster.pcie.gbps;
    case Tier::network:
      return cluster.network.nics_per_server > 0 ? cluster.nic_gbps_per_gpu(0) : 0.0;
  }
  return 0.0;
}

/// The most a fit over `tier` can read: the tier's rate, and across the network every NIC of
/// an NVLink domain (a ring's crossing traffic spreads over them: nccl-tests' busbw of a 2-node
/// H100 all-reduce reads 370-450 GB/s against a GPU's 50 GB/s share; collective.cpp
/// flat_ring_time_s prices the same narrowest cut).
double tier_ceiling_gbps(const Cluster& cluster, Tier tier) {
  const double rate = tier_gbps(cluster, tier);
  return tier == Tier::network ? rate * std::max(1, cluster.nvlink.domain_gpus) : rate;
}

}  // namespace

void check_calibration_links(const Calibration& calibration, const Cluster& cluster,
                             const std::string& source, const std::string& text) {
  if (cpu_backend(calibration)) return;
  const json_reader::Path root = json_reader::Path::root(source, text);
  for (std::size_t i = 0; i < calibration.fits.size(); ++i) {
    const CollectiveFit& fit = calibration.fits[i];
    const double link = tier_gbps(cluster, fit.tier);
    if (link <= 0.0) continue;  // a tier this cluster has not: the fit is never read
    const double ceiling = tier_ceiling_gbps(cluster, fit.tier);
    const bool above = fit.busbw_gbps > kFitAboveLinkRatio * ceiling;
    if (above || fit.busbw_gbps < kFitBelowLinkRatio * link) {
      throw InputError(fmt::format(
          "{}: {:g} GB/s over {} is {} the cluster {}'s {:g} GB/s{} (a fit of another link or "
          "another cluster?); calibrate on this cluster's {} links, or describe them in a "
          "--cluster FILE",
          root.child("fits").index(i).child("busbw_gbps").where(), fit.busbw_gbps,
          to_string(fit.tier),
          above ? fmt::format("more than {:g}x", kFitAboveLinkRatio)
                : std::string("under a thousandth of"),
          cluster.name, above ? ceiling : link,
          above && fit.tier == Tier::network ? " of an NVLink domain's NICs" : " a GPU there",
          to_string(fit.tier)));
    }
  }
  for (std::size_t i = 0; i < calibration.gemms.size(); ++i) {
    const GemmSample& g = calibration.gemms[i];
    const double peak = cluster.gpu.peak_tflops(g.dtype);
    if (peak > 0.0 && g.tflops < kGemmBelowPeakRatio * peak) {
      throw InputError(fmt::format(
          "{}: {:g} TFLOP/s is under a hundred-thousandth of the {}'s {} peak of {:g} (a "
          "measurement in other units?)",
          root.child("gemms").index(i).child("tflops").where(), g.tflops, cluster.gpu.name,
          to_string(g.dtype), peak));
    }
  }
}

void check_calibration_on_gpu(const Calibration& calibration, const Gpu& gpu,
                              const std::string& source, const std::string& text) {
  const json_reader::Path root = json_reader::Path::root(source, text);
  // Measured on a known GPU other than the cluster's known one: its rates are that GPU's (an
  // A100 file moved an H100 plan by 11%). A GPU file of the user's own has no name to compare.
  const std::string measured = gpu_preset_for_device(calibration.gpu);
  const bool built_in = preset_text(PresetKind::gpu, gpu.name).has_value();
  if (measured.empty() && built_in && !cpu_backend(calibration)) {
    // A device name that is none of the built-in GPUs (or none at all) cannot be this one.
    throw InputError(fmt::format(
        "{}: {}, and the cluster's GPU is the built-in {}: its fits and GEMM rates would be "
        "applied to a GPU they were not measured on; calibrate on {} (validate writes its "
        "device name), or describe the measured GPU in a --gpu FILE",
        root.child("gpu").where(),
        calibration.gpu.empty() ? std::string("no GPU named (the device the file was measured on)")
                                : fmt::format("measured on '{}', not a GPU trident knows as {}",
                                              one_line(calibration.gpu), gpu.name),
        gpu.name, gpu.name));
  }
  if (!measured.empty() && measured != gpu.name && built_in) {
    throw InputError(fmt::format(
        "{}: measured on '{}' ({}), and the cluster's GPU is {}: its fits and GEMM rates "
        "are another GPU's; calibrate on {}, or plan with --gpu {}",
        root.child("gpu").where(), one_line(calibration.gpu), measured, gpu.name, gpu.name,
        measured));
  }
  for (std::size_t i = 0; i < calibration.gemms.size(); ++i) {
    const GemmSample& g = calibration.gemms[i];
    const double peak = gpu.peak_tflops(g.dtype);
    if (peak > 0.0 && g.tflops > peak) {
      throw InputError(
          fmt::format("{}: {:g} TFLOP/s is above the {}'s {} peak of {:g}; a measurement "
                      "cannot beat the peak (a calibration of another GPU?)",
                      root.child("gemms").index(i).child("tflops").where(), g.tflops, gpu.name,
                      to_string(g.dtype), peak));
    }
  }
}

}  // namespace trident::cli
