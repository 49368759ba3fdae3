#pragma once
/// Input patterns and expected results, as nccl-tests checks every run: each rank fills its
/// input with small integers (exact in fp32 sums), and every output element is compared with
/// the value it must have; the count of wrong elements is reported beside the time.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "costmodel/collective.h"

namespace trident {

/// The collectives validate runs (both backends, and the checks below): all-reduce, all-gather,
/// reduce-scatter, send-recv and all-to-all. A plan naming another (broadcast) is refused when
/// it is read, before MPI starts.
[[nodiscard]] bool validate_runs(Collective collective);

/// Every message validate sends over `ranks` ranks is a whole number of fp32 elements per rank:
/// a multiple of 4 x ranks bytes, at least that (measure.cpp rounds the plan's sizes and the
/// --max-bytes cap to it), so the smallest is 8 bytes, over 2 ranks.
[[nodiscard]] inline double message_quantum_bytes(int ranks) { return 4.0 * ranks; }

/// Element counts of the send and receive buffers for S = `count` floats on `ranks` ranks
/// (nccl-tests' convention: S is the whole array for all-gather and reduce-scatter).
struct BufferCounts {
  std::size_t send = 0;
  std::size_t recv = 0;
};
[[nodiscard]] BufferCounts buffer_counts(Collective collective, int ranks, std::size_t count);

/// Input of group rank `rank` for `collective`.
[[nodiscard]] std::vector<float> input_pattern(Collective collective, int ranks, int rank,
                                               std::size_t count);
/// Wrong elements in `recv` on group rank `rank`; `prev` is the rank it received from
/// (send/recv ring).
[[nodiscard]] long long count_wrong(Collective collective, int ranks, int rank, int prev,
                                    std::size_t count, const std::vector<float>& recv);

/// GEMM inputs (column-major, C = A B with A m x k, B k x n): A(i, p) = i%3 + 1,
/// B(p, j) = j%4 + 1, so C(i, j) = k (i%3 + 1)(j%4 + 1) exactly.
[[nodiscard]] inline float gemm_a(long long row) { return static_cast<float>(row % 3 + 1); }
[[nodiscard]] inline float gemm_b(long long col) { return static_cast<float>(col % 4 + 1); }
/// Timing operands: an element's value is uniform in [-1, 1), drawn from a hash (splitmix64) of
/// its index and `salt`, so the tensor cores switch as on a model's weights and activations.
/// The patterns above are for the check only: on one H200, cuBLAS ran them 25-35% faster than
/// random operands of the same shapes (the board holds a higher clock at its power limit when
/// few bits switch; docs/validate.md#gemm-operands), which a calibration would carry into plans.
[[nodiscard]] float gemm_timing_value(std::uint64_t index, std::uint64_t salt);
/// rows x cols timing values (any layout: they carry no structure).
[[nodiscard]] std::vector<float> gemm_timing_matrix(long long rows, long long cols,
                                                    std::uint64_t salt);
/// Elements of C (m x n, column-major) off by more than `relative_tolerance`.
[[nodiscard]] long long count_wrong_gemm(const std::vector<float>& c, long long m, long long n,
                                         long long k, double relative_tolerance);

}  // namespace trident
