#pragma once
/// A calibration file checked against the cluster and GPU a plan uses it on: rates no link or
/// GPU of them can reach were measured elsewhere (or are typos), and are refused.
#include <string>

#include "costmodel/calibration.h"
#include "topology/cluster.h"

namespace trident::cli {

/// Throws InputError "FILE:LINE: gemms[0].tflops: 1e+06 TFLOP/s is above the h100-sxm-80g's
/// bf16 peak of 989; a measurement cannot beat the peak" for a GEMM rate no GPU of the plan can
/// reach (it gave MFU above 100%). `text` is the file's JSON, `calibration` parsed from it.
/// A calibration's collective fits against the cluster's links (none more than 3x or under a
/// thousandth of the tier's per-GPU rate) and its GEMM rates against the floor of a hundred-
/// thousandth of the GPU's peak: InputError naming the file, the entry and the key.
void check_calibration_links(const Calibration& calibration, const Cluster& cluster,
                             const std::string& source, const std::string& text);

void check_calibration_on_gpu(const Calibration& calibration, const Gpu& gpu,
                              const std::string& source, const std::string& text);

}  // namespace trident::cli
