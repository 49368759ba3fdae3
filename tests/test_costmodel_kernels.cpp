// Kernel profile per GPU type, wave quantisation, the k-fill per SM rate, the TP overlap with
// Transformer Engine's methods, and the dtype check.
#include <catch2/catch.hpp>
#include <cmath>

#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/gemms.h"
#include "costmodel/kernels.h"
#include "costmodel/model_loader.h"
#include "costmodel/stack.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"

using namespace trident;

TEST_CASE("kernel profile from the GPU preset", "[kernels]") {
  Gpu gpu = test::round_gpu();
  CHECK(kernel_profile(gpu).sm_count == 0);  // a GPU file without the keys: empty profile
  CHECK(kernel_profile(gpu).sustained_ratio == 1.0);
  const Gpu h100_gpu = gpu_preset("h100-sxm-80g");
  const KernelProfile h100 = kernel_profile(h100_gpu);
  CHECK(h100.sm_count == 132);
  CHECK(h100.sustained_ratio == Approx(0.849));  // H200 MSMF / MAMF = 702.9 / 828.0 = 0.8489
  CHECK(h100.flash_forward_share == Approx(609.0 / 989.0).epsilon(1e-4));
  const Gpu gb200 = gpu_preset("gb200");
  CHECK(kernel_profile(gb200).sm_count == 148);
  // no A100 MSMF: the mean of H200 (0.849) and B200 (1455.7/1732.6 = 0.840) = 0.845
  const Gpu a100 = gpu_preset("a100-sxm-80g");
  CHECK(kernel_profile(a100).sustained_ratio == Approx(0.845));
  // the keys are read from any GPU file, not matched by name
  const Gpu custom = load_gpu(
      "name: my-gpu\npeak_tflops: {bf16: 100}\nmemory_gib: 16\nmemory_gbps: 900\n"
      "sm_count: 40\nsustained_clock_ratio: 0.9\nattention_forward_efficiency: 0.5\n"
      "attention_backward_efficiency: 0.4\n",
      "my-gpu.yaml");
  const KernelProfile mine = kernel_profile(custom);
  CHECK(mine.sm_count == 40);
  CHECK(mine.sustained_ratio == 0.9);
  CHECK(mine.flash_forward_share == 0.5);
  CHECK(mine.flash_backward_share == 0.4);
}

TEST_CASE("a job runs at the pace of its slowest GPU", "[kernels]") {
  // H100 borrows H200's all-8 concurrent run: 40 draws (8 GPUs x 5 rounds), mean 698.6 over
  // 702.9 alone = 0.99388, range 4.5% = 2 x 2.156 (Blom's z of 40) standard deviations ->
  // spread 0.045 / 4.313 = 0.01043; the slowest of 8: 1 - 0.01043 x 1.434 = 0.98504 -> 0.979.
  CHECK(698.6 / 702.9 *
            (1.0 -
             0.045 / (2.0 * expected_max_standard_normal(40)) * expected_max_standard_normal(8)) ==
        Approx(0.9790).margin(1e-4));
  const Gpu h100_gpu = gpu_preset("h100-sxm-80g");
  const KernelProfile h100 = kernel_profile(h100_gpu);
  CHECK(h100.ensemble_ratio == Approx(0.979));
  CHECK(h100_gpu.clock_spread == Approx(0.0104));
  CHECK(h100.training_clock_ratio() == Approx(0.849 * 0.979));
  // B200 and GB200: 1426.4 / 1455.7 = 0.97987, spread 0.104 / 4.313 = 0.02411, the slowest of
  // 8: 0.97987 x (1 - 0.02411 x 1.434) = 0.9460.
  CHECK(1426.4 / 1455.7 *
            (1.0 -
             0.104 / (2.0 * expected_max_standard_normal(40)) * expected_max_standard_normal(8)) ==
        Approx(0.9460).margin(1e-4));
  const Gpu b200 = gpu_preset("b200");
  const Gpu gb200 = gpu_preset("gb200");
  CHECK(kernel_profile(b200).ensemble_ratio == Approx(0.946));
  CHECK(kernel_profile(gb200).ensemble_ratio == Approx(0.946));
  CHECK(gb200.clock_spread == Approx(0.0241));
  // No concurrent measurement for A100: the mean of the two measured generations, as for its
  // sustained ratio: (0.979 + 0.946) / 2 = 0.9625, spread (0.0104 + 0.0241) / 2 = 0.01725;
  // training clock 0.845 x 0.9625 = 0.81331.
  const Gpu a100 = gpu_preset("a100-sxm-80g");
  CHECK(kernel_profile(a100).ensemble_ratio == Approx((0.979 + 0.946) / 2.0));
  CHECK(a100.clock_spread == Approx((0.0104 + 0.0241) / 2.0));
  CHECK(kernel_profile(a100).training_clock_ratio() == Approx(0.81331).margin(1e-5));
  const Gpu a100_40g = gpu_preset("a100-sxm-40g");
  CHECK(kernel_profile(a100_40g).ensemble_ratio == Approx(0.9625));
  // The PCIe A100 and the V100 take the same extrapolation (they priced at their burst clock,
  // the PCIe card faster than the SXM one).
  const Gpu a100_pcie = gpu_preset("a100-pcie-80g");
  const Gpu v100 = gpu_preset("v100-sxm-32g");
  CHECK(kernel_profile(a100_pcie).training_clock_ratio() == Approx(0.81331).margin(1e-5));
  CHECK(kernel_profile(v100).training_clock_ratio() == Approx(0.81331).margin(1e-5));
  CHECK(v100.clock_spread == Approx(0.01725));
  // The GEMM rate carries both ratios: round GPU (100 TFLOP/s, efficiency 1), a shape that
  // fills its tiles (no SM count: 128x128 tiles, k fill 64): 4096 x 4096 x 4032 ->
  // 100 x 4032 / (4032 + 64) = 98.4375 TFLOP/s; sustained 0.8 and ensemble 0.5 -> 39.375.
  Gpu gpu = test::round_gpu();
  const GemmShape shape{4096, 4096, 4032, 1};
  CHECK(gemm_rate_tflops(gpu, Dtype::bf16, kernel_profile(gpu), shape) == Approx(98.4375));
  gpu.sustained_clock_ratio = 0.8;
  gpu.ensemble_clock_ratio = 0.5;
  CHECK(gemm_rate_tflops(gpu, Dtype::bf16, kernel_profile(gpu), shape) == Approx(39.375));
  // fp32 runs on the FP32 peak (CUDA cores: PyTorch leaves TF32 matmuls off), tf32 on the
  // tensor cores' TF32 peak: peaks 10 and 50, same shape and ratios -> 98.4375 x 0.4 x
  // (10 or 50) / 100 = 3.9375 and 19.6875 (it priced fp32 at the TF32 peak).
  gpu.peak_tflops_fp32 = 10.0;
  gpu.peak_tflops_tf32 = 50.0;
  CHECK(gemm_rate_tflops(gpu, Dtype::fp32, kernel_profile(gpu), shape) == Approx(3.9375));
  CHECK(gemm_rate_tflops(gpu, Dtype::tf32, kernel_profile(gpu), shape) == Approx(19.6875));
  // Read from any GPU file; out of (0, 1] refused with the key named.
  const std::string file = "name: g\npeak_tflops: {bf16: 100}\nmemory_gib: 16\nmemory_gbps: 900\n";
  const Gpu file_gpu = load_gpu(file + "ensemble_clock_ratio: 0.9\n", "g.yaml");
  CHECK(kernel_profile(file_gpu).ensemble_ratio == 0.9);
  CHECK_THROWS_WITH(load_gpu(file + "ensemble_clock_ratio: 1.5\n", "g.yaml"),
                    Catch::Contains("ensemble_clock_ratio"));
}

