// Precision per tensor: which GEMMs run in FP8, the cast kernels an FP8 recipe adds, the FP8
// weight copies, the FP8 GEMM ceiling, the model file's training.fp8 and the stacks' recipes.
#include <catch2/catch.hpp>

#include "costmodel/collective.h"
#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/kernels.h"
#include "costmodel/memory.h"
#include "costmodel/model_loader.h"
#include "costmodel/precision.h"
#include "costmodel/stack.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"

using namespace trident;

namespace {

Training fp8_training(Fp8Recipe recipe) {
  Training training;
  training.dtype = Dtype::fp8;
  training.fp8.recipe = recipe;
  return training;
}

}  // namespace

TEST_CASE("precision of each tensor class", "[precision]") {
  const Precision bf16 = precision_of(Training{});
  CHECK(bf16.linear_gemm == Dtype::bf16);
  CHECK(bf16.attention == Dtype::bf16);
  CHECK(bf16.activation_bytes == 2.0);
  CHECK_FALSE(bf16.fp8);

  Training fp32;
  fp32.dtype = Dtype::fp32;
  CHECK(precision_of(fp32).activation_bytes == 4.0);
  CHECK(precision_of(fp32).weight_bytes == 4.0);

  // FP8: the linear GEMMs and the TP all-gathers that feed them (Transformer Engine casts the
  // norm output and the output gradient before it gathers them); attention, the output layer,
  // activations and the other messages 16-bit.
  const Precision fp8 = precision_of(fp8_training(Fp8Recipe::delayed));
  CHECK(fp8.fp8);
  CHECK(fp8.linear_gemm == Dtype::fp8);
  CHECK(fp8.attention == Dtype::bf16);
  CHECK(fp8.output_gemm == Dtype::bf16);
  CHECK(fp8.activation_bytes == 2.0);
  CHECK(fp8.tp_gather_bytes == 1.0);
  CHECK(fp8.weight_gather_bytes == 2.0);
  Training gathers16 = fp8_training(Fp8Recipe::delayed);
  gathers16.fp8.communication = false;
  CHECK(precision_of(gathers16).tp_gather_bytes == 2.0);

  Training all = fp8_training(Fp8Recipe::current);
  all.fp8.attention = true;
  all.fp8.communication = true;
  all.fp8.params = true;
  const Precision eight = precision_of(all);
  CHECK(eight.attention == Dtype::fp8);
  CHECK(eight.tp_gather_bytes == 1.0);
  CHECK(eight.weight_gather_bytes == 1.0);
  CHECK(eight.activation_bytes == 2.0);  // what is not gathered stays 16-bit
  // MXFP8 parameters are gathered in bf16 through the shared gradient buffer (Megatron-Core).
  Training mx = fp8_training(Fp8Recipe::mxfp8);
  mx.fp8.params = true;
  CHECK(precision_of(mx).weight_gather_bytes == 2.0);
}

TEST_CASE("FP8 cast kernels of one layer, hand-derived", "[precision]") {
  // small model, tp 2, micro-batch 1, s 32: 32 tokens. GEMMs (m x n x k): qkv 32 x 96 x 64,
  // attention out 32 x 64 x 32, FFN up 32 x 128 x 64, FFN down 32 x 64 x 128.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  // Inputs (m x k): qkv 2048, out 1024, up 2048, down 4096. qkv and up follow a norm (fused
  // LayerNormLinear: 1 byte each), out and down are cast and transposed (4 bytes each):
  // 2048 + 4 x 1024 + 2048 + 4 x 4096 = 24576.
  CHECK(fp8_cast_forward_bytes(model, config, precision_of(fp8_training(Fp8Recipe::delayed))) ==
        24576.0);
  // Current scaling: the norm writes 16 bits and computes the amax itself (TE
  // FUSED_NORM_AMAX_FP8), then the quantize reads it and writes the copy and its transpose:
  // 2 + 1 + 1 = 4 per element after a norm; out and down read once more for their amax: 6.
  // 4 x (2048 + 2048) + 6 x (1024 + 4096) = 16384 + 30720 = 47104.
  CHECK(fp8_cast_forward_bytes(model, config, precision_of(fp8_training(Fp8Recipe::current))) ==
        47104.0);
  // Output gradients (m x n): 3072 + 2048 + 4096 + 2048 = 11264, cast and transposed: x 4 =
  // 45056; current scaling + 2 x 11264 = 67584.
  CHECK(fp8_cast_backward_bytes(model, config, precision_of(fp8_training(Fp8Recipe::delayed))) ==
        45056.0);
  CHECK(fp8_cast_backward_bytes(model, config, precision_of(fp8_training(Fp8Recipe::current))) ==
        67584.0);
  // BF16 adds no cast.
  CHECK(fp8_cast_forward_bytes(model, config, precision_of(Training{})) == 0.0);
  CHECK(fp8_cast_backward_bytes(model, config, precision_of(Training{})) == 0.0);
}

