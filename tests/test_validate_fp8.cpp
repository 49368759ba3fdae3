// validate's FP8 GEMM and HBM copy pieces that need no GPU: the E4M3 encoding of the test
// matrices (checked against cuda_fp8.h where the toolkit is installed), the expected result
// and its tolerance, the 16-element alignment and padding, the per-GEMM dtype of plan files,
// the copy's predicted time, and the calibration file's optional hbm_gbps.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "costmodel/calibration_io.h"
#include "costmodel/compute.h"
#include "topology/errors.h"
#include "validate/fp8_host.h"
#include "validate/measure.h"
#include "validate/patterns.h"
#include "validate/plan_reader.h"
#include "validate_fixture.h"

#ifdef TRIDENT_TEST_CUDA_FP8
#include <cuda_fp8.h>
#endif

using namespace trident;
using test::error_of;

namespace {

/// bf16 rounding (nearest even), as the FP8 GEMM's D output stores each element.
float bf16_round(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  bits &= 0xFFFF0000u;
  float out = 0.0f;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

}  // namespace

TEST_CASE("E4M3 encoding: known codes, ties to even, saturation", "[validate][fp8]") {
  // sign | 4-bit exponent (bias 7) | 3-bit mantissa
  CHECK(to_e4m3(0.0f) == 0x00);
  CHECK(to_e4m3(-0.0f) == 0x80);
  CHECK(to_e4m3(1.0f) == 0x38);
  CHECK(to_e4m3(2.0f) == 0x40);
  CHECK(to_e4m3(3.0f) == 0x44);
  CHECK(to_e4m3(4.0f) == 0x48);
  CHECK(to_e4m3(-1.5f) == 0xBC);
  CHECK(to_e4m3(448.0f) == 0x7E);
  CHECK(to_e4m3(0.015625f) == 0x08);      // 2^-6, the smallest normal
  CHECK(to_e4m3(0.001953125f) == 0x01);   // 2^-9, the smallest subnormal
  CHECK(to_e4m3(1.0625f) == 0x38);        // halfway 1 .. 1.125: to the even mantissa 0
  CHECK(to_e4m3(1.1875f) == 0x3A);        // halfway 1.125 .. 1.25: to the even mantissa 2
  CHECK(to_e4m3(0.0009765625f) == 0x00);  // 2^-10, halfway 0 .. 2^-9: to 0
  CHECK(to_e4m3(0.0029296875f) == 0x02);  // 3 x 2^-10: halfway 1 .. 2 steps: to 2
  CHECK(to_e4m3(15.5f) == 0x58);          // halfway 15 (0x57) .. 16: to 16 (next exponent)
  CHECK(to_e4m3(1000.0f) == 0x7E);        // saturated, as __NV_SATFINITE
  CHECK(to_e4m3(-INFINITY) == 0xFE);
  CHECK(to_e4m3(NAN) == 0x7F);
  CHECK(std::isnan(from_e4m3(0x7F)));
  CHECK(std::isnan(from_e4m3(0xFF)));
  CHECK(from_e4m3(0x7E) == 448.0f);
  CHECK(from_e4m3(0x01) == 0.001953125f);
  // every finite code decodes and encodes back to itself
  for (int code = 0; code < 256; ++code) {
    const auto bits = static_cast<std::uint8_t>(code);
    if ((code & 0x7F) == 0x7F) continue;
    INFO("code " << code);
    CHECK(to_e4m3(from_e4m3(bits)) == bits);
  }
}

#ifdef TRIDENT_TEST_CUDA_FP8
TEST_CASE("E4M3 encoding agrees with cuda_fp8.h", "[validate][fp8]") {
  // Every code, the midpoints between neighbours (ties) and points a third of the way.
  for (int code = 0; code < 0x7E; ++code) {
    const float low = from_e4m3(static_cast<std::uint8_t>(code));
    const float high = from_e4m3(static_cast<std::uint8_t>(code + 1));
    for (const float x : {low, (low + high) / 2.0f, low + (high - low) / 3.0f, high}) {
      for (const float value : {x, -x}) {
        INFO("value " << value);
        CHECK(to_e4m3(value) == __nv_cvt_float_to_fp8(value, __NV_SATFINITE, __NV_E4M3));
      }
    }
  }
  for (const float value : {460.0f, 500.0f, 1e9f, -1e9f, INFINITY}) {
    CHECK(to_e4m3(value) == __nv_cvt_float_to_fp8(value, __NV_SATFINITE, __NV_E4M3));
  }
}
#endif

TEST_CASE("FP8 test matrices: TN layout, exact values, the check and its tolerance",
          "[validate][fp8]") {
  const long long m = 32;
  const long long n = 48;
  const long long k = 64;
  const auto a = fp8_matrix_a_transposed(m, k);  // k x m column-major: A(i, p) at p + i k
  const auto b = fp8_matrix_b(k, n);             // k x n column-major: B(p, j) at p + j k
  REQUIRE(a.size() == static_cast<std::size_t>(m * k));
  REQUIRE(b.size() == static_cast<std::size_t>(k * n));
  CHECK(a[0] == 0x38);                                    // A(0, 0) = 1
  CHECK(a[static_cast<std::size_t>(1 * k + 5)] == 0x40);  // A(1, 5) = 2
  CHECK(a[static_cast<std::size_t>(2 * k + 7)] == 0x44);  // A(2, 7) = 3
  CHECK(b[static_cast<std::size_t>(3 * k + 9)] == 0x48);  // B(9, 3) = 4
  // C = A B from the decoded bytes, FP32 accumulation, stored as bf16 (the D dtype)
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (long long j = 0; j < n; ++j) {
    for (long long i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (long long p = 0; p < k; ++p) {
        sum += from_e4m3(a[static_cast<std::size_t>(p + i * k)]) *
               from_e4m3(b[static_cast<std::size_t>(p + j * k)]);
      }
      c[static_cast<std::size_t>(i + j * m)] = bf16_round(sum);
    }
  }
  CHECK(c[static_cast<std::size_t>(2 + 3 * m)] == static_cast<float>(k * 3 * 4));
  CHECK(count_wrong_gemm(c, m, n, k, kFp8GemmTolerance) == 0);
  // bf16 rounding of a large k stays inside the tolerance: k = 8191 x 12 is not a bf16
  const float big = static_cast<float>(8191 * 12);
  CHECK(std::fabs(bf16_round(big) - big) / big < kFp8GemmTolerance);
  CHECK(bf16_round(big) != big);
  c[5] *= 1.02f;  // a 2% error is caught
  CHECK(count_wrong_gemm(c, m, n, k, kFp8GemmTolerance) == 1);
}

TEST_CASE("FP8 alignment: dimensions padded to multiples of 16", "[validate][fp8]") {
  CHECK(fp8_gemm_dim(1) == 16);
  CHECK(fp8_gemm_dim(16) == 16);
  CHECK(fp8_gemm_dim(17) == 32);
  CHECK(fp8_gemm_dim(11008) == 11008);
  CHECK(fp8_gemm_dim(4095) == 4096);
  CHECK(fp8_gemm_aligned(4096, 14336, 4096));
  CHECK_FALSE(fp8_gemm_aligned(4096, 1000, 4096));
  CHECK_FALSE(fp8_gemm_aligned(4096, 4096, 8));

  const PlanGemm gemm{"ffn_up", 4095, 1000, 4096, 1.0, 500.0, Dtype::fp8};
  const GemmSample fp8 = run_shape(gemm, Dtype::fp8, 0);
  CHECK(fp8.m == 4096);
  CHECK(fp8.n == 1008);
  CHECK(fp8.k == 4096);
  CHECK(fp8.dtype == Dtype::fp8);
  const GemmSample bf16 = run_shape(gemm, Dtype::bf16, 0);  // FP8 fell back: no padding
  CHECK(bf16.m == 4095);
  CHECK(bf16.n == 1000);
  CHECK(bf16.dtype == Dtype::bf16);
  const GemmSample capped = run_shape(gemm, Dtype::fp8, 500);
  CHECK(capped.m == 512);  // capped at 500, then padded
  CHECK(capped.n == 512);
}

TEST_CASE("GEMM timing operands: uniform in [-1, 1), unstructured, finite in E4M3",
          "[validate][measure]") {
  // splitmix64 of index 0, salt 0: z = 0x9E3779B97F4A7C15 mixed = 0xE220A8397B1DCDAF (the
  // generator's published first output for seed 0); its top 24 bits 0xE220A8 = 14819496, so
  // 14819496 x 2 / 2^24 - 1 = 0.7666216.
  CHECK(gemm_timing_value(0, 0) == Approx(14819496.0 * 2.0 / 16777216.0 - 1.0).epsilon(1e-7));
  const std::vector<float> values = gemm_timing_matrix(256, 1024, 1);
  REQUIRE(values.size() == 262144u);
  double sum = 0;
  double sum_sq = 0;
  long long negative = 0;
  for (const float v : values) {
    REQUIRE(v >= -1.0f);
    REQUIRE(v < 1.0f);
    sum += v;
    sum_sq += static_cast<double>(v) * v;
    negative += v < 0 ? 1 : 0;
  }
  // Uniform on [-1, 1): mean 0, variance 1/3; over 262,144 draws the mean's standard error is
  // sqrt(1/3 / 262144) = 0.0011, so 0.01 is 9 standard errors.
  CHECK(std::fabs(sum / 262144.0) < 0.01);
  CHECK(sum_sq / 262144.0 == Approx(1.0 / 3.0).epsilon(0.01));
  CHECK(negative > 130000);
  CHECK(negative < 132200);
  // No row or column structure, unlike the check's patterns: neighbours differ.
  long long equal_neighbours = 0;
  for (std::size_t i = 1; i < values.size(); ++i) equal_neighbours += values[i] == values[i - 1];
  CHECK(equal_neighbours < 10);
  // Another salt, other values (A and B are not the same matrix).
  CHECK(gemm_timing_value(5, 1) != gemm_timing_value(5, 2));
  // In E4M3 the magnitudes below 1 use the codes 0x00-0x38 of each sign (0x38 = 1.0, where the
  // values just below 1 round): 57 + 57 = 114 codes, 0x7F/0xFF (NaN) never. The values spread
  // over nearly all of them, not a few as the check's patterns (1..4: four codes).
  const std::vector<std::uint8_t> fp8 = fp8_timing_matrix(256, 1024, 1);
  REQUIRE(fp8.size() == values.size());
  std::vector<int> seen(256, 0);
  for (const std::uint8_t code : fp8) seen[code] = 1;
  int distinct = 0;
  for (const int s : seen) distinct += s;
  CHECK(distinct >= 100);
  CHECK(distinct <= 114);
  CHECK(seen[0x7F] == 0);
  CHECK(seen[0xFF] == 0);
  CHECK(fp8[0] == to_e4m3(values[0]));
  CHECK(gemm_timing_matrix(0, 7, 1).empty());
  CHECK_THROWS_AS(gemm_timing_matrix(-1, 7, 1), std::invalid_argument);
}

TEST_CASE("HBM copy: predicted time at the cost model's memory-bound rate", "[validate][hbm]") {
  Gpu gpu;
  gpu.memory_gbps = 4800.0;  // H200
  const double bytes = 1073741824.0;
  // 2 x 1 GiB (read + write) at 4800 x 0.85 GB/s
  CHECK(predicted_copy_s(gpu, bytes) ==
        Approx(2.0 * bytes / (4800.0 * kHbmAchievableFraction * 1e9)));
  CHECK(predicted_copy_s(gpu, bytes) == Approx(526.4e-6).epsilon(1e-3));
}

TEST_CASE("plan reader: each GEMM's dtype, defaulting to the model's", "[validate][plan]") {
  const std::string plan =
      R"({"model": {"dtype": "fp8"}, "plans": [{"tp": 1, "pp": 1, "dp": 1,
      "rank_order": "tp-dp-pp", "comm": {}, "gemms": [
      {"name": "qkv", "m": 4096, "n": 6144, "k": 4096, "dtype": "fp8",
       "calls_per_step": 96, "predicted_tflops": 1200},
      {"name": "logits", "m": 4096, "n": 128256, "k": 4096, "dtype": "bf16",
       "calls_per_step": 3, "predicted_tflops": 700},
      {"name": "old", "m": 16, "n": 16, "k": 16, "calls_per_step": 1,
       "predicted_tflops": 1}]}]})";
  const PlanSpec spec = read_plan(plan, "plan.json");
  REQUIRE(spec.gemms.size() == 3);
  CHECK(spec.gemms[0].dtype == Dtype::fp8);
  CHECK(spec.gemms[1].dtype == Dtype::bf16);
  CHECK(spec.gemms[2].dtype == Dtype::fp8);  // no key (older plan files): the model's dtype
  std::string bad = plan;
  bad.replace(bad.find("\"bf16\""), 6, "\"int4\"");
  CHECK(error_of([&] { (void)read_plan(bad, "plan.json"); }) ==
        "plan.json:5: plans[0].gemms[1].dtype: expected bf16|fp16|fp8|tf32|fp32, got 'int4'");
}

TEST_CASE("calibration: optional hbm_gbps round trip", "[validate][calibration_io]") {
  const std::string old_file =
      R"({"trident_calibration": 1, "gemms": [], "collectives": [], "fits": []})";
  const Calibration old = parse_calibration(old_file, "old.json");  // files without the key
  CHECK(old.hbm_gbps == 0.0);
  CHECK(to_json(old).find("hbm_gbps") == std::string::npos);  // not written when unmeasured

  Calibration c;
  c.gemms.push_back({4096, 6144, 4096, Dtype::fp8, 1100.0});
  c.hbm_gbps = 4012.5;
  const Calibration back = parse_calibration(to_json(c), "calib.json");
  CHECK(back.hbm_gbps == 4012.5);
  CHECK(back.gemms[0].dtype == Dtype::fp8);
  CHECK(to_json(back) == to_json(c));
  CHECK(error_of([] {
          (void)parse_calibration(
              R"({"trident_calibration": 1, "gemms": [], "collectives": [], "fits": [],
              "hbm_gbps": -3})",
              "c.json");
        }).rfind("c.json:2: hbm_gbps: expected", 0) == 0);  // line 2 of the text
}
