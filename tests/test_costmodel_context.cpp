// Context parallelism: the per-GPU view, attention over the whole sequence, the ring's steps
// and bytes, Ulysses' all-to-all, and what an estimate with CP keeps and divides.
#include <catch2/catch.hpp>

#include "costmodel/context_parallel.h"
#include "costmodel/estimate.h"
#include "costmodel/model_loader.h"
#include "costmodel/placement.h"
#include "costmodel/stack.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"

using namespace trident;

TEST_CASE("the CP view: chunks as sequences, cp folded into dp", "[cp]") {
  const Model model = test::small_model();  // s = 32, B = 8
  ParallelConfig config = test::small_config();
  config.cp = 2;
  const CpView view = cp_local_view(model, config);
  CHECK(view.model.seq_len == 16);
  CHECK(view.model.training.global_batch == 16);
  CHECK(view.config.dp == 4);
  CHECK(view.config.cp == 1);
  // The micro-batch count is unchanged: 16 / (4 x 1) = 8 / (2 x 1) = 4.
  CHECK(view.config.num_micro_batches(16) == config.num_micro_batches(8));
}

TEST_CASE("attention over the whole sequence: cp ring steps of one block each", "[cp]") {
  LayerTime layer;
  layer.forward_s = 10.0;
  layer.backward_s = 20.0;
  layer.attention_forward_s = 1.0;
  layer.attention_backward_s = 2.5;
  // cp 4: 4 steps of the (s/cp)^2 half block: +3 forward, +7.5 backward; selective
  // recompute of the core attention repeats the 3 extra forward steps.
  add_cp_attention(layer, 4, Recompute::selective, SelectiveKind::attention);
  CHECK(layer.forward_s == 13.0);
  CHECK(layer.backward_s == 27.5);
  CHECK(layer.recompute_s == 3.0);
  CHECK(layer.attention_forward_s == 4.0);
}

TEST_CASE("ring p2p: cp-1 K/V sends forward, twice backward, each behind a step", "[cp]") {
  const Model model = test::small_model();  // h_kv = 64, s = 32
  ParallelConfig config;
  config.cp = 4;
  config.micro_batch = 1;
  // Chunk: 1 x (32 / 4) tokens x 2 x 64 (K and V) x 2 bytes / tp 1 = 2048 bytes.
  CHECK(cp_kv_chunk_bytes(model, config) == 2048.0);
  Stack p2p;
  p2p.cp_kinds = 1u << static_cast<unsigned>(CpKind::p2p);
  LayerTime step;  // one ring step's attention: no time, so every send is exposed
  const GroupLink link = test::nvlink_group(4);
  const CpComm comm = cp_comm(model, config, link, step, 2.0, p2p, nullptr);
  CHECK(comm.kind == CpKind::p2p);
  CHECK(comm.detail.collective == Collective::send_recv);
  // 2 layers x 3 steps x (1 forward + 2 backward) = 18 sends.
  CHECK(comm.detail.calls_per_step == 18.0);
  CHECK(comm.detail.exposed_s == Approx(comm.detail.total_s));
  // Full recompute of 1 of the 2 layers sends its forward again: 2 x 3 x (1.5 + 2) = 21.
  config.recompute = Recompute::full;
  config.recompute_layers = 1;
  CHECK(cp_comm(model, config, link, step, 2.0, p2p, nullptr).detail.calls_per_step == 21.0);
  config.recompute_layers = 0;  // both: 2 x 3 x (2 + 2) = 24
  CHECK(cp_comm(model, config, link, step, 2.0, p2p, nullptr).detail.calls_per_step == 24.0);
  config.recompute = Recompute::none;
  // A step's attention longer than a send hides it completely.
  step.attention_forward_s = 1.0;
  step.attention_backward_s = 2.5;
  CHECK(cp_comm(model, config, link, step, 2.0, p2p, nullptr).detail.exposed_s == 0.0);
}

TEST_CASE("Ulysses all-to-all: Q, K, V and the output, when the heads split", "[cp]") {
  const Model model = test::small_model();  // 4 heads, 4 KV heads, head dim 16
  ParallelConfig config;
  config.cp = 4;
  config.micro_batch = 1;
  CHECK(cp_a2a_possible(model, config));
  config.tp = 2;  // 2 heads per TP rank cannot split 4 ways
  CHECK_FALSE(cp_a2a_possible(model, config));
  config.tp = 1;
  Stack a2a;
  a2a.cp_kinds = 1u << static_cast<unsigned>(CpKind::a2a);
  const CpComm comm = cp_comm(model, config, test::nvlink_group(4), LayerTime{}, 2.0, a2a, nullptr);
  CHECK(comm.kind == CpKind::a2a);
  // Per layer: QKV 8 tokens x (64 + 128) x 2 = 3072 bytes and output 8 x 64 x 2 = 1024,
  // forward and backward: 4 calls, mean 2048 bytes.
  CHECK(comm.detail.calls_per_step == 8.0);
  CHECK(comm.detail.bytes_per_call == 2048.0);
}