TEST_CASE("the normal quantile and the expected largest of n draws", "[kernels]") {
  // Reference quantiles (any normal table): 0.5 -> 0, 0.975 -> 1.959964, 0.999 -> 3.090232,
  // 1e-6 -> -4.753424; Acklam's approximation holds 1.2e-9 relative.
  CHECK(inverse_normal_cdf(0.5) == Approx(0.0).margin(1e-12));
  CHECK(inverse_normal_cdf(0.975) == Approx(1.959964).epsilon(1e-6));
  CHECK(inverse_normal_cdf(0.999) == Approx(3.090232).epsilon(1e-6));
  CHECK(inverse_normal_cdf(1e-6) == Approx(-4.753424).epsilon(1e-6));
  CHECK(inverse_normal_cdf(0.01) == Approx(-inverse_normal_cdf(0.99)).epsilon(1e-9));
  // Blom: z(n) = Φ⁻¹((n - 0.375) / (n + 0.25)); one draw 0 (Φ⁻¹(0.5)); 8 draws Φ⁻¹(7.625 / 8.25
  // = 0.924242) = 1.4342, the exact expectation 1.4236 (Harter's table); 1,000 draws
  // Φ⁻¹(0.999375) = 3.2272 against 3.2414; 40 draws 2.1564 against 2.1608.
  CHECK(expected_max_standard_normal(1) == 0.0);
  CHECK(expected_max_standard_normal(8) == Approx(1.4342).margin(1e-4));
  CHECK(expected_max_standard_normal(8) == Approx(1.4236).epsilon(0.0076));  // 0.75% above
  CHECK(expected_max_standard_normal(40) == Approx(2.1564).margin(1e-4));
  CHECK(expected_max_standard_normal(1000) == Approx(3.2414).epsilon(0.005));
  // 131,072 draws: the integral of x·n·φ(x)·Φ(x)^(n-1) reads 4.443; Blom 4.4274, 0.35% under.
  CHECK(expected_max_standard_normal(131072) == Approx(4.443).epsilon(0.0045));
  // It grows without bound but slowly: 2^24 GPUs, t = 0.625 / 16777216.25 -> 5.380.
  CHECK(expected_max_standard_normal(1LL << 24) == Approx(5.380).margin(1e-3));
}

TEST_CASE("the pace of a job falls with its size by the GPUs' clock spread", "[kernels]") {
  // H100: 0.979 at 8 GPUs, spread 0.0104. 2,048 GPUs: z = Φ⁻¹(1 - 0.625 / 2048.25) = 3.4270,
  // so 0.979 x (1 - 0.0104 x 3.4270) / (1 - 0.0104 x 1.4342) = 0.979 x 0.964359 / 0.985084 =
  // 0.95840; 64 GPUs: z = 2.3367, 0.979 x 0.975698 / 0.985084 = 0.96967.
  const Gpu h100 = gpu_preset("h100-sxm-80g");
  CHECK(gpu_for_job(h100, 8).ensemble_clock_ratio == 0.979);
  CHECK(gpu_for_job(h100, 2048).ensemble_clock_ratio == Approx(0.95840).margin(1e-5));
  CHECK(gpu_for_job(h100, 64).ensemble_clock_ratio == Approx(0.96967).margin(1e-5));
  CHECK(job_pace_ratio(0.979, 0.0104, 8, 2048) == Approx(0.95840).margin(1e-5));
  // Resolved once, the GPU carries its job size: the same job asks for nothing more, another
  // size moves from it (2,048 -> 64 gives the 64 above), and one GPU keeps its own clock.
  const Gpu job = gpu_for_job(h100, 2048);
  CHECK(job.pace_gpus == 2048);
  CHECK_FALSE(needs_job_pace(job, 2048));
  CHECK(needs_job_pace(job, 64));
  CHECK(gpu_for_job(job, 64).ensemble_clock_ratio == Approx(0.96967).margin(1e-5));
  CHECK(gpu_for_job(h100, 1).ensemble_clock_ratio == 1.0);
  CHECK(needs_job_pace(h100, 1));
  CHECK_FALSE(needs_job_pace(h100, 8));
  // The pace never rises with the job and never passes one GPU alone: a GPU file's ratio of 1
  // (not measured) with a spread of 0.1 would read 1.099 at 2 GPUs (1 - 0.1 x 0.5895 over
  // 1 - 0.1 x 1.4342); it stays 1 there and falls from 8 on.
  Gpu wide = h100;
  wide.ensemble_clock_ratio = 1.0;
  wide.clock_spread = 0.1;
  CHECK(gpu_for_job(wide, 2).ensemble_clock_ratio == 1.0);
  CHECK(gpu_for_job(wide, 8).ensemble_clock_ratio == 1.0);
  CHECK(gpu_for_job(wide, 64).ensemble_clock_ratio < 1.0);
  double previous = 1.0;
  for (const int gpus : {2, 3, 8, 9, 64, 1000, 16384, 1 << 24}) {
    const double pace = gpu_for_job(h100, gpus).ensemble_clock_ratio;
    CHECK(pace <= previous);
    CHECK(pace > 0.0);
    previous = pace;
    CHECK(gpu_for_job(wide, gpus).ensemble_clock_ratio <= 1.0);
  }
  // Without a spread every job of more than one GPU runs at the file's ratio.
  Gpu flat = h100;
  flat.clock_spread = 0.0;
  CHECK_FALSE(needs_job_pace(flat, 2048));
  CHECK(gpu_for_job(flat, 2048).ensemble_clock_ratio == 0.979);
  // Read from a GPU file; out of [0, 0.1] refused with the key named.
  const std::string file = "name: g\npeak_tflops: {bf16: 100}\nmemory_gib: 16\nmemory_gbps: 900\n";
  CHECK(load_gpu(file + "clock_spread: 0.02\n", "g.yaml").clock_spread == 0.02);
  CHECK(load_gpu(file, "g.yaml").clock_spread == 0.0);
  CHECK_THROWS_WITH(load_gpu(file + "clock_spread: 0.5\n", "g.yaml"),
                    Catch::Contains("clock_spread: expected a number from 0 to 0.1"));
  CHECK_THROWS_WITH(load_gpu(file + "clock_spread: -0.01\n", "g.yaml"),
                    Catch::Contains("clock_spread"));
}

