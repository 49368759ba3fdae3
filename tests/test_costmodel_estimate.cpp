// estimate(): every term of the step for the small model (2 layers, tp 2, pp 2, dp 2), the
// GEMM roofline, rank placement, and the invariants.
#include <algorithm>
#include <catch2/catch.hpp>

#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/kernels.h"
#include "costmodel/placement.h"
#include "costmodel_fixture.h"
#include "topology/errors.h"

using namespace trident;

namespace {

Placement round_placement() {
  Placement placement;
  placement.tp = test::nvlink_group(2);
  placement.pp = test::nvlink_group(2);
  placement.dp = test::nvlink_group(2);
  return placement;
}

}  // namespace

TEST_CASE("GEMM roofline with tile quantisation", "[compute]") {
  const Gpu gpu = test::round_gpu();  // 100 TFLOP/s, efficiency 1, 1000 GB/s x 0.85
  // 4096^3: shape efficiency 4096/(4096+64) = 0.984615 -> 98.4615 TFLOP/s;
  // 2*4096^3 = 1.37439e11 FLOPs -> 1.395864e-3 s (bytes 2*3*4096^2 / 8.5e11 = 1.18e-4 s)
  CHECK(gemm_time_s(gpu, Dtype::bf16, {4096, 4096, 4096}) == Approx(1.395864e-3));
  // n = 64 fills half a 128 tile: 49.23 TFLOP/s; 2*4096*64*4096 = 2.147e9 -> 4.3617e-5 s,
  // above the memory time 2*(4096^2 + 2*4096*64) / 8.5e11 = 4.071e-5 s.
  CHECK(gemm_time_s(gpu, Dtype::bf16, {4096, 64, 4096}) == Approx(4.3617e-5).epsilon(1e-4));
  // memory-bound: k = 16 -> 2*(4096*16*2 + 4096^2) = 33816576 bytes / 8.5e11 = 3.9784e-5 s,
  // above the compute time 2*4096^2*16 / (100e12 * 16/80) = 2.68e-5 s.
  CHECK(gemm_time_s(gpu, Dtype::bf16, {4096, 4096, 16}) == Approx(3.9784e-5).epsilon(1e-4));
  CHECK(hbm_time_s(gpu, 1e9) == Approx(1.0 / 850.0));
}

TEST_CASE("rank placement follows Megatron-LM's order", "[placement]") {
  const ParallelConfig config = test::small_config();  // tp 2, pp 2, dp 2
  // tp-dp-pp: rank = tp + 2*(dp + 2*pp); rank 5 = tp 1, dp 0, pp 1
  const RankCoord c = rank_coord(config, RankOrder::tp_dp_pp, 5);
  CHECK((c.tp == 1 && c.dp == 0 && c.pp == 1));
  CHECK(rank_of(config, RankOrder::tp_dp_pp, c) == 5);
  CHECK(tp_group(config, RankOrder::tp_dp_pp, 5) == std::vector<int>{4, 5});
  CHECK(dp_group(config, RankOrder::tp_dp_pp, 5) == std::vector<int>{5, 7});
  CHECK(pp_group(config, RankOrder::tp_dp_pp, 5) == std::vector<int>{1, 5});
  // tp-pp-dp: rank = tp + 2*(pp + 2*dp); rank 5 = tp 1, pp 0, dp 1
  const RankCoord d = rank_coord(config, RankOrder::tp_pp_dp, 5);
  CHECK((d.tp == 1 && d.pp == 0 && d.dp == 1));
  CHECK(pp_group(config, RankOrder::tp_pp_dp, 5) == std::vector<int>{5, 7});
}

