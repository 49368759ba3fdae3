#pragma once
/// Host side of validate's FP8 GEMMs, free of CUDA so the tests run anywhere: the E4M3
/// encoding of the test matrices, the 16-element alignment cuBLASLt needs for FP8, and the
/// check's tolerance. The GPU side is validate/gemm_lt.h.
#include <cstdint>
#include <vector>

namespace trident {

/// FP8 E4M3 (OCP / NVIDIA `__nv_fp8_e4m3`: bias 7, no infinities, NaN 0x7F/0xFF, largest
/// finite 448) of `value`, rounded to nearest even and saturated to +-448 as
/// `__nv_cvt_float_to_fp8(value, __NV_SATFINITE, __NV_E4M3)` does.
[[nodiscard]] std::uint8_t to_e4m3(float value);
/// The value of an E4M3 byte (NaN for 0x7F and 0xFF).
[[nodiscard]] float from_e4m3(std::uint8_t bits);

/// cuBLASLt FP8 matmuls need 16-byte aligned leading dimensions and pointers; with 1-byte
/// elements, validate keeps every dimension a multiple of 16 (Transformer Engine asserts a
/// like rule before its FP8 GEMMs: the input's rows a multiple of 8, its columns of 16).
inline constexpr long long kFp8Alignment = 16;
/// `dim` rounded up to a multiple of kFp8Alignment: the shape validate pads an FP8 GEMM to.
[[nodiscard]] long long fp8_gemm_dim(long long dim);
/// Whether m, n and k are all multiples of kFp8Alignment.
[[nodiscard]] bool fp8_gemm_aligned(long long m, long long n, long long k);

/// The test matrices of patterns.h (A(i, p) = i%3 + 1, B(p, j) = j%4 + 1) in E4M3, laid out
/// for cuBLASLt's FP8 "TN" form: A stored transposed (k x m column-major, lda = k), B k x n
/// column-major (ldb = k). Integers 1..4 are exact in E4M3, so C(i, j) = k (i%3+1)(j%4+1)
/// exactly before the bf16 output rounds it.
[[nodiscard]] std::vector<std::uint8_t> fp8_matrix_a_transposed(long long m, long long k);
[[nodiscard]] std::vector<std::uint8_t> fp8_matrix_b(long long k, long long n);
/// rows x cols timing operands (patterns.h gemm_timing_value) in E4M3.
[[nodiscard]] std::vector<std::uint8_t> fp8_timing_matrix(long long rows, long long cols,
                                                          std::uint64_t salt);

/// Relative tolerance of the FP8 check: the inputs and the FP32 accumulation (fast
/// accumulation off) are exact, the bf16 output rounds by at most 2^-9; 1e-2 as for bf16.
inline constexpr double kFp8GemmTolerance = 1e-2;

}  // namespace trident
