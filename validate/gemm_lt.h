#pragma once
/// FP8 GEMMs of the GPU backend through cuBLASLt (cublasLtMatmul): A and B in E4M3, D in bf16,
/// FP32 compute and scale, the "TN" layout FP8 needs (A transposed), per-tensor scale pointers
/// (device floats = 1.0), an algorithm from cublasLtMatmulAlgoGetHeuristic and a 32 MiB
/// workspace (Transformer Engine's on Hopper). Needs compute capability 8.9 or newer.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "validate/cuda_util.h"

namespace trident {

/// Workspace given to cublasLtMatmul (Transformer Engine: 32 MiB on Hopper).
inline constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;

/// Whether a device of compute capability major.minor runs FP8 GEMMs (Ada 8.9, Hopper 9.0, ...).
[[nodiscard]] inline bool supports_fp8_gemm(int major, int minor) {
  return major > 8 || (major == 8 && minor >= 9);
}

/// One cuBLASLt handle, workspace and scale factors, shared by the FP8 GEMMs of a backend.
class LtContext {
 public:
  LtContext();
  ~LtContext();
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  [[nodiscard]] cublasLtHandle_t handle() const { return handle_; }
  [[nodiscard]] void* workspace() const { return workspace_.get(); }
  [[nodiscard]] const float* one() const { return static_cast<const float*>(scale_.get()); }

 private:
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_{kLtWorkspaceBytes};
  DeviceBuffer scale_{sizeof(float)};
};

/// C(m x n) = A(m x k) B(k x n) in FP8 on `stream`; fill its operands before launching: the
/// timing values (fill_timing) or the patterns.h test matrices (fill_pattern). Throws
/// InputError when a dimension is not a multiple of 16 (measure.cpp pads the plan's shape first)
/// and std::runtime_error on a cuBLASLt error or when the heuristic finds no algorithm.
class Fp8Gemm {
 public:
  Fp8Gemm(const LtContext& context, cudaStream_t stream, long long m, long long n, long long k);
  ~Fp8Gemm();
  Fp8Gemm(const Fp8Gemm&) = delete;
  Fp8Gemm& operator=(const Fp8Gemm&) = delete;
  /// Enqueues one cublasLtMatmul.
  void launch();
  /// A and B as the check's test matrices (C exact, count_wrong_gemm) or as timing operands.
  void fill_pattern();
  void fill_timing();
  /// D as floats (m x n, column-major), for count_wrong_gemm.
  [[nodiscard]] std::vector<float> output() const;

 private:
  const LtContext& context_;
  cudaStream_t stream_ = nullptr;
  long long m_ = 0;
  long long n_ = 0;
  long long k_ = 0;
  DeviceBuffer a_;
  DeviceBuffer b_;
  DeviceBuffer d_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr;
  cublasLtMatrixLayout_t b_layout_ = nullptr;
  cublasLtMatrixLayout_t d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace trident