TEST_CASE("wave quantisation", "[kernels]") {
  CHECK(wave_efficiency(132, 132) == 1.0);
  CHECK(wave_efficiency(133, 132) == Approx(133.0 / 264.0));             // a tail wave of one tile
  CHECK(wave_efficiency(3072, 132) == Approx(3072.0 / (132.0 * 24.0)));  // 23.27 -> 24 waves
  CHECK(wave_efficiency(10, 0) == 1.0);                                  // SM count unknown
  // 16384 x 6144 x 2048 on 132 SMs: 128x256 tiles 128*24 = 3072 -> 0.9697 (256x128: 64*48
  // = 3072, same); k fill 2048 / (2048 + 64) = 0.96970 -> 0.94031
  CHECK(gemm_shape_efficiency({16384, 6144, 2048}, 132, 64.0) ==
        Approx(3072.0 / 3168.0 * 2048.0 / 2112.0));
  // 2048 x 1536 x 12288 on 108 SMs: 128x256: 16*6 = 96 tiles, one wave of 108 -> 0.8889;
  // 256x128: 8*12 = 96 tiles, same -> 0.8889 x 12288/12352
  CHECK(gemm_shape_efficiency({2048, 1536, 12288}, 108, 64.0) ==
        Approx(96.0 / 108.0 * 12288.0 / 12352.0));
  // The orientations differ: 384 x 256 on 2 SMs. 128x256 tiles: 3 x 1 = 3, full, 2 waves ->
  // 3 / 4 = 0.75; 256x128: 2 x 2 = 4 tiles, the first row half empty (384 / 512 = 0.75), 2
  // full waves -> 0.75. k 4096: x 4096 / 4160.
  CHECK(gemm_shape_efficiency({384, 256, 4096}, 2, 64.0) == Approx(0.75 * 4096.0 / 4160.0));
  // 256 x 128 on 132 SMs: 256x128 is one full tile (128x256 would be two half-empty ones):
  // 1 tile of 132 -> 1 / 132.
  CHECK(gemm_shape_efficiency({256, 128, 4096}, 132, 64.0) == Approx(4096.0 / 4160.0 / 132.0));
  // Two batched 100 x 100 GEMMs: each one 128x256 tile holding 10,000 of 32,768 elements; 2
  // tiles on 132 SMs -> 2 / 132.
  CHECK(gemm_shape_efficiency({100, 100, 4096, 2.0}, 132, 64.0) ==
        Approx(10000.0 / 32768.0 * 2.0 / 132.0 * 4096.0 / 4160.0));
}

TEST_CASE("k fill grows with the SM's tensor rate", "[kernels]") {
  Gpu gpu = test::round_gpu();  // 100 TFLOP/s
  CHECK(gemm_k_fill(gpu, Dtype::bf16, 0) == 64.0);
  // 100 / 10 SMs = 10 TFLOP/s per SM; 64 * 10 / (312/108) = 221.54
  CHECK(gemm_k_fill(gpu, Dtype::bf16, 10) == Approx(64.0 * 10.0 * 108.0 / 312.0));
}

TEST_CASE("a dtype without a peak is an input error", "[kernels]") {
  Model model = test::small_model();
  Gpu gpu = test::round_gpu();
  gpu.name = "v100-sxm-32g";
  gpu.peak_tflops_bf16 = 0.0;
  model.name = "gpt3-175b";
  CHECK_THROWS_WITH(check_model_on_gpu(model, gpu),
                    "model gpt3-175b: dtype bf16 not supported by v100-sxm-32g (no bf16 peak); "
                    "set training.dtype: fp16");
  model.training.dtype = Dtype::fp16;
  CHECK_NOTHROW(check_model_on_gpu(model, gpu));
}

TEST_CASE("TP overlap: exposed time of Transformer Engine's methods", "[kernels][estimate]") {
  // Small model, tp 2, SP, 1 stage of 2 layers, m = 8 / (1 * 1) with dp 1.
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();
  config.pp = 1;
  config.dp = 1;
  config.sequence_parallel = true;
  const Cluster cluster = test::round_cluster();
  Placement placement;
  placement.tp = test::nvlink_group(2);
  placement.pp = test::nvlink_group(1);
  placement.dp = test::nvlink_group(1);
  EstimateOptions options;
  options.stack.tp_overlap = TpOverlap::none;
  const Estimate plain = estimate(cluster, model, config, placement, nullptr, options);
  // S = 1*32*64*2 = 4096 bytes; RS and AG over 2 ranks, 1 step each; NCCL's LL protocol wins:
  // 6.6 us + 1 x 0.6 us x (1 us / 3.4 us) + 4096 x 0.5 / (0.5 x 80e9) = 6.6765 us each;
  // 5 calls (RS + AG) per layer: 2 layers * 8 micro-batches * 5 = 80 calls of 13.353 us.
  const double c = 6.6e-6 + 0.6e-6 / 3.4 + 4096 * 0.5 / (0.5 * 80e9);
  CHECK(plain.tp.calls_per_step == Approx(80.0));
  CHECK(plain.time.tp_comm_s == Approx(80 * 2 * c));
  options.stack.tp_overlap = TpOverlap::userbuffers;
  const Estimate overlapped = estimate(cluster, model, config, placement, nullptr, options);
  // Each of the 10 overlapped collectives per layer costs max(gemm', c) - gemm, and the two
  // pipelined reduce-scatters add c/4: per layer at most 10.5c - (sum of the 10 GEMMs); the
  // estimate keeps the smaller of that and the plain total (overlap never costs more).
  const LayerTime layer = layer_time(cluster.gpu, model, config, ComputeFeatures{});
  const double gemms = layer.gemm_fprop_s[0] + layer.gemm_fprop_s[1] + layer.gemm_fprop_s[2] +
                       layer.gemm_fprop_s[3] + layer.gemm_dgrad_s[0] + layer.gemm_dgrad_s[1] +
                       layer.gemm_dgrad_s[2] + layer.gemm_dgrad_s[3] + layer.gemm_wgrad_s[0] +
                       layer.gemm_wgrad_s[2];
  CHECK(overlapped.time.tp_comm_s <= plain.time.tp_comm_s);
  // It hides at most the GEMMs it runs behind.
  CHECK(overlapped.time.tp_comm_s > plain.time.tp_comm_s - 16 * gemms);
}