TEST_CASE("TP calls under sequence parallelism: Megatron re-gathers, DTensor keeps", "[estimate]") {
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();  // m = 4, 1 layer per stage
  config.sequence_parallel = true;
  EstimateOptions plain;
  plain.stack.tp_overlap = TpOverlap::none;
  // Megatron: forward 2 AG + 2 RS, backward 4 AG (2 of them the input again) + 2 RS = 5 (RS +
  // AG) calls per layer and micro-batch: 1 layer x 5 x 4 micro-batches = 20.
  const Estimate megatron =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, plain);
  CHECK(megatron.tp.calls_per_step == Approx(20.0));
  // Keeping the gathered input: no re-gather, 4 per layer = 16; full recompute 6 = 24 (7 = 28).
  plain.stack.tp_keeps_gathered_inputs = true;
  const Estimate dtensor =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, plain);
  CHECK(dtensor.tp.calls_per_step == Approx(16.0));
  CHECK(dtensor.time.tp_comm_s == Approx(megatron.time.tp_comm_s * 16.0 / 20.0));
  config.recompute = Recompute::full;
  CHECK(estimate(test::round_cluster(), model, config, round_placement(), nullptr, plain)
            .tp.calls_per_step == Approx(24.0));
  plain.stack.tp_keeps_gathered_inputs = false;
  CHECK(estimate(test::round_cluster(), model, config, round_placement(), nullptr, plain)
            .tp.calls_per_step == Approx(28.0));
  // Under TE userbuffers the re-gather behind dgrad (and its 16 SMs) is gone too.
  config.recompute = Recompute::none;
  EstimateOptions overlap;
  overlap.stack.tp_overlap = TpOverlap::userbuffers;
  const double regathered =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, overlap)
          .tp.exposed_s;
  overlap.stack.tp_keeps_gathered_inputs = true;
  CHECK(estimate(test::round_cluster(), model, config, round_placement(), nullptr, overlap)
            .tp.exposed_s < regathered);
}

TEST_CASE("userbuffers overlap a TP group inside one NVLink domain only", "[estimate]") {
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();
  config.sequence_parallel = true;
  EstimateOptions userbuffers;
  userbuffers.stack.tp_overlap = TpOverlap::userbuffers;
  EstimateOptions backward;
  backward.stack.tp_overlap = TpOverlap::backward;
  // Inside one domain userbuffers price their own way (each collective behind its GEMM, their
  // SMs taken from it; on this tiny layer no better than NCCL's backward overlap).
  const Placement inside = round_placement();
  const auto exposed = [&](const Placement& p, const EstimateOptions& o) {
    return estimate(test::round_cluster(), model, config, p, nullptr, o).tp.exposed_s;
  };
  CHECK(exposed(inside, userbuffers) != Approx(exposed(inside, backward)));
  // The same group split over two domains (one rank in each): TE's userbuffers cannot map the
  // peer (TransformerEngine#1071), so the stack runs NCCL's backward overlap.
  Placement across = inside;
  across.tp.domains = 2;
  across.tp.ranks_per_domain = 1;
  CHECK(exposed(across, userbuffers) == Approx(exposed(across, backward)));
}

