#pragma once
/// Where validate's collectives and GEMMs run. Two implementations: MPI on host buffers with
/// OpenBLAS GEMMs (backend_mpi.cpp; fp32 on the CPU) and NCCL + cuBLAS on GPUs
/// (backend_cuda.cpp; built only with the CUDA toolkit). The engine (measure.h) drives both
/// the same way, as nccl-tests' shared engine drives its per-collective tables.
#include <cstddef>
#include <memory>
#include <string>

#include "costmodel/collective.h"
#include "topology/gpu.h"
#include "validate/groups.h"

namespace trident {

struct RunOptions {
  int warmup = 5;           ///< untimed runs first
  int iters = 20;           ///< timed runs; the time is their mean
  double timeout_s = 60.0;  ///< any wait longer than this aborts the job naming the group
};

/// One measurement on this rank: seconds per run, and wrong elements of the checked output.
struct RunResult {
  double time_s = 0.0;
  long long wrong = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;          ///< "nccl" | "mpi"
  [[nodiscard]] virtual std::string device_name() const = 0;   ///< "NVIDIA H200", "cpu: ..."
  [[nodiscard]] virtual std::string nccl_version() const = 0;  ///< "" for mpi
  /// Builds the communicator of `group`; every rank calls it once per kind, in the same order.
  virtual void create_group(const GroupMembership& group) = 0;
  /// Runs `collective` of S = `count` floats on `group`: warm-up, timed runs, and a check of
  /// the last run's output (nccl-tests' #wrong). S is the whole array for all-gather and
  /// reduce-scatter; `count` is a multiple of the group size.
  [[nodiscard]] virtual RunResult run_collective(const GroupMembership& group,
                                                 Collective collective, std::size_t count,
                                                 const RunOptions& options) = 0;
  /// The dtype GEMMs of `planned` are actually run in here (fp32 on the CPU).
  [[nodiscard]] virtual Dtype gemm_dtype(Dtype planned) const = 0;
  /// C(m x n) = A(m x k) B(k x n) in gemm_dtype(dtype): warm-up, timed runs, check.
  [[nodiscard]] virtual RunResult run_gemm(long long m, long long n, long long k, Dtype dtype,
                                           const RunOptions& options) = 0;
  /// Why GEMMs of `planned` run here in another dtype than planned ("" when they do not, or
  /// when the reason is the backend's own, as fp32 on the CPU): e.g. FP8 on a GPU older than
  /// compute capability 8.9.
  [[nodiscard]] virtual std::string gemm_note(Dtype /*planned*/) const { return ""; }
  /// Device-to-device copy of `bytes` (each run reads and writes `bytes`): warm-up, timed
  /// runs, check of the copy. time_s 0: not measured here (the CPU backend).
  [[nodiscard]] virtual RunResult run_memory_copy(std::size_t /*bytes*/,
                                                  const RunOptions& /*options*/) {
    return {};
  }
};

enum class BackendKind { automatic, cuda, cpu };

/// Whether this build has the CUDA backend, and a GPU is visible to this process.
[[nodiscard]] bool cuda_available();

/// The CPU backend (needs MPI initialised).
[[nodiscard]] std::unique_ptr<Backend> make_mpi_backend();
/// The CUDA backend: picks this rank's GPU, refuses two ranks on one GPU (InputError), then
/// initialises NCCL. Throws InputError when this build has no CUDA.
[[nodiscard]] std::unique_ptr<Backend> make_cuda_backend();

}  // namespace trident
