// Mixture of experts: parameter counts against the published totals, the expert-parallel
// all-to-all bytes and time, the grouped expert GEMMs, expert memory, FLOPs on active
// parameters; multi-head latent attention's parameters.
#include <catch2/catch.hpp>
#include <vector>

#include "costmodel/estimate.h"
#include "costmodel/memory.h"
#include "costmodel/model_loader.h"
#include "costmodel/moe.h"
#include "costmodel/placement.h"
#include "costmodel/stack.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"

using namespace trident;
using test::pipelined;

TEST_CASE("Mixtral 8x7B parameters: 46.7B total, 12.9B active", "[moe]") {
  const Model model = model_preset("mixtral-8x7b");
  const ParameterCount count = count_parameters(model);
  // Per layer: attention q,o 2 x 4096^2 = 33,554,432 + k,v 2 x 4096 x 1024 = 8,388,608
  // -> 41,943,040; one expert 3 x 4096 x 14336 = 176,160,768, x 8 = 1,409,286,144; router
  // 4096 x 8 = 32,768; norms 2 x 4096 = 8,192 -> 1,451,270,144; x 32 = 46,440,644,608.
  // Embedding + output 2 x 32000 x 4096 = 262,144,000, final norm 4096.
  CHECK(count.per_expert == 176160768.0);
  CHECK(count.routed_experts == 32.0 * 8.0 * 176160768.0);
  CHECK(count.total == 46702792704.0);
  // Active: 2 of 8 experts: 41,943,040 + 352,321,536 + 32,768 + 8,192 = 394,305,536 x 32
  // = 12,617,777,152 + 262,148,096 = 12,879,925,248 (Jiang et al. 2024: 13B active).
  CHECK(count.active == 12879925248.0);
  CHECK(count.total == Approx(46.7e9).epsilon(0.001));
  CHECK(count.active == Approx(12.9e9).epsilon(0.002));
}

TEST_CASE("Mixtral 8x22B parameters: 141B total, 39B active", "[moe]") {
  const ParameterCount count = count_parameters(model_preset("mixtral-8x22b"));
  // Per layer: attention 2 x 6144^2 + 2 x 6144 x 1024 = 88,080,384; experts 8 x 3 x 6144 x
  // 16384 = 2,415,919,104; router 49,152; norms 12,288 -> 2,504,060,928 x 56 =
  // 140,227,411,968; + 2 x 32000 x 6144 + 6144 = 140,620,634,112.
  CHECK(count.total == 140620634112.0);
  // Active: 88,080,384 + 2 x 301,989,888 + 49,152 + 12,288 = 692,121,600 x 56 + 393,222,144.
  CHECK(count.active == 39152031744.0);
  CHECK(count.total == Approx(141e9).epsilon(0.005));
  CHECK(count.active == Approx(39e9).epsilon(0.01));
}

TEST_CASE("DeepSeek-V3 parameters with MLA: 671B total, 37B active", "[moe][mla]") {
  const Model model = model_preset("deepseek-v3");
  REQUIRE(model.attention == AttentionKind::mla);
  CHECK(model.moe_layers() == 58);
  const ParameterCount count = count_parameters(model);
  // MLA per layer: q_a 7168 x 1536 + norm 1536 + q_b 1536 x 128 x 192 = 48,760,320;
  // kv_a 7168 x 576 + norm 512 + kv_b 512 x 128 x 256 = 20,906,496; o 128 x 128 x 7168 =
  // 117,440,512 -> 187,107,328.
  CHECK(count.attention_per_layer == 187107328.0);
  // 61 x (attention + 2 norms 14,336) + 3 dense FFN 3 x 7168 x 18432 + 58 x (shared expert
  // 44,040,192 + router 7168 x 256) + 58 x 256 x 44,040,192 + 2 x 129280 x 7168 + 7168.
  CHECK(count.total == 671026404352.0);
  CHECK(count.active == 37552282624.0);  // 8 routed experts instead of 256
  CHECK(count.total == Approx(671e9).epsilon(0.001));
  CHECK(count.active == Approx(37e9).epsilon(0.02));  // the report's 37B, rounded
}

TEST_CASE("MoE layers: frequency, first dense layers, list", "[moe]") {
  Model model = model_preset("mixtral-8x7b");
  model.moe.layer_freq = 2;  // layers 0, 2, 4, ... (Megatron --moe-layer-freq 2)
  CHECK(model.moe_layers() == 16);
  CHECK(model.is_moe_layer(0));
  CHECK_FALSE(model.is_moe_layer(1));
  // Ranges: layers 0, 2, 4, 6 of [0, 8); 2, 4, 6 of [1, 8); none of [3, 4).
  CHECK(model.moe_layers_in(0, 8) == 4);
  CHECK(model.moe_layers_in(1, 8) == 3);
  CHECK(model.moe_layers_in(3, 4) == 0);
  const Model deepseek = model_preset("deepseek-v3");  // layers 3..60 MoE
  CHECK(deepseek.moe_layers_in(0, 3) == 0);
  CHECK(deepseek.moe_layers_in(0, 4) == 1);
  CHECK(deepseek.moe_layers_in(3, 61) == 58);
  CHECK(deepseek.moe_layers_in(60, 70) == 1);  // clamped to the model's 61 layers
  CHECK(deepseek.moe_layers_in(5, 5) == 0);
  model.moe.layer_list = {1, 5};
  CHECK(model.moe_layers() == 2);
  CHECK(model.moe_layers_in(0, 4) == 1);
  CHECK(model.moe_layers_in(2, 5) == 0);
  CHECK(model.moe_layers_in(5, 6) == 1);
  CHECK(moe_fraction(model) == Approx(2.0 / 32.0));
}