TEST_CASE("FP8 casts of one GEMM without a norm before it, hand-derived", "[precision]") {
  // An expert's up-projection: m 16 rows, n 2 x 24 (gated), k 8 (hidden), batch 3 experts.
  const GemmShape up{16.0, 48.0, 8.0, 3.0};
  const Precision delayed = precision_of(fp8_training(Fp8Recipe::delayed));
  const Precision current = precision_of(fp8_training(Fp8Recipe::current));
  // Forward: the input (m x k x batch = 384 elements) cast and transposed, read 2 write 1 + 1:
  // 4 x 384 = 1536; current scaling reads it once more for the amax: 6 x 384 = 2304.
  CHECK(fp8_input_cast_bytes(up, delayed) == 1536.0);
  CHECK(fp8_input_cast_bytes(up, current) == 2304.0);
  // Backward: the output gradient (m x n x batch = 2304 elements) cast and transposed: 4 x 2304
  // = 9216; current 6 x 2304 = 13824. Not keeping FP8 inputs (torchao) adds the input's plain
  // cast again, read 2 write 1: + 3 x 384 = 1152.
  CHECK(fp8_gradient_cast_bytes(up, delayed) == 9216.0);
  CHECK(fp8_gradient_cast_bytes(up, current) == 13824.0);
  CHECK(fp8_gradient_cast_bytes(up, delayed, false) == 9216.0 + 1152.0);
  CHECK(fp8_input_cast_bytes(up, delayed, false) == 3.0 * 384.0);  // plain cast, no transpose
  // No FP8, or a GEMM with nothing to multiply (an FFN of width 0: every MoE layer's routed), no
  // cast kernel.
  CHECK(fp8_input_cast_bytes(up, precision_of(Training{})) == 0.0);
  CHECK(fp8_gradient_cast_bytes(GemmShape{16.0, 0.0, 8.0, 1.0}, current) == 0.0);
  CHECK(fp8_input_cast_bytes(GemmShape{16.0, 8.0, 0.0, 1.0}, current) == 0.0);
}

TEST_CASE("FP8 weight copies and casts", "[precision]") {
  const Precision bf16 = precision_of(Training{});
  const Precision fp8 = precision_of(fp8_training(Fp8Recipe::delayed));
  Training params = fp8_training(Fp8Recipe::delayed);
  params.fp8.params = true;
  CHECK(weight_memory_bytes_per_parameter(bf16, true) == 2.0);
  // bf16 weights + the cached FP8 copy + its transpose: 2 + 1 + 1.
  CHECK(weight_memory_bytes_per_parameter(fp8, true) == 4.0);
  CHECK(weight_memory_bytes_per_parameter(fp8, false) == 2.0);  // cast per micro-batch, freed
  CHECK(weight_memory_bytes_per_parameter(precision_of(params), true) == 2.0);  // FP8 + transpose
  // 1e9 parameters x 4 bytes (read 2, write the copy and its transpose) at 1000 GB/s x 0.85 =
  // 4.706 ms per cast; 4 micro-batches, no cache.
  CHECK(fp8_weight_cast_bytes_per_parameter(fp8) == 4.0);
  CHECK(fp8_weight_cast_bytes_per_parameter(bf16) == 0.0);
  const Gpu gpu = test::round_gpu();
  CHECK(fp8_weight_cast_time_s(gpu, fp8, 1.0, 1e9) == Approx(4e9 / 850e9));
  CHECK(fp8_weight_cast_time_s(gpu, fp8, 4.0, 1e9) == Approx(4.0 * 4e9 / 850e9));
  CHECK(fp8_weight_cast_time_s(gpu, bf16, 4.0, 1e9) == 0.0);
}

TEST_CASE("FP8 GEMMs run at the FP8 ceiling", "[precision]") {
  Gpu gpu = test::round_gpu();  // 100 TFLOP/s bf16, efficiency 1, no SM count
  gpu.peak_tflops_fp8 = 200.0;
  gpu.matmul_efficiency = 0.8;
  const GemmShape big{1024, 1024, 4096};
  const KernelProfile none{};
  // No FP8 measurement: the BF16 ceiling. k fill 64: 4096 / 4160.
  CHECK(gemm_rate_tflops(gpu, Dtype::fp8, none, big) == Approx(200.0 * 0.8 * 4096.0 / 4160.0));
  gpu.fp8_matmul_efficiency = 0.7;
  CHECK(gemm_rate_tflops(gpu, Dtype::fp8, none, big) == Approx(200.0 * 0.7 * 4096.0 / 4160.0));
  CHECK(gemm_rate_tflops(gpu, Dtype::bf16, none, big) == Approx(100.0 * 0.8 * 4096.0 / 4160.0));
  // H100: ml-engineering MAMF 1402.6 of 1979 TFLOP/s.
  CHECK(gpu_preset("h100-sxm-80g").gemm_efficiency(Dtype::fp8) == Approx(0.709));
  CHECK(gpu_preset("h100-sxm-80g").gemm_efficiency(Dtype::bf16) == Approx(0.80));
}

