// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): one paired layer's
// two-stream schedule, the share of passes that run paired, the splits it runs on, and what it
// changes in a step's EP time and memory.
#include <catch2/catch.hpp>

#include "costmodel/ep_overlap.h"
#include "costmodel/estimate.h"
#include "costmodel/memory.h"
#include "costmodel/model_loader.h"
#include "costmodel/moe.h"
#include "costmodel/placement.h"
#include "costmodel/stack.h"
#include "topology/cluster_loader.h"

using namespace trident;

namespace {

/// Compute of one paired layer in ms (as seconds x 1e3 would read): attention 0.5 forward and
/// 2 backward, experts 1 forward and 2 backward.
CombinedLayer layer_ms(bool delay_wgrad) {
  CombinedLayer layer;
  layer.attention_forward_s = 0.5;
  layer.attention_backward_s = 2.0;
  layer.experts_forward_s = 1.0;
  layer.experts_dgrad_s = delay_wgrad ? 1.0 : 2.0;
  layer.experts_wgrad_s = delay_wgrad ? 1.0 : 0.0;
  return layer;
}

}  // namespace

TEST_CASE("one paired layer: the two streams of run()", "[ep_overlap]") {
  // All-to-alls of 1.5 (ms), wgrad delayed. Communication stream: combine bwd 0-1.5; dispatch
  // fwd after it and attention fwd (0-0.5): 1.5-3.0; dispatch bwd after experts dgrad
  // (1.5-2.5, waiting for the combine bwd): 3.0-4.5; combine fwd after experts fwd. Compute
  // stream: experts wgrad 2.5-3.5, experts fwd after the dispatch fwd 3.5-4.5, attention bwd
  // after the dispatch bwd 4.5-6.5; combine fwd 4.5-6.0. The pair ends at 6.5 against 5.5 of
  // compute: 1.0 exposed, where alone its four all-to-alls would be 6.0.
  CHECK(combined_pair_exposed_s(layer_ms(true), 1.5) == Approx(1.0));
  // Without delay_wgrad_compute the dispatch bwd waits for the whole experts backward
  // (1.5-3.5): dispatch bwd 3.5-5.0, attention bwd 5.0-7.0, combine fwd 5.0-6.5: 1.5 exposed.
  CHECK(combined_pair_exposed_s(layer_ms(false), 1.5) == Approx(1.5));
  // All-to-alls of 1: combine bwd 0-1, experts dgrad 1-2, dispatch fwd 1-2, wgrad 2-3, dispatch
  // bwd 2-3, experts fwd 3-4, attention bwd 4-6, combine fwd 4-5: 6.0 against 5.5, 0.5.
  CHECK(combined_pair_exposed_s(layer_ms(true), 1.0) == Approx(0.5));
  // The combine nodes' unpermutation (0.5 each way) runs on the communication stream, before
  // the backward all-to-all and after the forward one. All-to-alls of 1.5: combine bwd 0-2.0,
  // experts dgrad 2.0-3.0, dispatch fwd 2.0-3.5, wgrad 3.0-4.0, dispatch bwd 3.5-5.0, experts fwd
  // 4.0-5.0, combine fwd 5.0-7.0, attention bwd 5.0-7.0: 7.0 against 6.5 of compute, 0.5
  // exposed (the unpermutations beside the other stream's work).
  CombinedLayer unpermuting = layer_ms(true);
  unpermuting.combine_forward_compute_s = 0.5;
  unpermuting.combine_backward_compute_s = 0.5;
  CHECK(unpermuting.compute_s() == Approx(6.5));
  CHECK(combined_pair_exposed_s(unpermuting, 1.5) == Approx(0.5));
  // No all-to-all time: nothing exposed; no compute: all four, as unpaired.
  CHECK(combined_pair_exposed_s(layer_ms(true), 0.0) == 0.0);
  CHECK(combined_pair_exposed_s(CombinedLayer{}, 1.5) == Approx(6.0));
}