TEST_CASE("MoE share of the pace-setting stage: dense layers first", "[moe][pipeline]") {
  // DeepSeek-V3: 61 layers, the first 3 dense (first_k_dense_replace), 58 MoE.
  const Model model = model_preset("deepseek-v3");
  REQUIRE(model.moe.first_dense == 3);
  CHECK(stage_moe_fraction(model, pipelined(1)) ==
        Approx(58.0 / 61.0));  // one stage: the model's share
  // PP 16: stage_layers(61, 16) = 3 | 4 x 14 | 2 (64 slots, 1 short on the first, 2 on the
  // last, as NeMo's pretrain_deepseek_v3.py: 64/pp - 1 first, 64/pp - 2 last). The first stage
  // holds layers 0-2, every dense one, so a 4-layer middle stage runs 4 MoE layers: 4/4.
  CHECK(stage_moe_fraction(model, pipelined(16)) == Approx(1.0));
  // PP 8: 7 | 8 x 6 | 6; the middle stages hold layers 7..54, all MoE: 8/8.
  CHECK(stage_moe_fraction(model, pipelined(8)) == Approx(1.0));
  // PP 61: one layer a stage (stage_layers(61, 61) = 1 | 1 x 59 | 1): the stages holding the
  // most (1) include MoE ones: 1/1.
  CHECK(stage_moe_fraction(model, pipelined(61)) == Approx(1.0));
  // Every other layer MoE (layers 0, 2, 4, ...), 32 layers over 4 stages of 8: each stage
  // holds 4 MoE layers: 4/8.
  Model alternate = model_preset("mixtral-8x7b");
  alternate.moe.layer_freq = 2;
  CHECK(stage_moe_fraction(alternate, pipelined(4)) == Approx(0.5));
  // MoE layers 1 and 5 only, 32 layers over 4 stages of 8: the first stage (0-7) holds both,
  // so the busiest stage is 2/8, where the model's share is 2/32.
  alternate.moe.layer_list = {1, 5};
  CHECK(stage_moe_fraction(alternate, pipelined(4)) == Approx(2.0 / 8.0));
  // A dense model: 0.
  CHECK(stage_moe_fraction(model_preset("llama3-8b"), pipelined(4)) == 0.0);
}

TEST_CASE("MoE model file: keys, errors name the key", "[moe][loader]") {
  const std::string base = "name: m\nlayers: 4\nhidden: 64\nheads: 4\nvocab: 100\nseq_len: 32\n";
  const Model model =
      load_model(base +
                     "moe:\n  experts: 8\n  top_k: 2\n  expert_ffn_hidden: 128\n  layers: [1, 3]\n"
                     "  capacity_factor: 1.25\n",
                 "m.yaml");
  CHECK(model.moe.experts == 8);
  CHECK(model.moe_layers() == 2);
  CHECK(model.moe.capacity_factor == 1.25);
  CHECK(model.ffn_hidden == 256);  // the dense layers' FFN: 4h by default
  // A list in any order is kept ascending and searched by bisection (a long list once made a
  // plan take minutes: the layers times the list): layers 3 and 1 of 0..3.
  const Model unsorted = load_model(
      base + "moe:\n  experts: 8\n  top_k: 2\n  expert_ffn_hidden: 128\n  layers: [3, 1]\n",
      "m.yaml");
  CHECK(unsorted.moe.layer_list == std::vector<int>{1, 3});
  CHECK(unsorted.is_moe_layer(3));
  CHECK_FALSE(unsorted.is_moe_layer(2));
  CHECK(unsorted.moe_layers_in(0, 2) == 1);  // layer 1
  CHECK(unsorted.moe_layers_in(2, 4) == 1);  // layer 3
  CHECK(unsorted.moe_layers_in(3, 3) == 0);
  // A model built in code must keep the order the bisection needs.
  Model reversed = unsorted;
  reversed.moe.layer_list = {3, 1};
  const auto problem = find_model_problem(reversed);
  REQUIRE(problem.has_value());
  CHECK(problem->key == "moe.layers");
  CHECK(problem->message == "expected the layers in ascending order");
  CHECK_THROWS_WITH(
      load_model(base + "moe:\n  experts: 8\n  top_k: 9\n  expert_ffn_hidden: 8\n", "m.yaml"),
      Catch::Contains("moe.top_k") && Catch::Contains("more than the 8 experts"));
  CHECK_THROWS_WITH(
      load_model(base + "moe:\n  experts: 8\n  top_k: 2\n  expert_ffn: 8\n", "m.yaml"),
      Catch::Contains("m.yaml:10") && Catch::Contains("expert_ffn"));
  CHECK_THROWS_WITH(
      load_model(base + "moe:\n  experts: 8\n  top_k: 2\n  expert_ffn_hidden: 8\n  layers: [7]\n",
                 "m.yaml"),
      Catch::Contains("moe.layers"));
  CHECK_THROWS_WITH(load_model(base + "mla:\n  kv_lora_rank: 4\n", "m.yaml"),
                    Catch::Contains("only with attention: mla"));
}

TEST_CASE("EP all-to-all: bytes per call and time on NVLink", "[moe][ep]") {
  const Model model = model_preset("mixtral-8x7b");
  ParallelConfig config;
  config.dp = 8;
  config.ep = 8;
  config.micro_batch = 1;
  // Tokens per GPU 1 x 4096 / (cp 1 x tp 1) = 4096; S = 4096 x top-2 x 4096 x 2 bytes =
  // 67,108,864 bytes (nccl-tests' per-rank buffer); (ep-1)/ep = 7/8 of it leaves the GPU.
  const GroupLink link = test::nvlink_group(8);
  const CommDetail comm = ep_comm(model, config, link, 32.0, nullptr);
  CHECK(comm.collective == Collective::all_to_all);
  CHECK(comm.bytes_per_call == 67108864.0);
  // Dispatch + combine, forward and backward: 4 per MoE layer, 32 layers.
  CHECK(comm.calls_per_step == 128.0);
  // NVLink 100 GB/s x 0.80 = 80 GB/s: 8.4 us base + 1 us hop + 67,108,864 x 7/8 / 80e9 s.
  CHECK(comm.time_per_call_s == Approx(9.4e-6 + 58720256.0 / 80e9));
  CHECK(comm.exposed_s == comm.total_s);  // megatron-core: no EP overlap by default
  config.recompute = Recompute::full;     // the forward pair again
  CHECK(ep_comm(model, config, link, 32.0, nullptr).calls_per_step == 192.0);
  // Partial: 8 of the stage's 32 layers recomputed, 2 more on a quarter of them:
  // 32 x (4 + 2 x 8/32) = 144.
  config.recompute_layers = 8;
  CHECK(ep_comm(model, config, link, 32.0, nullptr).calls_per_step == 144.0);
}

TEST_CASE("EP all-to-all under FP8 still moves 16-bit tokens", "[moe][ep][fp8]") {
  // The dispatcher sends the 16-bit norm output; the experts cast to FP8 after the dispatch
  // (Megatron-Core core_r0.11.0/core_v0.12.0 token_dispatcher.py; gpt_layer_specs.py's TENorm).
  Model model = model_preset("mixtral-8x7b");
  model.training.dtype = Dtype::fp8;
  ParallelConfig config;
  config.dp = 8;
  config.ep = 8;
  config.micro_batch = 1;
  // 4096 tokens x top-2 x 4096 x 2 bytes, as in BF16 (not x 1 byte).
  CHECK(ep_comm(model, config, test::nvlink_group(8), 32.0, nullptr).bytes_per_call == 67108864.0);
}