TEST_CASE("RoPE and dropout masks priced only where the model has them", "[kernels]") {
  const Gpu gpu = test::round_gpu();  // 1000 GB/s x 0.85 achievable
  const ParallelConfig config = test::small_config();
  Model rope = test::small_model();  // no learned positions: RoPE, no dropout
  Model learned = rope;
  learned.learned_positions = true;
  const LayerTime with_rope = layer_time(gpu, rope, config, ComputeFeatures{});
  const LayerTime without = layer_time(gpu, learned, config, ComputeFeatures{});
  // RoPE reads and writes Q and K: 4 bytes x 32 tokens x (64 + 64) / tp 2 = 8192 bytes, forward
  // and backward.
  CHECK(with_rope.forward_s - without.forward_s == Approx(8192.0 / 850e9));
  CHECK(with_rope.backward_s - without.backward_s == Approx(8192.0 / 850e9));
  // Dropout adds the two residual masks: 2 x 1 byte x 32 x 64 = 4096 forward, twice backward.
  Model dropout = learned;
  dropout.dropout = 0.1;
  const LayerTime masked = layer_time(gpu, dropout, config, ComputeFeatures{});
  CHECK(masked.forward_s - without.forward_s == Approx(4096.0 / 850e9));
  CHECK(masked.backward_s - without.backward_s == Approx(8192.0 / 850e9));
}

TEST_CASE("unfused attention's softmax time as its framework runs it", "[kernels]") {
  const Gpu gpu = test::round_gpu();  // 1000 GB/s x 0.85 achievable
  ParallelConfig config = test::small_config();
  config.tp = 1;  // 4 heads x micro-batch 1: a multiple of 4, the fused kernels' rule
  Model model = test::small_model();
  model.seq_len = 8192;  // TE's fused softmax takes it (below 16384); Megatron's not (above 4096)
  ComputeFeatures te;
  te.attention = AttentionKernel::unfused;
  ComputeFeatures megatron = te;
  megatron.unfused_softmax = UnfusedSoftmax::megatron;
  const LayerTime fused = layer_time(gpu, model, config, te);
  const LayerTime fp32 = layer_time(gpu, model, config, megatron);
  // 4 x 8192^2 = 268,435,456 scores; Megatron's fp32 softmax with its scale moves 36 bytes a
  // score forward and 40 backward, TE's fused kernel 4 and 6: 32 and 34 more.
  const double scores = 4.0 * 8192.0 * 8192.0;
  CHECK(fp32.attention_forward_s - fused.attention_forward_s == Approx(32.0 * scores / 850e9));
  CHECK(fp32.attention_backward_s - fused.attention_backward_s == Approx(34.0 * scores / 850e9));
  CHECK(fp32.forward_s - fused.forward_s == Approx(32.0 * scores / 850e9));
  CHECK(fp32.backward_s - fused.backward_s == Approx(34.0 * scores / 850e9));
}

TEST_CASE("eager PyTorch elementwise ops: RMSNorm, RoPE, SwiGLU, GQA repeat op by op",
          "[kernels]") {
  const Gpu gpu = test::round_gpu();                   // 1000 GB/s x 0.85 achievable
  const ParallelConfig config = test::small_config();  // tp 2, micro-batch 1, no SP
  Model model = test::small_model();  // 32 tokens, hidden 64, 4 heads, MHA, RMSNorm, RoPE
  model.ffn = FfnKind::swiglu;        // 256 wide, 128 per TP rank
  // ibm-fms's eager ops against the fused defaults, forward: two RMSNorms 2 x (36 - 4) x 32 x
  // 64 = 131072 (norms see the whole hidden without SP); RoPE (36 - 4) x 32 x (64 + 64) / 2 =
  // 65536; SwiGLU (10 - 6) x 32 x 256 / 2 = 16384; MHA: no repeat. 212992 bytes.
  ComputeFeatures fms;
  fms.elementwise = {36.0, 36.0, 10.0, true};
  const LayerTime fused = layer_time(gpu, model, config, ComputeFeatures{});
  const LayerTime eager = layer_time(gpu, model, config, fms);
  CHECK(eager.forward_s - fused.forward_s == Approx(212992.0 / 850e9));
  // Backward: twice the norms' and the activation's, RoPE's once more: 2 x 147456 + 65536.
  CHECK(eager.backward_s - fused.backward_s == Approx((2.0 * 147456.0 + 65536.0) / 850e9));
  // GQA 4 heads over 1 KV head (head dim 16): K and V each written at every head (2 bytes) and
  // read once per KV head (2 x 1/4): 2 x (2 + 0.5) x 32 x 64 / 2 = 5120, forward and backward.
  CHECK(gqa_repeat_bytes(model, config) == 0.0);
  model.kv_heads = 1;
  CHECK(gqa_repeat_bytes(model, config) == Approx(5120.0));
  ComputeFeatures repeat_only;
  repeat_only.elementwise.gqa_repeat_kv = true;
  const LayerTime gqa = layer_time(gpu, model, config, ComputeFeatures{});
  const LayerTime repeated = layer_time(gpu, model, config, repeat_only);
  CHECK(repeated.forward_s - gqa.forward_s == Approx(5120.0 / 850e9));
  CHECK(repeated.backward_s - gqa.backward_s == Approx(5120.0 / 850e9));
  // LayerNorm (one kernel eager too), learned positions, GELU: the eager bytes add nothing.
  Model plain = test::small_model();
  plain.norm = NormKind::layernorm;
  plain.learned_positions = true;
  plain.ffn = FfnKind::gelu;
  CHECK(layer_time(gpu, plain, config, fms).forward_s ==
        Approx(layer_time(gpu, plain, config, ComputeFeatures{}).forward_s));
}

