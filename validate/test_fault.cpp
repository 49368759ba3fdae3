#include "validate/test_fault.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace trident {
namespace {

/// Forwards everything to the wrapped backend; fails at the chosen collective.
class FaultyBackend final : public Backend {
 public:
  FaultyBackend(std::unique_ptr<Backend> inner, const TestFault& fault)
      : inner_(std::move(inner)), fault_(fault) {}

  [[nodiscard]] std::string name() const override { return inner_->name(); }
  [[nodiscard]] std::string device_name() const override { return inner_->device_name(); }
  [[nodiscard]] std::string nccl_version() const override { return inner_->nccl_version(); }
  void create_group(const GroupMembership& group) override { inner_->create_group(group); }
  [[nodiscard]] RunResult run_collective(const GroupMembership& group, Collective collective,
                                         std::size_t count, const RunOptions& options) override {
    if (calls_++ == fault_.after_calls) fail(group);
    return inner_->run_collective(group, collective, count, options);
  }
  [[nodiscard]] Dtype gemm_dtype(Dtype planned) const override {
    return inner_->gemm_dtype(planned);
  }
  [[nodiscard]] RunResult run_gemm(long long m, long long n, long long k, Dtype dtype,
                                   const RunOptions& options) override {
    return inner_->run_gemm(m, n, k, dtype, options);
  }
  [[nodiscard]] std::string gemm_note(Dtype planned) const override {
    return inner_->gemm_note(planned);
  }
  [[nodiscard]] RunResult run_memory_copy(std::size_t bytes, const RunOptions& options) override {
    return inner_->run_memory_copy(bytes, options);
  }

 private:
  [[noreturn]] void fail(const GroupMembership& group) const {
    const bool die = fault_.kind == TestFaultKind::die;
    std::fprintf(stderr, "trident: test fault: rank %d %s in %s\n", fault_.rank,
                 die ? "dies" : "hangs", group.describe().c_str());
    std::fflush(stderr);
    if (!die) std::this_thread::sleep_for(std::chrono::duration<double>(fault_.hang_s));
    _exit(3);  // no MPI_Finalize, no destructors: as a crashed rank leaves
  }

  std::unique_ptr<Backend> inner_;
  TestFault fault_;
  int calls_ = 0;
};

}  // namespace

std::unique_ptr<Backend> with_test_fault(std::unique_ptr<Backend> inner, const TestFault& fault,
                                         int world_rank) {
  if (fault.kind == TestFaultKind::none || fault.rank != world_rank) return inner;
  return std::make_unique<FaultyBackend>(std::move(inner), fault);
}

}  // namespace trident
