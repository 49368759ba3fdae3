// Memory on the peak rank: Korthikanti activations, ZeRO sharding, pipeline in-flight, and the
// allocator's view (transients, fragmentation, CUDA context, NCCL buffers).
#include <catch2/catch.hpp>

#include "costmodel/estimate.h"
#include "costmodel/memory.h"
#include "costmodel/model_loader.h"
#include "costmodel/placement.h"
#include "costmodel/plan_memory.h"
#include "costmodel/stack.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"

using namespace trident;

namespace {
// Korthikanti's layer is Megatron's core attention with its fused softmax. The toy model's
// b x heads/t (1 x 4/2) is not a multiple of 4, which the fused softmax needs: the tests that
// count its bytes run b = 2.
constexpr UnfusedSoftmax kMegatron = UnfusedSoftmax::megatron;
}  // namespace

TEST_CASE("layer activations reduce to Korthikanti 2022", "[memory]") {
  Model model = test::small_model();             // s 32, b 1, h 64, a 4: sbh = 2048
  model.dropout = 0.1;                           // Korthikanti's GPT has dropout (masks counted)
  ParallelConfig config = test::small_config();  // t = 2
  // b = 2: b x a/t = 4 lets the fused softmax run (unfused_attention.h), whose bytes Korthikanti
  // counts; every number below is twice the b = 1 arithmetic shown.
  config.micro_batch = 2;
  // TP, no SP: sbh*(10 + 24/t + 5as/(ht)) = 2048 * (10 + 12 + 5*4*32/128) = 2048 * 27
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                               kMegatron) == Approx(110592.0));
  // TP + SP: sbh*(34 + 5as/h)/t = (69632 + 20480) / 2
  config.sequence_parallel = true;
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                               kMegatron) == Approx(90112.0));
  // TP + SP + selective: 34*sbh/t
  config.recompute = Recompute::selective;
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                               kMegatron) == Approx(69632.0));
  // full: the layer input only, 2sbh/t with SP, 2sbh without
  config.recompute = Recompute::full;
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                               kMegatron) == Approx(4096.0));
  config.sequence_parallel = false;
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                               kMegatron) == Approx(8192.0));
  // fused attention keeps the fp32 log-sum-exp (4*s*b*a) instead of the 5*a*s^2*b scores:
  // 10*2048 + (24*2048 + 4*32*4)/2 = 20480 + 24832
  config.recompute = Recompute::none;
  CHECK(layer_activation_bytes(model, config, true) == Approx(90624.0));
}

TEST_CASE("tf32/fp32 training keeps 4-byte activations and no second fp32 master", "[memory]") {
  Model model = test::small_model();             // s 32, b 1, h 64, a 4: sbh = 2048
  model.dropout = 0.1;                           // masks stay 1 byte
  ParallelConfig config = test::small_config();  // t = 2, no SP
  // Each 16-bit term doubles, the masks do not: replicated 2*4 + 1 + 1 = 10 and the QKV/FFN
  // inputs 2*4 = 8 per sbh (18, was 10); split 4*3h + 4h + 4*4h + 4*4h = 48h (was 24h);
  // scores 2*4 + 1 = 9 per b*a*s^2 element (was 5): 2048 * (18 + 48/2 + 9*4*32/(64*2)) =
  // 2048 * 51 = 104448 (the 16-bit 55296 = 2048 * 27 above).
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 4.0,
                               kMegatron) == Approx(104448.0));
  config.recompute = Recompute::full;  // the layer input only, 4*sbh without SP
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 4.0,
                               kMegatron) == Approx(8192.0));
  // The states of the peak rank (the first stage, 56704 parameters: the unfused softmax's
  // working scores below lift it over the last stage, whose transient is its loss): fp32
  // weights 4, fp32 gradients 4 and Adam's m and v 8 (not 12: the weights are the master).
  config.recompute = Recompute::none;
  MemoryOptions options;
  options.fused_attention = false;
  options.unfused_softmax = kMegatron;
  options.weight_bytes = 4.0;
  options.activation_bytes = 4.0;
  options.weights_are_master = true;
  model.dropout = 0.0;
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  CHECK(peak.weights_bytes == Approx(56704.0 * 4.0));
  CHECK(peak.optimizer_bytes == Approx(56704.0 * 8.0));
  // Activations: the 16-bit 45056 per layer doubled except nothing (no dropout, unfused
  // scores 2 -> 4 bytes): 90112, two micro-batches in flight on the first of two stages.
  CHECK(peak.activations_bytes == Approx(2.0 * 90112.0));
  CHECK(peak.tp_gather_bytes == Approx(8192.0));  // 4*sbh
  // PyTorch's fp32 softmax at its backward's peak: the saved output, the incoming gradient and
  // the input gradient, 3 x 4 bytes, 8 beyond the 4 kept, over b x a/t x s^2 = 1 x 2 x 32 x 32
  // = 2048 scores: 16384.
  CHECK(peak.scores_working_bytes == Approx(8.0 * 2048.0));
}

TEST_CASE("fp32 weights as the master: where an optimizer shares them, and where not", "[memory]") {
  // The last stage's 56768 parameters, DP 2 (test::small_config), Adam 12 = master + m + v.
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();
  MemoryOptions options;
  options.weight_bytes = 4.0;
  options.activation_bytes = 4.0;
  options.weights_are_master = true;
  const auto optimizer = [&](int zero, bool clones) {
    config.zero = zero;
    options.zero_clones_fp32_partition = clones;
    return peak_memory(test::round_gpu(), model, config, options).optimizer_bytes;
  };
  CHECK(optimizer(0, false) == Approx(56768.0 * 8.0));        // m, v beside the weights
  CHECK(optimizer(1, false) == Approx(56768.0 * 8.0 / 2.0));  // Megatron: shards are views
  // DeepSpeed's ZeRO clones the partition into fp32 even from fp32 weights: 12 / dp.
  CHECK(optimizer(1, true) == Approx(56768.0 * 12.0 / 2.0));
  CHECK(optimizer(0, true) == Approx(56768.0 * 8.0));  // no ZeRO: the plain optimizer
  // ZeRO-2 keeps whole weights apart from the fp32 shard (FSDP SHARD_GRAD_OP): 12 / dp.
  CHECK(optimizer(2, false) == Approx(56768.0 * 12.0 / 2.0));
}