TEST_CASE("all-to-all across servers: each GPU's off-domain share over its NIC", "[moe][ep]") {
  // 16 ranks, 8 in each of 2 servers: NVLink 100 GB/s (1 us a hop), NIC 50 GB/s (5 us).
  GroupLink link = test::network_group(16, 2, 50.0, 5e-6);
  // S = 1.6e9: 8/16 leaves the domain over 50 x 0.743 = 37.15 GB/s (21.53 ms: an all-to-all's
  // share of the NIC, measured); 7/16 stays on NVLink at 80 GB/s (8.75 ms): the NIC bounds it.
  // Latency 8.4 + 1 + 5 us.
  CHECK(collective_time_s(Collective::all_to_all, 1.6e9, link) ==
        Approx(14.4e-6 + 0.8e9 / 37.15e9));
  // The measurement it comes from (GTC 2025 S72583): 32 DGX H100 GPUs in 4 servers, 8 x 400
  // Gb/s, all-to-all busbw 48 GB/s: busbw = S x 31/32 / t with t = S x 24/32 / 37.15e9.
  link.ranks = 32;
  link.domains = 4;
  const double s = 4e9;
  const double t = collective_time_s(Collective::all_to_all, s, link);
  CHECK(s * 31.0 / 32.0 / t / 1e9 == Approx(48.0).epsilon(0.002));
}

namespace {
/// DeepSeek-V3 as the dgxc H100 rows split it: TP 2, DP 32, EP 64, micro-batch 1.
ParallelConfig dsv3_h100_config() {
  ParallelConfig config;
  config.tp = 2;
  config.dp = 32;
  config.ep = 64;
  config.micro_batch = 1;
  return config;
}
}  // namespace

TEST_CASE("grouped expert GEMMs see the per-expert rows", "[moe][ep]") {
  const Model model = model_preset("deepseek-v3");
  ParallelConfig config = dsv3_h100_config();
  // Tokens per GPU 4096 / tp 2 = 2048 (sequence parallel); per expert 2048 x 8 x 64 / 256 =
  // 4096 rows; 256 / 64 = 4 local experts, up [4096 x 2 x 2048 x 7168], down [4096 x 7168 x 2048].
  const ExpertGemms g = expert_gemms(model, config);
  CHECK(g.up.m == 4096.0);
  CHECK(g.up.n == 4096.0);
  CHECK(g.up.k == 7168.0);
  CHECK(g.up.batch == 4.0);
  CHECK(g.down.n == 7168.0);
  CHECK(g.down.k == 2048.0);
  CHECK(g.router.n == 256.0);
  CHECK(expert_dp(config) == 1);  // 2 x 1 x 32 / 64
}

TEST_CASE("MoE estimate: FLOPs on active parameters, experts sharded over EP", "[moe][ep]") {
  Model model = model_preset("mixtral-8x7b");
  model.training.global_batch = 64;
  Cluster cluster = test::round_cluster();
  cluster.gpu.memory_gib = 1000.0;
  ParallelConfig config;
  config.dp = 8;
  config.micro_batch = 1;
  config.zero = 1;
  const Placement placement = default_placement(cluster, config);
  const Estimate dense = estimate(cluster, model, config, placement);
  config.ep = 8;
  const Estimate ep = estimate(cluster, model, config, default_placement(cluster, config));
  // Model FLOPs do not depend on the split and count the active FFN (2 x 14336 per layer):
  // 6 x tokens x active-ish parameters; the same as a dense model of ffn 28672.
  CHECK(ep.model_flops == Approx(dense.model_flops));
  Model active = model;
  active.moe = MoeSpec{};
  active.ffn_hidden = 2 * 14336;
  const Estimate as_dense = estimate(cluster, active, config, default_placement(cluster, config));
  CHECK(ep.model_flops == Approx(as_dense.model_flops));
  // Expert weights: 32 layers x 8 experts x 176,160,768 x 2 bytes on every GPU without EP,
  // an eighth with EP 8.
  const double expert_bytes = 32.0 * 8.0 * 176160768.0 * 2.0;
  CHECK(dense.memory.weights_bytes - ep.memory.weights_bytes == Approx(expert_bytes * 7.0 / 8.0));
  CHECK(ep.ep.calls_per_step > 0.0);
  CHECK(ep.time.ep_comm_s == Approx(ep.ep.exposed_s));
  CHECK(dense.time.ep_comm_s == 0.0);
  // FP8 (delayed, TE's cached weights): the dense part's linear layers and each GPU's experts
  // (32 layers x 8 experts x 176,160,768 / EP 8) keep an FP8 copy and its transpose, 2 bytes a
  // parameter.
  Model fp8 = model;
  fp8.training.dtype = Dtype::fp8;
  const Estimate ep_fp8 = estimate(cluster, fp8, config, default_placement(cluster, config));
  const double experts_per_gpu = 32.0 * 8.0 * 176160768.0 / 8.0;
  CHECK(ep_fp8.memory.weight_copies_bytes ==
        Approx(2.0 * (stage_linear_parameters(moe_dense_view(fp8, 1.0), config, true, true) +
                      experts_per_gpu)));
  CHECK(ep.memory.weight_copies_bytes == 0.0);
}

TEST_CASE("stack file: EP overlap keys are checked, CP kinds are read", "[moe][stack]") {
  const std::string base = "name: s\nattention: cudnn\ntp_overlap: none\n";
  const Stack stack =
      load_stack(base + "context_parallel: [a2a]\nexpert_parallel: true\n", "s.yaml");
  CHECK(stack.supports(CpKind::a2a));
  CHECK_FALSE(stack.supports(CpKind::p2p));
  CHECK(stack.expert_parallel);
  CHECK_FALSE(load_stack(base, "s.yaml").context_parallel());
  const Stack overlap = load_stack(
      base + "expert_parallel: true\nep_overlap: true\nep_overlap_delay_wgrad: true\n", "s.yaml");
  CHECK(overlap.ep_overlap);
  CHECK(overlap.ep_overlap_delay_wgrad);
  CHECK_FALSE(load_stack(base, "s.yaml").ep_overlap);
  // The overlap of EP all-to-alls without expert parallelism: refused at its line.
  CHECK_THROWS_WITH(
      load_stack(base + "ep_overlap: true\n", "s.yaml"),
      Catch::Contains("s.yaml:4: ep_overlap") && Catch::Contains("needs expert_parallel: true"));
  // Megatron-Core asserts each pair: delay_wgrad_compute needs the overlap, and the overlap
  // refuses the shared experts' own side stream.
  CHECK_THROWS_WITH(load_stack(base + "ep_overlap_delay_wgrad: true\n", "s.yaml"),
                    Catch::Contains("s.yaml:4: ep_overlap_delay_wgrad") &&
                        Catch::Contains("needs ep_overlap: true"));
  CHECK_THROWS_WITH(
      load_stack(base + "ep_overlap: true\nmoe_shared_expert_overlap: true\n", "s.yaml"),
      Catch::Contains("s.yaml:4: ep_overlap") && Catch::Contains("cannot both be true"));
  CHECK_THROWS_WITH(load_stack(base + "context_parallel: [ring]\n", "s.yaml"),
                    Catch::Contains("expected p2p|a2a|allgather, got 'ring'"));
}