TEST_CASE("MXFP8's linear GEMMs at the rate Transformer Engine measured, hand-derived",
          "[precision]") {
  Gpu gpu = test::round_gpu();  // 100 TFLOP/s bf16, efficiency 1, no SM count
  gpu.peak_tflops_fp8 = 200.0;
  gpu.memory_gbps = 1e6;  // HBM out of the way: the GEMM is compute-bound
  const KernelProfile none{};
  // TE's benchmark, one layer's twelve GEMMs pre-quantized on a B300: current scaling 6.812
  // ms, MXFP8 7.161 ms: MXFP8 runs at 6.812 / 7.161 = 0.95126 of the tensor-scaled rate.
  CHECK(kMxfp8GemmRateRatio == Approx(0.95126).epsilon(1e-5));
  const Precision current = precision_of(fp8_training(Fp8Recipe::current));
  const Precision mx = precision_of(fp8_training(Fp8Recipe::mxfp8));
  CHECK(current.linear_gemm_rate_ratio == 1.0);
  CHECK(mx.linear_gemm_rate_ratio == kMxfp8GemmRateRatio);
  CHECK(precision_of(fp8_training(Fp8Recipe::blockwise)).linear_gemm_rate_ratio == 1.0);
  CHECK(precision_of(Training{}).linear_gemm_rate_ratio == 1.0);
  // 1024 x 1024 x 4096: 2 x 1024^2 x 4096 = 8.590e9 FLOPs at 200 x 4096 / 4160 (k fill 64)
  // = 196.92 TFLOP/s: 43.62 us; MXFP8 43.62 / 0.95126 = 45.86 us.
  const GemmShape big{1024, 1024, 4096};
  const double tensor_scaled_s = 8.589934592e9 / (200e12 * 4096.0 / 4160.0);
  CHECK(linear_gemm_time_s(gpu, current, none, big, nullptr) == Approx(tensor_scaled_s));
  CHECK(linear_gemm_time_s(gpu, mx, none, big, nullptr) == Approx(tensor_scaled_s * 7.161 / 6.812));
  // Backward: the input and weight gradients, each 1024 x 4096 x 1024 / 4096 x 1024 x 1024
  // (k 1024: 200 x 1024 / 1088 = 188.24 TFLOP/s), both slowed alike.
  const double backward_s = 2.0 * 8.589934592e9 / (200e12 * 1024.0 / 1088.0);
  CHECK(linear_gemm_backward_time_s(gpu, current, none, big, nullptr) == Approx(backward_s));
  CHECK(linear_gemm_backward_time_s(gpu, mx, none, big, nullptr) ==
        Approx(backward_s * 7.161 / 6.812));
  // The layer: every linear GEMM slowed alike; attention, casts and norms not.
  Model model = test::small_model();
  model.training = fp8_training(Fp8Recipe::current);
  const ParallelConfig config = test::small_config();
  const LinearGemmTimes cs = linear_gemm_times(gpu, model, config);
  model.training = fp8_training(Fp8Recipe::mxfp8);
  const LinearGemmTimes mxt = linear_gemm_times(gpu, model, config);
  CHECK(mxt.forward_s == Approx(cs.forward_s * 7.161 / 6.812));
  CHECK(mxt.backward_s == Approx(cs.backward_s * 7.161 / 6.812));
}

TEST_CASE("an FP8 layer: linear GEMMs faster, attention and casts not", "[precision]") {
  Gpu gpu = test::round_gpu();
  gpu.peak_tflops_fp8 = 200.0;
  Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  const LayerTime bf16 = layer_time(gpu, model, config, ComputeFeatures{});
  model.training.dtype = Dtype::fp8;
  const LayerTime fp8 = layer_time(gpu, model, config, ComputeFeatures{});
  // Each linear GEMM at twice the rate (tiny shapes: the tile model's efficiency is the same,
  // and the k fill does not depend on the dtype without an SM count), unless HBM-bound.
  for (std::size_t i = 0; i < 4; ++i) CHECK(fp8.gemm_fprop_s[i] <= bf16.gemm_fprop_s[i]);
  CHECK(fp8.gemm_forward_s < bf16.gemm_forward_s);
  // The attention core is the same BF16 work; the casts add HBM time: the forward is more than
  // the GEMM saving suggests.
  const double gemm_saving_s = bf16.gemm_forward_s - fp8.gemm_forward_s;
  CHECK(bf16.forward_s - fp8.forward_s < gemm_saving_s);
}

