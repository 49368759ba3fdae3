// Non-blocking MPI plus MPI_Testall polling: no wait can outlive its deadline.
#include "validate/mpi_util.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace trident {

MpiSession::MpiSession() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
      throw std::runtime_error("MPI_Init failed");
    }
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

void abort_hung(const std::string& what, double timeout_s, const char* limit) {
  std::fprintf(stderr,
               "trident: error: validate: %s did not finish within %g s (%s); aborting the job\n",
               what.c_str(), timeout_s, limit);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void wait_all(int count, MPI_Request* requests, double timeout_s, const std::string& what,
              const char* limit) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (int spins = 0;; ++spins) {
    int done = 0;
    MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline) abort_hung(what, timeout_s, limit);
    if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

namespace {

/// The world-wide waits' limit: twice the group collectives' (world_max's comment).
constexpr double kWorldWaitFactor = 2.0;
constexpr const char* kWorldLimit = "twice --timeout-s";

}  // namespace

double world_max(double value, double timeout_s) {
  double out = 0.0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &request);
  wait_all(1, &request, kWorldWaitFactor * timeout_s, "the world max-reduction of times",
           kWorldLimit);
  return out;
}

long long world_sum(long long value, double timeout_s) {
  long long out = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&value, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &request);
  wait_all(1, &request, kWorldWaitFactor * timeout_s, "the world sum of wrong elements",
           kWorldLimit);
  return out;
}

void world_barrier(double timeout_s) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  wait_all(1, &request, kWorldWaitFactor * timeout_s, "a world barrier", kWorldLimit);
}

}  // namespace trident