TEST_CASE("micro-batches in flight on stage 0", "[memory]") {
  CHECK(in_flight_micro_batches(4, 1, 8) == Approx(4.0));
  CHECK(in_flight_micro_batches(4, 2, 8) == Approx(5.5));  // 4 * (1 + 3/8)
  CHECK(in_flight_micro_batches(4, 1, 2) == Approx(2.0));  // fewer micro-batches than stages
  // Interleaved with few micro-batches: the warm-up (p-1)*2 + (v-1)*p + 1 = 2*7 + 8 + 1 = 23
  // chunk passes of p 8, v 2 would be 11.5 micro-batches, but the step has m*v = 16 chunk
  // passes: all 8 micro-batches, no more.
  CHECK(in_flight_micro_batches(8, 2, 8) == Approx(8.0));
  CHECK(in_flight_micro_batches(8, 2, 64) == Approx(11.5));  // 8 * (1 + 7/16)
}

TEST_CASE("micro-batches in flight on the later pipeline ranks", "[memory]") {
  // 1F1B: rank r holds p - r, the last one.
  CHECK(in_flight_micro_batches(4, 1, 8, 1) == Approx(3.0));
  CHECK(in_flight_micro_batches(4, 1, 8, 3) == Approx(1.0));
  // Interleaved, rank r's warm-up 2(p - r - 1) + (v - 1)p chunk passes and the one in steady
  // state, each 1/v of the stage. p 4, v 2, m 8: rank 1: (2 x 2 + 4 + 1) / 2 = 4.5; the last
  // rank: (0 + 4 + 1) / 2 = 2.5 (its first chunk's warm-up runs p forwards before a backward),
  // not 1 as in 1F1B.
  CHECK(in_flight_micro_batches(4, 2, 8, 1) == Approx(4.5));
  CHECK(in_flight_micro_batches(4, 2, 8, 3) == Approx(2.5));
  // p 8, v 2, m 8 (torchtitan's Llama 3.1 405B, Interleaved1F1B): rank 1's 2 x 6 + 8 + 1 = 21
  // passes exceed the step's 16: all 8 micro-batches; the last rank (8 + 1) / 2 = 4.5.
  CHECK(in_flight_micro_batches(8, 2, 8, 1) == Approx(8.0));
  CHECK(in_flight_micro_batches(8, 2, 8, 7) == Approx(4.5));
}

TEST_CASE("sequence parallel through DTensor keeps the gathered QKV and FFN inputs", "[memory]") {
  const Model model = test::small_model();       // sbh = 2048, no dropout
  ParallelConfig config = test::small_config();  // t = 2
  // b = 2: b x a/t = 4 lets the fused softmax run (unfused_attention.h), whose bytes Korthikanti
  // counts; every number below is twice the b = 1 arithmetic shown.
  config.micro_batch = 2;
  config.sequence_parallel = true;
  // Megatron: norms 4*sbh and the QKV/FFN inputs 2*2*sbh over SP, split 24*sbh + scores 8192
  // over TP: (8192 + 8192) / 2 + (49152 + 8192) / 2 = 36864.
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                               kMegatron) == Approx(73728.0));
  // gathered: the QKV and FFN inputs 4*sbh = 8192 whole on each rank, +4096.
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, true, 2.0,
                               kMegatron) == Approx(81920.0));
  // Without SP the inputs are whole anyway: the same either way (45056, below).
  config.sequence_parallel = false;
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, true, 2.0,
                               kMegatron) == Approx(90112.0));
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

TEST_CASE("layer activations without dropout keep no masks", "[memory]") {
  const Model model = test::small_model();       // dropout 0 (RoPE model, the loader's default)
  ParallelConfig config = test::small_config();  // t = 2, no SP
  config.micro_batch = 2;  // b x a/t = 4: the fused softmax (x2 the b = 1 arithmetic below)
  // replicated 8*sbh (norm inputs 4, QKV and FFN inputs 2 + 2) = 16384; split over TP 24*sbh =
  // 49152; unfused scores: the softmax output alone, 2*a*s^2*b = 2*4*32*32 = 8192.
  // 16384 + (49152 + 8192) / 2 = 45056 (with dropout: 55296, the 10*sbh and 5*a*s^2*b).
  CHECK(layer_activation_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                               kMegatron) == Approx(2.0 * 45056.0));
}

