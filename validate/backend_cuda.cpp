// The GPU backend: NCCL collectives (bootstrapped through MPI, one communicator per group via
// ncclCommSplit), cuBLAS GEMMs in the plan's dtype (FP8 through cuBLASLt, validate/gemm_lt.h)
// and an HBM copy, timed with CUDA events. Plain C++ on the CUDA runtime: inputs are copied
// from host patterns, outputs are checked on the host; GEMMs are timed on random operands
// after a sustained run and checked in one more run on the patterns.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>

#include "topology/errors.h"
#include "validate/backend.h"
#include "validate/cuda_util.h"
#include "validate/fp8_host.h"
#include "validate/gemm_lt.h"
#include "validate/mpi_util.h"
#include "validate/nccl_tests_common.h"
#include "validate/patterns.h"

namespace trident {
namespace {

/// Seconds a GEMM runs before it is timed. On one H200 (docs/validate.md#gemm-operands) the SM
/// clock fell from 1980 MHz idle to the 1455 MHz it then held at the 700 W limit within the first
/// second of back-to-back BF16 GEMMs (NVML, 0.1 s samples), and stayed there for 15 s.
constexpr double kGemmSustainS = 1.0;
/// GPU work queued between two waits of the sustain loop: long against a wait's gap.
constexpr double kSustainBatchS = 0.05;

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
    device_ = pick_device();
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    cuda_check(cudaGetDeviceProperties(&prop_, device_), "cudaGetDeviceProperties");
    refuse_shared_gpu(prop_, world_rank_);
    ncclUniqueId id;
    if (world_rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    nccl_check(ncclCommInitRank(&world_, world_size_, id, world_rank_), "ncclCommInitRank");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    if (cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate");
    cublasSetStream(blas_, stream_);
  }

  ~CudaBackend() override {
    lt_.reset();
    for (auto& [kind, comm] : comms_) ncclCommDestroy(comm);
    if (world_ != nullptr) ncclCommDestroy(world_);
    cublasDestroy(blas_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  [[nodiscard]] std::string name() const override { return "nccl"; }
  [[nodiscard]] std::string device_name() const override { return prop_.name; }
  [[nodiscard]] std::string nccl_version() const override {
    int code = 0;
    ncclGetVersion(&code);
    return nccl_tests::version_of_code(code);
  }

  void create_group(const GroupMembership& group) override {
    ncclComm_t comm = nullptr;
    nccl_check(ncclCommSplit(world_, group.color, group.group_rank, &comm, nullptr),
               "ncclCommSplit");
    comms_[group.kind] = comm;
  }

  [[nodiscard]] RunResult run_collective(const GroupMembership& group, Collective collective,
                                         std::size_t count, const RunOptions& options) override {
    const ncclComm_t comm = comms_.at(group.kind);
    const int n = group.size();
    const BufferCounts counts = buffer_counts(collective, n, count);
    DeviceBuffer send(counts.send * sizeof(float));
    DeviceBuffer recv(counts.recv * sizeof(float));
    send.upload(input_pattern(collective, n, group.group_rank, count));
    recv.upload(std::vector<float>(counts.recv, -1.0f));
    const std::string what = group.describe() + " " + to_string(collective) + " of " +
                             std::to_string(count * sizeof(float)) + " bytes";
    const auto launch = [&] { start(collective, group, comm, send.get(), recv.get(), counts); };
    for (int i = 0; i < options.warmup; ++i) launch();
    wait(comm, what, options.timeout_s);
    world_barrier(options.timeout_s);
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    for (int i = 0; i < options.iters; ++i) launch();
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    wait(comm, what, options.timeout_s);
    const double time_s = elapsed_s() / options.iters;
    const std::vector<float> out = recv.download<float>(counts.recv);
    return {time_s, count_wrong(collective, n, group.group_rank, group.prev(), count, out)};
  }

  [[nodiscard]] Dtype gemm_dtype(Dtype planned) const override {
    if (planned != Dtype::fp8) return planned;
    return supports_fp8_gemm(prop_.major, prop_.minor) ? Dtype::fp8 : Dtype::bf16;
  }

  [[nodiscard]] std::string gemm_note(Dtype planned) const override {
    if (planned != Dtype::fp8 || gemm_dtype(planned) == Dtype::fp8) return "";
    return "fp8 GEMMs run as bf16: " + std::string(prop_.name) + " is compute capability " +
           std::to_string(prop_.major) + "." + std::to_string(prop_.minor) +
           "; FP8 tensor cores need 8.9 or newer";
  }

  [[nodiscard]] RunResult run_gemm(long long m, long long n, long long k, Dtype planned,
                                   const RunOptions& options) override {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
      throw InputError("gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                       std::to_string(k) + ": a dimension exceeds cuBLAS's int range");
    }
    const std::string what =
        "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    // Timed on random operands after the clock has settled (sustained), checked on the
    // patterns: patterned operands run faster (patterns.h gemm_timing_value).
    if (gemm_dtype(planned) == Dtype::fp8) {
      if (!lt_) lt_ = std::make_unique<LtContext>();
      Fp8Gemm gemm(*lt_, stream_, m, n, k);
      gemm.fill_timing();
      const double time_s = timed_then_checked(
          what, options, [&] { gemm.launch(); }, [&] { gemm.fill_pattern(); });
      return {time_s, count_wrong_gemm(gemm.output(), m, n, k, kFp8GemmTolerance)};
    }
    const GemmTypes types = gemm_types(gemm_dtype(planned));
    DeviceBuffer a(static_cast<std::size_t>(m * k) * types.in_bytes);
    DeviceBuffer b(static_cast<std::size_t>(k * n) * types.in_bytes);
    DeviceBuffer c(static_cast<std::size_t>(m * n) * types.out_bytes);
    a.upload_bytes(encode(gemm_timing_matrix(m, k, 1), types.in));
    b.upload_bytes(encode(gemm_timing_matrix(k, n, 2), types.in));
    const float alpha = 1.0f;
    const float beta = 0.0f;
    const auto launch = [&] {
      const cublasStatus_t status =
          cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n),
                       static_cast<int>(k), &alpha, a.get(), types.in, static_cast<int>(m), b.get(),
                       types.in, static_cast<int>(k), &beta, c.get(), types.out,
                       static_cast<int>(m), types.compute, CUBLAS_GEMM_DEFAULT);
      if (status != CUBLAS_STATUS_SUCCESS) {
        throw std::runtime_error(std::string("cublasGemmEx: ") + cublasGetStatusString(status));
      }
    };
    const double time_s = timed_then_checked(what, options, launch, [&] {
      a.upload_bytes(encode(gemm_matrix_a(m, k), types.in));
      b.upload_bytes(encode(gemm_matrix_b(k, n), types.in));
    });
    const std::vector<float> out = decode(c, static_cast<std::size_t>(m * n), types.out);
    return {time_s, count_wrong_gemm(out, m, n, k, types.tolerance)};
  }

  /// cudaMemcpyAsync device to device (nvbandwidth's device-local copy); the rate counts
  /// 2 x bytes (read + write) / time, as BabelStream's Copy does.
  [[nodiscard]] RunResult run_memory_copy(std::size_t bytes, const RunOptions& options) override {
    const std::size_t count = bytes / sizeof(float);
    DeviceBuffer source(count * sizeof(float));
    DeviceBuffer target(count * sizeof(float));
    std::vector<float> pattern(count);
    for (std::size_t i = 0; i < count; ++i) pattern[i] = static_cast<float>(i % 65521);
    source.upload(pattern);
    const auto launch = [&] {
      cuda_check(cudaMemcpyAsync(target.get(), source.get(), count * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync");
    };
    const double time_s =
        timed("device-to-device copy of " + std::to_string(count * sizeof(float)) + " bytes",
              options, launch);
    const std::vector<float> out = target.download<float>(count);
    long long wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += out[i] != pattern[i] ? 1 : 0;
    return {time_s, wrong};
  }

 private:
  void start(Collective collective, const GroupMembership& group, ncclComm_t comm, const void* send,
             void* recv, const BufferCounts& counts) {
    switch (collective) {
      case Collective::all_reduce:
        nccl_check(ncclAllReduce(send, recv, counts.send, ncclFloat, ncclSum, comm, stream_),
                   "ncclAllReduce");
        return;
      case Collective::reduce_scatter:
        nccl_check(ncclReduceScatter(send, recv, counts.recv, ncclFloat, ncclSum, comm, stream_),
                   "ncclReduceScatter");
        return;
      case Collective::all_gather:
        nccl_check(ncclAllGather(send, recv, counts.send, ncclFloat, comm, stream_),
                   "ncclAllGather");
        return;
      case Collective::all_to_all: {
        // As nccl-tests' alltoall_perf: grouped ncclSend/ncclRecv of count / n to every peer.
        const std::size_t chunk = counts.send / static_cast<std::size_t>(group.size());
        const auto* from = static_cast<const float*>(send);
        auto* to = static_cast<float*>(recv);
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int peer = 0; peer < group.size(); ++peer) {
          const std::size_t at = static_cast<std::size_t>(peer) * chunk;
          nccl_check(ncclSend(from + at, chunk, ncclFloat, peer, comm, stream_), "ncclSend");
          nccl_check(ncclRecv(to + at, chunk, ncclFloat, peer, comm, stream_), "ncclRecv");
        }
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
        return;
      }
      case Collective::send_recv:
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        nccl_check(ncclSend(send, counts.send, ncclFloat, group.next(), comm, stream_), "ncclSend");
        nccl_check(ncclRecv(recv, counts.recv, ncclFloat, group.prev(), comm, stream_), "ncclRecv");
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
        return;
      default:
        throw std::invalid_argument(std::string("validate does not run ") + to_string(collective));
    }
  }

  /// Polls the stream until idle; on the deadline aborts the communicator, then the job.
  void wait(ncclComm_t comm, const std::string& what, double timeout_s) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream_);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) cuda_check(state, what.c_str());
      if (comm != nullptr) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) nccl_check(async, what.c_str());
      }
      if (std::chrono::steady_clock::now() > deadline) {
        if (comm != nullptr) ncclCommAbort(comm);
        comms_.clear();  // aborted: not to be destroyed
        abort_hung(what, timeout_s);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  /// Runs `launch` back to back for kGemmSustainS seconds (whatever --warmup says), so that
  /// the timed runs see the clock the board holds at its power limit, as a training step does,
  /// not the idle boost clock. Launches go in batches of about kSustainBatchS of GPU work, one
  /// wait (bounded by --timeout-s) after each.
  template <typename Launch>
  void sustain(const std::string& what, const RunOptions& options, const Launch& launch) {
    using Clock = std::chrono::steady_clock;
    const auto since = [](Clock::time_point from) {
      return std::chrono::duration<double>(Clock::now() - from).count();
    };
    const auto begin = Clock::now();
    double batch = 1.0;
    while (since(begin) < kGemmSustainS) {
      const auto start = Clock::now();
      for (int i = 0; i < static_cast<int>(batch); ++i) launch();
      wait(nullptr, what, options.timeout_s);
      batch = std::clamp(batch * kSustainBatchS / std::max(since(start), 1e-6), 1.0, 4096.0);
    }
  }

  /// A GEMM's protocol, its timing operands in place: sustained, timed, then `fill_pattern`
  /// and one run for the check (its output is read after this returns).
  template <typename Launch, typename Fill>
  double timed_then_checked(const std::string& what, const RunOptions& options,
                            const Launch& launch, const Fill& fill_pattern) {
    sustain(what, options, launch);
    const double time_s = timed(what, options, launch);
    fill_pattern();
    launch();
    wait(nullptr, what, options.timeout_s);
    return time_s;
  }

  /// Warm-up launches, then the mean time of the timed ones (CUDA events on the stream).
  template <typename Launch>
  double timed(const std::string& what, const RunOptions& options, const Launch& launch) {
    for (int i = 0; i < options.warmup; ++i) launch();
    wait(nullptr, what, options.timeout_s);
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    for (int i = 0; i < options.iters; ++i) launch();
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    wait(nullptr, what, options.timeout_s);
    return elapsed_s() / options.iters;
  }

  [[nodiscard]] double elapsed_s() const {
    float ms = 0.0f;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

  int world_rank_ = 0;
  int world_size_ = 1;
  int device_ = 0;
  cudaDeviceProp prop_{};
  ncclComm_t world_ = nullptr;
  std::map<GroupKind, ncclComm_t> comms_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::unique_ptr<LtContext> lt_;  ///< made at the first FP8 GEMM
};

}  // namespace

bool cuda_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace trident
