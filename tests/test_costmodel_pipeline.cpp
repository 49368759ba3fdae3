// Pipeline bubble formula and the simulated 1F1B / interleaved schedules agree.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "costmodel/pipeline.h"
#include "costmodel_fixture.h"

using namespace trident;
using test::pipelined;

TEST_CASE("bubble fraction (p-1)/(v*m)", "[pipeline]") {
  CHECK(bubble_fraction(4, 1, 8) == Approx(3.0 / 8));
  CHECK(bubble_fraction(4, 2, 8) == Approx(3.0 / 16));
  CHECK(bubble_fraction(1, 1, 8) == 0.0);
}

TEST_CASE("1F1B schedule: makespan (m + p - 1)(t_f + t_b)", "[pipeline]") {
  // p 4, m 8, t_f 1, t_b 2: ideal 8 * 3 = 24, bubble 3/8 of it = 9 -> 33.
  const auto blocks = schedule_1f1b(4, 8, 1, 1.0, 2.0);
  CHECK(blocks.size() == std::size_t{64});  // 2 x 4 x 8
  CHECK(schedule_makespan_s(blocks) == Approx(33.0));
  CHECK(schedule_makespan_s(blocks) == Approx(8 * 3.0 * (1 + bubble_fraction(4, 1, 8))));
  // stage 0 starts with p - 1 = 3 warm-up forwards, then alternates
  CHECK(blocks[0].stage == 0);
  CHECK(blocks[3].is_forward);
  CHECK_FALSE(blocks[4].is_forward);
}

TEST_CASE("interleaved schedule: the bubble shrinks by v", "[pipeline]") {
  for (const int v : {2, 4}) {
    for (const int m : {4, 8, 16}) {
      const auto blocks = schedule_1f1b(4, m, v, 1.0, 2.0);
      CHECK(blocks.size() == static_cast<std::size_t>(2 * 4 * m * v));
      // (m + (p-1)/v) * (t_f + t_b)
      CHECK(schedule_makespan_s(blocks) == Approx(m * 3.0 * (1 + bubble_fraction(4, v, m))));
    }
  }
}

TEST_CASE("overlapped p2p in the interleaved schedule: micro-batch 0's round trip", "[pipeline]") {
  // p 2, v 2, m 4, t_f 1, t_b 2, each transfer 0.01 s. Micro-batch 0 runs chunk 0 on stage 0,
  // chunk 0 on stage 1, chunk 1 on stage 0, chunk 1 on stage 1 (3 hops), then its backward
  // back the same way (3 hops): the schedule has no slack on that chain, so the step grows by
  // 6 x 0.01 = 0.06 s = 2(p*v - 1) hops. A chunk's forward (1/2 s) is far longer than a hop,
  // so the steady state hides every other transfer.
  const double without = schedule_makespan_s(schedule_1f1b(2, 4, 2, 1.0, 2.0));
  const double with = schedule_makespan_s(schedule_1f1b(2, 4, 2, 1.0, 2.0, 0.01));
  CHECK(with - without == Approx(0.06));
  CHECK(interleaved_p2p_exposed_s(2, 2, 4, 0.01, 1.0, 2.0) == Approx(0.06));
  // One stage, no chunk, no micro-batch, no (or a nonsensical) hop: nothing exposed.
  CHECK(interleaved_p2p_exposed_s(1, 2, 4, 0.01, 1.0, 2.0) == 0.0);
  CHECK(interleaved_p2p_exposed_s(2, 0, 4, 0.01, 1.0, 2.0) == 0.0);
  CHECK(interleaved_p2p_exposed_s(2, 2, 0, 0.01, 1.0, 2.0) == 0.0);
  CHECK(interleaved_p2p_exposed_s(2, 2, 4, -1.0, 1.0, 2.0) == 0.0);
  CHECK(interleaved_p2p_exposed_s(2, 2, 4, std::nan(""), 1.0, 2.0) == 0.0);
  // A negative or NaN hop is no hop for the simulator either (it used to read as "not run").
  CHECK(schedule_1f1b(4, 8, 2, 1.0, 2.0, -5.0).size() == std::size_t{128});
  CHECK(schedule_makespan_s(schedule_1f1b(4, 8, 2, 1.0, 2.0, std::nan(""))) ==
        Approx(schedule_makespan_s(schedule_1f1b(4, 8, 2, 1.0, 2.0))));
}

