// Memory on the peak rank: Korthikanti activations, ZeRO sharding, pipeline in-flight.
#include <catch2/catch.hpp>

#include "costmodel/estimate.h"
#include "costmodel/memory.h"
#include "costmodel_fixture.h"

using namespace trident;

TEST_CASE("layer activations reduce to Korthikanti 2022", "[memory]") {
  const Model model = test::small_model();       // s 32, b 1, h 64, a 4: sbh = 2048
  ParallelConfig config = test::small_config();  // t = 2
  // TP, no SP: sbh*(10 + 24/t + 5as/(ht)) = 2048 * (10 + 12 + 5*4*32/128) = 2048 * 27
  CHECK(layer_activation_bytes(model, config, false) == Approx(55296.0));
  // TP + SP: sbh*(34 + 5as/h)/t = (69632 + 20480) / 2
  config.sequence_parallel = true;
  CHECK(layer_activation_bytes(model, config, false) == Approx(45056.0));
  // TP + SP + selective: 34*sbh/t
  config.recompute = Recompute::selective;
  CHECK(layer_activation_bytes(model, config, false) == Approx(34816.0));
  // full: the layer input only, 2sbh/t with SP, 2sbh without
  config.recompute = Recompute::full;
  CHECK(layer_activation_bytes(model, config, false) == Approx(2048.0));
  config.sequence_parallel = false;
  CHECK(layer_activation_bytes(model, config, false) == Approx(4096.0));
  // fused attention keeps the fp32 log-sum-exp (4*s*b*a) instead of the 5*a*s^2*b scores:
  // 10*2048 + (24*2048 + 4*32*4)/2 = 20480 + 24832
  config.recompute = Recompute::none;
  CHECK(layer_activation_bytes(model, config, true) == Approx(45312.0));
}

TEST_CASE("micro-batches in flight on stage 0", "[memory]") {
  CHECK(in_flight_micro_batches(4, 1, 8) == Approx(4.0));
  CHECK(in_flight_micro_batches(4, 2, 8) == Approx(5.5));  // 4 * (1 + 3/8)
  CHECK(in_flight_micro_batches(4, 1, 2) == Approx(2.0));  // fewer micro-batches than stages
}

TEST_CASE("parameters per stage after the TP split", "[memory]") {
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  // one layer: attention 4*64^2 = 16384, FFN 2*64*256 = 32768, split by t = 2 -> 24576,
  // + two RMSNorms 128 = 24704. First stage + embedding 64000/2; last + final norm 64 +
  // output layer 64000/2.
  CHECK(stage_parameters(model, config, true, false) == Approx(56704.0));
  CHECK(stage_parameters(model, config, false, true) == Approx(56768.0));
}

TEST_CASE("peak rank memory, term by term", "[memory]") {
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();  // m = 4, p = 2, ZeRO 0
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, {4.0, false});
  // First stage: states 56704 * (2 + 4 + 12) = 1020672; activations 55296 * 1 layer * 2 in
  // flight = 110592; other: gathered input 2*2048 + embedding mask 2048 * 2 = 8192 -> 1139456.
  // Last stage: states 56768 * 18 = 1021824; activations 55296 * 1; other: 4096 + fp32 logits
  // 4*32*1000/2 = 64000 + output-layer input 4096 = 72192 -> 1149312: the peak.
  CHECK(peak.weights_bytes == Approx(113536.0));
  CHECK(peak.gradients_bytes == Approx(227072.0));
  CHECK(peak.optimizer_bytes == Approx(681216.0));
  CHECK(peak.activations_bytes == Approx(55296.0));
  CHECK(peak.other_bytes == Approx(72192.0));
  CHECK(peak.total_bytes == Approx(1149312.0));
  CHECK(peak.capacity_bytes == Approx(76.0 * 1024 * 1024 * 1024));
  CHECK(peak.fits);
}

TEST_CASE("ZeRO shards the states over DP", "[memory]") {
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();
  config.zero = 1;  // optimizer / 2: 681216 / 2
  CHECK(peak_memory(test::round_gpu(), model, config, {}).optimizer_bytes == Approx(340608.0));
  config.zero = 2;  // + gradients / 2
  CHECK(peak_memory(test::round_gpu(), model, config, {}).gradients_bytes == Approx(113536.0));
  config.zero = 3;  // + weights / 2
  CHECK(peak_memory(test::round_gpu(), model, config, {}).weights_bytes == Approx(56768.0));
}

TEST_CASE("memory invariants", "[memory][invariant]") {
  Model model = test::small_model();
  model.training.global_batch = 64;
  const Gpu gpu = test::round_gpu();
  for (const bool fused : {false, true}) {
    ParallelConfig config = test::small_config();
    const MemoryOptions options{4.0, fused};
    const double zero0 = peak_memory(gpu, model, config, options).total_bytes;
    config.zero = 3;
    CHECK(peak_memory(gpu, model, config, options).total_bytes <= zero0);
    config.zero = 0;
    const double none = layer_activation_bytes(model, config, fused);
    config.recompute = Recompute::full;
    CHECK(layer_activation_bytes(model, config, fused) <= none);
    config.recompute = Recompute::none;
    double previous = 0.0;
    for (int b = 1; b <= 8; b *= 2) {
      config.micro_batch = b;
      const double total = peak_memory(gpu, model, config, options).total_bytes;
      CHECK(total > previous);
      previous = total;
    }
  }
}