TEST_CASE("working set of the layer being recomputed", "[memory]") {
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();
  // b = 2: b x a/t = 4 lets the fused softmax run (unfused_attention.h), whose bytes Korthikanti
  // counts; every number below is twice the b = 1 arithmetic shown.
  config.micro_batch = 2;
  CHECK(recompute_working_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                                kMegatron) == 0.0);
  // Full: the whole layer (45056, above) less the kept input 2*sbh = 4096 -> 40960.
  config.recompute = Recompute::full;
  CHECK(recompute_working_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                                kMegatron) == Approx(81920.0));
  // With SP: whole 8*2048/2 + 28672 = 36864 less 2*sbh/t = 2048 -> 34816.
  config.sequence_parallel = true;
  CHECK(recompute_working_bytes(model, config, false, SelectiveKind::attention, false, false, 2.0,
                                kMegatron) == Approx(69632.0));
  // Megatron's selective with fused attention recomputes nothing that is kept: 0.
  config.sequence_parallel = false;
  config.recompute = Recompute::selective;
  CHECK(recompute_working_bytes(model, config, true, SelectiveKind::attention) == Approx(0.0));
  // Per-op: whole with fused attention 16384 + (49152 + 4*sb*a = 512) / 2 = 41216; kept
  // 2*sbh = 4096 + (sb*(3h + 2h_kv + f) = 32*576 = 18432 + 2*sbh = 4096 + 512) / 2 = 15616.
  CHECK(recompute_working_bytes(model, config, true, SelectiveKind::per_op) == Approx(51200.0));
  // mla_up_proj on a multi-head model recomputes nothing and keeps what none keeps.
  CHECK(recompute_working_bytes(model, config, true, SelectiveKind::mla_up_proj) == 0.0);
}

TEST_CASE("mla_up_proj frees Q, K and V until the attention's backward", "[memory]") {
  const Model model = model_preset("deepseek-v3");  // h 7168; kv_hidden 128 heads x 56 = 7168
  ParallelConfig config;
  config.tp = 2;
  config.micro_batch = 1;
  config.sequence_parallel = true;
  config.recompute = Recompute::selective;
  const double kept = layer_activation_bytes(model, config, true, SelectiveKind::mla_up_proj);
  const double attention = layer_activation_bytes(model, config, true, SelectiveKind::attention);
  // The MHA formula's Q, K (2(h + h_kv)) and V (2 h_kv) per token over TP:
  // 4096 x (2 x 14336 + 2 x 7168) / 2 = 4096 x 43008 / 2 = 88,080,384 bytes.
  CHECK(attention - kept == Approx(88080384.0));
  // The layer being recomputed holds them again: the working set.
  CHECK(recompute_working_bytes(model, config, true, SelectiveKind::mla_up_proj) ==
        Approx(88080384.0));
}

TEST_CASE("allocator-level terms from their sources", "[memory]") {
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  // Loss: bytes per logit x b*s*V/t = 12 * 1 * 32 * 1000 / 2 (PyTorch's cross-entropy).
  CHECK(loss_transient_bytes(model, config, 12.0) == Approx(192000.0));
  // NCCL ring: per channel LL 8*512*8*16 = 524288 + LL128 120*640*8*8 = 4915200 + Simple
  // 4194304 = 9633792; 24 channels (one NVLink domain) = 231211008.
  CHECK(nccl_ring_buffer_bytes(24.0) == Approx(231211008.0));
  // P2P: peers x 2 channels x 8 steps x chunk (128 KiB network, 512 KiB NVLink).
  CHECK(nccl_p2p_buffer_bytes(2, true) == Approx(4194304.0));
  CHECK(nccl_p2p_buffer_bytes(1, false) == Approx(8388608.0));
  // TP ring 24 channels + DP ring across 8 NICs (16 channels: 154140672) + PP both peers.
  CHECK(nccl_buffer_bytes({24.0, 16.0, 2, true}) == Approx(231211008.0 + 154140672.0 + 4194304.0));
  // Fragmentation 15% of the reserved churn: 85 churning bytes -> 100 reserved.
  CHECK(allocator_fragmentation_bytes(85.0) == Approx(15.0));
  Gpu gpu = test::round_gpu();
  CHECK(cublas_workspace_bytes(gpu) == Approx(4194304.0));
  gpu.peak_tflops_fp8 = 1000.0;  // Hopper and later
  CHECK(cublas_workspace_bytes(gpu) == Approx(33554432.0));
}

TEST_CASE("peak rank memory, term by term", "[memory]") {
  const Model model = test::small_model();             // no dropout
  const ParallelConfig config = test::small_config();  // m = 4, p = 2, ZeRO 0, unfused
  MemoryOptions options;
  options.fused_attention = false;
  options.unfused_softmax = kMegatron;
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  // The toy's b x a/t = 1 x 4/2 is not a multiple of 4: PyTorch's fp32 softmax keeps its fp32
  // output and 16-bit cast, 6 bytes a score, over b*a/t*s^2 = 2048 scores: 12288 (the fused
  // kernel's 2 would be 4096), and holds 12 at its peak, 6 more: 12288 working.
  // First stage: states 56704 * (2 + 4 + 12) = 1020672; activations (45056 + 8192) * 1 layer
  // * 2 in flight = 106496 (no embedding mask: no dropout); TP-gathered input 2*sbh = 4096 +
  // the working scores 12288.
  // Last stage: states 56768 * 18 = 1021824; activations 53248 + the output layer's input
  // 2*sbh = 4096 -> 57344; gathered input 4096; loss 6 bytes * 32 * 1000 / 2 = 96000 (no
  // recompute: larger than the 12288 working scores). 1179264 > 1143552: the last stage.
  CHECK(peak.weights_bytes == Approx(113536.0));
  CHECK(peak.gradients_bytes == Approx(227072.0));
  CHECK(peak.optimizer_bytes == Approx(681216.0));
  CHECK(peak.activations_bytes == Approx(57344.0));
  CHECK(peak.tp_gather_bytes == Approx(4096.0));
  CHECK(peak.scores_working_bytes == Approx(12288.0));
  CHECK(peak.loss_bytes == Approx(96000.0));
  CHECK(peak.transient_bytes == Approx(100096.0));
  // + cuBLAS workspace 4 MiB (no FP8 tensor cores) = 1179264 + 4194304.
  CHECK(peak.allocated_bytes == Approx(5373568.0));
  // Fragmentation: 15% of what churns within a step, activations + transients 157440 /
  // 0.85 - 157440 = 27783.53; + CUDA context 287047680; no NCCL groups given.
  const double fragmentation = 157440.0 * 0.15 / 0.85;
  CHECK(peak.fragmentation_bytes == Approx(fragmentation));
  CHECK(peak.reserved_bytes == Approx(5373568.0 + fragmentation));
  CHECK(peak.cuda_context_bytes == Approx(287047680.0));
  CHECK(peak.nccl_buffer_bytes == Approx(0.0));
  CHECK(peak.total_bytes == Approx(5373568.0 + fragmentation + 287047680.0));
  CHECK(peak.other_bytes == Approx(peak.total_bytes - 113536.0 - 227072.0 - 681216.0 - 57344.0));
  CHECK(peak.capacity_bytes == Approx(80.0 * 1024 * 1024 * 1024));
  CHECK(peak.fits);
}