TEST_CASE("estimate: every term of the small model's step", "[estimate]") {
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();  // m = 4
  EstimateOptions plain;
  plain.stack.tp_overlap = TpOverlap::none;
  const Estimate e =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, plain);
  CHECK(e.num_micro_batches == 4);
  // TP: S = b*s*h*2 = 4096 bytes; 1 layer/stage * 4 all-reduces * 4 micro-batches = 16 calls;
  // all-reduce over 2 ranks, 2 hops of 1 us; NCCL's LL protocol wins on 4 KB: 6.6 us base +
  // 2 x 0.6 us x (1/3.4) + 4096 * 1 / (0.5 x 80e9) = 7.05529e-6 s -> 1.128847e-4 s exposed.
  CHECK(e.tp.bytes_per_call == Approx(4096.0));
  CHECK(e.tp.calls_per_step == Approx(16.0));
  CHECK(e.tp.time_per_call_s == Approx(7.05529e-6));
  CHECK(e.time.tp_comm_s == Approx(1.128847e-4));
  // Megatron's backward overlap (the default stack): the input-gradient all-reduce of QKV and
  // FFN-up hides behind their weight-gradient GEMMs: 16 t - 4 x (min(t, wgrad_qkv) +
  // min(t, wgrad_up)).
  const Estimate overlapped = estimate(test::round_cluster(), model, config, round_placement());
  const LayerTime one = layer_time(test::round_gpu(), model, config, ComputeFeatures{});
  const double t = 7.05529e-6;
  CHECK(overlapped.time.tp_comm_s ==
        Approx(16 * t - 4 * (std::min(t, one.gemm_wgrad_s[0]) + std::min(t, one.gemm_wgrad_s[2]))));
  // PP: without sequence parallelism Megatron-Core sends the whole activation from every TP
  // rank: b*s*h*2 = 4096 bytes, 2 per micro-batch = 8 calls of 1 us + 4096/80e9 -> 8.4096e-6;
  // split over TP (Megatron-LM 2021's scatter/gather) 2048 bytes: 8 x (1 us + 2048/80e9).
  CHECK(e.pp.bytes_per_call == Approx(4096.0));
  CHECK(e.pp.calls_per_step == Approx(8.0));
  CHECK(e.time.pp_comm_s == Approx(8.4096e-6));
  EstimateOptions scattered = plain;
  scattered.stack.pp_scatter_gather = true;
  CHECK(estimate(test::round_cluster(), model, config, round_placement(), nullptr, scattered)
            .time.pp_comm_s == Approx(8.2048e-6));
  // DP: the first stage's parameters (its reduction ends the step), 56704 (the last stage's
  // 56768 hold the final norm's 64 more) * 4 bytes = 226816; all-reduce (LL) 6.6 us + 2 x
  // 0.6/3.4 us + 226816 / 40e9 = 1.262334e-5 s; the model is smaller than one 40M bucket: none
  // hides.
  CHECK(e.dp.bytes_per_call == Approx(226816.0));
  CHECK(e.time.dp_comm_s == Approx(1.262334e-5));
  // Optimizer: 34 bytes * 56768 / 8.5e11 = 2.27072e-6 s, and Megatron's DDP zeroing its fp32
  // grad buffer (4 bytes a parameter) before the step: 38 * 56768 / 8.5e11 = 2.53786e-6 s;
  // PyTorch's unfused AdamW (the fsdp preset's 92 bytes): (92 + 4) * 56768 / 8.5e11, and the
  // step longer by the difference only.
  CHECK(e.time.optimizer_s == Approx(2.53786e-6));
  EstimateOptions unfused = plain;
  unfused.stack.adam_step_bytes = 92.0;
  const Estimate u =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, unfused);
  CHECK(u.time.optimizer_s == Approx(96.0 * 56768.0 / 8.5e11));
  // Without the buffer (FSDP sets the gradients to None): the Adam stream alone.
  unfused.stack.zeroes_grad_buffer = false;
  CHECK(estimate(test::round_cluster(), model, config, round_placement(), nullptr, unfused)
            .time.optimizer_s == Approx(92.0 * 56768.0 / 8.5e11));
  // FlashAttention's Triton kernel on a GPU with no rate for it: refused, not priced as FA2.
  EstimateOptions triton = plain;
  triton.stack.attention = AttentionKernel::flash_triton;
  CHECK_THROWS_AS(
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, triton),
      InputError);
  CHECK(u.time.step_s - e.time.step_s == Approx((92.0 - 34.0) * 56768.0 / 8.5e11));
  // Compute: m * (1 layer + logits) per stage.
  const LayerTime layer = layer_time(test::round_gpu(), model, config, ComputeFeatures{});
  const LayerTime logits = logits_time(test::round_gpu(), model, config);
  CHECK(e.time.forward_s == Approx(4 * (layer.forward_s + logits.forward_s)));
  CHECK(e.time.backward_s == Approx(4 * (layer.backward_s + logits.backward_s)));
  CHECK(e.time.recompute_s == 0.0);
  // Bubble: (p-1)/(v*m) = 1/4 of compute + TP + PP, at the share of it the fill and drain
  // take: they cross stage 0 (one layer), the last stage (one layer + the logits) runs its
  // micro-batches back to back, so r = layer / (layer + logits), each layer with its exposed
  // TP calls: 4 all-reduces a micro-batch, 4 x 7.05529e-6 = 2.822116e-5 s.
  const double ideal = e.time.compute_s() + e.time.tp_comm_s + e.time.pp_comm_s;
  const double layer_s = layer.forward_s + layer.backward_s + 4 * 7.05529e-6;
  const double r = layer_s / (layer_s + logits.forward_s + logits.backward_s);
  CHECK(e.bubble_fill_ratio == Approx(r));
  CHECK(e.time.bubble_s == Approx(ideal / 4 * r));
  CHECK(e.time.step_s == Approx(ideal + e.time.bubble_s + e.time.dp_comm_s + e.time.optimizer_s));
  // FLOPs and rates: Korthikanti model FLOPs 261881856 (test_costmodel_flops) over 8 GPUs.
  CHECK(e.model_flops == Approx(261881856.0));
  CHECK(e.mfu == Approx(e.model_flops / (8 * 100e12 * e.time.step_s)));
  CHECK(e.tokens_per_s == Approx(8 * 32 / e.time.step_s));
  CHECK(e.memory.total_bytes > 0.0);
}