TEST_CASE("CP estimate: same FLOPs, activations divided, gradients over DP x CP", "[cp]") {
  Model model = model_preset("llama3-8b");
  model.seq_len = 32768;
  model.training.global_batch = 8;
  const Cluster cluster = test::round_cluster();
  ParallelConfig config;
  config.tp = 2;
  config.dp = 4;
  config.sequence_parallel = true;
  config.recompute = Recompute::selective;
  config.zero = 1;
  const Estimate one = estimate(cluster, model, config, default_placement(cluster, config));
  ParallelConfig with_cp = config;
  with_cp.dp = 2;
  with_cp.cp = 2;
  const Placement placement = default_placement(cluster, with_cp);
  CHECK(placement.cp.ranks == 2);
  CHECK(placement.dp.ranks == 4);  // DP x CP
  const Estimate two = estimate(cluster, model, with_cp, placement);
  CHECK(two.model_flops == Approx(one.model_flops));
  // Each GPU holds half the tokens of a sequence: activations halve (same micro-batches).
  CHECK(two.memory.activations_bytes == Approx(one.memory.activations_bytes / 2.0).epsilon(0.01));
  CHECK(two.cp.calls_per_step > 0.0);
  CHECK(two.time.cp_comm_s == Approx(two.cp.exposed_s));
  CHECK(one.time.cp_comm_s == 0.0);
}

TEST_CASE("rank layout: CP after TP, EP consecutive, expert DP strided", "[cp][placement]") {
  ParallelConfig config;
  config.tp = 2;
  config.cp = 2;
  config.dp = 4;
  config.pp = 2;
  config.ep = 4;
  CHECK(cp_group(config, RankOrder::tp_dp_pp, 0) == std::vector<int>{0, 2});
  CHECK(dp_group(config, RankOrder::tp_dp_pp, 0) == std::vector<int>{0, 4, 8, 12});
  CHECK(pp_group(config, RankOrder::tp_dp_pp, 0) == std::vector<int>{0, 16});
  CHECK(ep_group(config, 5) == std::vector<int>{4, 5, 6, 7});
  CHECK(edp_group(config, 5) == std::vector<int>{1, 5, 9, 13});
  CHECK(dp_cp_group(config, RankOrder::tp_dp_pp, 1).size() == 8);
  const RankStrides strides = rank_strides(config, RankOrder::tp_dp_pp);
  CHECK(strides.cp == 2);
  CHECK(strides.dp == 4);
}

TEST_CASE("all-gather rotater: K/V gathered once a pass, K/V gradients round the ring", "[cp]") {
  const Model model = test::small_model();  // K/V chunk at cp 4: 2048 bytes (above)
  ParallelConfig config;
  config.cp = 4;
  config.micro_batch = 1;
  Stack torch_cp;
  torch_cp.cp_kinds = 1u << static_cast<unsigned>(CpKind::all_gather);
  LayerTime step;  // no attention to hide behind: everything exposed
  const GroupLink link = test::nvlink_group(4);
  const CpComm comm = cp_comm(model, config, link, step, 2.0, torch_cp, nullptr);
  CHECK(comm.kind == CpKind::all_gather);
  CHECK(comm.detail.collective == Collective::all_gather);
  CHECK(comm.detail.bytes_per_call == 8192.0);  // nccl-tests' S: the 4 chunks gathered
  // Per layer: an all-gather forward and one backward, and 4 sends of the fp32 K/V gradient
  // chunk (2 x 2048 bytes), one after every step: 2 layers x (2 + 4) = 12 calls.
  CHECK(comm.detail.calls_per_step == 12.0);
  const double gather_s = collective_time_s(Collective::all_gather, 8192.0, link, nullptr);
  const double send_s = collective_time_s(Collective::send_recv, 4096.0, link, nullptr);
  CHECK(comm.detail.total_s == Approx(2.0 * (2.0 * gather_s + 4.0 * send_s)));
  CHECK(comm.detail.exposed_s == Approx(comm.detail.total_s));
  // Full recompute gathers again forward: 2 x (3 + 4) = 14 calls.
  config.recompute = Recompute::full;
  CHECK(cp_comm(model, config, link, step, 2.0, torch_cp, nullptr).detail.calls_per_step == 14.0);
  config.recompute = Recompute::none;
  // A step's backward longer than a send, shorter than the gather; the forward's local chunk
  // longer than the gather: exposed per layer the backward gather's excess and the last send,
  // which waits after the loop: 2 x ((gather - bwd) + send).
  REQUIRE(send_s < gather_s);
  step.attention_forward_s = 2.0 * gather_s;
  step.attention_backward_s = 0.5 * (send_s + gather_s);
  CHECK(cp_comm(model, config, link, step, 2.0, torch_cp, nullptr).detail.exposed_s ==
        Approx(2.0 * ((gather_s - step.attention_backward_s) + send_s)));
  // Working memory of one layer's attention backward: the gathered K/V 4 x 2048, the fp32
  // dK/dV accumulated, sent and received 3 x 4096, the fp32 dQ of the 8 local tokens
  // 4 x 8 x 4 heads x 16 = 2048: 22528 bytes.
  CHECK(cp_allgather_working_bytes(model, config) == Approx(22528.0));
}