TEST_CASE("the verdict: fits before fragmentation, tight when only the mean overflows",
          "[memory]") {
  // The peak above: allocated 5373568 + CUDA context 287047680 = 292421248 must fit;
  // fragmentation 27783.53 more makes the total 292449031.53.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  MemoryOptions options;
  options.fused_attention = false;
  options.unfused_softmax = kMegatron;
  Gpu gpu = test::round_gpu();
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  // Capacity 13000 bytes above what must fit: fits, but not with the mean fragmentation.
  gpu.memory_gib = (292421248.0 + 13000.0) / gib;
  MemoryBreakdown peak = peak_memory(gpu, model, config, options);
  CHECK(peak.fits);
  CHECK(peak.tight);
  CHECK(fragmentation_room_bytes(peak) == Approx(13000.0).margin(1e-3));
  // 100 bytes short of what must fit: does not fit, and is not called tight.
  gpu.memory_gib = (292421248.0 - 100.0) / gib;
  peak = peak_memory(gpu, model, config, options);
  CHECK_FALSE(peak.fits);
  CHECK_FALSE(peak.tight);
  // Room for the whole total (+ 30000 > 27783.53): fits, not tight.
  gpu.memory_gib = (292421248.0 + 30000.0) / gib;
  peak = peak_memory(gpu, model, config, options);
  CHECK(peak.fits);
  CHECK_FALSE(peak.tight);
  // The verdict from the sums alone.
  MemoryBreakdown sums;
  sums.allocated_bytes = 70.0;
  sums.cuda_context_bytes = 5.0;
  sums.nccl_buffer_bytes = 5.0;
  sums.total_bytes = 95.0;  // 15 of fragmentation
  sums.capacity_bytes = 90.0;
  set_memory_verdict(sums);
  CHECK(sums.fits);   // 80 <= 90
  CHECK(sums.tight);  // 95 > 90
  CHECK(fragmentation_room_bytes(sums) == Approx(10.0));
}

TEST_CASE("DTensor sequence parallel: gathered inputs and the vocab-parallel loss", "[memory]") {
  const Model model = test::small_model();       // sbh = 2048, no dropout
  ParallelConfig config = test::small_config();  // t = 2, p = 2, m = 4
  config.sequence_parallel = true;
  MemoryOptions options;
  options.fused_attention = false;
  options.unfused_softmax = kMegatron;
  options.gathered_inputs = true;
  options.loss_bytes_per_logit = 16.0;  // torchtitan's loss_parallel (stack.h)
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  // Last stage: one layer 40960 (the gathered-inputs case above, b = 1 here: the toy's
  // b x a/t = 2 runs PyTorch's fp32 softmax, 6 bytes a score kept for the fused kernel's 2, +4
  // x 2048 scores = 8192) + the output layer's input kept gathered, 2*sbh = 4096 (Megatron:
  // its shard, 2048) = 53248.
  CHECK(peak.activations_bytes == Approx(53248.0));
  // Loss: 16 bytes x b*s*V/t = 16 * 32 * 1000 / 2.
  CHECK(peak.loss_bytes == Approx(256000.0));
}

TEST_CASE("ZeRO-3 gathers a layer's units, the loss its output layer", "[memory]") {
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();
  config.zero = 3;
  config.pp = 1;  // one stage: both moments on it
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, {});
  // Layer units: (1 + 1 prefetched) x one layer 49280 / t = 24640 x (2 + 4 bytes) = 295680.
  CHECK(peak.layer_units_bytes == Approx(295680.0));
  // Output layer at the loss: V*h/t = 32000 x 6 = 192000; loss 96000 -> 288000 < 295680.
  CHECK(peak.output_unit_bytes == Approx(192000.0));
  CHECK(peak.transient_bytes == Approx(4096.0 + 295680.0));
}

TEST_CASE("dropout adds its masks and the embedding's", "[memory]") {
  Model model = test::small_model();
  ParallelConfig config = test::small_config();
  config.pp = 1;  // one stage, first and last: 2 layers, 1 micro-batch in flight
  MemoryOptions options;
  options.fused_attention = false;
  options.unfused_softmax = kMegatron;
  // The toy's b x a/t = 2 runs PyTorch's fp32 softmax: a layer keeps 6 bytes a score (the
  // fused kernel's 2 + 4 x 2048 = 8192 more) without dropout, 7 with it (its 5 + 2 x 2048 =
  // 4096 more). No dropout: 2 layers x (45056 + 8192) + the output layer's input 2*sbh = 4096.
  CHECK(peak_memory(test::round_gpu(), model, config, options).activations_bytes ==
        Approx(110592.0));
  // Dropout: 2 x (55296 + 4096) + the embedding's mask sbh = 2048 + 4096.
  model.dropout = 0.1;
  CHECK(peak_memory(test::round_gpu(), model, config, options).activations_bytes ==
        Approx(124928.0));
}