TEST_CASE("overlapped p2p: the closed form is the simulated schedule's", "[pipeline][invariant]") {
  // Below the threshold (a hop shorter than a chunk's slack, min(t_f, t_b) / v) the formula is
  // the simulation exactly, backward shorter than forward included; above it, within
  // -16%..+80% (docs/cost_model.md#pipeline-p2p), up to ten times the slack and m = 16p.
  for (const int p : {2, 3, 4, 8}) {
    for (const int v : {2, 3, 4}) {
      for (const int k : {1, 2, 4, 16}) {
        for (const double t_bwd : {0.5, 1.0, 2.0}) {
          for (const double hops : {0.01, 0.5, 0.99, 1.5, 3.0, 10.0}) {
            const int m = k * p;
            const double slack = std::min(1.0, t_bwd) / v;
            const double hop = hops * slack;
            const double simulated = schedule_makespan_s(schedule_1f1b(p, m, v, 1.0, t_bwd, hop)) -
                                     schedule_makespan_s(schedule_1f1b(p, m, v, 1.0, t_bwd));
            const double formula = interleaved_p2p_exposed_s(p, v, m, hop, 1.0, t_bwd);
            INFO("p " << p << " v " << v << " m " << m << " t_bwd " << t_bwd << " hop " << hop);
            if (hops < 1.0) {
              CHECK(formula == Approx(simulated).epsilon(1e-9));
            } else {
              CHECK(formula >= 0.84 * simulated);
              CHECK(formula <= 1.8 * simulated);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("DeepSpeed's TrainSchedule: 1F1B's makespan, four blocking transfers a micro-batch",
          "[pipeline]") {
  // Without transfer time the deferred sends keep 1F1B's dependencies: (m + p - 1)(t_f + t_b),
  // here (8 + 4 - 1) x 3 = 33, the same as schedule_1f1b.
  CHECK(deepspeed_schedule_makespan_s(4, 8, 1.0, 2.0, 0.0) == Approx(33.0));
  CHECK(deepspeed_schedule_makespan_s(4, 8, 1.0, 2.0, 0.0) ==
        Approx(schedule_makespan_s(schedule_1f1b(4, 8, 1, 1.0, 2.0))));
  // Two stages: stage 0 sends each activation and receives each gradient, two blocking calls
  // per micro-batch, each holding both stages: 2m = 16 transfers of 0.01 s -> +0.16 s.
  CHECK(deepspeed_schedule_makespan_s(2, 8, 1.0, 2.0, 0.01) - (8 + 1) * 3.0 == Approx(0.16));
  CHECK(deepspeed_p2p_exposed_transfers(2, 8) == 16.0);
  // One micro-batch over 3 stages: its activation goes 0 -> 1 -> 2 and its gradient back,
  // 4 = 2(p - 1) transfers in a row: (1 + 2) x 3 + 4 x 0.01.
  CHECK(deepspeed_schedule_makespan_s(3, 1, 1.0, 2.0, 0.01) == Approx(9.04));
  CHECK(deepspeed_p2p_exposed_transfers(3, 1) == 4.0);
  // Nothing to run.
  CHECK(deepspeed_schedule_makespan_s(0, 8, 1.0, 2.0, 0.01) == 0.0);
  CHECK(deepspeed_schedule_makespan_s(4, 0, 1.0, 2.0, 0.01) == 0.0);
  CHECK(deepspeed_p2p_exposed_transfers(4, 0) == 0.0);
  CHECK(deepspeed_schedule_makespan_s(4, 8, 1.0, 2.0, -1.0) == Approx(33.0));
  // A middle stage receives and sends each activation and each gradient: 4 calls per
  // micro-batch, where Megatron batches a send with a receive (2); m from 1 to 4p.
  for (const int p : {2, 3, 4, 5, 8, 12}) {
    for (const int m : {1, 2, p - 1, p, p + 1, 2 * p, 4 * p}) {
      for (const double t_bwd : {2.0, 3.0}) {
        if (m < 1) continue;
        const double base = (m + p - 1) * (1.0 + t_bwd);
        const double hop = 0.01;
        INFO("p " << p << " m " << m << " t_bwd " << t_bwd);
        CHECK(deepspeed_schedule_makespan_s(p, m, 1.0, t_bwd, 0.0) == Approx(base));
        CHECK((deepspeed_schedule_makespan_s(p, m, 1.0, t_bwd, hop) - base) / hop ==
              Approx(deepspeed_p2p_exposed_transfers(p, m)));
      }
    }
  }
}

TEST_CASE("interleaving never increases the bubble", "[pipeline][invariant]") {
  for (int p = 2; p <= 8; p *= 2) {
    double previous = schedule_makespan_s(schedule_1f1b(p, 2 * p, 1, 1.0, 2.0));
    for (int v = 2; v <= 4; ++v) {
      const double makespan = schedule_makespan_s(schedule_1f1b(p, 2 * p, v, 1.0, 2.0));
      CHECK(makespan <= previous + 1e-9);
      previous = makespan;
    }
  }
}

TEST_CASE("multi-token prediction layers sit on the last stage", "[pipeline]") {
  // DeepSeek-V3: 61 layers over PP 8 split 7 | 8 x 6 | 6 (NeMo's perf script: first 64/p - 1,
  // last 64/p - 2), then the MTP layer on the last stage: 7 | 8 | 7.
  Model model;
  model.layers = 61;
  model.mtp_layers = 1;
  const StageLayers eight = model_stage_layers(model, pipelined(8));
  CHECK(eight.first == 7);
  CHECK(eight.middle == 8);
  CHECK(eight.last == 7);
  // One stage holds all 61 and the MTP layer.
  const StageLayers one = model_stage_layers(model, pipelined(1));
  CHECK(one.first == 62);
  CHECK(one.last == 62);
  model.mtp_layers = 0;
  CHECK(model_stage_layers(model, pipelined(8)).last == 6);
  // The largest chunk: 61 over 8 with VP 2 is 8 / 2 = 4. 30 layers + 2 MTP over PP 4 (ceil 8,
  // 2 short: 7 | 8 8 | 7 + 2 = 9 on the last) in 2 chunks: ceil(9 / 2) = 5 (chunks 5 and 4).
  CHECK(model_chunk_layers(model, pipelined(8, 2)) == 4);
  model.layers = 30;
  model.mtp_layers = 2;
  CHECK(model_stage_layers(model, pipelined(4)).last == 9);
  CHECK(model_chunk_layers(model, pipelined(4, 2)) == 5);
}

TEST_CASE("the fill and drain cross the other stages: fill_drain_ratio", "[pipeline]") {
  // p 2, m 2, stage 0 forward 1 + backward 2 = 3, stage 1 (the output layer's) forward 2 +
  // backward 4 = 6. By hand, 1F1B: stage 1 runs F0 [1,3] B0 [3,7] F1 [7,9] B1 [9,13], stage 0
  // B1 [13,15]: makespan 15 = m x 6 + (p - 1) x 3, not (m + p - 1) x 6 = 18. The cost model's
  // bubble (p-1)/(v*m) x ideal x ratio = 1/2 x 12 x 0.5 = 3 on the ideal 12 gives the 15.
  CHECK(fill_drain_ratio(2, 3.0, 0.0, 0.0, 6.0) == Approx(0.5));
  CHECK(2 * 6.0 + bubble_fraction(2, 1, 2) * (2 * 6.0) * fill_drain_ratio(2, 3.0, 0.0, 0.0, 6.0) ==
        Approx(15.0));
  // p 4: first 8, two middles 8 each, last 10 (the head): others 8 + 16 = 24 of 3 x 10.
  CHECK(fill_drain_ratio(4, 8.0, 8.0, 16.0, 10.0) == Approx(0.8));
  // Llama 3 405B over 16 stages, 7 | 8 x 14 | 7 layers, the head worth 0.65 of a layer: the
  // bottleneck is a middle stage (8); the others 7 + 13 x 8 + 7.65 = 118.65 of 15 x 8 = 120.
  CHECK(fill_drain_ratio(16, 7.0, 8.0, 14 * 8.0, 7.65) == Approx(118.65 / 120.0));
  CHECK(fill_drain_ratio(4, 5.0, 5.0, 10.0, 5.0) == Approx(1.0));  // equal stages
  CHECK(fill_drain_ratio(1, 1.0, 0.0, 0.0, 1.0) == 1.0);           // no pipeline
  CHECK(fill_drain_ratio(4, 0.0, 0.0, 0.0, 0.0) == 1.0);           // nothing timed
}

TEST_CASE("middle stages: how many hold the most layers", "[pipeline]") {
  // 126 over 16: 7 | 8 x 14 | 7, every middle full (112 = 14 x 8).
  StageLayers split = stage_layers(126, 16);
  CHECK(split.middle == 8);
  CHECK(middle_stages(126, 16, split).full == 14);
  CHECK(middle_stages(126, 16, split).fewer == 0);
  // 10 over 8: ceil 2, 6 short: one off the first, one off the last, 4 off middles:
  // 1 | 2 2 1 1 1 1 | 1 -> 2 middles of 2 and 4 of 1 (2 x 2 + 4 x 1 = 8 = 10 - 1 - 1).
  split = stage_layers(10, 8);
  CHECK(split.first == 1);
  CHECK(split.last == 1);
  CHECK(split.middle == 2);
  CHECK(middle_stages(10, 8, split).full == 2);
  CHECK(middle_stages(10, 8, split).fewer == 4);
  CHECK(middle_stages(10, 2, stage_layers(10, 2)).full == 0);  // no middle stage
  // A layer count at INT_MAX does not wrap: ceil((2^31 - 1) / 4) = 536870912, one short (4 x
  // 536870912 = 2^31), taken off the last: 536870912 | 536870912 x 2 | 536870911.
  split = stage_layers(2147483647, 4);
  CHECK(split.first == 536870912);
  CHECK(split.middle == 536870912);
  CHECK(split.last == 536870911);
}

TEST_CASE("a heavier last chunk: the simulated schedule is m x t_last + (p-1)/v x t_other",
          "[pipeline]") {
  // p 4, m 16; a stage of 8 layers of forward 1 + backward 2; the last stage's output layer
  // worth 2 more layers on its last chunk (forward 2, backward 4). t_other = 24, t_last = 30:
  // 16 x 30 + 3/v x 24 = 552, 516, 498 for v = 1, 2, 4 (a helper's independent simulation,
  // 2026-12-05, gave the same); the cost model's ideal 480 + (p-1)/(v*m) x 480 x 0.8.
  const double ratio = fill_drain_ratio(4, 24.0, 24.0, 48.0, 30.0);
  CHECK(ratio == Approx(0.8));
  for (const int v : {1, 2, 4}) {
    const double makespan =
        schedule_makespan_s(schedule_1f1b(4, 16, v, 8.0, 16.0, 0.0, ScheduleTail{2.0, 4.0}));
    CHECK(makespan == Approx(16 * 30.0 + 3.0 / v * 24.0));
    CHECK(makespan == Approx(480.0 * (1.0 + bubble_fraction(4, v, 16) * ratio)));
  }
}

TEST_CASE("ends-only splits: what torchtitan's first/last_stage_less_layers write", "[pipeline]") {
  // Even splits always: 32 over 4 is 8 x 4, any VP (its divisibility is the search's rule).
  CHECK(ends_only_split(32, 4, 1));
  CHECK(ends_only_split(32, 4, 8));
  // 126 over 16: 7 | 8 x 14 | 7. VP 2: chunks of 4, ends short by 1 <= 4; VP 8: chunks of 1,
  // short by 1 <= 1 (the end's first virtual stage holds none); VP 3 does not divide 8.
  CHECK(ends_only_split(126, 16, 1));
  CHECK(ends_only_split(126, 16, 2));
  CHECK(ends_only_split(126, 16, 8));
  CHECK_FALSE(ends_only_split(126, 16, 3));
  // 32 over 5: ceil 7, 3 short: 2 off the last, 1 off the first: 6 | 7 x 3 | 5. VP 7: chunks
  // of 1, the last short by 2 > 1: not writable; VP 1: the counts 7, 1, 2 write it.
  CHECK(ends_only_split(32, 5, 1));
  CHECK_FALSE(ends_only_split(32, 5, 7));
  // 10 over 8: 1 | 2 2 1 1 1 1 | 1 (above): middles differ, no VP writes it.
  CHECK_FALSE(ends_only_split(10, 8, 1));
  CHECK_FALSE(ends_only_split(10, 8, 2));
  // Two stages, no middle: 9 over 2 is 5 | 4; VP 5: chunks of 1, the last short by 1.
  CHECK(ends_only_split(9, 2, 5));
}

TEST_CASE("end stages set: the pinned split, its rules and the lighter ends searched",
          "[pipeline]") {
  // Pinned: 32 layers over 8 stages with ends 1 and 1: the 6 middle stages share 30, 5 each.
  ParallelConfig c = pipelined(8);
  c.first_stage_layers = 1;
  c.last_stage_layers = 1;
  const StageLayers pinned = stage_layers(32, c);
  CHECK(pinned.first == 1);
  CHECK(pinned.middle == 5);
  CHECK(pinned.last == 1);
  CHECK(pinned.most() == 5);
  CHECK_FALSE(pinned.even(8));
  CHECK(middle_stages(32, 8, pinned).full == 6);
  CHECK(middle_stages(32, 8, pinned).fewer == 0);
  // Unpinned (0, 0): the default split, 4 each.
  CHECK(stage_layers(32, pipelined(8)).most() == 4);
  // The model's MTP layers still go on the last stage; the chunk is the largest stage / VP.
  Model model;
  model.layers = 32;
  model.mtp_layers = 1;
  CHECK(model_stage_layers(model, c).last == 2);
  CHECK(model_chunk_layers(model, c) == 5);

  // Megatron-Core's rules (transformer_config.py L2295-2360 @d98e8a64).
  const bool equal = false;  // the middle stages hold one count (the first/last flags)
  CHECK(stage_ends_problem(32, 8, 1, 1, equal) == StageEndsProblem::ok);
  CHECK(stage_ends_problem(32, 1, 16, 16, equal) == StageEndsProblem::no_pipeline);
  CHECK(stage_ends_problem(32, 8, 0, 2, equal) == StageEndsProblem::empty_end);
  CHECK(stage_ends_problem(32, 2, 17, 16, equal) == StageEndsProblem::layers_left);  // 33 != 32
  CHECK(stage_ends_problem(32, 2, 17, 15, equal) == StageEndsProblem::ok);
  CHECK(stage_ends_problem(32, 8, 16, 16, equal) == StageEndsProblem::middle_empty);
  CHECK(stage_ends_problem(32, 8, 2, 1, equal) == StageEndsProblem::middles_unequal);  // 29 / 6
  // A layout runs middle stages of two counts: 29 over 6 is 5 x5 and 4; each must hold a
  // layer (32 - 14 - 13 = 5 over 6 leaves one empty).
  const bool layout = true;
  CHECK(stage_ends_problem(32, 8, 2, 1, layout) == StageEndsProblem::ok);
  CHECK(stage_ends_problem(32, 8, 14, 12, layout) == StageEndsProblem::ok);  // 6 over 6
  CHECK(stage_ends_problem(32, 8, 14, 13, layout) == StageEndsProblem::middle_empty);
  ParallelConfig unequal = pipelined(8);
  unequal.first_stage_layers = 2;
  unequal.last_stage_layers = 1;
  CHECK(stage_layers(32, unequal).middle == 5);  // ceil(29 / 6): the largest middle stage
  CHECK(middle_stages(32, 8, stage_layers(32, unequal)).full == 5);
  CHECK(middle_stages(32, 8, stage_layers(32, unequal)).fewer == 1);

  // Lighter ends: every middle stage ceil(L/p) + 1, the ends share the rest, the first the
  // larger half. 32 over 8: middles 5, ends 32 - 30 = 2 -> 1 | 5 x 6 | 1.
  const auto light = lighter_ends(32, 8, equal);
  REQUIRE(light.has_value());
  CHECK(light->first == 1);
  CHECK(light->middle == 5);
  CHECK(light->last == 1);
  // 80 over 8: middles 11, ends 80 - 66 = 14 -> 7 | 11 x 6 | 7.
  CHECK(lighter_ends(80, 8, equal)->first == 7);
  CHECK(lighter_ends(80, 8, equal)->last == 7);
  // 30 over 3: ceil 10, middle 11, ends 19 -> 10 | 11 | 9.
  CHECK(lighter_ends(30, 3, equal)->first == 10);
  CHECK(lighter_ends(30, 3, equal)->last == 9);
  // None where the ends would be left under a layer each: 33 over 8 (middles 6: 33 - 36 < 2),
  // 126 over 16 (middles 9: 126 - 126 = 0), DeepSeek-V3's 61 over 16 (61 - 70).
  CHECK_FALSE(lighter_ends(33, 8, equal).has_value());
  CHECK_FALSE(lighter_ends(126, 16, equal).has_value());
  CHECK_FALSE(lighter_ends(61, 16, equal).has_value());
  // Middle stages of two counts (a layout): there the ends hold a layer each and the middle
  // stages the rest. 32 over 16: ceil 2, middles at most 3; 14 x 3 = 42 > 30, so 1 | 30 over
  // 14 (3 x2, 2 x12) | 1: the largest stage 3, as 33's default split 1 | 3 x3, 2 x11 | 1.
  const auto sixteen = lighter_ends(32, 16, layout);
  REQUIRE(sixteen.has_value());
  CHECK(sixteen->first == 1);
  CHECK(sixteen->middle == 3);
  CHECK(sixteen->last == 1);
  const StageLayers deeper = stage_layers(33, 16);
  CHECK(deeper.first == 1);
  CHECK(deeper.middle == 3);
  CHECK(deeper.last == 1);
  // 126 over 16: ceil 8, middles at most 9: 1 | 124 over 14 (9 x12, 8 x2) | 1.
  CHECK(lighter_ends(126, 16, layout)->middle == 9);
  CHECK(middle_stages(126, 16, *lighter_ends(126, 16, layout)).fewer == 2);
  // Where the middles can take one layer more each the split is the equal one: 32 over 8.
  CHECK(lighter_ends(32, 8, layout)->middle == 5);
  // None where it is the default split already: 33 over 16 is 1 | ... | 1 by default.
  CHECK_FALSE(lighter_ends(33, 16, layout).has_value());
  // None where the middles cannot each hold a layer: 4 over 4 (1 each by default; 2 over 2
  // middles with ends of 1 is the default).
  CHECK_FALSE(lighter_ends(4, 4, layout).has_value());
  // The default split's shortfall off the last stage first: DeepSeek-V3's 61 over 16 is ceil
  // 4, 3 short: 4 | 4 x14 | 1 (the default 3 | 4 x14 | 2); 126 over 16, 2 short: 8 | 8 x14 | 6
  // (7 | 8 x14 | 7); 32 over 6, 4 short: 6 | 6 x4 | 2 (4 | 6 x4 | 4).
  const auto last61 = lightest_last(61, 16);
  REQUIRE(last61.has_value());
  CHECK(last61->first == 4);
  CHECK(last61->middle == 4);
  CHECK(last61->last == 1);
  CHECK(lightest_last(126, 16)->first == 8);
  CHECK(lightest_last(126, 16)->last == 6);
  CHECK(lightest_last(32, 6)->first == 6);
  CHECK(lightest_last(32, 6)->last == 2);
  // 37 over 4: ceil 10, 3 short: the last takes all 3 (10 | 10 x2 | 7). 33 over 16: ceil 3, 15
  // short: 2 off the last, 2 off the first, 11 off middle stages, the default split already.
  CHECK(lightest_last(37, 4)->last == 7);
  CHECK(lightest_last(37, 4)->first == 10);
  CHECK_FALSE(lightest_last(33, 16).has_value());
  // None where the default takes it all off the last already (32 over 3: 1 short) or nothing
  // is short (32 over 8), or with two stages.
  CHECK_FALSE(lightest_last(32, 3).has_value());
  CHECK_FALSE(lightest_last(32, 8).has_value());
  CHECK_FALSE(lightest_last(33, 2).has_value());
  // Two stages: one layer moved off the last: 32 -> 17 | 15; 4 -> 3 | 1; 2 -> none.
  CHECK(lighter_ends(32, 2, equal)->first == 17);
  CHECK(lighter_ends(32, 2, equal)->last == 15);
  CHECK(lighter_ends(4, 2, equal)->last == 1);
  CHECK_FALSE(lighter_ends(2, 2, equal).has_value());
  CHECK_FALSE(lighter_ends(32, 1, equal).has_value());
  // No wrap-around: a huge layer count over many stages stays in range.
  const auto huge = lighter_ends(2000000000, 3, equal);
  REQUIRE(huge.has_value());
  CHECK(static_cast<long long>(huge->first) + huge->middle + huge->last == 2000000000LL);
  // Torchtitan writes them: middles equal, each end short of the largest by at most a chunk.
  CHECK(ends_only_split(32, 8, 1, *light));
  CHECK_FALSE(ends_only_split(32, 8, 5, *light));  // chunks of 1, the ends short by 4
  // Ends heavier than the middle stages: torchtitan's counts only shorten the ends (10 | 6 x2 |
  // 10 would launch as 8 x4).
  CHECK_FALSE(ends_only_split(32, 4, 1, StageLayers{10, 6, 10}));
}

TEST_CASE("deferred output-layer weight gradients: off the last stage, into the drain",
          "[pipeline]") {
  // PP 8, 64 micro-batches, one output-layer call each, its wgrad 7 ms; the last stage 20 ms
  // longer than the next slowest a micro-batch; a drain of 120 ms.
  // Limit 22: 22 calls wait; each of their micro-batches loses min(7, 20) = 7 ms -> 154 ms
  // saved; 22 x 7 = 154 ms run after the last backward, 154 - 120 = 34 ms beyond the drain.
  const DeferredOutputWgrad d = deferred_output_wgrad(8, 22, 64, 1.0, 0.007, 0.020, 0.120);
  CHECK(d.calls == 22.0);
  CHECK(d.saved_s == Approx(0.154));
  CHECK(d.deferred_s == Approx(0.154));
  CHECK(d.exposed_s == Approx(0.034));
  // Limit 0 is Megatron-Core's "every micro-batch": 64 x 7 = 448 ms, 328 ms beyond the drain.
  const DeferredOutputWgrad all = deferred_output_wgrad(8, 0, 64, 1.0, 0.007, 0.020, 0.120);
  CHECK(all.calls == 64.0);
  CHECK(all.exposed_s == Approx(0.448 - 0.120));
  // A last stage only 3 ms longer than the others saves 3 ms a deferred micro-batch: 66 ms.
  CHECK(deferred_output_wgrad(8, 22, 64, 1.0, 0.007, 0.003, 0.120).saved_s == Approx(0.066));
  // Not the pace-setter (margin 0): nothing saved, the drain still holds them.
  const DeferredOutputWgrad lighter = deferred_output_wgrad(8, 22, 64, 1.0, 0.007, 0.0, 0.2);
  CHECK(lighter.saved_s == 0.0);
  CHECK(lighter.exposed_s == 0.0);
  // A limit above the step's calls defers them all; MTP's second pass doubles the calls (a
  // micro-batch's wgrad covers both): limit 22 of 2 x 8 = 16 calls -> all 16, 8 micro-batches.
  CHECK(deferred_output_wgrad(4, 22, 8, 2.0, 0.014, 1.0, 0.0).calls == 16.0);
  CHECK(deferred_output_wgrad(4, 22, 8, 2.0, 0.014, 1.0, 0.0).deferred_s == Approx(8 * 0.014));
  CHECK(deferred_output_wgrad(4, 5, 8, 2.0, 0.014, 1.0, 0.0).deferred_s == Approx(2.5 * 0.014));
  // Megatron-Core refuses it without a pipeline: none at PP 1.
  CHECK(deferred_output_wgrad(1, 22, 64, 1.0, 0.007, 0.020, 0.120).calls == 0.0);
  CHECK(deferred_output_wgrad_calls(1, 0, 64, 1.0) == 0.0);
  CHECK(deferred_output_wgrad_calls(2, 0, 64, 1.0) == 64.0);
}