TEST_CASE("interleaved p2p overlapped with compute: micro-batch 0's round trip is exposed",
          "[estimate][pipeline]") {
  Model model = test::small_model();
  model.layers = 4;                              // pp 2, v 2: one layer per model chunk
  ParallelConfig config = test::small_config();  // m = 4
  config.virtual_stages = 2;
  EstimateOptions options;  // megatron-core: --overlap-p2p-communication with interleaving
  REQUIRE(options.stack.pp_overlap);
  const Estimate e =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  // One transfer: the whole b*s*h*2 = 4096 bytes (no sequence parallelism), 1 us + 4096/80e9 =
  // 1.0512e-6 s; 2*v*m = 16 a step.
  const double hop = 1.0512e-6;
  CHECK(e.pp.time_per_call_s == Approx(hop));
  CHECK(e.pp.total_s == Approx(16 * hop));
  // Exposed: 2(p*v - 1) = 6 hops of micro-batch 0's trip, plus, as this tiny layer's chunk
  // (the shorter of its forward and backward, over v) is shorter than a hop, the excess on
  // the (m - p) * v = 4 later ops.
  const double slack = std::min(e.time.forward_s, e.time.backward_s) / 4.0 / 2.0;
  REQUIRE(slack < hop);
  CHECK(e.time.pp_comm_s == Approx(6 * hop + 4 * (hop - slack)));
  // That is the whole step's increase: the bubble, (p-1)/(v*m) = 1/8 of the ideal time, does
  // not scale it again.
  CHECK(e.time.bubble_s ==
        Approx((e.time.compute_s() + e.time.tp_comm_s) / 8.0 * e.bubble_fill_ratio));
  // Without the overlap every transfer blocks its stage: all 16, and the bubble scales them.
  options.stack.pp_overlap = false;
  const Estimate blocking =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(blocking.time.pp_comm_s == Approx(16 * hop));
  CHECK(blocking.time.bubble_s ==
        Approx((blocking.time.compute_s() + blocking.time.tp_comm_s + 16 * hop) / 8.0 *
               blocking.bubble_fill_ratio));
}

TEST_CASE("DeepSpeed's separate blocking send and receive: four transfers a micro-batch",
          "[estimate][pipeline]") {
  Model model = test::small_model();
  model.layers = 5;  // pp 5: one layer per stage
  ParallelConfig config = test::small_config();
  config.pp = 5;
  config.dp = 1;  // m = 8 / (1 x 1) = 8
  EstimateOptions options;
  options.stack.pp_overlap = false;
  options.stack.interleaved_pipeline = false;
  options.stack.pp_scatter_gather = true;  // DeepSpeed partitions each activation over TP
  const double batched =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options)
          .time.pp_comm_s;
  // Megatron batches each send with a receive: 2 calls per micro-batch, 16 of 1.0256e-6 s.
  const double hop = 1.0256e-6;
  CHECK(batched == Approx(16 * hop));
  // DeepSpeed: a middle stage's four calls per micro-batch, plus 2(p - 4) = 2: 34 transfers,
  // the simulated schedule's whole increase, so the bubble (4/8 of the ideal) leaves them out.
  options.stack.pp_separate_send_recv = true;
  const Estimate e =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(e.pp.calls_per_step == Approx(34.0));
  CHECK(e.time.pp_comm_s == Approx(34 * hop));
  CHECK(e.time.bubble_s ==
        Approx((e.time.compute_s() + e.time.tp_comm_s) / 2.0 * e.bubble_fill_ratio));
  // The pipe passes the causal mask along: s*s*2 = 32*32*2 = 2048 more bytes on each forward
  // transfer, 1 us + 4096/80e9 = 1.0512e-6 s, so a transfer averages (1.0512 + 1.0256)/2 us.
  options.stack.pp_sends_attention_mask = true;
  const Estimate masked =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(masked.pp.bytes_per_call == Approx(2048.0 + 1024.0));
  CHECK(masked.pp.time_per_call_s == Approx((1.0512e-6 + 1.0256e-6) / 2.0));
  CHECK(masked.time.pp_comm_s == Approx(34 * (1.0512e-6 + 1.0256e-6) / 2.0));
}