TEST_CASE("combined 1F1B: the share of passes that run paired", "[ep_overlap]") {
  // No pipeline, 8 micro-batches: the first forward and the last backward alone, 7 of 8 paired.
  CHECK(combined_paired_share(1, 1, 8) == Approx(7.0 / 8.0));
  CHECK(combined_paired_share(1, 1, 1) == 0.0);
  // PP 4 x VP 2, 8 micro-batches: 16 chunk passes; the first rank's warm-up (4 - 1) x 2 +
  // (2 - 1) x 4 = 10, plus the combined schedule's one more: 11 alone, 5 of 16 paired.
  CHECK(combined_paired_share(4, 2, 8) == Approx(5.0 / 16.0));
  // PP 8 x VP 4, 64 micro-batches: 256 passes, 14 + 24 + 1 = 39 alone: 217 of 256.
  CHECK(combined_paired_share(8, 4, 64) == Approx(217.0 / 256.0));
  // A warm-up longer than the passes pairs none; a pipeline without interleaving does not run it.
  CHECK(combined_paired_share(8, 2, 4) == 0.0);
  CHECK(combined_paired_share(4, 1, 64) == 0.0);
  // Per layer and micro-batch: paired share x pair + the rest x four all-to-alls. 7/8 x 1.0 +
  // 1/8 x 6.0 = 1.625.
  CHECK(combined_layer_exposed_s(layer_ms(true), 1.5, 7.0 / 8.0) == Approx(1.625));
}

TEST_CASE("combined 1F1B runs where Megatron-Core lets it", "[ep_overlap][stack]") {
  Stack stack = stack_preset("megatron-core");
  stack.ep_overlap = true;
  const Model moe = model_preset("mixtral-8x7b");
  ParallelConfig config;
  config.dp = 8;
  config.ep = 8;
  CHECK(stack.runs_ep_overlap(moe, config));
  CHECK_FALSE(stack_preset("megatron-core").runs_ep_overlap(moe, config));  // off by default
  CHECK_FALSE(stack.runs_ep_overlap(model_preset("llama3-8b"), config));    // no experts
  ParallelConfig one = config;
  one.ep = 1;  // "only supported with expert model parallelism"
  CHECK_FALSE(stack.runs_ep_overlap(moe, one));
  ParallelConfig pipeline = config;
  pipeline.pp = 2;  // PP > 1 needs virtual stages
  CHECK_FALSE(stack.runs_ep_overlap(moe, pipeline));
  pipeline.virtual_stages = 2;
  CHECK(stack.runs_ep_overlap(moe, pipeline));
  ParallelConfig full = config;
  full.recompute = Recompute::full;  // "disable full recomputation"
  CHECK_FALSE(stack.runs_ep_overlap(moe, full));
  full.recompute = Recompute::selective;
  CHECK(stack.runs_ep_overlap(moe, full));
  Model mtp = moe;
  mtp.mtp_layers = 2;  // "MTP supports at most one layer"
  CHECK_FALSE(stack.runs_ep_overlap(mtp, config));
  CHECK(combined_1f1b_block(mtp, config) == CombinedBlock::mtp);
  // "only supported with bf16 or fp16 model": FP8 trains on bf16 weights; fp32 and tf32 not.
  for (const Dtype dtype : {Dtype::fp32, Dtype::tf32}) {
    Model wide = moe;
    wide.training.dtype = dtype;
    CHECK_FALSE(stack.runs_ep_overlap(wide, config));
    CHECK(combined_1f1b_block(wide, config) == CombinedBlock::dtype);
  }
  for (const Dtype dtype : {Dtype::fp16, Dtype::fp8}) {
    Model narrow = moe;
    narrow.training.dtype = dtype;
    CHECK(stack.runs_ep_overlap(narrow, config));
  }
  CHECK(combined_1f1b_block(moe, one) == CombinedBlock::ep);
  CHECK(combined_1f1b_block(moe, full) == CombinedBlock::none);  // selective by now
}