TEST_CASE("training.fp8 in the model file", "[precision][loader]") {
  const std::string base =
      "name: m\nlayers: 2\nhidden: 64\nheads: 4\nvocab: 1000\nseq_len: 32\ntraining:\n";
  const Model m = load_model(
      base + "  dtype: fp8\n  fp8: {recipe: current, attention: true, params: true}\n", "m.yaml");
  CHECK(m.training.fp8.recipe == Fp8Recipe::current);
  CHECK(m.training.fp8.attention);
  CHECK(m.training.fp8.communication);  // the default: TE gathers FP8
  CHECK(m.training.fp8.params);
  CHECK_FALSE(load_model(base + "  dtype: fp8\n  fp8: {communication: false}\n", "m.yaml")
                  .training.fp8.communication);
  // Default: TE's delayed scaling, everything but the linear GEMMs 16-bit.
  const Model d = load_model(base + "  dtype: fp8\n", "m.yaml");
  CHECK(d.training.fp8.recipe == Fp8Recipe::delayed);
  CHECK_FALSE(d.training.fp8.attention);
  CHECK_THROWS_WITH(load_model(base + "  dtype: bf16\n  fp8: {recipe: delayed}\n", "m.yaml"),
                    Catch::Contains("m.yaml:9: training.fp8: expected only with dtype: fp8"));
  CHECK_THROWS_WITH(load_model(base + "  dtype: fp8\n  fp8: {recipe: delayd}\n", "m.yaml"),
                    Catch::Contains("training.fp8.recipe") && Catch::Contains("delayed"));
}

TEST_CASE("FP8 recipes per stack", "[precision][stack]") {
  CHECK(stack_preset("megatron-core").supports(Fp8Recipe::delayed));
  CHECK(stack_preset("megatron-core").supports(Fp8Recipe::blockwise));
  CHECK(stack_preset("megatron-core").fp8_weight_cache);
  CHECK_FALSE(stack_preset("megatron-2021").supports(Fp8Recipe::delayed));
  CHECK_FALSE(stack_preset("deepspeed-megatron").supports(Fp8Recipe::current));
  CHECK(stack_preset("torchtitan").supports(Fp8Recipe::current));
  CHECK_FALSE(stack_preset("torchtitan").supports(Fp8Recipe::delayed));
  CHECK_FALSE(stack_preset("torchtitan").fp8_weight_cache);
  CHECK(stack_preset("fsdp").supports(Fp8Recipe::delayed));
  const Stack none =
      load_stack("name: s\nattention: flash\ntp_overlap: none\nfp8_recipes: []\n", "s.yaml");
  CHECK(none.fp8_recipes == 0u);
  CHECK(none.fp8_recipes_run().empty());
  // The recipes a stack runs, in kFp8Recipes order: `--dtype fp8` takes the first.
  CHECK(stack_preset("torchtitan").fp8_recipes_run() ==
        std::vector<Fp8Recipe>{Fp8Recipe::current, Fp8Recipe::blockwise});
  CHECK(stack_preset("megatron-core").fp8_recipes_run().front() == Fp8Recipe::delayed);
  CHECK_THROWS_WITH(
      load_stack("name: s\nattention: flash\ntp_overlap: none\nfp8_recipes: [tensorwise]\n",
                 "s.yaml"),
      Catch::Contains("s.yaml:4: fp8_recipes: expected delayed|current|blockwise|mxfp8, got "
                      "'tensorwise'"));
  CHECK(stack_preset("megatron-core").supports(Fp8Recipe::mxfp8));
  CHECK_FALSE(stack_preset("torchtitan").supports(Fp8Recipe::mxfp8));
}