TEST_CASE("the sort by local expert: two more copies of the routed rows", "[moe][ep]") {
  const Model model = model_preset("deepseek-v3");
  ParallelConfig config = dsv3_h100_config();
  // 4 local experts x 4096 rows = 16,384 routed rows of h 7168: before the grouped GEMM and
  // after it, each read and written once in 16 bits: 2 x 4 x 16,384 x 7168 = 939,524,096 bytes.
  CHECK(local_expert_sort_bytes(model, config, 16384.0) == 939524096.0);
  config.ep = 256;  // one expert per GPU: the received rows are already in expert order
  CHECK(local_expert_sort_bytes(model, config, 16384.0) == 0.0);
  // The routed experts' memory-bound time carries it forward and once backward: DeepSeek-V3
  // with 64 experts over EP 64 routes the same 16,384 rows per GPU to one expert.
  config.ep = 64;
  const Gpu gpu = gpu_preset("h100-sxm-80g");
  const LayerTime four = routed_expert_time(gpu, model, config, nullptr, /*saves_fp8_inputs=*/true,
                                            /*permute_fused=*/true,
                                            /*fp8_gpu_layout=*/true, /*fp8_padding_copies=*/false);
  Model one_each = model;
  one_each.moe.experts = 64;
  const LayerTime one = routed_expert_time(gpu, one_each, config, nullptr,
                                           /*saves_fp8_inputs=*/true, /*permute_fused=*/true,
                                           /*fp8_gpu_layout=*/true, /*fp8_padding_copies=*/false);
  const double sort_s = hbm_time_s(gpu, 939524096.0);
  CHECK((four.forward_s - four.gemm_forward_s) - (one.forward_s - one.gemm_forward_s) ==
        Approx(sort_s));
  // Backward: the GEMMs' backward taken out, once more the sort's bytes (the copies' gradients).
  const auto backward_hbm_s = [&](const Model& m, const LayerTime& t) {
    const ExpertGemms g = expert_gemms(m, config);
    return t.backward_s - gemm_backward_time_s(gpu, Dtype::bf16, g.up, nullptr) -
           gemm_backward_time_s(gpu, Dtype::bf16, g.down, nullptr) -
           gemm_backward_time_s(gpu, Dtype::bf16, g.router, nullptr);
  };
  CHECK(backward_hbm_s(model, four) - backward_hbm_s(one_each, one) == Approx(sort_s));
}

TEST_CASE("the unfused unpermutation: product, zero fill and scatter-add", "[moe][ep]") {
  // Mixtral 8x7B (top 2, h 4096): 16,384 routed rows of one micro-batch on one GPU.
  const Model model = model_preset("mixtral-8x7b");
  const double rows = 16384.0;
  const double elements = rows * 4096.0;  // 67,108,864 row elements
  // Fused (TE fused_unpermute): read and write each row once, 4 bytes per element forward,
  // twice that backward: 268,435,456 and 536,870,912.
  CHECK(unpermute_bytes(model, rows, true) == 268435456.0);
  CHECK(unpermute_backward_bytes(model, rows, true) == 536870912.0);
  // Unfused (moe_utils.py L330-362): rows x probabilities read 2 write 2, scatter_add_ read 2
  // + read and write the output 2 + 2, the output zero-filled once per token (rows / 2 of
  // them: 1 byte per row element): 11 x 67,108,864 = 738,197,504. Backward: the scatter's
  // gather 4, the rows' gradient 4, the probabilities' 4: 12 x 67,108,864 = 805,306,368.
  CHECK(unpermute_bytes(model, rows, false) == 738197504.0);
  CHECK(unpermute_backward_bytes(model, rows, false) == 805306368.0);
  CHECK(elements == 67108864.0);
  // The permutation's backward unfused (index_select's gradient): the token tensor zero-filled
  // (1 byte per row element at top 2) and index_add_ of the rows (read 2, read and write 2 + 2):
  // 7 x 67,108,864 = 469,762,048; fused twice the forward's 4: 536,870,912.
  CHECK(permute_backward_bytes(model, rows, false) == 469762048.0);
  CHECK(permute_backward_bytes(model, rows, true) == 536870912.0);
  // In the routed experts' memory-bound time: 469,762,048 bytes more forward (11 - 4 per row
  // element); backward (12 - 8) + (7 - 8) = 3 per element, 201,326,592 (EP 8, micro-batch 2:
  // 2 x 4096 x top 2 = 16,384 rows on each GPU).
  ParallelConfig config;
  config.dp = 8;
  config.ep = 8;
  config.micro_batch = 2;
  const Gpu gpu = gpu_preset("gb200");
  const LayerTime fused = routed_expert_time(gpu, model, config, nullptr, true, true, true, false);
  const LayerTime unfused =
      routed_expert_time(gpu, model, config, nullptr, true, false, true, false);
  CHECK(unfused.forward_s - fused.forward_s == Approx(hbm_time_s(gpu, 469762048.0)));
  CHECK(unfused.backward_s - fused.backward_s == Approx(hbm_time_s(gpu, 201326592.0)));
  // The stack key: Megatron-Core's default (unfused) in both presets; a file turns it on.
  CHECK_FALSE(stack_preset("megatron-core").moe_permute_fusion);
  CHECK_FALSE(stack_preset("megatron-core-perf").moe_permute_fusion);
  CHECK(load_stack("name: s\nattention: cudnn\ntp_overlap: none\nmoe_permute_fusion: true\n",
                   "s.yaml")
            .moe_permute_fusion);
  CHECK_THROWS_WITH(
      load_stack("name: s\nattention: cudnn\ntp_overlap: none\nmoe_permute_fusion: 2\n", "s.yaml"),
      Catch::Contains("s.yaml:4: moe_permute_fusion"));
}

