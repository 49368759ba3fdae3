// E4M3 encoding, FP8 alignment and the FP8 test matrices (no CUDA).
#include "validate/fp8_host.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "validate/patterns.h"

namespace trident {
namespace {

constexpr std::uint8_t kNan = 0x7F;
constexpr std::uint8_t kMaxFinite = 0x7E;  // 0 1111 110 = 448
constexpr float kMaxValue = 448.0f;
constexpr float kSubnormalStep = 0.001953125f;  // 2^-9
constexpr int kBias = 7;

/// Round to nearest, ties to even (the default floating-point environment).
int round_even(float value) { return static_cast<int>(std::nearbyint(value)); }

/// `columns` columns of k E4M3 elements each, stored one after another (k-major: the layout
/// of both TN operands), column c holding value_of(c) throughout.
template <typename ValueOf>
std::vector<std::uint8_t> k_major_columns(long long columns, long long k, ValueOf value_of) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(columns * k));
  for (long long c = 0; c < columns; ++c) {
    const std::uint8_t value = to_e4m3(value_of(c));
    for (long long p = 0; p < k; ++p) out[static_cast<std::size_t>(p + c * k)] = value;
  }
  return out;
}

}  // namespace

std::uint8_t to_e4m3(float value) {
  if (std::isnan(value)) return kNan;
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float magnitude = std::fabs(value);
  if (magnitude > kMaxValue) return sign | kMaxFinite;  // SATFINITE: inf and overflow too
  if (magnitude < 8.0f * kSubnormalStep) {              // below 2^-6 (smallest normal): subnormal
    // 0..8 steps of 2^-9; 8 is the smallest normal (exponent 1, mantissa 0), bits 0x08.
    return sign | static_cast<std::uint8_t>(round_even(magnitude / kSubnormalStep));
  }
  int exponent = 0;
  const float fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction x 2^exponent
  int biased = exponent - 1 + kBias;                        // significand 2 x fraction in [1, 2)
  int mantissa = round_even((2.0f * fraction - 1.0f) * 8.0f);
  if (mantissa == 8) {
    mantissa = 0;
    ++biased;
  }
  const int bits = (biased << 3) | mantissa;
  return sign | static_cast<std::uint8_t>(bits > kMaxFinite ? kMaxFinite : bits);
}

float from_e4m3(std::uint8_t bits) {
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude =
      exponent == 0 ? static_cast<float>(mantissa) * kSubnormalStep
                    : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - kBias);
  return (bits & 0x80) != 0 ? -magnitude : magnitude;
}

long long fp8_gemm_dim(long long dim) {
  if (dim <= 0) throw std::invalid_argument("fp8_gemm_dim: dimension must be positive");
  return (dim + kFp8Alignment - 1) / kFp8Alignment * kFp8Alignment;
}

bool fp8_gemm_aligned(long long m, long long n, long long k) {
  return m % kFp8Alignment == 0 && n % kFp8Alignment == 0 && k % kFp8Alignment == 0;
}

std::vector<std::uint8_t> fp8_matrix_a_transposed(long long m, long long k) {
  return k_major_columns(m, k, gemm_a);
}

std::vector<std::uint8_t> fp8_matrix_b(long long k, long long n) {
  return k_major_columns(n, k, gemm_b);
}

std::vector<std::uint8_t> fp8_timing_matrix(long long rows, long long cols, std::uint64_t salt) {
  const std::vector<float> values = gemm_timing_matrix(rows, cols, salt);
  std::vector<std::uint8_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_e4m3(values[i]);
  return out;
}

}  // namespace trident