TEST_CASE("FP8 copies by GPU and recipe: Blackwell keeps no transpose, MXFP8 two copies",
          "[precision]") {
  Gpu hopper = test::round_gpu();
  hopper.compute_capability = 9.0;
  Gpu blackwell = hopper;
  blackwell.compute_capability = 10.0;
  Gpu consumer = hopper;  // 12.x: TE keeps the transpose (nvte_is_non_tn_fp8_gemm_supported)
  consumer.compute_capability = 12.0;
  CHECK(fp8_gemm_needs_transpose(hopper));
  CHECK_FALSE(fp8_gemm_needs_transpose(blackwell));
  CHECK(fp8_gemm_needs_transpose(consumer));
  blackwell.compute_capability = 13.0;
  CHECK_FALSE(fp8_gemm_needs_transpose(blackwell));
  CHECK(fp8_gemm_needs_transpose(test::round_gpu()));  // capability unknown: Hopper's rule

  const Precision delayed_b = precision_of(fp8_training(Fp8Recipe::delayed), blackwell);
  const Precision current_b = precision_of(fp8_training(Fp8Recipe::current), blackwell);
  const Precision mx = precision_of(fp8_training(Fp8Recipe::mxfp8), blackwell);
  const Precision delayed_h = precision_of(fp8_training(Fp8Recipe::delayed), hopper);
  CHECK(fp8_copy_bytes(delayed_h) == 2.0);  // FP8 + transpose
  CHECK(fp8_copy_bytes(delayed_b) == 1.0);
  CHECK(fp8_copy_bytes(current_b) == 1.0);
  // MXFP8: row-wise and column-wise copies, each with one E8M0 byte per 32: 2 x (1 + 1/32).
  CHECK(fp8_copy_bytes(mx) == 2.0625);
  CHECK(fp8_copy_bytes(precision_of(fp8_training(Fp8Recipe::blockwise))) == 2.0625);

  // The small model's layer (32 tokens, tp 2): inputs after a norm (qkv, up) 2048 + 2048, the
  // other inputs (out, down) 1024 + 4096, the output gradients 11264 elements.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  // Delayed on Blackwell: the norm writes FP8 (-1 per element) and keeps no transpose; the
  // other inputs read 2 write 1: -4096 + 3 x 5120 = 11264. Gradients 3 x 11264 = 33792.
  CHECK(fp8_cast_forward_bytes(model, config, delayed_b) == 11264.0);
  CHECK(fp8_cast_backward_bytes(model, config, delayed_b) == 33792.0);
  // Current scaling on Blackwell: after a norm read 2 write 1 (the norm found the amax) = 3;
  // the others + the amax read = 5: 3 x 4096 + 5 x 5120 = 37888. Gradients 5 x 11264 = 56320.
  CHECK(fp8_cast_forward_bytes(model, config, current_b) == 37888.0);
  CHECK(fp8_cast_backward_bytes(model, config, current_b) == 56320.0);
  // MXFP8: no norm fusion (TE quantizes the norm's 16-bit output), no amax pass, two copies:
  // read 2 + write 2.0625 = 4.0625 for every input and gradient: 4.0625 x 9216 = 37440 and
  // 4.0625 x 11264 = 45760.
  CHECK(fp8_cast_forward_bytes(model, config, mx) == 37440.0);
  CHECK(fp8_cast_backward_bytes(model, config, mx) == 45760.0);

  // Sequence parallel (tp 2, FP8 TP all-gathers): the norm and TE's quantize run on the local
  // half of each norm input (1024 of 2048 elements) before the FP8 gather; tensor-scaled
  // recipes transpose the gathered tensor in the backward, which gathers it again for the
  // weight gradient; the row-parallel layers' output gradients (out, down: 2048 elements each,
  // 1024 local) are cast locally and their gathered copy transposed. The shapes: output
  // gradients qkv 3072, out 2048, up 4096, down 2048 (11264).
  ParallelConfig sp = config;
  sp.sequence_parallel = true;
  // Delayed, Hopper, forward: 2 x -1 x 1024 = -2048, the others 4 x 5120 = 20480: 18432
  // (24576 without SP, where the norm's FP8 write saves a byte on all 4096 and the transposes
  // of the norm inputs are made here, 2 x 4096).
  CHECK(fp8_cast_forward_bytes(model, sp, delayed_h) == 18432.0);
  CHECK(fp8_cast_forward_bytes(model, config, delayed_h) == 24576.0);
  // Backward: qkv 4 x 3072 + its input's transpose 2 x 2048 = 16384, up 4 x 4096 + 2 x 2048 =
  // 20480; out and down each 3 x 1024 local + 2 x 2048 gathered = 7168: 51200 (45056 without).
  CHECK(fp8_cast_backward_bytes(model, sp, delayed_h) == 51200.0);
  CHECK(fp8_cast_backward_bytes(model, config, delayed_h) == 45056.0);
  // Delayed, Blackwell (no transposes): forward -2048 + 3 x 5120 = 13312; backward 3 x (3072 +
  // 4096) + 3 x (1024 + 1024) = 27648 (33792 without SP).
  CHECK(fp8_cast_forward_bytes(model, sp, delayed_b) == 13312.0);
  CHECK(fp8_cast_backward_bytes(model, sp, delayed_b) == 27648.0);
  // Current, Hopper: forward 2 x 3 x 1024 = 6144 (the norm found the amax) + 6 x 5120 = 30720:
  // 36864; backward 6 x 3072 + 4096 + 6 x 4096 + 4096 + 2 x (5 x 1024 + 4096) = 69632.
  const Precision current_h = precision_of(fp8_training(Fp8Recipe::current), hopper);
  CHECK(fp8_cast_forward_bytes(model, sp, current_h) == 36864.0);
  CHECK(fp8_cast_backward_bytes(model, sp, current_h) == 69632.0);
  // MXFP8: both usages quantized locally and gathered, 4.0625 a local element: forward
  // 4.0625 x (2048 + 5120) = 29120, backward 4.0625 x (3072 + 1024 + 4096 + 1024) = 37440.
  CHECK(fp8_cast_forward_bytes(model, sp, mx) == 29120.0);
  CHECK(fp8_cast_backward_bytes(model, sp, mx) == 37440.0);
  // 16-bit TP all-gathers (training.fp8.communication false): the casts run on the gathered
  // tensors, as without SP.
  Training sixteen_gathers = fp8_training(Fp8Recipe::delayed);
  sixteen_gathers.fp8.communication = false;
  const Precision bf16_gathers = precision_of(sixteen_gathers, hopper);
  CHECK(fp8_cast_forward_bytes(model, sp, bf16_gathers) == 24576.0);
  CHECK(fp8_cast_backward_bytes(model, sp, bf16_gathers) == 45056.0);

  // torchao (torchtitan: not Transformer Engine's linears): torch._scaled_mm takes a
  // column-major second operand on every GPU, so Blackwell keeps the transposed copies too.
  const Precision torchao_b = precision_of(fp8_training(Fp8Recipe::current), blackwell, false);
  CHECK(torchao_b.fp8_transposes);
  CHECK(fp8_copy_bytes(torchao_b) == 2.0);
  // Transformer Engine 1.x (stack key fp8_tn_only, NeMo 25.02's TE 1.14): its linears cast
  // with a fused cast-transpose on every GPU, so Blackwell prices Hopper's bytes: delayed
  // forward 24576 and backward 45056 (the Hopper figures above, without SP).
  const Stack te1 = load_stack("name: te1\nbase: megatron-core\nfp8_tn_only: true\n", "te1.yaml");
  CHECK_FALSE(te1.fp8_follows_gpu_layout());
  CHECK(stack_preset("megatron-core").fp8_follows_gpu_layout());
  CHECK_FALSE(stack_preset("torchtitan").fp8_follows_gpu_layout());  // torchao's linears
  const Precision te1_b =
      precision_of(fp8_training(Fp8Recipe::delayed), blackwell, te1.fp8_follows_gpu_layout());
  CHECK(te1_b.fp8_transposes);
  CHECK(fp8_cast_forward_bytes(model, config, te1_b) == 24576.0);
  CHECK(fp8_cast_backward_bytes(model, config, te1_b) == 45056.0);
  CHECK(weight_memory_bytes_per_parameter(te1_b, true) == 4.0);  // 16-bit + FP8 + transpose
  // The layer pays those bytes at HBM rate: forward 24576 - 11264 = 13312 more, backward
  // 45056 - 33792 = 11264 more.
  Model fp8_model = model;
  fp8_model.training = fp8_training(Fp8Recipe::delayed);
  ComputeFeatures tn_only;
  tn_only.fp8_gpu_layout = te1.fp8_follows_gpu_layout();
  Gpu fp8_blackwell = blackwell;
  fp8_blackwell.peak_tflops_fp8 = 200.0;
  const LayerTime native = layer_time(fp8_blackwell, fp8_model, config, ComputeFeatures{});
  const LayerTime transposed = layer_time(fp8_blackwell, fp8_model, config, tn_only);
  CHECK(transposed.forward_s - native.forward_s == Approx(hbm_time_s(fp8_blackwell, 13312.0)));
  CHECK(transposed.backward_s - native.backward_s == Approx(hbm_time_s(fp8_blackwell, 11264.0)));

  // Weights: Blackwell keeps one FP8 copy (2 + 1 with the 16-bit weights cached beside it);
  // FP8 parameters hold it alone; MXFP8 2.0625. The cast per parameter: read 2 + the copies,
  // current scaling + 2 for the weight's amax.
  CHECK(weight_memory_bytes_per_parameter(delayed_b, true) == 3.0);
  Training params = fp8_training(Fp8Recipe::mxfp8);
  params.fp8.params = true;
  CHECK(weight_memory_bytes_per_parameter(precision_of(params, blackwell), true) == 2.0625);
  CHECK(fp8_weight_cast_bytes_per_parameter(delayed_b) == 3.0);
  CHECK(fp8_weight_cast_bytes_per_parameter(current_b) == 5.0);
  CHECK(fp8_weight_cast_bytes_per_parameter(mx) == 4.0625);
  // Blockwise weights: 128x128 blocks, one fp32 scale per 16,384 elements per copy: 2 x (1 +
  // 4/16384) = 2.00048828125 kept, + 2 read = 4.00048828125 per cast.
  Training block = fp8_training(Fp8Recipe::blockwise);
  block.fp8.params = true;
  CHECK(weight_memory_bytes_per_parameter(precision_of(block, hopper), true) == 2.00048828125);
  CHECK(fp8_weight_cast_bytes_per_parameter(precision_of(block, hopper)) == 4.00048828125);
}