TEST_CASE("shared experts beside the all-to-alls hide that much of them", "[moe][ep]") {
  CommDetail ep_layer;
  ep_layer.time_per_call_s = 1e-3;  // one dispatch or one combine: 1 ms
  SharedExpertTime shared;
  shared.up_forward_s = 0.3e-3;    // beside the dispatch
  shared.down_forward_s = 1.5e-3;  // beside the combine: longer than it, hides all of it
  shared.up_backward_s = 0.6e-3;
  shared.down_backward_s = 3e-3;
  // Each MoE layer: forward min(1, 0.3) + min(1, 1.5) = 1.3 ms, backward min(1, 0.6) +
  // min(1, 3) = 1.6 ms: 2.9 ms. A stage of half MoE layers, per layer on average: 1.45 ms.
  CHECK(shared_expert_overlap_s(shared, ep_layer, 1.0, 0.0) == Approx(2.9e-3));
  CHECK(shared_expert_overlap_s(shared, ep_layer, 0.5, 0.0) == Approx(1.45e-3));
  // Full recompute runs the forward pair again, beside the shared experts again: + 1.3 ms.
  CHECK(shared_expert_overlap_s(shared, ep_layer, 1.0, 1.0) == Approx(4.2e-3));
  // Paired call by call: the down-projection's spare time does not hide the dispatch (the sum
  // of both, 1.8 ms forward, against 2 ms of exchange would have hidden 1.8).
  shared.up_backward_s = 0.0;
  shared.down_backward_s = 0.0;
  CHECK(shared_expert_overlap_s(shared, ep_layer, 1.0, 0.0) == Approx(1.3e-3));
  // DeepSeek-V3's one shared expert (ffn 2048) at TP 2, micro-batch 1, sequence 4096: up
  // [4096 x 2 x 1024 x 7168] and down [4096 x 7168 x 1024] on the gathered tokens.
  const Model model = model_preset("deepseek-v3");
  const ParallelConfig config = dsv3_h100_config();
  const Gpu gpu = gpu_preset("h100-sxm-80g");
  const SharedExpertTime dsv3 = shared_expert_time(gpu, model, config, nullptr);
  const GemmShape up{4096.0, 2048.0, 7168.0, 1.0};
  const GemmShape down{4096.0, 7168.0, 1024.0, 1.0};
  CHECK(dsv3.up_forward_s == Approx(gemm_time_s(gpu, Dtype::bf16, up, nullptr)));
  CHECK(dsv3.down_forward_s == Approx(gemm_time_s(gpu, Dtype::bf16, down, nullptr)));
  CHECK(dsv3.up_backward_s == Approx(gemm_backward_time_s(gpu, Dtype::bf16, up, nullptr)));
  CHECK(dsv3.down_backward_s == Approx(gemm_backward_time_s(gpu, Dtype::bf16, down, nullptr)));
  Model dense = model;
  dense.moe.shared_experts = 0;
  CHECK(shared_expert_time(gpu, dense, config, nullptr).up_forward_s == 0.0);
  // The stack key: off by default (Megatron-Core's default), read from a stack file.
  const std::string base = "name: s\nattention: cudnn\ntp_overlap: none\n";
  CHECK_FALSE(load_stack(base, "s.yaml").moe_shared_expert_overlap);
  CHECK(load_stack(base + "moe_shared_expert_overlap: true\n", "s.yaml").moe_shared_expert_overlap);
}

TEST_CASE("the shared experts' overlap in a step: exposed EP time and its SMs", "[moe][ep]") {
  // DeepSeek-V3 on one 8-GPU server, EP 8 x DP 8, TP 1, PP 1, the DP reduction not overlapped
  // and expert DP 1: the EP all-to-all is the only communication that can hide.
  Model model = model_preset("deepseek-v3");
  model.training.global_batch = 16;
  Cluster cluster = cluster_preset("dgx-h100");
  cluster.servers = 1;
  ParallelConfig config;
  config.dp = 8;
  config.ep = 8;
  config.micro_batch = 1;
  config.zero = 1;
  const Placement placement = default_placement(cluster, config);
  EstimateOptions plain;
  plain.stack = stack_preset("megatron-core");
  plain.stack.dp_overlap_grad_reduce = false;
  plain.stack.dp_overlap_param_gather = false;
  EstimateOptions beside = plain;
  beside.stack.moe_shared_expert_overlap = true;
  const Estimate a = estimate(cluster, model, config, placement, nullptr, plain);
  const Estimate b = estimate(cluster, model, config, placement, nullptr, beside);
  // Per layer and micro-batch the overlap hides shared_expert_overlap_s; the step has
  // calls / (4 x the MoE share) layer-micro-batches.
  const double moe_share = stage_moe_fraction(model, pipelined(1));
  const CommDetail layer = ep_comm(model, config, placement.ep, moe_share, nullptr);
  const double hidden_s = shared_expert_overlap_s(
      shared_expert_time(cluster.gpu, model, config, nullptr), layer, moe_share, 0.0);
  CHECK(hidden_s > 0.0);
  CHECK(a.ep.exposed_s == Approx(a.ep.total_s));
  CHECK(b.ep.total_s == Approx(a.ep.total_s));
  CHECK(a.ep.exposed_s - b.ep.exposed_s ==
        Approx(hidden_s * a.ep.calls_per_step / (4.0 * moe_share)));
  // The hidden all-to-all's NCCL kernels take their SMs from the compute they hide behind:
  // some of it comes back as contention, never more than was hidden.
  CHECK(a.time.overlap_contention_s == 0.0);
  CHECK(b.time.overlap_contention_s > 0.0);
  CHECK(b.time.overlap_contention_s < a.ep.exposed_s - b.ep.exposed_s);
}

namespace {

/// Mixtral 8x7B in FP8 (current scaling) over EP 8 = DP 8, micro-batch 2: 2 x 4096 tokens x
/// top-2 = 16,384 routed rows a GPU, one local expert.
struct MixtralFp8 {
  Model model;
  ParallelConfig config;
};

MixtralFp8 mixtral_fp8_ep8() {
  MixtralFp8 out{model_preset("mixtral-8x7b"), {}};
  out.model.training.dtype = Dtype::fp8;
  out.model.training.fp8.recipe = Fp8Recipe::current;
  out.config.dp = 8;
  out.config.ep = 8;
  out.config.micro_batch = 2;
  return out;
}

}  // namespace

