// The CPU backend: MPI collectives on host buffers (non-blocking, polled with a deadline) and
// OpenBLAS sgemm. What it measures is the CPU cluster's (or loopback's) MPI and BLAS, in fp32.
#include <cblas.h>

#include <fstream>
#include <map>
#include <stdexcept>

#include "validate/backend.h"
#include "validate/mpi_util.h"
#include "validate/patterns.h"

namespace trident {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) {
        return "cpu: " + line.substr(colon + 2);
      }
    }
  }
  return "cpu";
}

class MpiBackend final : public Backend {
 public:
  ~MpiBackend() override {
    for (auto& [kind, comm] : comms_) MPI_Comm_free(&comm);
  }
  [[nodiscard]] std::string name() const override { return "mpi"; }
  [[nodiscard]] std::string device_name() const override { return cpu_model(); }
  [[nodiscard]] std::string nccl_version() const override { return ""; }

  void create_group(const GroupMembership& group) override {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, group.color, group.group_rank, &comm);
    comms_[group.kind] = comm;
  }

  [[nodiscard]] RunResult run_collective(const GroupMembership& group, Collective collective,
                                         std::size_t count, const RunOptions& options) override {
    const MPI_Comm comm = comms_.at(group.kind);
    const int n = group.size();
    const std::vector<float> send = input_pattern(collective, n, group.group_rank, count);
    std::vector<float> recv(buffer_counts(collective, n, count).recv, -1.0f);
    const std::string what = group.describe() + " " + to_string(collective) + " of " +
                             std::to_string(count * sizeof(float)) + " bytes";
    const auto once = [&] {
      MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      const int used = start(collective, group, comm, send, recv, requests);
      wait_all(used, requests, options.timeout_s, what);
    };
    for (int i = 0; i < options.warmup; ++i) once();
    MPI_Request barrier = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm, &barrier);
    wait_all(1, &barrier, options.timeout_s, group.describe() + " barrier");
    std::fill(recv.begin(), recv.end(), -1.0f);
    const double start_s = MPI_Wtime();
    for (int i = 0; i < options.iters; ++i) once();
    const double time_s = (MPI_Wtime() - start_s) / options.iters;
    return {time_s, count_wrong(collective, n, group.group_rank, group.prev(), count, recv)};
  }

  [[nodiscard]] Dtype gemm_dtype(Dtype) const override { return Dtype::fp32; }

  [[nodiscard]] RunResult run_gemm(long long m, long long n, long long k, Dtype,
                                   const RunOptions& options) override {
    std::vector<float> a(static_cast<std::size_t>(m * k));
    std::vector<float> b(static_cast<std::size_t>(k * n));
    std::vector<float> c(static_cast<std::size_t>(m * n), -1.0f);
    for (long long p = 0; p < k; ++p) {
      for (long long i = 0; i < m; ++i) a[static_cast<std::size_t>(i + p * m)] = gemm_a(i);
    }
    for (long long j = 0; j < n; ++j) {
      for (long long p = 0; p < k; ++p) b[static_cast<std::size_t>(p + j * k)] = gemm_b(j);
    }
    const auto once = [&] {
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(), static_cast<int>(m),
                  b.data(), static_cast<int>(k), 0.0f, c.data(), static_cast<int>(m));
    };
    for (int i = 0; i < options.warmup; ++i) once();
    std::fill(c.begin(), c.end(), -1.0f);
    const double start_s = MPI_Wtime();
    for (int i = 0; i < options.iters; ++i) once();
    const double time_s = (MPI_Wtime() - start_s) / options.iters;
    return {time_s, count_wrong_gemm(c, m, n, k, 1e-6)};
  }

 private:
  /// Starts one collective; returns how many requests it uses.
  static int start(Collective collective, const GroupMembership& group, MPI_Comm comm,
                   const std::vector<float>& send, std::vector<float>& recv,
                   MPI_Request* requests) {
    const int send_count = static_cast<int>(send.size());
    const int recv_count = static_cast<int>(recv.size());
    switch (collective) {
      case Collective::all_reduce:
        MPI_Iallreduce(send.data(), recv.data(), send_count, MPI_FLOAT, MPI_SUM, comm,
                       &requests[0]);
        return 1;
      case Collective::reduce_scatter:
        MPI_Ireduce_scatter_block(send.data(), recv.data(), recv_count, MPI_FLOAT, MPI_SUM, comm,
                                  &requests[0]);
        return 1;
      case Collective::all_gather:
        MPI_Iallgather(send.data(), send_count, MPI_FLOAT, recv.data(), send_count, MPI_FLOAT, comm,
                       &requests[0]);
        return 1;
      case Collective::all_to_all:
        MPI_Ialltoall(send.data(), send_count / group.size(), MPI_FLOAT, recv.data(),
                      recv_count / group.size(), MPI_FLOAT, comm, &requests[0]);
        return 1;
      case Collective::send_recv:
        MPI_Irecv(recv.data(), recv_count, MPI_FLOAT, group.prev(), 0, comm, &requests[0]);
        MPI_Isend(send.data(), send_count, MPI_FLOAT, group.next(), 0, comm, &requests[1]);
        return 2;
      default:
        throw std::invalid_argument(std::string("validate does not run ") + to_string(collective));
    }
  }

  std::map<GroupKind, MPI_Comm> comms_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }

}  // namespace trident