TEST_CASE("estimate invariants", "[estimate][invariant]") {
  Model model = test::small_model();
  model.hidden = 1024;
  model.heads = 8;
  model.kv_heads = 8;
  model.ffn_hidden = 4096;
  model.seq_len = 1024;
  model.layers = 8;
  model.training.global_batch = 64;
  ParallelConfig config = test::small_config();
  Cluster cluster = test::round_cluster();
  const Placement base = round_placement();
  for (const int zero : {0, 1, 3}) {
    config.zero = zero;
    double previous = 1e30;
    for (double scale = 0.25; scale <= 8.0; scale *= 2.0) {  // more bandwidth, never slower
      Placement placement = base;
      placement.tp.intra_gbps *= scale;
      placement.pp.intra_gbps *= scale;
      placement.dp.intra_gbps *= scale;
      const double step = estimate(cluster, model, config, placement).time.step_s;
      CHECK(step <= previous);
      previous = step;
    }
  }
  config.zero = 0;
  double previous = 1e30;
  for (double peak = 50.0; peak <= 800.0; peak *= 2.0) {  // more peak, never slower
    cluster.gpu.peak_tflops_bf16 = peak;
    const double step = estimate(cluster, model, config, base).time.step_s;
    CHECK(step <= previous);
    previous = step;
  }
  config.pp = 4;
  config.dp = 1;  // m = 64: v = 2 halves the bubble
  const double plain = estimate(cluster, model, config, base).time.bubble_s;
  config.virtual_stages = 2;
  CHECK(estimate(cluster, model, config, base).time.bubble_s <= plain);
}

TEST_CASE("output head with multi-token prediction: the output pass twice, plus a projection",
          "[estimate][compute]") {
  const Gpu gpu = test::round_gpu();
  Model model = test::small_model();
  const ParallelConfig config = test::small_config();  // tp 2, micro-batch 1
  const LayerTime logits = logits_time(gpu, model, config);
  CHECK(output_head_time(gpu, model, config).forward_s == Approx(logits.forward_s));
  model.mtp_layers = 1;
  const LayerTime head = output_head_time(gpu, model, config);
  // Projection [32 x 64/2 x 128]: forward one GEMM, backward its two.
  const GemmShape projection{32.0, 32.0, 128.0};
  CHECK(head.forward_s ==
        Approx(2.0 * logits.forward_s + gemm_time_s(gpu, Dtype::bf16, projection)));
  CHECK(head.backward_s ==
        Approx(2.0 * logits.backward_s + gemm_backward_time_s(gpu, Dtype::bf16, projection)));
}

TEST_CASE("partial full recompute repeats the forward of its layers only", "[estimate]") {
  Model model = test::small_model();
  model.layers = 8;
  ParallelConfig config = test::small_config();  // tp 2, pp 2: 4 layers a stage, m = 4
  EstimateOptions plain;
  plain.stack.tp_overlap = TpOverlap::none;
  const auto run = [&](Recompute recompute, int layers) {
    config.recompute = recompute;
    config.recompute_layers = layers;
    return estimate(test::round_cluster(), model, config, round_placement(), nullptr, plain);
  };
  const Estimate none = run(Recompute::none, 0);
  const Estimate full = run(Recompute::full, 0);
  const Estimate one = run(Recompute::full, 1);  // 1 of the stage's 4 layers
  // Recompute time: 1/4 of full recompute's (every layer costs the same).
  CHECK(none.time.recompute_s == Approx(0.0));
  CHECK(one.time.recompute_s == Approx(full.time.recompute_s / 4.0));
  // TP all-reduces per micro-batch: 4 per layer, 2 more per recomputed layer:
  // none 4*4 = 16, full 4*6 = 24, one 16 + 2 = 18; x 4 micro-batches.
  CHECK(none.tp.calls_per_step == Approx(64.0));
  CHECK(full.tp.calls_per_step == Approx(96.0));
  CHECK(one.tp.calls_per_step == Approx(72.0));
  // Hardware FLOPs: the forward of 2 of the 8 layers (1 on each stage) on top of what runs
  // without recomputation, a quarter of what full recompute adds.
  CHECK(one.hardware_flops - none.hardware_flops ==
        Approx((full.hardware_flops - none.hardware_flops) / 4.0));
  CHECK(one.model_flops == Approx(full.model_flops));
  CHECK(none.time.step_s < one.time.step_s);
  CHECK(one.time.step_s < full.time.step_s);
}

