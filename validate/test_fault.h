#pragma once
/// Testing only: faults `trident validate` can be told to inject (hidden flags --test-die-rank
/// and --test-hang-rank, docs/validate.md), so tests can check that the other ranks exit with
/// a clear error within --timeout-s instead of hanging. Never used in a real run.
#include <memory>

#include "validate/backend.h"

namespace trident {

enum class TestFaultKind { none, die, hang };

struct TestFault {
  TestFaultKind kind = TestFaultKind::none;
  int rank = -1;          ///< world rank that fails
  int after_calls = 1;    ///< collectives it completes first (so the failure is mid-run)
  double hang_s = 600.0;  ///< hang: how long it stops answering before it exits
};

/// `inner` unchanged when the fault is none or targets another rank; else a Backend that
/// forwards to `inner` and, on rank `fault.rank`, after `fault.after_calls` collectives:
/// die -> prints "trident: test fault: rank R dies" and _exit(3)s without MPI_Finalize;
/// hang -> prints "... rank R hangs", stops taking part for hang_s, then _exit(3)s.
[[nodiscard]] std::unique_ptr<Backend> with_test_fault(std::unique_ptr<Backend> inner,
                                                       const TestFault& fault, int world_rank);

}  // namespace trident