TEST_CASE("MXFP8 needs Blackwell's block-scaled tensor cores", "[precision]") {
  Model model = test::small_model();
  model.training.dtype = Dtype::fp8;
  model.training.fp8.recipe = Fp8Recipe::mxfp8;
  CHECK_THROWS_WITH(
      check_model_on_gpu(model, gpu_preset("h100-sxm-80g")),
      Catch::Contains("training.fp8.recipe: mxfp8 runs on compute capability 10.0-11.x") &&
          Catch::Contains("h100-sxm-80g is 9.0"));
  CHECK_NOTHROW(check_model_on_gpu(model, gpu_preset("b200")));
  // Transformer Engine refuses it from 12.0 on too (check_mxfp8_support, quantization.py
  // L61-67 @v2.9).
  Gpu consumer = gpu_preset("b200");
  consumer.compute_capability = 12.0;
  CHECK_THROWS_WITH(check_model_on_gpu(model, consumer), Catch::Contains("is 12.0"));
  consumer.compute_capability = 10.3;
  CHECK_NOTHROW(check_model_on_gpu(model, consumer));
  model.training.fp8.recipe = Fp8Recipe::current;
  CHECK_NOTHROW(check_model_on_gpu(model, gpu_preset("h100-sxm-80g")));
}

TEST_CASE("FP8 linear inputs kept as their FP8 copy", "[precision][memory]") {
  // small model, tp 2, no SP, no dropout: s*b = 32, h = 64, f = 256. The QKV and FFN inputs
  // (kept whole on each TP rank) drop from 2 to 1 byte: -2 x 32 x 64 = -4096; the output
  // projection and FFN down inputs (split over TP) too: -(32 x 64 + 32 x 256) / 2 = -5120.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  const double bf16 = layer_activation_bytes(model, config, true, SelectiveKind::attention, false);
  const double fp8 = layer_activation_bytes(model, config, true, SelectiveKind::attention, true);
  CHECK(bf16 - fp8 == 4096.0 + 5120.0);
  // torchao recasts the 16-bit inputs in backward: + 3 bytes per input element (9216 of them).
  const Precision p = precision_of(fp8_training(Fp8Recipe::delayed));
  CHECK(fp8_cast_backward_bytes(model, config, p, false) -
            fp8_cast_backward_bytes(model, config, p) ==
        3.0 * 9216.0);
  // ... and casts them forward without the norm fusion or the transpose: 3 x 9216.
  CHECK(fp8_cast_forward_bytes(model, config, p, false) == 3.0 * 9216.0);
}