TEST_CASE("multi-latent attention: unfused RoPE on the rotary parts, copies into Q, K, V",
          "[kernels]") {
  const Model model = model_preset("deepseek-v3");
  ParallelConfig config;
  config.tp = 2;
  config.micro_batch = 1;
  config.sequence_parallel = true;
  // Rotary parts: Q's 128 / 2 = 64 heads x 64 and K's one shared 64, per token of 4096:
  // 4096 x 65 x 64 = 17,039,360 elements.
  CHECK(mla_rope_elements(model, config) == 17039360.0);
  // Q and K of 64 heads x (128 + 64) and V of 64 x 128, read and written in 16 bits:
  // 4 x 4096 x 64 x (2 x 192 + 128) = 536,870,912 bytes.
  CHECK(mla_qkv_copy_bytes(model, config) == 536870912.0);
  // In the layer: forward 28 x 17,039,360 + 536,870,912 bytes, the same backward, where a fused
  // RoPE of Q and K whole (4 x 4096 x (7168 + 7168) / 2) and no copies stood before.
  const Gpu gpu = test::round_gpu();  // 1000 GB/s x 0.85 achievable
  ComputeFeatures plain;
  ComputeFeatures faster;
  faster.elementwise.mla_rope = 4.0;  // as if fused: 24 bytes an element less
  const LayerTime unfused = layer_time(gpu, model, config, plain);
  const LayerTime fused = layer_time(gpu, model, config, faster);
  CHECK(unfused.forward_s - fused.forward_s == Approx(24.0 * 17039360.0 / 850e9));
  CHECK(unfused.backward_s - fused.backward_s == Approx(24.0 * 17039360.0 / 850e9));
  // mla_up_proj recomputes the up-projections, the RoPE and the copies.
  config.recompute = Recompute::selective;
  plain.selective = SelectiveKind::mla_up_proj;
  faster.selective = SelectiveKind::mla_up_proj;
  CHECK(layer_time(gpu, model, config, plain).recompute_s -
            layer_time(gpu, model, config, faster).recompute_s ==
        Approx(24.0 * 17039360.0 / 850e9));
  // The copies, forward and backward: V of 64 instead of 128 wide per head moves 4 x 4096 x 64
  // x 64 bytes fewer each way (the GEMMs and the attention core, which also shrink, taken out).
  Model narrow = model;
  narrow.mla.v_head_dim = 64;
  config.recompute = Recompute::none;
  const auto hbm_forward_s = [&](const Model& m) {
    const LayerTime t = layer_time(gpu, m, config, plain);
    return t.forward_s - t.gemm_forward_s - t.attention_forward_s;
  };
  const auto hbm_backward_s = [&](const Model& m) {
    const LayerTime t = layer_time(gpu, m, config, plain);
    double gemms_s = t.attention_backward_s;
    for (std::size_t i = 0; i < t.gemm_dgrad_s.size(); ++i) {
      gemms_s += t.gemm_dgrad_s[i] + t.gemm_wgrad_s[i];
    }
    return t.backward_s - gemms_s;
  };
  const double v_copies = 4.0 * 4096.0 * 64.0 * 64.0;
  CHECK(hbm_forward_s(model) - hbm_forward_s(narrow) == Approx(v_copies / 850e9));
  CHECK(hbm_backward_s(model) - hbm_backward_s(narrow) == Approx(v_copies / 850e9));
  // mla_up_proj's recompute: its two up-projection GEMMs, then the RoPE at 28 bytes an element
  // and the copies, exactly.
  config.recompute = Recompute::selective;
  double up_gemms_s = 0.0;
  for (const NamedGemm& gemm : mla_up_gemms(model, 1.0, 2)) {
    up_gemms_s += gemm_time_s(gpu, Dtype::bf16, gemm.shape, nullptr);
  }
  CHECK(layer_time(gpu, model, config, plain).recompute_s - up_gemms_s ==
        Approx((28.0 * 17039360.0 + 536870912.0) / 850e9));
  // Without MLA: nothing of either.
  const Model mha = model_preset("llama3-8b");
  CHECK(mla_rope_elements(mha, config) == 0.0);
  CHECK(mla_qkv_copy_bytes(mha, config) == 0.0);
}

namespace {
/// The round GPU (100 TFLOP/s, sustained 1) with fused attention shares 0.5 / 0.4 and
/// FlashAttention-2's 0.25 / 0.2.
Gpu round_gpu_with_attention() {
  Gpu gpu = test::round_gpu();
  gpu.attention_forward_efficiency = 0.5;
  gpu.attention_backward_efficiency = 0.4;
  gpu.flash2_forward_efficiency = 0.25;
  gpu.flash2_backward_efficiency = 0.2;
  return gpu;
}
}  // namespace