TEST_CASE("FP8 experts: their GEMMs' casts priced, the router left in 16 bits",
          "[moe][precision]") {
  // 16,384 routed rows a GPU, one local expert (up 16,384 x 28,672 x 4096, down 16,384 x 4096 x
  // 14,336).
  MixtralFp8 mixtral = mixtral_fp8_ep8();
  const Model& fp8 = mixtral.model;
  ParallelConfig& config = mixtral.config;
  Model bf16 = fp8;
  bf16.training.dtype = Dtype::bf16;
  const Gpu gpu = gpu_preset("gb200");
  const ExpertGemms g = expert_gemms(fp8, config);
  REQUIRE(g.up.m * g.up.batch == 16384.0);
  const LayerTime eight = routed_expert_time(gpu, fp8, config, nullptr, /*saves_fp8_inputs=*/true,
                                             /*permute_fused=*/true,
                                             /*fp8_gpu_layout=*/true, /*fp8_padding_copies=*/false);
  const LayerTime sixteen =
      routed_expert_time(gpu, bf16, config, nullptr,
                         /*saves_fp8_inputs=*/true, /*permute_fused=*/true,
                         /*fp8_gpu_layout=*/true, /*fp8_padding_copies=*/false);
  // The experts' GEMMs in FP8, the router's [8192 x 8 x 4096] in BF16 (torch's F.linear).
  CHECK(eight.gemm_forward_s == Approx(gemm_time_s(gpu, Dtype::fp8, g.up, nullptr) +
                                       gemm_time_s(gpu, Dtype::fp8, g.down, nullptr) +
                                       gemm_time_s(gpu, Dtype::bf16, g.router, nullptr)));
  // Forward casts, current scaling on a GB200 (Blackwell reads FP8 column-wise: no transpose;
  // amax read 2 + cast read 2 write 1 = 5 per element): the permuted rows into fc1, 16,384 x
  // 4096 x 5 = 335,544,320, and the activation into fc2, 16,384 x 14,336 x 5 = 1,174,405,120:
  // 1,509,949,440 bytes more than BF16's memory-bound passes.
  const double forward_casts = 1509949440.0;
  CHECK((eight.forward_s - eight.gemm_forward_s) - (sixteen.forward_s - sixteen.gemm_forward_s) ==
        Approx(hbm_time_s(gpu, forward_casts)));
  // Backward: the output gradients, fc1's 16,384 x 28,672 x 5 = 2,348,810,240 and fc2's 16,384 x
  // 4096 x 5 = 335,544,320: 2,684,354,560 bytes.
  const auto backward_gemms_s = [&](Dtype experts) {
    return gemm_backward_time_s(gpu, experts, g.up, nullptr) +
           gemm_backward_time_s(gpu, experts, g.down, nullptr) +
           gemm_backward_time_s(gpu, Dtype::bf16, g.router, nullptr);
  };
  CHECK((eight.backward_s - backward_gemms_s(Dtype::fp8)) -
            (sixteen.backward_s - backward_gemms_s(Dtype::bf16)) ==
        Approx(hbm_time_s(gpu, 2684354560.0)));
  // Full recompute runs the forward again, its casts included.
  config.recompute = Recompute::full;
  const LayerTime again = routed_expert_time(gpu, fp8, config, nullptr, /*saves_fp8_inputs=*/true,
                                             /*permute_fused=*/true,
                                             /*fp8_gpu_layout=*/true, /*fp8_padding_copies=*/false);
  CHECK(again.recompute_s == Approx(eight.forward_s));
}

TEST_CASE("FP8 experts behind the all-to-all pay Megatron-Core's padding copies",
          "[moe][precision]") {
  // Mixtral 8x7B, EP 8, micro-batch 2: 16,384 routed rows of h = 4096 a GPU. The rows padded
  // to FP8's alignment before the experts (read 2, write 2) and the output unpadded after them
  // (read 2, write 2): 8 x 16,384 x 4096 = 536,870,912 bytes forward and the same backward.
  const MixtralFp8 mixtral = mixtral_fp8_ep8();
  const Model& fp8 = mixtral.model;
  const ParallelConfig& config = mixtral.config;
  const Gpu gpu = gpu_preset("h100-sxm-80g");
  CHECK(fp8_padding_bytes(fp8, 16384.0) == 536870912.0);
  const auto experts = [&](const Model& model, bool padding) {
    return routed_expert_time(gpu, model, config, nullptr, /*saves_fp8_inputs=*/true,
                              /*permute_fused=*/true, /*fp8_gpu_layout=*/true, padding);
  };
  const LayerTime padded = experts(fp8, true);
  const LayerTime plain = experts(fp8, false);
  CHECK(padded.forward_s - plain.forward_s == Approx(hbm_time_s(gpu, 536870912.0)));
  CHECK(padded.backward_s - plain.backward_s == Approx(hbm_time_s(gpu, 536870912.0)));
  // BF16 experts take any row count: no padding, the key or not.
  Model bf16 = fp8;
  bf16.training.dtype = Dtype::bf16;
  CHECK(experts(bf16, true).forward_s == experts(bf16, false).forward_s);
}

TEST_CASE("FP8 experts keep their GEMM inputs as FP8 casts", "[moe][memory][precision]") {
  // Mixtral 8x7B, EP 8, micro-batch 2, PP 1 (one micro-batch in flight), no recompute: 16,384
  // routed rows a GPU and MoE layer. Kept in 16 bits: the permuted input (h), the activation's
  // input (2 x f, gated) and its output (f). Under FP8 Transformer Engine keeps the two GEMM
  // inputs as its FP8 casts: 1 byte less for each of h + f = 4096 + 14,336 per row, 32 layers:
  // 16,384 x 18,432 x 32 = 9,663,676,416 bytes.
  Model model = model_preset("mixtral-8x7b");
  model.training.global_batch = 64;
  ParallelConfig config;
  config.dp = 8;
  config.ep = 8;
  config.micro_batch = 2;
  MemoryOptions sixteen;
  MemoryOptions eight;
  eight.fp8_saved_inputs = true;
  MemoryBreakdown kept16;
  MemoryBreakdown kept8;
  // PP 1: one stage, all 32 MoE layers.
  REQUIRE(stage_moe_layers_on(model, config, true, true) == 32.0);
  add_expert_memory(kept16, model, config, sixteen, 32.0);
  add_expert_memory(kept8, model, config, eight, 32.0);
  CHECK(kept16.activations_bytes - kept8.activations_bytes == Approx(9663676416.0));
  // 16,384 x (2 x 4096 + 4 x 14,336 + 2 x 14,336) x 32 in 16 bits.
  CHECK(kept16.activations_bytes == Approx(16384.0 * (8192.0 + 86016.0) * 32.0));
}