TEST_CASE("FP8 delayed scaling's amax all-reduces, hand-derived", "[precision]") {
  // TP 4 x DP 4 of one stage over two 8-GPU servers, NCCL's own hop latencies (scale 1).
  const GroupLink link = test::network_group(16, 2, 50.0, 14e-6, 3.4e-6);
  ParallelConfig config;
  config.tp = 4;
  config.pp = 8;
  config.dp = 4;
  config.virtual_stages = 12;
  // GPT-3 175B's stage: 12 layers in 12 chunks, 64 micro-batches. Per chunk the forward
  // amaxes: 4 bytes x 3 (input, weight, output) x 4 linears x 1 layer = 48 B; calls: after
  // each chunk's forward and backward, 2 x 12 x 64 = 1536.
  const AmaxReductions delayed =
      fp8_amax_reductions(config, precision_of(fp8_training(Fp8Recipe::delayed)), 12.0, 64, link);
  CHECK(delayed.bytes_per_call == 48.0);
  CHECK(delayed.calls_per_step == 1536.0);
  // NCCL's tree LL: 6.8 + 2 x (7 x 0.6 + log2i(2) x 5.0) = 25.2 us (the ring's LL: 6.6 + 28 x
  // 0.6 + 2 x 2.7 = 28.8 us); wire (2 x 48 x 7/8 / 80e9 + 6 x 1 / 47e9) / 0.5.
  const double wire_s = 2.0 * (2.0 * 48.0 * 0.875 / 80e9 + 6.0 / 47e9);
  CHECK(delayed.time_per_call_s == Approx(25.2e-6 + wire_s).epsilon(1e-9));
  CHECK(delayed.total_s() == Approx(1536.0 * (25.2e-6 + wire_s)));
  // Current scaling has no per-chunk reduction (its own, per tensor, is below); BF16 has none;
  // one rank has no one to ask.
  CHECK(fp8_amax_reductions(config, precision_of(fp8_training(Fp8Recipe::current)), 12.0, 64, link)
            .total_s() == 0.0);
  CHECK(fp8_amax_reductions(config, precision_of(Training{}), 12.0, 64, link).total_s() == 0.0);
  CHECK(fp8_amax_reductions(config, precision_of(fp8_training(Fp8Recipe::delayed)), 12.0, 64,
                            test::nvlink_group(1))
            .total_s() == 0.0);
}