TEST_CASE("CP moves K/V as the attention call sees them: 16-bit under FP8, repeated GQA heads",
          "[cp]") {
  Model model = test::small_model();  // 4 heads of 16, s = 32
  model.kv_heads = 1;                 // GQA: h_kv = 16
  ParallelConfig config;
  config.cp = 4;
  config.micro_batch = 1;
  // 8 local tokens x 2 x 16 (K and V) x 2 bytes = 512; FP8 linears leave attention in bf16:
  // the same 512 (it was priced at 1 byte, 256).
  CHECK(kv_elements_per_token(model) == 32.0);
  CHECK(cp_kv_chunk_bytes(model, config) == 512.0);
  model.training.dtype = Dtype::fp8;
  CHECK(cp_kv_chunk_bytes(model, config) == 512.0);
  model.training.fp8.attention = true;  // FP8 attention: K/V in 8 bits
  CHECK(cp_kv_chunk_bytes(model, config) == 256.0);
  model.training.fp8.attention = false;
  // Repeated to every query head before the call (torchtitan@9dec370 repeat_kv):
  // 2 x 4 heads x 16 = 128 elements a token, 8 x 128 x 2 = 2048 bytes.
  CHECK(kv_elements_per_token(model, true) == 128.0);
  CHECK(cp_kv_chunk_bytes(model, config, true) == 2048.0);
  // The rotater's working set as above with the repeated chunk: 4 x 2048 + 3 x 4096 + the
  // fp32 dQ 4 x 8 x 4 x 16 = 2048: 22528; with the GQA chunk 4 x 512 + 3 x 1024 + 2048 = 7168.
  CHECK(cp_allgather_working_bytes(model, config, true) == Approx(22528.0));
  CHECK(cp_allgather_working_bytes(model, config) == Approx(7168.0));
}

TEST_CASE("torchtitan gathers FP8 weights only with a data-parallel shard above 1", "[cp][fp8]") {
  // torchtitan@9dec370 torchtitan/float8.py L51-54: enable_fsdp_float8_all_gather only when
  // dp_shard > 1; FSDP over CP alone gathers the 16-bit weights.
  Model model = model_preset("llama3-8b");
  model.seq_len = 32768;
  model.training.global_batch = 2;
  model.training.dtype = Dtype::fp8;
  model.training.fp8.recipe = Fp8Recipe::current;
  model.training.fp8.params = true;
  Model sixteen_bit = model;
  sixteen_bit.training.fp8.params = false;
  Cluster cluster = cluster_preset("dgx-h100");
  cluster.servers = 1;
  EstimateOptions titan;
  titan.stack = stack_preset("torchtitan");
  ParallelConfig config;  // FSDP 1 x CP 2
  config.tp = 4;
  config.cp = 2;
  config.zero = 3;
  config.recompute = Recompute::full;
  const Placement placement = default_placement(cluster, config);
  CHECK(titan.stack.gathers_fp8_params_in_16_bits(model.training, config.shard_ranks()));
  const Estimate cp_only = estimate(cluster, model, config, placement, nullptr, titan);
  const Estimate as_16 = estimate(cluster, sixteen_bit, config, placement, nullptr, titan);
  CHECK(cp_only.fp8_params_gathered_16bit);
  CHECK(cp_only.memory.weights_bytes == as_16.memory.weights_bytes);
  CHECK(cp_only.time.step_s == as_16.time.step_s);
  // FSDP 2 x CP 1: the FP8 all-gather runs, weights and gathers in 8 bits.
  config.cp = 1;
  config.dp = 2;
  const Placement sharded = default_placement(cluster, config);
  CHECK_FALSE(titan.stack.gathers_fp8_params_in_16_bits(model.training, config.shard_ranks()));
  const Estimate fp8 = estimate(cluster, model, config, sharded, nullptr, titan);
  CHECK_FALSE(fp8.fp8_params_gathered_16bit);
  const Estimate gathered_16 = estimate(cluster, sixteen_bit, config, sharded, nullptr, titan);
  CHECK(fp8.memory.layer_units_bytes < gathered_16.memory.layer_units_bytes);
  // Megatron-Core keeps FP8 parameters whatever the sharding (--fp8-param-gather).
  CHECK_FALSE(stack_preset("megatron-core").gathers_fp8_params_in_16_bits(model.training, 1));
  // The stack key: off by default, read from a stack file.
  const std::string base = "name: s\nattention: flash\ntp_overlap: none\n";
  CHECK_FALSE(load_stack(base, "s.yaml").fp8_param_gather_needs_dp_shard);
  CHECK(load_stack(base + "fp8_param_gather_needs_dp_shard: true\n", "s.yaml")
            .fp8_param_gather_needs_dp_shard);
}