TEST_CASE("FP8 experts' weights: the 16-bit copy and the FP8 copies", "[moe][memory][precision]") {
  // Mixtral 8x7B, EP 8: one expert of 3 x 4096 x 14,336 = 176,160,768 parameters on each GPU
  // in each of 32 layers: 5,637,144,576 expert parameters, ZeRO 1 (weights whole).
  const Model model = model_preset("mixtral-8x7b");
  ParallelConfig config;
  config.dp = 8;
  config.ep = 8;
  config.zero = 1;
  const double params = expert_parameters_per_gpu(model, config);
  REQUIRE(params == 5637144576.0);
  // BF16 weights (2 bytes) and, under FP8 on Hopper, the cached FP8 copy and its transpose
  // (+2): 4 bytes a parameter, as the dense linears'.
  MemoryOptions hopper;
  hopper.weight_copy_bytes_per_parameter = 2.0;
  MemoryBreakdown h;
  add_expert_memory(h, model, config, hopper, 32.0);
  CHECK(h.weights_bytes == 2.0 * params);
  CHECK(h.weight_copies_bytes == 2.0 * params);
  // FP8 parameters on Blackwell: one FP8 copy replaces the 16-bit weights (a delta of 1 - 2 =
  // -1 a parameter): 1 byte in the weights, no negative copy term.
  MemoryOptions blackwell;
  blackwell.weight_copy_bytes_per_parameter = -1.0;
  MemoryBreakdown b;
  add_expert_memory(b, model, config, blackwell, 32.0);
  CHECK(b.weights_bytes == 1.0 * params);
  CHECK(b.weight_copies_bytes == 0.0);
}

TEST_CASE("MoE layers at TP 2: the attention's TP calls and amaxes, shared experts' on TP",
          "[moe][precision]") {
  // Mixtral 8x7B (32 MoE layers, no shared experts) at TP 2 with sequence parallelism, EP 4,
  // current scaling, global batch 64, DP 4, micro-batch 1: m = 16. Its routed experts run with
  // no TP (Megatron's grouped linears, parallel_mode None), so each layer reduces only the
  // attention's QKV input (forward) and projection gradient (backward): 32 x 16 x 2 = 1024.
  Model model = model_preset("mixtral-8x7b");
  model.training.global_batch = 64;
  model.training.dtype = Dtype::fp8;
  model.training.fp8.recipe = Fp8Recipe::current;
  Cluster cluster = test::round_cluster();
  cluster.gpu.memory_gib = 1000.0;
  cluster.gpu.peak_tflops_fp8 = 200.0;  // FP8 tensor cores (Hopper and later)
  ParallelConfig config;
  config.tp = 2;
  config.dp = 4;
  config.ep = 4;
  config.micro_batch = 1;
  config.zero = 1;
  config.sequence_parallel = true;
  EstimateOptions options;
  options.stack = stack_preset("megatron-core");
  const Placement placement = default_placement(cluster, config);
  const Estimate routed = estimate(cluster, model, config, placement, nullptr, options);
  CHECK(routed.amax.calls_per_step == 1024.0);
  // The TP collectives likewise: 5 (reduce-scatter + all-gather) calls per layer under
  // sequence parallelism, the attention's half of them on a MoE layer: 32 x 16 x 5 / 2 = 1280.
  CHECK(routed.tp.calls_per_step == 1280.0);
  // One shared expert run as TP linears (no overlap with the exchange): its FFN-up input and
  // FFN-down gradient reduce too, 32 x 16 x 4 = 2048, and its gathers and scatters are the
  // dense FFN's: 32 x 16 x 5 = 2560 TP calls.
  model.moe.shared_experts = 1;
  const Estimate shared = estimate(cluster, model, config, placement, nullptr, options);
  CHECK(shared.amax.calls_per_step == 2048.0);
  CHECK(shared.tp.calls_per_step == 2560.0);
  // Beside the exchange (moe_shared_expert_overlap) Megatron drops the shared experts' TP mode
  // and moves their input and output itself in 16 bits on a side stream: the attention's again.
  options.stack.moe_shared_expert_overlap = true;
  const Estimate beside = estimate(cluster, model, config, placement, nullptr, options);
  CHECK(beside.amax.calls_per_step == 1024.0);
  CHECK(beside.tp.calls_per_step == 1280.0);
}

TEST_CASE("HybridEP: a token once per destination rank, once per remote NVLink domain",
          "[moe][ep]") {
  // One token's 8 experts of 128: none of a rank's 8 is picked with probability
  // (120/128)(119/127)...(113/121) = 0.58772; so p_rank = 0.41228. A domain of 8 ranks holds 64:
  // p_domain = 1 - (64/128)(63/127)...(57/121) = 0.99690.
  CHECK(token_reaches_share(128.0, 8.0, 8.0) == Approx(0.4122820507));
  CHECK(token_reaches_share(128.0, 8.0, 64.0) == Approx(0.9969041357));
  CHECK(token_reaches_share(8.0, 2.0, 8.0) == 1.0);
  // DeepEP hybrid-ep README, H100, 16 ranks: (54.47 + 53.35) / 2 x 1/2 / 50 = 0.5391.
  CHECK(hybrid_ep_network_fraction(2) == Approx(0.5391));
  CHECK(hybrid_ep_network_fraction(4) == Approx((47.36 + 52.53) / 2.0 * 0.75 / 50.0));
  CHECK(hybrid_ep_network_fraction(8) == Approx((41.24 + 46.57) / 2.0 * 0.875 / 50.0));

  // Qwen3-235B (hidden 4096, 128 experts, top-8), EP 16 over two 8-GPU domains, 4096 tokens a
  // GPU: 4096 x 4096 x 2 = 33,554,432 bytes of tokens. Off-domain: x (2 - 1) x 0.99690 =
  // 33,450,552 B at 50 GB/s x 0.5391 = 1.2410 ms; in-domain: x 2 x 7 x 0.41228 = 193,674,460 B
  // at 100 x 0.80 = 80 GB/s = 2.4209 ms: the NVLink side bounds it. Latency: 8.4 us base + 1 us
  // NVLink hop + 5 us network hop.
  const Model model = model_preset("qwen3-235b-a22b");
  ParallelConfig config;
  config.dp = 16;
  config.ep = 16;
  config.micro_batch = 1;
  const GroupLink link = test::network_group(16, 2, 50.0, 5e-6);
  const double expected_s = 14.4e-6 + 193674460.48465568 / 80e9;
  CHECK(hybrid_ep_exchange_s(model, config, link) == Approx(expected_s));
  const CommDetail comm = ep_comm(model, config, link, 94.0, nullptr, MoeDispatcher::hybridep);
  CHECK(comm.time_per_call_s == Approx(expected_s));
  CHECK(comm.calls_per_step == 94.0 * 4.0);
  // NCCL's all-to-all moves each token once per expert: 8 x 33.5 MB, half of it off-domain at
  // 0.743 of the NIC: 134,217,728 / 37.15e9 = 3.613 ms, slower.
  CHECK(ep_comm(model, config, link, 94.0, nullptr).time_per_call_s > 3.6e-3);
}