TEST_CASE("FlashAttention-2 at its own share where the GPU file gives one (Hopper)", "[kernels]") {
  // H100: cuDNN fused attention 609 / 499 TFLOP/s, FA2 368 / 310 (FlashAttention-3 paper,
  // head dim 128, seq 4k).
  const Gpu h100_gpu = gpu_preset("h100-sxm-80g");
  const KernelProfile h100 = kernel_profile(h100_gpu);
  CHECK(h100.flash2_forward_share == Approx(368.0 / 989.0).epsilon(1e-4));
  CHECK(h100.flash2_backward_share == Approx(310.0 / 989.0).epsilon(1e-4));
  // A100: FA2 is the fused kernel the shares already describe; no separate keys.
  const Gpu a100 = gpu_preset("a100-sxm-80g");
  CHECK(kernel_profile(a100).flash2_forward_share == 0.0);

  // Round GPU (100 TFLOP/s, sustained 1) with fused shares 0.5 / 0.4 and FA2 0.25 / 0.2: the
  // attention core takes exactly twice as long under FA2, forward and backward; the rest of
  // the layer is the same.
  Gpu gpu = round_gpu_with_attention();
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  ComputeFeatures cudnn;
  ComputeFeatures flash2;
  flash2.attention = AttentionKernel::flash;
  const LayerTime a = layer_time(gpu, model, config, cudnn);
  const LayerTime b = layer_time(gpu, model, config, flash2);
  // QK^T and AV: 2 GEMMs x 2 b s^2 h / tp = 4 x 1 x 32^2 x 64 / 2 = 131,072 FLOPs; the causal
  // half 65,536, at 0.5 x 100 = 50 TFLOP/s.
  CHECK(a.attention_forward_s == Approx(65536.0 / 50e12));
  CHECK(b.attention_forward_s == Approx(2.0 * a.attention_forward_s));
  CHECK(b.attention_backward_s == Approx(2.0 * a.attention_backward_s));
  CHECK(b.forward_s - a.forward_s == Approx(a.attention_forward_s));
  // The fused kernel runs at the board's pace too: half the pace, twice the time
  // (65,536 FLOPs at 0.5 x 100 x 0.5 = 25 TFLOP/s).
  Gpu paced = gpu;
  paced.ensemble_clock_ratio = 0.5;
  const LayerTime c = layer_time(paced, model, config, cudnn);
  CHECK(c.attention_forward_s == Approx(65536.0 / 25e12));
  CHECK(c.attention_backward_s == Approx(2.0 * a.attention_backward_s));
  // Without FA2 keys the flash kernel prices as the fused one.
  gpu.flash2_forward_efficiency = 0.0;
  gpu.flash2_backward_efficiency = 0.0;
  CHECK(layer_time(gpu, model, config, flash2).forward_s == Approx(a.forward_s));
}

TEST_CASE("fused attention keeps its own measured sustained clock (Hopper); others the GEMMs'",
          "[kernels]") {
  // H200 measured from idle (configs/gpus/h200-sxm-141g.yaml): cuDNN 493.4 / 552.3 = 0.894, FA2
  // 297.7 / 302.5 = 0.984; the same method on BF16 GEMMs 657.1 / 773.0 = 0.850 (MSMF/MAMF
  // 0.849). H100 the same die and power. In a job of many GPUs its pace (0.979 for 8) still
  // applies: FA2 0.984 x 0.979 = 0.96334, cuDNN 0.894 x 0.979 = 0.87523, the GEMMs' and the
  // Triton kernel's 0.849 x 0.979 = 0.83117.
  // (bench/data/gpu-h200-2026-12-04/gpu-kernels-run3-cold.json's unrounded rates)
  CHECK(493.4428 / 552.2542 == Approx(0.894).margin(5e-4));
  CHECK(297.7068 / 302.4848 == Approx(0.984).margin(5e-4));
  CHECK(657.0788 / 773.0027 == Approx(0.850).margin(5e-4));
  for (const char* name : {"h100-sxm-80g", "h200-sxm-141g"}) {
    const Gpu gpu = gpu_preset(name);
    const KernelProfile profile = kernel_profile(gpu);
    CHECK(profile.flash2_sustained_ratio == Approx(0.984));
    CHECK(profile.fused_sustained_ratio == Approx(0.894));
    CHECK(attention_clock_ratio(profile, AttentionKernel::flash) == Approx(0.96334).margin(1e-5));
    CHECK(attention_clock_ratio(profile, AttentionKernel::cudnn) == Approx(0.87523).margin(1e-5));
    CHECK(attention_clock_ratio(profile, AttentionKernel::flash_triton) ==
          Approx(0.83117).margin(1e-5));
  }
  // Not measured elsewhere: fused attention on an A100 or B200 keeps the GEMMs' ratio.
  for (const char* name : {"a100-sxm-80g", "b200"}) {
    const Gpu gpu = gpu_preset(name);
    const KernelProfile profile = kernel_profile(gpu);
    CHECK(profile.flash2_sustained_ratio == 0.0);
    CHECK(profile.fused_sustained_ratio == 0.0);
    CHECK(attention_clock_ratio(profile, AttentionKernel::flash) ==
          Approx(profile.training_clock_ratio()));
    CHECK(attention_clock_ratio(profile, AttentionKernel::cudnn) ==
          Approx(profile.training_clock_ratio()));
  }
  // Round GPU (100 TFLOP/s), FA2 shares 0.25 / 0.2, GEMMs' sustained ratio 0.5 and FA2's 1:
  // the FA2 core runs at 25 TFLOP/s forward (65,536 causal FLOPs in 2.62 ns), cuDNN's at
  // 0.5 x 100 x 0.5 = 25 too; with FA2's ratio 0 (not measured) FA2 falls to 12.5 TFLOP/s.
  Gpu gpu = round_gpu_with_attention();
  gpu.sustained_clock_ratio = 0.5;
  gpu.flash2_sustained_clock_ratio = 1.0;
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  ComputeFeatures cudnn;
  ComputeFeatures flash2;
  flash2.attention = AttentionKernel::flash;
  CHECK(layer_time(gpu, model, config, flash2).attention_forward_s == Approx(65536.0 / 25e12));
  CHECK(layer_time(gpu, model, config, cudnn).attention_forward_s == Approx(65536.0 / 25e12));
  gpu.flash2_sustained_clock_ratio = 0.0;
  CHECK(layer_time(gpu, model, config, flash2).attention_forward_s == Approx(65536.0 / 12.5e12));
  // cuDNN's own ratio 1: its core at 0.5 x 100 x 1 = 50 TFLOP/s.
  gpu.attention_sustained_clock_ratio = 1.0;
  CHECK(layer_time(gpu, model, config, cudnn).attention_forward_s == Approx(65536.0 / 50e12));
  // FlashAttention-2 without rates of its own runs at the fused kernel's, and so at its clock:
  // 0.5 x 100 x 1 = 50 TFLOP/s.
  gpu.flash2_forward_efficiency = 0.0;
  gpu.flash2_backward_efficiency = 0.0;
  CHECK(layer_time(gpu, model, config, flash2).attention_forward_s == Approx(65536.0 / 50e12));
  // Read from any GPU file: 0 (not measured) to 1; above 1 refused with the key named; a
  // ratio without the rates of its kernel would do nothing, so it is refused too.
  const std::string bare = "name: g\npeak_tflops: {bf16: 100}\nmemory_gib: 16\nmemory_gbps: 900\n";
  CHECK_THROWS_WITH(load_gpu(bare + "attention_sustained_clock_ratio: 0.9\n", "g.yaml"),
                    Catch::Contains("attention_sustained_clock_ratio") &&
                        Catch::Contains("expected attention_forward_efficiency"));
  CHECK_THROWS_WITH(load_gpu(bare + "flash2_sustained_clock_ratio: 0.9\n", "g.yaml"),
                    Catch::Contains("flash2_sustained_clock_ratio") &&
                        Catch::Contains("expected flash2_forward_efficiency"));
  const std::string file =
      bare + "attention_forward_efficiency: 0.5\nattention_backward_efficiency: 0.4\n";
  CHECK(load_gpu(file + "flash2_sustained_clock_ratio: 0.9\n", "g.yaml")
            .flash2_sustained_clock_ratio == 0.9);
  CHECK(load_gpu(file, "g.yaml").flash2_sustained_clock_ratio == 0.0);
  CHECK_THROWS_WITH(load_gpu(file + "flash2_sustained_clock_ratio: 1.2\n", "g.yaml"),
                    Catch::Contains("flash2_sustained_clock_ratio") &&
                        Catch::Contains("expected 0 (not measured) to 1"));
  CHECK(load_gpu(file + "attention_sustained_clock_ratio: 0.8\n", "g.yaml")
            .attention_sustained_clock_ratio == 0.8);
  CHECK_THROWS_WITH(load_gpu(file + "attention_sustained_clock_ratio: 2\n", "g.yaml"),
                    Catch::Contains("attention_sustained_clock_ratio") &&
                        Catch::Contains("expected 0 (not measured) to 1"));
}