TEST_CASE("ZeRO shards the states over DP", "[memory]") {
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();
  config.zero = 1;  // optimizer / 2: 681216 / 2
  CHECK(peak_memory(test::round_gpu(), model, config, {}).optimizer_bytes == Approx(340608.0));
  config.zero = 2;  // + gradients / 2
  CHECK(peak_memory(test::round_gpu(), model, config, {}).gradients_bytes == Approx(113536.0));
  // + weights / 2. The peak moves to the first stage: its 2 micro-batches in flight (2 x 41216
  // fused) outweigh the last stage's loss once both carry ZeRO-3's gathered layers (4096 +
  // 295680): 56704 * 9 + 82432 + 299776 = 892544 > 56768 * 9 + 45312 + 299776 = 856000.
  config.zero = 3;
  CHECK(peak_memory(test::round_gpu(), model, config, {}).weights_bytes == Approx(56704.0));
}

TEST_CASE("memory invariants", "[memory][invariant]") {
  Model model = test::small_model();
  model.training.global_batch = 64;
  const Gpu gpu = test::round_gpu();
  for (const bool fused : {false, true}) {
    ParallelConfig config = test::small_config();
    MemoryOptions options;
    options.fused_attention = fused;
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

TEST_CASE("FP8 weight copies cover the linear layers only", "[memory]") {
  // small_model: 2 layers, h 64, 4 MHA heads, FFN 256 (two matrices), no biases, vocab 1000
  // untied. Per layer 4h^2 = 16,384 attention + 2 x 64 x 256 = 32,768 FFN = 49,152 linear
  // parameters; TP 2, PP 2: one layer a stage, 24,576 per GPU. The embedding (64,000 / 2) is
  // not a Transformer Engine module and has no FP8 copy.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  CHECK(stage_linear_parameters(model, config, true, false) == 24576.0);
  CHECK(stage_parameters(model, config, true, false) > 24576.0 + 32000.0);
  MemoryOptions options;
  options.weight_copy_bytes_per_parameter = 2.0;  // FP8 copy + transpose
  ParallelConfig one_stage = config;
  one_stage.pp = 1;
  // Two layers on the one stage: 2 x 24,576 x 2 bytes = 98,304 (not the 2 x 64,000 / 2 of
  // the embedding and output layer on top).
  CHECK(peak_memory(test::round_gpu(), model, one_stage, options).weight_copies_bytes == 98304.0);
}

TEST_CASE("partial full recompute: the recomputed layers keep their input, the rest everything",
          "[memory]") {
  Model model = test::small_model();  // sbh = 2048, no dropout
  model.layers = 8;
  ParallelConfig config = test::small_config();  // t = 2, no SP
  config.pp = 1;                                 // one stage: in flight 1 micro-batch
  MemoryOptions options;
  options.fused_attention = false;
  options.unfused_softmax = kMegatron;
  // A layer without recompute keeps 53248 bytes (Korthikanti's 45056 with the fp32 softmax's
  // 6 bytes a score for the fused kernel's 2: the toy's b x a/t = 2, + 4 x 2048); one
  // recomputed in full its input, 2 sbh = 4096. The output layer's input adds 2 sbh = 4096.
  config.recompute = Recompute::full;
  config.recompute_layers = 3;  // 3 of the 8 layers: 3 * 4096 + 5 * 53248 + 4096 = 282624
  CHECK(peak_memory(test::round_gpu(), model, config, options).activations_bytes ==
        Approx(282624.0));
  config.recompute_layers = 0;  // every layer: 8 * 4096 + 4096 = 36864
  CHECK(peak_memory(test::round_gpu(), model, config, options).activations_bytes ==
        Approx(36864.0));
  config.recompute_layers = 8;  // as many as the chunk holds: the same
  CHECK(peak_memory(test::round_gpu(), model, config, options).activations_bytes ==
        Approx(36864.0));
  // Interleaved, 2 chunks of 4 layers: 3 per chunk, 6 of the stage's 8 layers; in flight on
  // stage 0 with p 1, v 2, m 4: 1 * (1 + 0/8) = 1 -> 6 * 4096 + 2 * 53248 + 4096 = 135168.
  config.recompute_layers = 3;
  config.virtual_stages = 2;
  CHECK(config.recomputed_layers(8.0) == Approx(6.0));
  CHECK(peak_memory(test::round_gpu(), model, config, options).activations_bytes ==
        Approx(135168.0));
}

TEST_CASE("ZeRO-3: a recipe's FP8 weight copies live only with the gathered units", "[memory]") {
  const Model model = test::small_model();  // h 64, 4 heads, f 256, no biases, RMSNorm
  ParallelConfig config = test::small_config();
  config.pp = 1;
  config.zero = 3;  // dp 2: sharded per unit, gathered one unit at a time (+1 prefetched)
  MemoryOptions options;
  options.weight_copy_bytes_per_parameter = 2.0;  // an FP8 copy and its transpose
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  // Per layer: linear 4h^2 + 2hf = 16384 + 32768 = 49152 parameters, norms 2h = 128.
  // Two units over TP 2: 2/2 x (49280 x (2 + 4) + 49152 x 2) = 295680 + 98304 = 393984.
  CHECK(peak.weight_copies_bytes == 0.0);
  CHECK(peak.layer_units_bytes == Approx(393984.0));
  // ZeRO-1 keeps every linear weight whole, and its copies: 2 layers x 49152 / 2 x 2 bytes.
  config.zero = 1;
  CHECK(peak_memory(test::round_gpu(), model, config, options).weight_copies_bytes ==
        Approx(98304.0));
}

namespace {

/// The term-by-term PP case's options: Megatron's unfused softmax, PyTorch's loss (12 bytes a
/// logit), torch pipelining's receive buffers and every stage output kept.
MemoryOptions torch_pipelining_options() {
  MemoryOptions options;
  options.fused_attention = false;
  options.unfused_softmax = kMegatron;
  options.loss_bytes_per_logit = 12.0;
  options.pp_recv_buffers_per_micro_batch = true;
  options.pp_keeps_outputs = PpKeptOutputs::all;
  return options;
}

}  // namespace

TEST_CASE("torch pipelining: receive buffers per micro-batch, stage outputs kept", "[memory]") {
  // One micro-batch's boundary activation: 100 bytes; m = 8.
  // Stage 0 (8 in flight): no input buffers, a gradient buffer per micro-batch: 8 x 100.
  CHECK(pp_recv_buffer_bytes(100.0, 1, 8, 8.0, true, false) == Approx(800.0));
  // A middle stage, 7 in flight: 7 input buffers are kept layer inputs, 1 idle; 8 gradient.
  CHECK(pp_recv_buffer_bytes(100.0, 1, 8, 7.0, false, false) == Approx(900.0));
  // The last stage, 1 in flight: 7 idle input buffers, no gradient ones.
  CHECK(pp_recv_buffer_bytes(100.0, 1, 8, 1.0, false, true) == Approx(700.0));
  // Interleaved, rank 0 with 2 chunks, 8 in flight: chunk p's inputs all in flight; 2 x 8
  // gradient buffers.
  CHECK(pp_recv_buffer_bytes(100.0, 2, 8, 8.0, true, false) == Approx(1600.0));

  // Kept outputs (logits 50 bytes a micro-batch): Megatron frees them after the send.
  CHECK(pp_kept_output_bytes(PpKeptOutputs::none, 100.0, 50.0, 1, 8, 8.0, false) == 0.0);
  // Until backward: the 8 in flight on stage 0; on the last stage the logits of the one
  // micro-batch in its backward, 50.
  CHECK(pp_kept_output_bytes(PpKeptOutputs::in_flight, 100.0, 50.0, 1, 8, 8.0, false) ==
        Approx(800.0));
  CHECK(pp_kept_output_bytes(PpKeptOutputs::in_flight, 100.0, 50.0, 1, 8, 1.0, true) ==
        Approx(50.0));
  // `last`: the middle stage's 3 in flight; the last stage's 8 logits, 8 x 50.
  CHECK(pp_kept_output_bytes(PpKeptOutputs::last, 100.0, 50.0, 1, 8, 3.0, false) == Approx(300.0));
  CHECK(pp_kept_output_bytes(PpKeptOutputs::last, 100.0, 50.0, 1, 8, 1.0, true) == Approx(400.0));
  // `all`: every micro-batch's, whatever is in flight: 8 x 100; 2 chunks 1600; the last rank of
  // 2 chunks: its first chunk's 8 x 100 + 8 logits x 50 = 1200.
  CHECK(pp_kept_output_bytes(PpKeptOutputs::all, 100.0, 50.0, 1, 8, 2.0, false) == Approx(800.0));
  CHECK(pp_kept_output_bytes(PpKeptOutputs::all, 100.0, 50.0, 2, 8, 8.0, false) == Approx(1600.0));
  CHECK(pp_kept_output_bytes(PpKeptOutputs::all, 100.0, 50.0, 2, 8, 1.0, true) == Approx(1200.0));
  // The interleaved last rank (p = 8, v = 2, m = 8) holds (v - 1)p + 1 = 9 chunk passes, 4.5
  // micro-batches: its 8 warm-up passes are all of its first chunk (8 boundaries kept, 800),
  // and its last chunk runs each micro-batch's forward straight into its backward: one
  // micro-batch's logits (50) until its backward (in_flight), every one's (400) under `last`.
  CHECK(pp_kept_output_bytes(PpKeptOutputs::in_flight, 100.0, 50.0, 2, 8, 4.5, true) ==
        Approx(850.0));
  CHECK(pp_kept_output_bytes(PpKeptOutputs::last, 100.0, 50.0, 2, 8, 4.5, true) == Approx(1200.0));

  // On the peak rank of the term-by-term case (t = 2 without SP, p = 2, m = 4, b*s = 32,
  // s*b*h = 2048) with PyTorch's loss (12 bytes a logit, the 16-bit logits not among them):
  // the boundary activation is 2 x 2048 = 4096 bytes; the logits 2 bytes x 32 x 1000 / 2 =
  // 32000. The last stage (1 in flight): states 1021824, activations 57344 (the fp32
  // softmax's scores, term by term above), gathered input 4096, loss 12 x 32 x 1000 / 2 =
  // 192000; 3 idle input buffers = 12288 and every micro-batch's logits 4 x 32000 = 128000:
  // 1415552. Stage 0 (1143552) + 4 gradient buffers + 4 outputs 32768: below.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  MemoryOptions options = torch_pipelining_options();
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  CHECK(micro_batch_logit_bytes(model, config) == Approx(32000.0));
  CHECK(peak.pp_buffers_bytes == Approx(12288.0));
  CHECK(peak.pp_outputs_bytes == Approx(128000.0));
  CHECK(peak.loss_bytes == Approx(192000.0));
  // + cuBLAS workspace 4 MiB.
  CHECK(peak.allocated_bytes == Approx(1415552.0 + 4194304.0));
  // The buffers are allocated once; the outputs churn with the step: fragmentation over
  // activations 57344 + transients 196096 + outputs 128000 = 381440.
  CHECK(peak.fragmentation_bytes == Approx(381440.0 * 0.15 / 0.85));
  // Without pipeline parallelism there is nothing to receive or keep.
  ParallelConfig one = config;
  one.pp = 1;
  const MemoryBreakdown flat = peak_memory(test::round_gpu(), model, one, options);
  CHECK(flat.pp_buffers_bytes == 0.0);
  CHECK(flat.pp_outputs_bytes == 0.0);
}

TEST_CASE("ZeRO-3 under interleaved PP: one round frees each chunk's gradients in turn",
          "[memory]") {
  ParallelConfig config = test::small_config();  // p = 2
  config.zero = 3;
  config.virtual_stages = 2;
  MemoryOptions options;
  options.zero3_keeps_gathered = true;  // torchtitan: whole weights and gradients under PP
  // m = 2 (< 2p = 4): one round, every backward of chunk 1 before chunk 0's: half alive.
  CHECK(kept_gradient_share(config, options, 2) == Approx(0.5));
  // m = 4: two rounds, the chunks' backwards alternate: all of them.
  CHECK(kept_gradient_share(config, options, 4) == 1.0);
  // 1F1B, ZeRO-1, or a stack that reduces every micro-batch: all.
  ParallelConfig single = config;
  single.virtual_stages = 1;
  CHECK(kept_gradient_share(single, options, 2) == 1.0);
  ParallelConfig zero1 = config;
  zero1.zero = 1;
  CHECK(kept_gradient_share(zero1, options, 2) == 1.0);
  CHECK(kept_gradient_share(config, MemoryOptions{}, 2) == 1.0);

  // On the peak rank: 4 layers, 2 per stage; global batch 4, micro-batch 1, dp 2: m = 2.
  // The last stage holds 2 x (49152/2 + 128) = 49408 layer parameters per GPU + final norm 64
  // + output 64000/2 = 81472; alive at its peak, unsharded fp32: half the layers' (its last
  // chunk, backwarded first) and the output layer and final norm, which sit in that chunk:
  // (49408 / 2 + 32064) x 4 = 227072. (Stage 0's embedding sits in its first chunk,
  // backwarded last: 24704 x 4 there.)
  Model model = test::small_model();
  model.layers = 4;
  model.training.global_batch = 4;
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  CHECK(peak.weights_bytes == Approx(81472.0 * 2.0));
  CHECK(peak.gradients_bytes == Approx((49408.0 / 2.0 + 32064.0) * 4.0));
  // In a layer's backward, the layer's 16-bit gradients autograd writes before FSDP2 folds
  // them into the fp32 accumulator, per layer / t as unit_gradient_bytes counts a unit:
  // 49280 / 2 x 2 bytes = 49280.
  CHECK(peak.layer_units_bytes == Approx(49280.0));
  // Those gathered weights (162944) and unsharded gradients (227072) are allocated in the step
  // and freed at its end: they churn with the activations, transients and kept outputs, the
  // fragmentation 15/85 of all of it (390016 x 0.15 / 0.85 = 68826.35 of it theirs).
  CHECK(peak.states_churn);
  const double churn = peak.activations_bytes + peak.transient_bytes + peak.pp_outputs_bytes;
  CHECK(peak.fragmentation_bytes == Approx((churn + 162944.0 + 227072.0) * 0.15 / 0.85));
  // Reduced every micro-batch (no keeping): the states persist, only the rest churns.
  MemoryOptions reduced = options;
  reduced.zero3_keeps_gathered = false;
  const MemoryBreakdown each = peak_memory(test::round_gpu(), model, config, reduced);
  CHECK_FALSE(each.states_churn);
  CHECK(each.fragmentation_bytes ==
        Approx((each.activations_bytes + each.transient_bytes + each.pp_outputs_bytes) * 0.15 /
               0.85));
}

TEST_CASE("ZeRO-3 gathering FP8 weights keeps the linear layers' in 1 byte", "[memory]") {
  const Model model = test::small_model();  // a layer's linear weights 49152, /t 2 = 24576
  ParallelConfig config = test::small_config();
  config.zero = 3;
  config.pp = 1;
  MemoryOptions options;
  options.fp8_gathered_linear_weight_bytes = 1.0;  // torchao's float8 all-gather
  // Per unit: 2 units x (49280 / 2 x (2 + 4) - 24576 x (2 - 1)) = 295680 - 49152 = 246528.
  CHECK(peak_memory(test::round_gpu(), model, config, options).layer_units_bytes ==
        Approx(246528.0));
  // ZeRO-3 with PP keeping the gathered weights (torchtitan): the last stage's 56768
  // parameters x 2 bytes, its one layer's 24576 linear ones at 1: 113536 - 24576 = 88960.
  config.pp = 2;
  options.zero3_keeps_gathered = true;
  options.fused_attention = true;
  const MemoryBreakdown kept = peak_memory(test::round_gpu(), model, config, options);
  CHECK(kept.weights_bytes == Approx(88960.0));
  // 16-bit gathering (the default, 0): the stage's weights at 2 bytes.
  options.fp8_gathered_linear_weight_bytes = 0.0;
  CHECK(peak_memory(test::round_gpu(), model, config, options).weights_bytes == Approx(113536.0));
}

TEST_CASE("FSDP2's side streams keep blocks reserved beside the compute stream's peak",
          "[memory]") {
  const Model model = test::small_model();       // a layer 49280 parameters, 49152 of them linear
  ParallelConfig config = test::small_config();  // t = 2, dp 2
  config.zero = 3;
  config.pp = 1;
  MemoryOptions options;
  options.fused_attention = true;
  CHECK(side_stream_pool_bytes(model, config, options, 0.0) == 0.0);  // not FSDP2's streams
  options.zero3_side_stream_pools = true;
  // Without PP: the flat all-gather outputs of the unit computing and the one prefetched,
  // 2 x 49280 / 2 x 2 bytes = 98560; the sharded gradients are the gradients term already.
  CHECK(side_stream_pool_bytes(model, config, options, 1.0e6) == Approx(98560.0));
  // Gathered in FP8: the linear weights at 1 byte, 98560 - 2 x 49152 / 2 = 49408.
  options.fp8_gathered_linear_weight_bytes = 1.0;
  CHECK(side_stream_pool_bytes(model, config, options, 1.0e6) == Approx(49408.0));
  options.fp8_gathered_linear_weight_bytes = 0.0;
  // ZeRO-1, or no sharding (dp 1): no side-stream buffers.
  ParallelConfig zero1 = config;
  zero1.zero = 1;
  CHECK(side_stream_pool_bytes(model, zero1, options, 1.0e6) == 0.0);
  ParallelConfig alone = config;
  alone.dp = 1;
  CHECK(side_stream_pool_bytes(model, alone, options, 1.0e6) == 0.0);

  // PP keeping the gathered weights and unsharded gradients (torchtitan): + the stage's
  // sharded fp32 gradients the last step left on the reduce-scatter stream, 56768 x 4 / 2 =
  // 113536 for the last stage's 56768 parameters.
  config.pp = 2;
  options.zero3_keeps_gathered = true;
  CHECK(side_stream_pool_bytes(model, config, options, 56768.0) == Approx(98560.0 + 113536.0));
  // The last unit's reduce-scatter input kept through the next step (torch 2.6's pipelining):
  // one layer's unsharded fp32 gradients, 49280 / 2 x 4 = 98560; only where the stack says so.
  CHECK(kept_reduce_scatter_input_bytes(model, config, options) == 0.0);
  options.pp_keeps_last_reduce_scatter_input = true;
  CHECK(kept_reduce_scatter_input_bytes(model, config, options) == Approx(98560.0));
  // On the peak rank (the last stage, as in the FP8 case above): the input is allocated, the
  // pools reserved beside fragmentation and left out of the fit (an OOM retry frees them).
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  CHECK(peak.stream_pool_bytes == Approx(98560.0 + 113536.0));
  CHECK(peak.reduce_scatter_kept_bytes == Approx(98560.0));
  CHECK(peak.reserved_bytes ==
        Approx(peak.allocated_bytes + peak.fragmentation_bytes + peak.stream_pool_bytes));
  options.pp_keeps_last_reduce_scatter_input = false;
  const MemoryBreakdown without = peak_memory(test::round_gpu(), model, config, options);
  CHECK(peak.allocated_bytes - without.allocated_bytes == Approx(98560.0));
}

TEST_CASE("may_fit: estimate()'s memory verdict without the time; a floor under the CP rotater",
          "[memory]") {
  // Llama 3 8B at 65,536 tokens, 8 H100, under torchtitan (context parallelism runs as the
  // all-gather rotater, which holds the gathered K/V) and Megatron-Core (ring: none held).
  // Micro-batches 1, 2, 4 and 8, TP 1 and 8 x CP 1 and 8: some plans fit and some do not.
  Model model = model_preset("llama3-8b");
  model.seq_len = 65536;
  model.training.global_batch = 8;
  Cluster cluster = cluster_preset("dgx-h100");
  cluster.servers = 1;
  int fits = 0;
  int does_not = 0;
  int gathered = 0;
  for (const char* name : {"torchtitan", "megatron-core"}) {
    EstimateOptions options;
    options.stack = stack_preset(name);
    for (const int cp : {1, 8}) {
      for (const int mb : {1, 2, 4, 8}) {
        ParallelConfig config;
        config.tp = 8 / cp;
        config.cp = cp;
        config.micro_batch = mb;
        config.zero = 1;
        config.recompute = Recompute::full;
        CAPTURE(name, cp, mb);
        const Placement placement = default_placement(cluster, config);
        const Estimate whole = estimate(cluster, model, config, placement, nullptr, options);
        const bool floor_fits = may_fit(cluster, model, config, placement, options);
        (whole.memory.fits ? fits : does_not) += 1;
        if (whole.cp_kind == CpKind::all_gather) {
          // The rotater's K/V only add: refused by the floor means refused whole.
          ++gathered;
          CHECK(whole.memory.cp_gather_bytes > 0.0);
          if (!floor_fits) CHECK_FALSE(whole.memory.fits);
        } else {
          CHECK(floor_fits == whole.memory.fits);
        }
      }
    }
  }
  CHECK(fits > 0);
  CHECK(does_not > 0);
  CHECK(gathered == 4);  // torchtitan's four CP 8 plans
}

TEST_CASE("the last stage holds its deferred output-layer weight gradients' operands", "[memory]") {
  // The term-by-term PP case above (t = 2 without SP, p = 2, m = 4, b*s = 32, s*b*h = 2048),
  // whose last stage is the peak (1415552 + the 4 MiB workspace). Three deferred calls each
  // keep the output layer's input, 2 x 2048 = 4096 bytes (no SP: the whole of it), and its
  // logits' gradient, 2 x 32 x 1000 / 2 = 32000: 3 x 36096 = 108288 more, and they churn.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  MemoryOptions options = torch_pipelining_options();
  options.deferred_output_wgrad_calls = 3.0;
  const MemoryBreakdown peak = peak_memory(test::round_gpu(), model, config, options);
  CHECK(peak.deferred_wgrad_bytes == Approx(108288.0));
  CHECK(peak.allocated_bytes == Approx(1415552.0 + 4194304.0 + 108288.0));
  CHECK(peak.fragmentation_bytes == Approx((381440.0 + 108288.0) * 0.15 / 0.85));
  // With sequence parallelism the input kept is the rank's shard: 4096 / 2 = 2048 a call.
  ParallelConfig sp = config;
  sp.sequence_parallel = true;
  CHECK(peak_memory(test::round_gpu(), model, sp, options).deferred_wgrad_bytes ==
        Approx(3 * (2048.0 + 32000.0)));
  // Without a pipeline there is no flush to defer to.
  ParallelConfig one = config;
  one.pp = 1;
  CHECK(peak_memory(test::round_gpu(), model, one, options).deferred_wgrad_bytes == 0.0);
}
