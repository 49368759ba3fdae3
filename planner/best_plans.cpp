// The best N plans of a search; see best_plans.h.
#include "planner/best_plans.h"

#include <algorithm>
#include <utility>

namespace trident {

void BestPlans::offer(const PlanResult& plan) {
  if (limit_ == 0) return;
  const auto less = [this](std::size_t a, std::size_t b) { return index_less(a, b); };
  if (heap_.size() == limit_) {
    if (!less_(plan, plans_[heap_.front()])) return;
    std::pop_heap(heap_.begin(), heap_.end(), less);
    plans_[heap_.back()] = plan;  // the worst kept's slot takes the newcomer
  } else {
    heap_.push_back(plans_.size());
    plans_.push_back(plan);
  }
  std::push_heap(heap_.begin(), heap_.end(), less);
}

std::vector<PlanResult> BestPlans::take() {
  const auto less = [this](std::size_t a, std::size_t b) { return index_less(a, b); };
  std::sort_heap(heap_.begin(), heap_.end(), less);
  // Position k takes plans_[heap_[k]]: the permutation applied in place, cycle by cycle
  // (a copy would hold every plan twice), each position marked done by heap_[k] = k.
  for (std::size_t k = 0; k < heap_.size(); ++k) {
    if (heap_[k] == k) continue;
    const PlanResult first = plans_[k];
    std::size_t at = k;
    while (heap_[at] != k) {
      const std::size_t from = heap_[at];
      plans_[at] = plans_[from];
      heap_[at] = at;
      at = from;
    }
    plans_[at] = first;
    heap_[at] = at;
  }
  heap_.clear();
  std::vector<PlanResult> sorted = std::move(plans_);
  plans_.clear();
  return sorted;
}

}  // namespace trident