TEST_CASE("partial recompute over uneven stages: each stage recomputes its own share",
          "[estimate]") {
  // 26 layers over 16 stages (pipeline.h stage_layers): first 1, last 1, and of the 14 middle
  // stages 10 hold 2 layers, 4 hold 1. One layer a chunk recomputed: every stage repeats one,
  // 16 of the 26 layers, so hardware FLOPs add 16/26 of what full recompute adds.
  Model model = test::small_model();
  model.layers = 26;
  ParallelConfig config = test::small_config();
  config.pp = 16;
  config.recompute = Recompute::none;
  const Estimate none =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, {});
  config.recompute = Recompute::full;
  const Estimate full =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, {});
  config.recompute_layers = 1;
  const Estimate one =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, {});
  CHECK(one.hardware_flops - none.hardware_flops ==
        Approx((full.hardware_flops - none.hardware_flops) * 16.0 / 26.0));
}

TEST_CASE("a job of one GPU keeps its own clock; a larger job runs at its board's pace",
          "[estimate]") {
  const Model model = test::small_model();
  Cluster paced = test::round_cluster();
  paced.gpu.ensemble_clock_ratio = 0.5;
  EstimateOptions plain;
  plain.stack.tp_overlap = TpOverlap::none;
  // One GPU: the same compute as a GPU without the key.
  ParallelConfig one = test::small_config();
  one.tp = one.pp = one.dp = 1;
  const Placement alone;  // every group of size 1
  const Estimate a = estimate(paced, model, one, alone, nullptr, plain);
  const Estimate b = estimate(test::round_cluster(), model, one, alone, nullptr, plain);
  CHECK(a.time.compute_s() == Approx(b.time.compute_s()));
  CHECK(a.time.step_s == Approx(b.time.step_s));
  CHECK(gpu_for_job(paced.gpu, 1).ensemble_clock_ratio == 1.0);
  // Eight GPUs (tp 2, pp 2, dp 2): the tensor-core kernels at half the pace take longer; the
  // forward grows by at most 2x (its memory-bound part keeps its time).
  CHECK(gpu_for_job(paced.gpu, 8).ensemble_clock_ratio == 0.5);
  const ParallelConfig eight = test::small_config();
  const Estimate c = estimate(paced, model, eight, round_placement(), nullptr, plain);
  const Estimate d =
      estimate(test::round_cluster(), model, eight, round_placement(), nullptr, plain);
  CHECK(c.time.forward_s > d.time.forward_s);
  CHECK(c.time.forward_s <= 2.0 * d.time.forward_s);
}