TEST_CASE("FlashAttention's Triton kernel at its own measured curve (A100), refused without one",
          "[kernels]") {
  // FlashAttention-2's release chart, A100 80GB, head dim 128, causal, fwd+bwd: Triton 68 and
  // FlashAttention-2 155 TFLOP/s at 2k; forward = C x (1 + 2.5 x 73/63) / 3.5 of 312 peak:
  // 68 x 1.113379 / 312 = 0.24266, FA2 155 x 1.113379 / 312 = 0.55312 (the file rounds to 4).
  const Gpu a100 = gpu_preset("a100-sxm-80g");
  const KernelProfile profile = kernel_profile(a100);
  const AttentionShares triton =
      attention_shares(profile, AttentionKernel::flash_triton, 2048.0, 1);
  const AttentionShares fa2 = attention_shares(profile, AttentionKernel::cudnn, 2048.0, 1);
  CHECK(triton.forward == Approx(0.2427).epsilon(1e-3));
  CHECK(triton.backward == Approx(0.2427 * 63.0 / 73.0).epsilon(1e-3));
  CHECK(fa2.forward == Approx(0.5531).epsilon(1e-3));
  // The layer's attention takes FA2 / Triton = 155 / 68 as long; nothing else moves.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  ComputeFeatures flash;
  ComputeFeatures slow;
  slow.attention = AttentionKernel::flash_triton;
  Model long_model = model;
  long_model.seq_len = 2048;
  const LayerTime a = layer_time(a100, long_model, config, flash);
  const LayerTime b = layer_time(a100, long_model, config, slow);
  CHECK(b.attention_forward_s / a.attention_forward_s == Approx(0.5531 / 0.2427).epsilon(1e-3));
  CHECK(b.forward_s - b.attention_forward_s == Approx(a.forward_s - a.attention_forward_s));
  // H100: no measurement of the kernel, a curve derived from FlashAttention 1's bars (the GPU
  // file says how); B200: none at all, so a stack running it is refused there.
  CHECK_FALSE(gpu_preset("h100-sxm-80g").flash_triton_causal.empty());
  Stack stack = stack_preset("fsdp");
  stack.attention = AttentionKernel::flash_triton;
  stack.attention_from.clear();  // set in code: the refusal names the stack
  stack.name = "mine";
  CHECK_NOTHROW(check_stack_on_gpu(stack, a100));
  CHECK_THROWS_WITH(check_stack_on_gpu(stack, gpu_preset("b200")),
                    "stack mine: attention: flash_triton has no measured rate on b200 (its GPU "
                    "file has no flash_triton_causal_curve); use attention: flash, or a GPU file "
                    "with that curve");
  // Read from a file: the refusal names the file and line that set the kernel, a base's
  // where the file inherits it.
  const Stack file = load_stack("name: t\nbase: fsdp\nattention: flash_triton\n", "t.yaml");
  CHECK(file.attention_from == "t.yaml:3: attention");
  CHECK_THROWS_WITH(check_stack_on_gpu(file, gpu_preset("b200")),
                    Catch::StartsWith("t.yaml:3: attention: flash_triton has no measured rate"));
  CHECK(load_stack("name: t\nbase: fsdp\n", "t.yaml").attention_from ==
        "stack fsdp: attention");  // a built-in preset's: no file the user has
  CHECK_NOTHROW(check_stack_on_gpu(stack_preset("fsdp"), gpu_preset("b200")));
}

TEST_CASE("fused attention needs compute capability 8.0: a V100 runs unfused stacks only",
          "[kernels]") {
  const Gpu v100 = gpu_preset("v100-sxm-32g");
  CHECK(v100.compute_capability == 7.0);
  CHECK(gpu_preset("a100-sxm-80g").compute_capability == 8.0);
  CHECK_THROWS_WITH(
      check_stack_on_gpu(stack_preset("megatron-core"), v100),
      "stack megatron-core: attention: cudnn needs a GPU of compute capability "
      "8.0 or more (cuDNN fused attention and FlashAttention 2 run on sm80 and later); "
      "v100-sxm-32g is 7.0: use a "
      "stack with attention: unfused, the attention that runs there (megatron-2021 is one)");
  CHECK_THROWS(check_stack_on_gpu(stack_preset("torchtitan"), v100));  // flash
  CHECK_NOTHROW(check_stack_on_gpu(stack_preset("megatron-2021"), v100));
  // 4-byte runs: no fused attention kernel (TE falls back to unfused), so a fused stack's
  // rate is not what runs: refused; an unfused stack prices it.
  CHECK_THROWS_WITH(check_stack_for_dtype(stack_preset("megatron-core"), Dtype::fp32),
                    Catch::StartsWith("stack megatron-core: attention cudnn has no fp32 kernel"));
  CHECK_THROWS(check_stack_for_dtype(stack_preset("torchtitan"), Dtype::tf32));
  CHECK_NOTHROW(check_stack_for_dtype(stack_preset("megatron-core"), Dtype::bf16));
  CHECK_NOTHROW(check_stack_for_dtype(stack_preset("megatron-2021"), Dtype::fp32));
  CHECK_NOTHROW(check_stack_on_gpu(stack_preset("deepspeed-megatron"), v100));
  Gpu unknown = v100;
  unknown.compute_capability = 0.0;  // a GPU file without the key: not refused
  CHECK_NOTHROW(check_stack_on_gpu(stack_preset("megatron-core"), unknown));
  for (const char* name : {"a100-sxm-80g", "h100-sxm-80g", "h200-sxm-141g", "b200", "gb200"}) {
    CHECK_NOTHROW(check_stack_on_gpu(stack_preset("megatron-core"), gpu_preset(name)));
  }
}

