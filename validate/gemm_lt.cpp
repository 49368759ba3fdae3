// FP8 GEMMs through cuBLASLt. The requirements followed here are those of the cuBLAS
// documentation's cublasLtMatmul() section for FP8 (CUDA_R_8F_E4M3 A and B):
// - A transposed, B not ("TN"), column-major: A is stored k x m (lda = k), B k x n (ldb = k);
// - compute CUBLAS_COMPUTE_32F with scale type CUDA_R_32F; D (and C, unused with beta 0) bf16;
// - leading dimensions and pointers 16-byte aligned: every dimension a multiple of 16 here
//   (cudaMalloc pointers are 256-byte aligned);
// - A/B scale pointers: device floats, here 1.0 (the test values need no scaling);
// - fast accumulation left off (the default): partial sums are promoted to FP32, so the
//   integer check is exact up to the bf16 output's rounding.
#include "validate/gemm_lt.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "topology/errors.h"
#include "validate/fp8_host.h"

namespace trident {
namespace {

void lt_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cublasLtGetStatusString(status));
  }
}

template <typename T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   const T& value) {
  lt_check(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)),
           "cublasLtMatmulDescSetAttribute");
}

std::string shape_text(long long m, long long n, long long k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

/// Bytes of an m x n matrix of `element_bytes`, after the alignment and int range checks.
std::size_t checked_bytes(long long m, long long n, long long k, long long rows, long long cols,
                          std::size_t element_bytes) {
  if (!fp8_gemm_aligned(m, n, k)) {
    throw InputError("fp8 gemm " + shape_text(m, n, k) +
                     ": cuBLASLt FP8 needs every dimension a multiple of 16");
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
    throw InputError("fp8 gemm " + shape_text(m, n, k) +
                     ": a dimension exceeds cuBLASLt's int range");
  }
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * element_bytes;
}

}  // namespace

LtContext::LtContext() {
  lt_check(cublasLtCreate(&handle_), "cublasLtCreate");
  scale_.upload(std::vector<float>{1.0f});
}

LtContext::~LtContext() { cublasLtDestroy(handle_); }

Fp8Gemm::Fp8Gemm(const LtContext& context, cudaStream_t stream, long long m, long long n,
                 long long k)
    : context_(context),
      stream_(stream),
      m_(m),
      n_(n),
      k_(k),
      a_(checked_bytes(m, n, k, k, m, 1)),
      b_(checked_bytes(m, n, k, k, n, 1)),
      d_(checked_bytes(m, n, k, m, n, 2)) {
  lt_check(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
           "cublasLtMatmulDescCreate");
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
  const void* one = context.one();
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, one);
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, one);
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<std::int8_t>(0));
  const auto u64 = [](long long value) { return static_cast<std::uint64_t>(value); };
  lt_check(cublasLtMatrixLayoutCreate(&a_layout_, CUDA_R_8F_E4M3, u64(k), u64(m), k),
           "cublasLtMatrixLayoutCreate A");
  lt_check(cublasLtMatrixLayoutCreate(&b_layout_, CUDA_R_8F_E4M3, u64(k), u64(n), k),
           "cublasLtMatrixLayoutCreate B");
  lt_check(cublasLtMatrixLayoutCreate(&d_layout_, CUDA_R_16BF, u64(m), u64(n), m),
           "cublasLtMatrixLayoutCreate D");
  cublasLtMatmulPreference_t preference = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const auto workspace = static_cast<std::uint64_t>(kLtWorkspaceBytes);
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(context.handle(), desc_, a_layout_, b_layout_,
                                            d_layout_, d_layout_, preference, 1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  lt_check(status, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) {
    throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic: no FP8 algorithm for gemm " +
                             shape_text(m, n, k));
  }
  algo_ = result.algo;
}

Fp8Gemm::~Fp8Gemm() {
  cublasLtMatrixLayoutDestroy(d_layout_);
  cublasLtMatrixLayoutDestroy(b_layout_);
  cublasLtMatrixLayoutDestroy(a_layout_);
  cublasLtMatmulDescDestroy(desc_);
}

void Fp8Gemm::launch() {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  lt_check(cublasLtMatmul(context_.handle(), desc_, &alpha, a_.get(), a_layout_, b_.get(),
                          b_layout_, &beta, d_.get(), d_layout_, d_.get(), d_layout_, &algo_,
                          context_.workspace(), kLtWorkspaceBytes, stream_),
           "cublasLtMatmul");
}

void Fp8Gemm::fill_pattern() {
  a_.upload_bytes(fp8_matrix_a_transposed(m_, k_));
  b_.upload_bytes(fp8_matrix_b(k_, n_));
}

void Fp8Gemm::fill_timing() {
  a_.upload_bytes(fp8_timing_matrix(k_, m_, 1));
  b_.upload_bytes(fp8_timing_matrix(k_, n_, 2));
}

std::vector<float> Fp8Gemm::output() const {
  return decode(d_, static_cast<std::size_t>(m_ * n_), CUDA_R_16BF);
}

}  // namespace trident
