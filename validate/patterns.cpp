// value(rank, i) = (rank + 1)(i % 13 + 1): sums over up to 1,000 ranks stay below 2^24, so
// fp32 reductions are exact and any difference is an error.
#include "validate/patterns.h"

#include <cmath>
#include <stdexcept>

namespace trident {
namespace {

float value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1));
}

float sum_over_ranks(int ranks, std::size_t i) {
  const long long triangle =
      static_cast<long long>(ranks) * (ranks + 1) / 2;  // exact: one of two is even
  return static_cast<float>(static_cast<long long>(i % 13 + 1) * triangle);
}

[[noreturn]] void unsupported(Collective collective) {
  throw std::invalid_argument(std::string("validate does not run ") + to_string(collective));
}

}  // namespace

bool validate_runs(Collective collective) {
  switch (collective) {
    case Collective::all_reduce:
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::send_recv:
    case Collective::all_to_all:
      return true;
    case Collective::broadcast:
      return false;
  }
  return false;
}

BufferCounts buffer_counts(Collective collective, int ranks, std::size_t count) {
  const std::size_t n = static_cast<std::size_t>(ranks);
  switch (collective) {
    case Collective::all_reduce:
    case Collective::send_recv:
    case Collective::all_to_all:
      return {count, count};
    case Collective::reduce_scatter:
      return {count, count / n};
    case Collective::all_gather:
      return {count / n, count};
    default:
      unsupported(collective);
  }
}

std::vector<float> input_pattern(Collective collective, int ranks, int rank, std::size_t count) {
  std::vector<float> out(buffer_counts(collective, ranks, count).send);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = value(rank, i);
  return out;
}

long long count_wrong(Collective collective, int ranks, int rank, int prev, std::size_t count,
                      const std::vector<float>& recv) {
  const std::size_t chunk = count / static_cast<std::size_t>(ranks);
  long long wrong = 0;
  for (std::size_t i = 0; i < recv.size(); ++i) {
    float expected = 0.0f;
    switch (collective) {
      case Collective::all_reduce:
        expected = sum_over_ranks(ranks, i);
        break;
      case Collective::reduce_scatter:
        expected = sum_over_ranks(ranks, static_cast<std::size_t>(rank) * chunk + i);
        break;
      case Collective::all_gather:
        expected = value(static_cast<int>(i / chunk), i % chunk);
        break;
      case Collective::send_recv:
        expected = value(prev, i);
        break;
      case Collective::all_to_all:
        // Chunk j came from peer j: its chunk for this rank (elements rank x chunk onwards).
        expected =
            value(static_cast<int>(i / chunk), static_cast<std::size_t>(rank) * chunk + i % chunk);
        break;
      default:
        unsupported(collective);
    }
    wrong += recv[i] != expected ? 1 : 0;
  }
  return wrong;
}

long long count_wrong_gemm(const std::vector<float>& c, long long m, long long n, long long k,
                           double relative_tolerance) {
  long long wrong = 0;
  for (long long j = 0; j < n; ++j) {
    for (long long i = 0; i < m; ++i) {
      const double expected = static_cast<double>(k) * gemm_a(i) * gemm_b(j);
      const double got = c[static_cast<std::size_t>(i + j * m)];
      wrong += std::fabs(got - expected) > relative_tolerance * expected ? 1 : 0;
    }
  }
  return wrong;
}

float gemm_timing_value(std::uint64_t index, std::uint64_t salt) {
  // splitmix64 (Steele, Lea and Flood 2014): one mix of the index and the salt.
  std::uint64_t z = index + 0x9E3779B97F4A7C15ull * (salt + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  // The top 24 bits as a float in [0, 1) (exact), mapped to [-1, 1).
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

std::vector<float> gemm_timing_matrix(long long rows, long long cols, std::uint64_t salt) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("gemm_timing_matrix: negative size");
  std::vector<float> out(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = gemm_timing_value(i, salt);
  return out;
}

}  // namespace trident
