// The best N plans of a search under an order, kept as they arrive.
#pragma once

#include <cstddef>
#include <vector>

#include "planner/search.h"

namespace trident {

/// Keeps the best `limit` plans offered under `less` (a strict weak order, better first).
/// Each plan is stored once, where it arrived; a heap of indices whose front is the worst
/// kept orders them, so a plan entering moves O(log limit) indices, not plans. A plan is
/// about 4 KB (sizeof(PlanResult), 2026-12-08): the heap of plans this replaced moved ~70 KB
/// a plan at 134,635 kept, 3.5 of the 8.5 s of a DeepSeek-V3 search on 2,048 B200s with
/// --top 100000000 (docs/hardening.md, round 34).
class BestPlans {
 public:
  using Less = bool (*)(const PlanResult&, const PlanResult&);

  BestPlans(std::size_t limit, Less less) : limit_(limit), less_(less) {}

  /// Keeps `plan` if fewer than `limit` are kept or it is better than the worst kept (which
  /// it then replaces).
  void offer(const PlanResult& plan);

  /// The plans kept, best first; leaves none kept.
  [[nodiscard]] std::vector<PlanResult> take();

  [[nodiscard]] std::size_t size() const { return heap_.size(); }

 private:
  [[nodiscard]] bool index_less(std::size_t a, std::size_t b) const {
    return less_(plans_[a], plans_[b]);
  }

  std::vector<PlanResult> plans_;
  std::vector<std::size_t> heap_;  ///< indices into plans_, a max-heap under less_
  std::size_t limit_;
  Less less_;
};

}  // namespace trident