TEST_CASE("FP8 current scaling's per-tensor amax all-reduces over TP, hand-derived",
          "[precision]") {
  // TP 4 inside one server: NVLink 100 GB/s, 1 us a hop.
  const GroupLink tp = test::nvlink_group(4);
  ParallelConfig config;
  config.tp = 4;
  config.pp = 8;
  config.dp = 4;
  config.sequence_parallel = true;
  const Precision current = precision_of(fp8_training(Fp8Recipe::current));
  // 12 layers x 64 micro-batches x (2 forward + 2 backward) = 3072 calls of one fp32 amax.
  const AmaxReductions amax = fp8_current_amax_reductions(config, current, 12.0, 1.0, 64, tp);
  CHECK(amax.bytes_per_call == 4.0);
  CHECK(amax.calls_per_step == 3072.0);
  // Each call is a 4-byte all-reduce over the TP link (its latency: test_costmodel_collective).
  CHECK(amax.time_per_call_s ==
        Approx(collective_time_s(Collective::all_reduce, 4.0, tp, nullptr)));
  // Full recompute runs the forward's two again: 12 x 64 x 6 = 4608.
  config.recompute = Recompute::full;
  CHECK(fp8_current_amax_reductions(config, current, 12.0, 1.0, 64, tp).calls_per_step == 4608.0);
  // MoE layers: the routed experts have no TP, so only the attention's QKV input (forward) and
  // projection gradient (backward) reduce: 12 x 64 x (1 + 1 + 1 recomputed) = 2304 with full
  // recompute; a stage of half MoE layers, 12 x 64 x (1.5 x 3) = 3456.
  CHECK(fp8_current_amax_reductions(config, current, 12.0, 0.0, 64, tp).calls_per_step == 2304.0);
  CHECK(fp8_current_amax_reductions(config, current, 12.0, 0.5, 64, tp).calls_per_step == 3456.0);
  config.recompute = Recompute::none;
  CHECK(fp8_current_amax_reductions(config, current, 12.0, 0.0, 64, tp).calls_per_step == 1536.0);
  // No sequence parallelism (no local quantize before an FP8 all-gather), TP 1, or delayed
  // scaling: none.
  config.sequence_parallel = false;
  CHECK(fp8_current_amax_reductions(config, current, 12.0, 1.0, 64, tp).calls_per_step == 0.0);
  config.sequence_parallel = true;
  CHECK(fp8_current_amax_reductions(config, current, 12.0, 1.0, 64, test::nvlink_group(1))
            .calls_per_step == 0.0);
  CHECK(fp8_current_amax_reductions(config, precision_of(fp8_training(Fp8Recipe::delayed)), 12.0,
                                    1.0, 64, tp)
            .calls_per_step == 0.0);
}

TEST_CASE("a stack on Transformer Engine 1.x prices Hopper's FP8 layout on Blackwell, end to end",
          "[precision][stack]") {
  // Two round GPUs alike but for their compute capability: on Hopper's the FP8 copies are
  // transposed for every stack; on Blackwell's only where the stack's linears keep Hopper's
  // layout (fp8_tn_only). So a TE 1.x stack prices the same step and memory on both, and TE 2.x
  // on Blackwell less of both (one FP8 copy, no transpose kernels).
  Cluster hopper = test::round_cluster();
  hopper.gpu.peak_tflops_fp8 = 200.0;
  hopper.gpu.compute_capability = 9.0;
  Cluster blackwell = hopper;
  blackwell.gpu.compute_capability = 10.0;
  Model model = test::small_model();
  model.training = fp8_training(Fp8Recipe::delayed);
  ParallelConfig config;
  const Placement placement = test::nvlink_placement(1, 1, 1);
  EstimateOptions te2;
  te2.stack = stack_preset("megatron-core");
  EstimateOptions te1;
  te1.stack = load_stack("name: te1\nbase: megatron-core\nfp8_tn_only: true\n", "te1.yaml");
  const Estimate te1_h = estimate(hopper, model, config, placement, nullptr, te1);
  const Estimate te1_b = estimate(blackwell, model, config, placement, nullptr, te1);
  const Estimate te2_b = estimate(blackwell, model, config, placement, nullptr, te2);
  CHECK(te1_b.time.step_s == Approx(te1_h.time.step_s));
  CHECK(te1_b.memory.total_bytes == Approx(te1_h.memory.total_bytes));
  CHECK(te2_b.time.step_s < te1_b.time.step_s);
  CHECK(te2_b.memory.total_bytes < te1_b.memory.total_bytes);
}