TEST_CASE("attention across sequence lengths: the measured curve, and CP's full blocks",
          "[kernels]") {
  AttentionCurve causal;
  causal.points[0] = {1024.0, 0.4, 0.3};
  causal.points[1] = {4096.0, 0.6, 0.5};
  causal.size = 2;
  // Linear in log2(seq): 2048 is half way from 1024 to 4096, so (0.4 + 0.6) / 2 = 0.5 forward,
  // (0.3 + 0.5) / 2 = 0.4 backward; beyond the ends the end points.
  CHECK(curve_shares(causal, 2048.0).forward == Approx(0.5));
  CHECK(curve_shares(causal, 2048.0).backward == Approx(0.4));
  CHECK(curve_shares(causal, 512.0).forward == Approx(0.4));
  CHECK(curve_shares(causal, 65536.0).backward == Approx(0.5));
  CHECK(curve_shares(AttentionCurve{}, 4096.0).forward == 0.0);

  KernelProfile profile;
  profile.flash_forward_share = 0.9;  // the scalars give way to the curve
  profile.flash_backward_share = 0.9;
  profile.flash_causal = &causal;
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 4096.0, 1).forward == Approx(0.6));
  // Without a full curve CP's full blocks take the causal one, at their own length: a local
  // 8192 with CP 2 reads 0.6 for both halves (8192 and 4096 are at or above the last point).
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 8192.0, 2).forward == Approx(0.6));
  // A full curve 0.8 / 0.7 (one point) and CP 2 on a local 4096 tokens: the rank's first ring
  // step is one causal call over its 4096 tokens, 1/cp = 1/2 of its work, at the causal share
  // 0.6; the other is full blocks at the full share. Time = 1/2 / 0.6 + 1/2 / 0.8 = 0.83333 +
  // 0.625 = 1.45833 per unit work: share 1 / 1.45833 = 0.68571; backward 1/2 / 0.5 + 1/2 / 0.7
  // = 1.71429: 0.58333. At CP 1 the same call is all of it: the causal share.
  AttentionCurve full;
  full.points[0] = {4096.0, 0.8, 0.7};
  full.size = 1;
  profile.flash_full = &full;
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 4096.0, 2).forward ==
        Approx(0.68571).epsilon(1e-4));
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 4096.0, 2).backward ==
        Approx(0.58333).epsilon(1e-4));
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 4096.0, 1).forward == Approx(0.6));
  // The full blocks' keys are one chunk, half the local length: CP 4 on a local 2048 reads the
  // full curve at 1024 (its one point, 0.8) and the causal one at 2048 (0.5) for the first
  // 1/4: 1 / (1/4 / 0.5 + 3/4 / 0.8) = 1 / 1.4375 = 0.69565. Without a full curve the causal
  // one stands in at the local length, where its mean key loop (L/2) equals a chunk: 0.5.
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 2048.0, 4).forward ==
        Approx(0.69565).epsilon(1e-4));
  profile.flash_full = nullptr;
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 2048.0, 4).forward == Approx(0.5));
  // Ulysses (all-to-all) CP: one causal call over the whole sequence, cp x the local length:
  // CP 4 on a local 1024 reads the causal curve at 4096, 0.6, whatever the full curve says.
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 1024.0, 4, true).forward == Approx(0.6));
  CHECK(attention_shares(profile, AttentionKernel::cudnn, 1024.0, 4, true).backward == Approx(0.5));
  // FlashAttention-2 asked for on a GPU with FA2 scalars but no FA2 curve: its scalars.
  profile.flash2_forward_share = 0.25;
  profile.flash2_backward_share = 0.2;
  CHECK(attention_shares(profile, AttentionKernel::flash, 4096.0, 1).forward == Approx(0.25));
  // ... and with neither: the fused kernel's curve.
  profile.flash_full = &full;
  profile.flash2_forward_share = 0.0;
  profile.flash2_backward_share = 0.0;
  CHECK(attention_shares(profile, AttentionKernel::flash, 4096.0, 1).forward == Approx(0.6));

  // H100 (FlashAttention-3 paper Fig. 5): cuDNN forward with the causal mask 518 TFLOP/s at 4k
  // and 529 at 8k; at 5793 (half way in log2) (518 + 529) / 2 = 523.5 of 989.
  const Gpu h100_gpu = gpu_preset("h100-sxm-80g");
  const KernelProfile h100 = kernel_profile(h100_gpu);
  CHECK(attention_shares(h100, AttentionKernel::cudnn, 4096.0, 1).forward ==
        Approx(518.0 / 989.0).epsilon(2e-4));
  CHECK(attention_shares(h100, AttentionKernel::cudnn, 4096.0 * std::sqrt(2.0), 1).forward ==
        Approx(523.5 / 989.0).epsilon(2e-4));
  // The layer: attention time at the curve's share, against the scalar 609 it replaces.
  Gpu gpu = test::round_gpu();
  gpu.attention_forward_efficiency = 0.5;
  gpu.attention_backward_efficiency = 0.4;
  const Model model = test::small_model();  // seq 32: below the curve's first point
  const ParallelConfig config = test::small_config();
  const LayerTime scalar = layer_time(gpu, model, config, ComputeFeatures{});
  gpu.attention_causal = causal;
  const LayerTime curved = layer_time(gpu, model, config, ComputeFeatures{});
  // 65,536 causal FLOPs at 0.4 x 100 TFLOP/s (the first point) instead of 0.5 x 100.
  CHECK(curved.attention_forward_s == Approx(65536.0 / 40e12));
  CHECK(curved.attention_forward_s == Approx(scalar.attention_forward_s * 0.5 / 0.4));
}