TEST_CASE("combined 1F1B in a step: EP time hidden, one layer's more memory", "[ep_overlap]") {
  // Mixtral 8x7B on two 8-GPU servers, DP 16 over both, EP 8 inside each server.
  Model model = model_preset("mixtral-8x7b");
  Cluster cluster = cluster_preset("dgx-h100");
  cluster.servers = 2;
  ParallelConfig config;
  config.tp = 1;
  config.dp = 16;
  config.ep = 8;
  config.micro_batch = 1;
  config.zero = 1;
  model.training.global_batch = 128;  // 16 x 8: 8 micro-batches
  const Placement placement = default_placement(cluster, config);
  EstimateOptions plain;
  plain.stack = stack_preset("megatron-core");
  EstimateOptions combined = plain;
  combined.stack.ep_overlap = true;
  const Estimate a = estimate(cluster, model, config, placement, nullptr, plain);
  const Estimate b = estimate(cluster, model, config, placement, nullptr, combined);
  CHECK_FALSE(a.ep_overlapped);
  CHECK(b.ep_overlapped);
  CHECK(b.ep.total_s == Approx(a.ep.total_s));
  CHECK(a.ep.exposed_s == Approx(a.ep.total_s));
  // At least the unpaired eighth stays exposed; compute hides some of the rest.
  CHECK(b.ep.exposed_s >= Approx(a.ep.total_s / 8.0));
  CHECK(b.ep.exposed_s < a.ep.exposed_s);
  CHECK(b.time.step_s < a.time.step_s);
  CHECK(b.time.forward_s == Approx(a.time.forward_s));
  // One micro-batch: nothing to pair with, every all-to-all exposed as before.
  Model single = model;
  single.training.global_batch = 16;
  const Estimate c = estimate(cluster, single, config, placement, nullptr, combined);
  CHECK(c.ep_overlapped);
  CHECK(c.ep.exposed_s == Approx(c.ep.total_s));
  // Memory: a paired layer's forward saves before the other's backward frees, one layer's
  // activations more. PP 1 keeps one micro-batch (32 layers) plus, on the last stage, the
  // output layer's input (b x s x h x 2 bytes): the difference is 1/32 of the layers' part.
  const double output_input = 1.0 * model.seq_len * model.hidden * 2.0;
  const double layers_part = a.memory.activations_bytes - output_input;
  CHECK(b.memory.activations_bytes - a.memory.activations_bytes == Approx(layers_part / 32.0));
  // Interleaved (PP 2 x VP 2, 16 layers a stage in chunks of 8): the warm-up's one more forward
  // keeps a chunk more, and the paired layer one more: 9 layers' activations. The first stage
  // holds in_flight_micro_batches(2, 2, 8) = 2 x (1 + 1/4) = 2.5 micro-batches of 16 layers, so
  // the difference is 9 / (16 x 2.5) of its layers' part; it has no output layer.
  CHECK(combined_1f1b_extra_layers(config, 32.0) == 1.0);
  ParallelConfig interleaved = config;
  interleaved.pp = 2;
  interleaved.virtual_stages = 2;
  interleaved.dp = 8;
  CHECK(combined_1f1b_extra_layers(interleaved, 16.0) == 9.0);
  const Placement two = default_placement(cluster, interleaved);
  Model eight = model;
  eight.training.global_batch = 64;  // 8 x 8: 8 micro-batches
  const Estimate p = estimate(cluster, eight, interleaved, two, nullptr, plain);
  const Estimate q = estimate(cluster, eight, interleaved, two, nullptr, combined);
  CHECK(q.ep_overlapped);
  CHECK(q.memory.activations_bytes - p.memory.activations_bytes ==
        Approx(p.memory.activations_bytes * 9.0 / (16.0 * 2.5)));
}