TEST_CASE("the pipeline's scatter undone: blocking TP all-gathers of each received tensor",
          "[estimate][pipeline]") {
  // Small model, TP 2 x PP 2 x DP 2, micro-batch 1 (m = 4), no sequence parallelism. Each TP
  // rank sends 1/2 of the activation across the stage boundary and the receiver gathers the
  // whole b*s*h*2 = 1 x 32 x 64 x 2 = 4096 bytes back over TP: Megatron-LM 2021 twice a
  // micro-batch (the activation, the gradient), DeepSpeed three times (its output re-gathered
  // for the backward too). 2 x 4 = 8 and 3 x 4 = 12 all-gathers a step, exposed.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  EstimateOptions options;
  options.stack.tp_overlap = TpOverlap::none;
  options.stack.pp_scatter_gather = false;
  const Estimate whole =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(whole.tp.pipe_gathers_per_step == 0.0);
  const double gather = collective_time_s(Collective::all_gather, 4096.0, test::nvlink_group(2));
  options.stack.pp_scatter_gather = true;
  options.stack.pp_tp_gathers_per_micro_batch = 2;
  const Estimate megatron =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(megatron.tp.pipe_gather_bytes == Approx(4096.0));
  CHECK(megatron.tp.pipe_gather_s == Approx(gather));
  CHECK(megatron.tp.pipe_gathers_per_step == Approx(8.0));
  CHECK(megatron.tp.exposed_s == Approx(whole.tp.exposed_s + 8 * gather));
  options.stack.pp_tp_gathers_per_micro_batch = 3;
  const Estimate deepspeed =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(deepspeed.tp.exposed_s == Approx(whole.tp.exposed_s + 12 * gather));
  // With sequence parallelism the activation crosses as 1/t and stays so: no gather.
  ParallelConfig sp = config;
  sp.sequence_parallel = true;
  CHECK(estimate(test::round_cluster(), model, sp, round_placement(), nullptr, options)
            .tp.pipe_gathers_per_step == 0.0);
}

TEST_CASE("the output layer's deferred weight gradients leave the last stage for the drain",
          "[estimate][pipeline]") {
  const Gpu gpu = test::round_gpu();
  Model model = test::small_model();
  const ParallelConfig config = test::small_config();  // pp 2, m 4, tp 2, micro-batch 1
  // The output layer's weight gradient is its own GEMM of the logits' shape, in backward_s;
  // an MTP pass runs it again.
  const LayerTime logits = logits_time(gpu, model, config);
  const double wgrad_s =
      gemm_time_s(gpu, Dtype::bf16, logits_gemm(model, 1, 2).shape.weight_gradient());
  CHECK(logits.output_wgrad_s == Approx(wgrad_s));
  CHECK(logits.output_wgrad_s < logits.backward_s);
  Model mtp = model;
  mtp.mtp_layers = 1;
  CHECK(output_head_time(gpu, mtp, config).output_wgrad_s == Approx(2.0 * wgrad_s));

  EstimateOptions options;
  const Estimate off =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(off.output_wgrad.calls == 0.0);
  options.stack.defer_output_wgrad = true;
  options.stack.output_wgrad_deferral_limit = 3;  // 3 of the step's 4 calls
  const Estimate on =
      estimate(test::round_cluster(), model, config, round_placement(), nullptr, options);
  CHECK(on.output_wgrad.calls == 3.0);
  CHECK(on.output_wgrad.deferred_s == Approx(3.0 * wgrad_s));
  // The last stage (its layers and the output layer) sets this pipeline's pace, so each
  // deferred micro-batch is shorter by its wgrad, at most by the last stage's margin.
  CHECK(on.output_wgrad.saved_s > 0.0);
  CHECK(on.output_wgrad.saved_s <= 3.0 * wgrad_s * (1 + 1e-12));
  CHECK(on.output_wgrad.exposed_s <= on.output_wgrad.deferred_s);
  CHECK(on.time.backward_s ==
        Approx(off.time.backward_s - on.output_wgrad.saved_s + on.output_wgrad.exposed_s));
  // The bubble is the other stages' fill and drain: the saving does not shrink it. The drain
  // the deferred GEMMs fill is its backward share, what they exceed is exposed.
  CHECK(on.time.bubble_s == Approx(off.time.bubble_s));
  CHECK(on.output_wgrad.drain_s > 0.0);
  CHECK(on.output_wgrad.drain_s < on.time.bubble_s);
  CHECK(on.output_wgrad.exposed_s ==
        Approx(std::max(0.0, on.output_wgrad.deferred_s - on.output_wgrad.drain_s)));
  CHECK(on.time.step_s < off.time.step_s);
  // Without a pipeline Megatron-Core refuses it; priced as nothing.
  ParallelConfig one = config;
  one.pp = 1;
  one.dp = 2;
  const Placement flat = default_placement(test::round_cluster(), one);
  CHECK(estimate(test::round_cluster(), model, one, flat, nullptr, options).output_wgrad.calls ==
        0.0);
}
