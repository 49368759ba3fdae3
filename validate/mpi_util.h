#pragma once
/// MPI for validate: the session (initialised only by `trident validate`), world reductions
/// with a deadline, and the abort that ends a hung job.
#include <mpi.h>

#include <string>

namespace trident {

/// MPI_Init on construction (when not yet initialised), MPI_Finalize on destruction.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

/// Prints "trident: error: <what> did not finish within S s (<limit>); aborting" and
/// MPI_Aborts the job with exit code 1. `limit` names the flag the wait came from.
[[noreturn]] void abort_hung(const std::string& what, double timeout_s,
                             const char* limit = "--timeout-s");

/// Polls `count` requests until all complete; aborts the job (abort_hung) after `timeout_s`.
void wait_all(int count, MPI_Request* requests, double timeout_s, const std::string& what,
              const char* limit = "--timeout-s");

/// Max / sum over all ranks. Every rank waits in them, so a rank hung in a group collective
/// holds them up too: they wait twice `timeout_s`, so that the hung rank's own group partner,
/// whose wait began no later, names the group first (docs/hardening.md, validate under faults).
[[nodiscard]] double world_max(double value, double timeout_s);
[[nodiscard]] long long world_sum(long long value, double timeout_s);
void world_barrier(double timeout_s);

}  // namespace trident
