#include "costmodel/kernels.h"

#include <fmt/format.h>

#include <cmath>

#include "topology/errors.h"

namespace trident {

KernelProfile kernel_profile(const Gpu& gpu) {
  return {gpu.sm_count,
          gpu.sustained_clock_ratio,
          gpu.attention_forward_efficiency,
          gpu.attention_backward_efficiency,
          gpu.flash2_forward_efficiency,
          gpu.flash2_backward_efficiency};
}

double wave_efficiency(double tiles, int sm_count) {
  if (sm_count <= 0 || tiles <= 0.0) return 1.0;
  const double sms = sm_count;
  return tiles / (sms * std::ceil(tiles / sms));
}

void check_model_on_gpu(const Model& model, const Gpu& gpu) {
  const Dtype dtype = model.training.dtype;
  if (gpu.peak_tflops(dtype) > 0.0) return;
  const char* other = gpu.peak_tflops_fp16 > 0.0 ? "fp16" : "bf16";
  throw InputError(
      fmt::format("model {}: dtype {} not supported by {} (no {} peak); set training.dtype: {}",
                  model.name, to_string(dtype), gpu.name, to_string(dtype), other));
}

}  // namespace trident