TEST_CASE("HybridEP where the network sets the pace: its own benchmark, and four domains",
          "[moe][ep]") {
  // DeepEP's hybrid-ep README benchmark (H100, 2 x 8 ranks, 4096 tokens of hidden 7168 a GPU,
  // 128 experts, top-8, bf16) on NVLink 450 GB/s (x 0.80 = 360) and 400 Gb/s NICs: 4096 x 7168 x
  // 2 = 58,720,256 bytes. Off-domain x 1 x p_domain 0.99690 = 58,538,466 B at 0.5391 x 50 GB/s
  // = 26.955 GB/s: 2.1717 ms; in-domain x 2 x 7 x p_rank 0.41228 = 338.9 MB at 360 GB/s:
  // 0.9415 ms. The network bounds it; the README measured 2.150 ms dispatch, 2.195 ms combine.
  Model model = model_preset("qwen3-235b-a22b");
  model.hidden = 7168;
  ParallelConfig config;
  config.dp = 16;
  config.ep = 16;
  config.micro_batch = 1;
  GroupLink link = test::network_group(16, 2, 50.0, 5e-6);
  link.intra_gbps = 450.0;
  const double latency_s = 14.4e-6;  // as above: 8.4 us base + NVLink hop 1 us + network 5 us
  CHECK(hybrid_ep_exchange_s(model, config, link) ==
        Approx(latency_s + 58538466.057 / (0.5391 * 50e9)));
  CHECK(hybrid_ep_exchange_s(model, config, link) - latency_s == Approx(2.1717e-3).epsilon(1e-4));
  // Four domains (EP 32, 4 x 8), hidden 2048: 4096 x 2048 x 2 = 16,777,216 bytes; a domain of
  // 32 experts is reached with p = 1 - C(96,8)/C(128,8) = 0.907253, three remote domains:
  // 45,663,525 B at the README's four-node rate (47.36 + 52.53)/2 x 3/4 / 50 = 0.749175 of the
  // NIC: 1.2190 ms; in-domain x 4 x 7 x (1 - C(124,8)/C(128,8) = 0.229980) = 108.0 MB at
  // 360 GB/s: 0.3001 ms.
  model.hidden = 2048;
  config.dp = 32;
  config.ep = 32;
  link = test::network_group(32, 4, 50.0, 5e-6);
  link.intra_gbps = 450.0;
  CHECK(hybrid_ep_exchange_s(model, config, link) ==
        Approx(latency_s + 45663525.109 / (0.749175 * 50e9)));
}

TEST_CASE("each pipeline stage holds its own MoE layers' experts", "[moe][memory]") {
  // DeepSeek-V3: 61 layers, the first 3 dense, one MTP layer on the last stage. PP 16 splits
  // them 3 | 4 x14 | 2 (pipeline.h stage_layers): the first stage holds no experts, a middle
  // one 4 MoE layers, the last 2 and the MTP layer built as its last layer (MoE): 3. The peak
  // was a stage's dense part with a middle stage's 4 layers of experts (a reviewer: about
  // 6 GiB over on the last stage of plan 1).
  const Model model = model_preset("deepseek-v3");
  ParallelConfig config;
  config.tp = 2;
  config.pp = 16;
  config.dp = 8;
  config.ep = 8;
  CHECK(stage_moe_layers_on(model, config, true, false) == 0.0);
  CHECK(stage_moe_layers_on(model, config, false, false) == 4.0);
  CHECK(stage_moe_layers_on(model, config, false, true) == 3.0);
  // One stage holds all 58 MoE layers and the MTP layer.
  CHECK(stage_moe_layers_on(model, config, true, true) == 59.0);
  // Expert weights on the last stage: 3 layers x 256 / 8 experts x 3 x 7168 x 2048 parameters
  // x 2 bytes = 8,455,716,864 bytes; a middle stage's 4 layers would be 11,274,289,152.
  MemoryOptions options;
  MemoryBreakdown last;
  add_expert_memory(last, model, config, options, stage_moe_layers_on(model, config, false, true));
  CHECK(last.weights_bytes == Approx(3.0 * 32 * 3 * 7168 * 2048 * 2.0));
  MemoryBreakdown first;
  add_expert_memory(first, model, config, options, 0.0);
  CHECK(first.weights_bytes == 0.0);
}

TEST_CASE("a dense-first MoE model's first stage holds its dense FFNs at their width",
          "[moe][memory]") {
  // 4 layers, the first 2 dense (FFN 2048 or 1024), the last 2 MoE with 4 tiny experts (16
  // wide) and no shared expert; PP 2 splits them 2 | 2. The pace-setting view (the MoE stage's,
  // share 1) prices an FFN at the shared experts' width, 0 here: the first stage counted its
  // dense FFNs as nothing and the last stage (output layer) set the peak.
  Model model = test::small_model();
  model.layers = 4;
  model.moe.experts = 4;
  model.moe.top_k = 1;
  model.moe.expert_ffn_hidden = 16;
  model.moe.first_dense = 2;
  ParallelConfig config;
  config.tp = 1;
  config.pp = 2;
  config.dp = 4;
  config.ep = 4;
  config.micro_batch = 1;
  const Cluster cluster = test::round_cluster();
  const auto weights = [&](int ffn) {
    model.ffn_hidden = ffn;
    const Placement placement = default_placement(cluster, config);
    return estimate(cluster, model, config, placement).memory.weights_bytes;
  };
  // The first stage peaks: the embedding 1000 x 64 and 2 layers of attention (4 x 64 x 64),
  // FFN (2 x 64 x f, GELU) and two RMSNorms (2 x 64), in 16 bits: f = 2048 gives
  // (64,000 + 2 x (16,384 + 262,144 + 128)) x 2 = 1,242,624 bytes. f 2048 against 1024:
  // 2 layers x 2 x 64 x 1024 x 2 bytes = 524,288 bytes more (it read the same for both).
  const double wide = weights(2048);
  const double narrow = weights(1024);
  CHECK(wide == Approx(1242624.0));
  CHECK(wide - narrow == Approx(524288.0));
}
