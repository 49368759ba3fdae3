// planner/splits: the splits a search walks: TP x PP x DP x CP x EP within the model's shape,
// the batch and the pins, and the sequence-parallel rule (search: test_planner.cpp).
#include <catch2/catch.hpp>

#include "costmodel/model_loader.h"
#include "costmodel/stack.h"
#include "planner/option_check.h"
#include "planner/search.h"
#include "planner/splits.h"
#include "planner_fixture.h"

using namespace trident;

using test::dgx;
using test::keep_all;
using test::tiny;

TEST_CASE("divisors are sorted and complete", "[planner]") {
  CHECK(divisors(12) == std::vector<int>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(1) == std::vector<int>{1});
  CHECK(divisors(49) == std::vector<int>{1, 7, 49});
}

TEST_CASE("has_split: the search's enumeration without a search", "[planner]") {
  // tiny(): 4 heads (2 KV), 4 layers, global batch 8. 8 GPUs: TP 1, 2 x PP x DP | 8.
  CHECK(has_split(8, tiny(), {}));
  // 7 GPUs: TP 1 (7 does not divide by 2); PP 7 > 4 layers, PP 1 leaves DP 7, not a divisor
  // of 8: nothing. search() agrees.
  CHECK_FALSE(has_split(7, tiny(), {}));
  CHECK_THROWS_AS(search(dgx(1, 7), tiny(), {}), NoSplitError);
  CHECK_FALSE(has_split(0, tiny(), {}));
  SearchOptions pinned;
  pinned.tp = 2;
  CHECK(has_split(2, tiny(), pinned));
  CHECK_FALSE(has_split(1, tiny(), pinned));  // 1 GPU cannot hold TP 2
}

TEST_CASE("TP divides the FFN widths the column-parallel layers split", "[planner]") {
  // tiny(): 4 heads, 2 KV heads: TP 1 or 2 by the heads. ffn_hidden 255 is odd: TP 2 cannot
  // split fc1's 255 columns (Megatron divide() asserts), so TP 1 only.
  Model odd = tiny();
  odd.ffn_hidden = 255;
  for (const Split& s : splits(8, odd, {})) CHECK(s.tp == 1);
  CHECK_FALSE(splits(8, tiny(), {}).empty());
  bool tp2 = false;
  for (const Split& s : splits(8, tiny(), {})) tp2 = tp2 || s.tp == 2;
  CHECK(tp2);  // 256 / 2
  SearchOptions pinned;
  pinned.tp = 2;
  CHECK_FALSE(has_split(8, odd, pinned));
  // A --tp pin that does not divide the FFN is refused as a pin, before any search.
  const auto problem = find_option_problem(odd, pinned);
  REQUIRE(problem);
  CHECK(problem->issue == OptionIssue::not_dividing_heads);
  // --min-tp above the largest TP the shape takes (gcd(4, 2, 256) = 2): refused as a limit.
  SearchOptions at_least;
  at_least.min_tp = 4;
  const auto too_large = find_option_problem(tiny(), at_least);
  REQUIRE(too_large);
  CHECK(too_large->issue == OptionIssue::above_largest_tp);
  CHECK(too_large->limit == 2);
}

TEST_CASE("the FFN width TP splits: dense FFNs, or an all-MoE model's shared experts", "[splits]") {
  // A dense model: ffn_hidden (tiny(): 256).
  Model model = tiny();  // 4 heads, 2 KV heads
  CHECK(tp_split_ffn_width(model) == 256);
  // Every layer MoE, no shared expert: the routed experts run at expert TP 1, no FFN is split
  // over TP, and an odd ffn_hidden (unused) rules out nothing: gcd(4, 2) = 2.
  model.ffn_hidden = 255;
  model.moe.experts = 8;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 128;
  REQUIRE(model.moe_layers() == model.layers);
  CHECK(tp_split_ffn_width(model) == 0);
  CHECK(largest_tp(model) == 2);
  // One shared expert of 128: it is column-parallel over TP, gcd(4, 2, 128) = 2.
  model.moe.shared_experts = 1;
  CHECK(tp_split_ffn_width(model) == 128);
  // Dense layers beside MoE ones (DeepSeek-V3's first three): both widths, gcd(18432, 2048).
  const Model dsv3 = model_preset("deepseek-v3");
  CHECK(tp_split_ffn_width(dsv3) == 2048);
}

TEST_CASE("sequence parallelism only where TP x CP divides the sequence", "[planner]") {
  // seq_len 30 over TP 2: 15 tokens a rank, but 30 % (2 x 1) = 0 runs; seq_len 31 does not.
  Model model = tiny();
  model.seq_len = 31;
  CHECK_FALSE(sp_divides_sequence(model, 2, 1));
  model.seq_len = 30;
  CHECK(sp_divides_sequence(model, 2, 1));
  CHECK_FALSE(sp_divides_sequence(model, 4, 2));  // 30 % 8
  // With SP optional (megatron-core), seq_len 31 keeps TP 2 with SP off only.
  model.seq_len = 31;
  SearchOptions options = keep_all();
  options.stack = stack_preset("megatron-core");
  options.tp = 2;
  const SearchResult result = search(dgx(1), model, options);
  REQUIRE_FALSE(result.plans.empty());
  for (const auto& plan : result.plans) CHECK_FALSE(plan.config.sequence_parallel);
  // SP pinned on (or a stack that always shards the sequence): TP 2 is no split at all.
  options.sequence_parallel = true;
  CHECK(sp_required(model, options, 2));
  CHECK_FALSE(sp_required(model, options, 1));
  try {
    (void)search(dgx(1), model, options);
    FAIL("expected NoSplitError");
  } catch (const NoSplitError& e) {
    CHECK(e.rules().sp_seq_len == 31);
  }
}

TEST_CASE("pinned_gpus: the GPUs the pinned TP x PP x DP (x CP) take", "[splits]") {
  SearchOptions o;
  CHECK_FALSE(pinned_gpus(o).has_value());  // nothing pinned
  o.tp = 8;
  o.pp = 4;
  CHECK_FALSE(pinned_gpus(o).has_value());  // DP free: the search fills it
  o.dp = 16;
  CHECK(pinned_gpus(o) == 8 * 4 * 16);  // 512; a free CP counts as 1
  o.cp = 2;
  CHECK(pinned_gpus(o) == 1024);
  // Four pins of 2^30 are 2^120 GPUs: saturated, not wrapped.
  o.tp = o.pp = o.dp = o.cp = 1 << 30;
  CHECK(pinned_gpus(o) == kPinnedGpusOverflow);
}
