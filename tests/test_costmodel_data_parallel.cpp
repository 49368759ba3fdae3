// Data parallel communication (costmodel/data_parallel.h): hybrid sharding (HSDP), its groups
// and its memory. The plain per-unit schedule is tested in test_costmodel_stack.cpp.
#include <catch2/catch.hpp>

#include "configs/presets.h"
#include "costmodel/collective.h"
#include "costmodel/compute.h"
#include "costmodel/data_parallel.h"
#include "costmodel/estimate.h"
#include "costmodel/memory.h"
#include "costmodel/model_loader.h"
#include "costmodel/placement.h"
#include "costmodel/stack.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"

using namespace trident;

namespace {

/// dp 4 on one NVLink domain; with HSDP the shard group and the replicas are 2 ranks each.
Placement hsdp_placement() {
  Placement placement;
  placement.tp = test::nvlink_group(1);
  placement.pp = test::nvlink_group(1);
  placement.dp = test::nvlink_group(4);
  placement.shard = test::nvlink_group(2);
  placement.replicate = test::nvlink_group(2);
  return placement;
}

ParallelConfig zero3_dp4(int dp_shard) {
  ParallelConfig config;
  config.dp = 4;
  config.micro_batch = 1;
  config.zero = 3;
  config.dp_shard = dp_shard;
  return config;
}

/// The bucketed case: 200M parameters on the stage, dp 8 on one NVLink domain, ZeRO-1.
/// Megatron-Core's bucket is max(40M, 1M x 8) = 40M: rs and ag are one bucket's reduce-scatter
/// of 40M x 4 bytes (fp32 reduce) and all-gather of 40M x 2 bytes.
struct BucketCase {
  Model model = test::small_model();
  ParallelConfig config = [] {
    ParallelConfig c;
    c.dp = 8;
    c.micro_batch = 1;
    c.zero = 1;
    return c;
  }();
  GroupLink link = test::nvlink_group(8);
  double rs = collective_time_s(Collective::reduce_scatter, 40e6 * 4.0, link);
  double ag = collective_time_s(Collective::all_gather, 40e6 * 2.0, link);

  [[nodiscard]] CommDetail comm(const DpWindow& window, const Stack& stack) const {
    return dp_comm(model, config, {link, link, link}, 200e6, 1, window, stack, nullptr);
  }
};

}  // namespace

TEST_CASE("HSDP: per-unit gathers in the shard group, gradient shards all-reduced across",
          "[data_parallel][estimate]") {
  // Small model: 2 layers, B = 8; dp 4, micro-batch 1 -> m = 8 / 4 = 2 micro-batches.
  const Model model = test::small_model();
  const ParallelConfig config = zero3_dp4(2);
  REQUIRE(config.hybrid_shard());
  REQUIRE(config.shard_ranks() == 2);
  EstimateOptions options;
  options.stack = stack_preset("torchtitan");
  const Placement placement = hsdp_placement();
  const Estimate e = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  // A unit is one layer: 49,280 parameters (test_costmodel_stack.cpp); gathers move 2 bytes
  // each, the reduce-scatter 4 (fp32), inside the 2-rank shard group.
  const double unit = 49280.0;
  CHECK(e.dp.link.ranks == 2);
  const double ag = collective_time_s(Collective::all_gather, unit * 2, placement.shard);
  const double rs = collective_time_s(Collective::reduce_scatter, unit * 4, placement.shard);
  CHECK(e.dp.unit_gather_s == Approx(ag));
  CHECK(e.dp.unit_scatter_s == Approx(rs));
  // Then each unit's reduced shard, unit x 4 / 2 = 98,560 bytes, is all-reduced over the
  // 2 replicas.
  CHECK(e.dp.replicate_bytes_per_call == Approx(98560.0));
  CHECK(e.dp.replicate_link.ranks == 2);
  const double ar = collective_time_s(Collective::all_reduce, 98560.0, placement.replicate);
  CHECK(e.dp.unit_replicate_s == Approx(ar));
  // Per step: 2 micro-batches x 2 layers x (forward + backward gather) = 8 gathers; 4
  // reduce-scatters, each followed by its all-reduce.
  CHECK(e.dp.unit_gathers_per_step == Approx(8.0));
  CHECK(e.dp.unit_scatters_per_step == Approx(4.0));
  // A call is one unit's reduce-scatter and all-gather, as validate runs it (the replicas'
  // all-reduce apart); the gathers per step are counted above.
  CHECK(e.dp.calls_per_step == Approx(4.0));
  CHECK(e.dp.time_per_call_s == Approx(rs + ag));
  CHECK(e.dp.gather_s == Approx(ag));
  // Exposed per micro-batch (prefetch one unit): forward ag + max(0, ag - fwd); backward
  // (ag + rs + ar) + max(0, ag + rs + ar - bwd). Times 2.
  const LayerTime layer = layer_time(test::round_gpu(), model, config, ComputeFeatures{});
  const double forward = ag + std::max(0.0, ag - layer.forward_s);
  const double backward = (ag + rs + ar) + std::max(0.0, ag + rs + ar - layer.backward_s);
  // torchtitan's embedding unit, 1000 x 64 = 64,000 parameters, gathered first and
  // reduce-scattered (then all-reduced across the replicas, 64,000 x 4 / 2 bytes) last, each
  // micro-batch, exposed (test_costmodel_stack.cpp prices the layers without it).
  const double ag_e = collective_time_s(Collective::all_gather, 64000.0 * 2, placement.shard);
  const double rs_e =
      collective_time_s(Collective::reduce_scatter, 64000.0 * 4, placement.shard) +
      collective_time_s(Collective::all_reduce, 64000.0 * 4 / 2, placement.replicate);
  CHECK(e.dp.total_s == Approx(8 * ag + 4 * (rs + ar) + 2 * (ag_e + rs_e)));
  CHECK(e.dp.exposed_s == Approx(2 * (forward + backward + ag_e + rs_e)));
}

TEST_CASE("HSDP memory: the model state sharded over the shard group, not all of DP",
          "[data_parallel][memory]") {
  const Model model = test::small_model();
  EstimateOptions options;
  options.stack = stack_preset("torchtitan");
  const Placement placement = hsdp_placement();
  const Estimate full =
      estimate(test::round_cluster(), model, zero3_dp4(0), placement, nullptr, options);
  const Estimate hybrid =
      estimate(test::round_cluster(), model, zero3_dp4(2), placement, nullptr, options);
  // FSDP shards the fp32 parameter and Adam's two moments: 12 bytes per parameter / ranks.
  // Over 4 ranks 3 bytes, over the 2-rank shard group 6: twice as much.
  CHECK(hybrid.memory.optimizer_bytes == Approx(2.0 * full.memory.optimizer_bytes));
  CHECK(hybrid.memory.gradients_bytes == Approx(2.0 * full.memory.gradients_bytes));
  CHECK(hybrid.memory.weights_bytes == Approx(2.0 * full.memory.weights_bytes));
  // Sharding over all of DP has no replicas and no all-reduce.
  CHECK_FALSE(zero3_dp4(4).hybrid_shard());
  CHECK(full.dp.unit_replicate_s == 0.0);
  CHECK(full.dp.link.ranks == 4);
}

TEST_CASE("HSDP groups: consecutive DP ranks shard, DP ranks dp_shard apart replicate",
          "[data_parallel][placement]") {
  // tp 2, dp 8, shard 4, order tp-dp-pp: DP ranks are 2 apart; rank 0's shard group holds
  // DP ranks 0-3 = GPUs 0 2 4 6, its replicas DP ranks 0 and 4 = GPUs 0 and 8.
  ParallelConfig config;
  config.tp = 2;
  config.dp = 8;
  config.zero = 3;
  config.dp_shard = 4;
  CHECK(dp_shard_group(config, RankOrder::tp_dp_pp, 0) == std::vector<int>{0, 2, 4, 6});
  CHECK(dp_replicate_group(config, RankOrder::tp_dp_pp, 0) == std::vector<int>{0, 8});
  CHECK(dp_replicate_group(config, RankOrder::tp_dp_pp, 3) == std::vector<int>{3, 11});
  // Rank 9 = (tp 1, dp 4): the second shard group, DP ranks 4-7 = GPUs 9 11 13 15.
  CHECK(dp_shard_group(config, RankOrder::tp_dp_pp, 9) == std::vector<int>{9, 11, 13, 15});
  // With CP 2 (tp 1, dp 4, shard 2): the shard group takes its DP ranks' CP ranks too
  // (FSDP shards over DP x CP): DP 0-1 x CP 0-1 = 0 1 2 3; replicas: DP 0 and 2 = 0 and 4.
  ParallelConfig cp;
  cp.cp = 2;
  cp.dp = 4;
  cp.zero = 3;
  cp.dp_shard = 2;
  CHECK(dp_shard_group(cp, RankOrder::tp_dp_pp, 0) == std::vector<int>{0, 1, 2, 3});
  CHECK(dp_replicate_group(cp, RankOrder::tp_dp_pp, 0) == std::vector<int>{0, 4});
  // The placement of a plain config has one-rank shard and replicate links.
  Cluster cluster = test::round_cluster();
  cluster.servers = 2;
  cluster.nvlink.domain_gpus = 8;
  const Placement plain = default_placement(cluster, zero3_dp4(0), RankOrder::tp_dp_pp);
  CHECK(plain.shard.ranks == 1);
  CHECK(plain.replicate.ranks == 1);
  const Placement hybrid = default_placement(cluster, config, RankOrder::tp_dp_pp);
  CHECK(hybrid.shard.ranks == 4);
  CHECK(hybrid.replicate.ranks == 2);
  CHECK(hybrid.replicate.domains == 2);  // GPUs 0 and 8: two servers
}

TEST_CASE("which stacks shard hybrid, and which ZeRO stages", "[data_parallel][stack]") {
  CHECK(stack_preset("fsdp").supports_hybrid_shard(3));
  CHECK(stack_preset("fsdp").supports_hybrid_shard(2));  // _HYBRID_SHARD_ZERO2
  CHECK_FALSE(stack_preset("fsdp").supports_hybrid_shard(1));
  CHECK(stack_preset("torchtitan").supports_hybrid_shard(3));
  CHECK_FALSE(stack_preset("torchtitan").supports_hybrid_shard(2));
  for (const char* name :
       {"megatron-core", "megatron-core-perf", "megatron-2021", "deepspeed-megatron"}) {
    CHECK_FALSE(stack_preset(name).supports_hybrid_shard(3));
  }
}

TEST_CASE("bucketed DP: the last bucket holds at least the first stage's embedding",
          "[data_parallel]") {
  // BucketCase: 5 reduce-scatters (rs) and 5 all-gathers (ag) of one 40M bucket each.
  const BucketCase bucket;
  const double rs = bucket.rs;
  const double ag = bucket.ag;
  const Stack stack = stack_preset("megatron-core");
  // Windows far longer than the traffic: only the last bucket is exposed.
  DpWindow window{100.0, 100.0, 2.0, 50.0, 50.0, 0.0};
  const CommDetail plain = bucket.comm(window, stack);
  CHECK(plain.total_s == Approx(5 * rs + 5 * ag));
  // A 40M bucket is 1/5 of the traffic: (5 rs) / 5 + (5 ag) / 5.
  CHECK(plain.exposed_s == Approx(rs + ag));
  // A 100M embedding (a 50,000-token vocabulary x 2,000 hidden) closes the last bucket only
  // after it: that bucket is 100M, half the stage, reduced after backward and gathered before
  // the first layer: (5 rs + 5 ag) x 100M / 200M.
  window.edge_parameters = 100e6;
  const CommDetail edge = bucket.comm(window, stack);
  CHECK(edge.total_s == Approx(plain.total_s));
  CHECK(edge.exposed_s == Approx(0.5 * (5 * rs + 5 * ag)));
  // Never more than the stage: an embedding larger than it exposes everything.
  window.edge_parameters = 400e6;
  CHECK(bucket.comm(window, stack).exposed_s == Approx(5 * rs + 5 * ag));
}

TEST_CASE("FSDP2's reduce-scatter copy-in: one pass on the compute stream per reduce-scatter",
          "[data_parallel][estimate]") {
  // torchtitan (FSDP2): foreach_reduce reads each unit's bf16 gradients (2 bytes) and writes
  // them widened into the fp32 reduce-scatter input (4 bytes): 6 bytes a parameter.
  const Stack titan = stack_preset("torchtitan");
  CHECK(titan.reduce_scatter_copy_in_bytes(Dtype::bf16) == 6.0);
  CHECK(titan.reduce_scatter_copy_in_bytes(Dtype::fp32) == 8.0);
  // FSDP1 (fsdp) casts on its post-backward stream beside the next unit's backward: none.
  CHECK(stack_preset("fsdp").reduce_scatter_copy_in_bytes(Dtype::bf16) == 0.0);

  // Small model, ZeRO-3 over dp 4, micro-batch 1: m = 8 / 4 = 2 reduce-scatters of every unit
  // (torchtitan reduces every micro-batch), each pass over the stage's parameters at the round
  // GPU's 1000 GB/s x 0.85.
  const Model model = test::small_model();
  const ParallelConfig config = zero3_dp4(0);
  EstimateOptions options;
  options.stack = titan;
  const Placement placement = hsdp_placement();
  const Estimate copied =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  options.stack.reduce_scatter_copy_in = false;
  const Estimate direct =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  const double params = stage_parameters(model, config, true, true);
  CHECK(unit_scatter_passes(config, titan, 2) == 2.0);
  CHECK(copied.time.backward_s - direct.time.backward_s == Approx(2 * 6.0 * params / 850e9));
  // With PP the reduce-scatter waits for the last micro-batch: one copy-in per step.
  ParallelConfig piped = config;
  piped.pp = 2;
  CHECK(unit_scatter_passes(piped, titan, 4) == 1.0);
}

TEST_CASE("NeMo 1.x: no gradient-reduction overlap under pipelining or sequence parallelism",
          "[data_parallel][stack]") {
  // BucketCase (200M parameters, dp 8, ZeRO-1, 40M buckets): overlapped, only the last
  // bucket's reduce-scatter and all-gather show, rs + ag.
  BucketCase bucket;
  const double rs = bucket.rs;
  const double ag = bucket.ag;
  const DpWindow window{100.0, 100.0, 2.0, 50.0, 50.0, 0.0};
  const Stack nemo = load_stack(
      "name: n\nbase: megatron-core\ndp_overlap_grad_reduce_with_pp: false\n"
      "dp_overlap_grad_reduce_with_sp: false\ndp_param_gather_in_fill: false\n",
      "n.yaml");
  ParallelConfig& config = bucket.config;
  CHECK(nemo.overlaps_grad_reduce(config));  // PP 1, no SP: overlapped as before
  CHECK(bucket.comm(window, nemo).exposed_s == Approx(rs + ag));
  // PP 2: every reduce-scatter after the pipeline, exposed (5 rs); the gathers still overlap.
  config.pp = 2;
  CHECK_FALSE(nemo.overlaps_grad_reduce(config));
  CHECK(bucket.comm(window, nemo).exposed_s == Approx(5 * rs + ag));
  // Sequence parallelism alone does the same; the preset keeps its overlap under both.
  config.pp = 1;
  config.tp = 2;
  config.sequence_parallel = true;
  CHECK_FALSE(nemo.overlaps_grad_reduce(config));
  CHECK(stack_preset("megatron-core").overlaps_grad_reduce(config));
  // A stack that never overlaps is not turned on by these keys.
  Stack never = stack_preset("megatron-2021");
  config.sequence_parallel = false;
  CHECK_FALSE(never.overlaps_grad_reduce(config));
}

TEST_CASE("Megatron-Core's sync a chunk at a time under the interleaved schedule",
          "[data_parallel][stack]") {
  // BucketCase (200M parameters, dp 8, ZeRO-1, 40M buckets: five reduce-scatters `rs`, five
  // all-gathers `ag`), PP 4, VP 4, no edge: one micro-batch of the first stage's four chunks
  // takes 4 ms forward and 4 ms backward, so a chunk 1 ms.
  BucketCase bucket;
  const double rs = bucket.rs;
  const double ag = bucket.ag;
  ParallelConfig& config = bucket.config;
  config.pp = 4;
  config.virtual_stages = 4;
  const DpWindow window{4e-3, 4e-3, 8.0, 0.5e-3, 0.5e-3, 0.0};
  const Stack core = stack_preset("megatron-core");
  REQUIRE(core.dp_sync_per_chunk);
  // Chunk 0 holds a quarter of the 200M: 1.25 buckets' worth, 1.25 rs behind one chunk's 1 ms,
  // at least the last bucket (rs); the stream fits the other chunks' in (3 x 4 + 1) = 13 chunk
  // slots: 5 rs - 13 ms. Exposed max(1.25 rs - 1 ms, rs, 5 rs - 13 ms), and the same for ag.
  const auto chunked = [](double one, double window_s) {
    return std::max({1.25 * one - window_s, one, 5.0 * one - 13.0 * window_s});
  };
  CHECK(bucket.comm(window, core).exposed_s == Approx(chunked(rs, 1e-3) + chunked(ag, 1e-3)));
  CHECK(per_chunk_unhidden_s(5.0, 4.0, 1.0, 0.25, 4, 4) == Approx(1.0));   // max(0.25, 1, -8)
  CHECK(per_chunk_unhidden_s(20.0, 4.0, 1.0, 0.25, 4, 4) == Approx(7.0));  // 20 - 13
  // A stack that syncs the whole stage at the edge: the whole first stage's window, 4 ms.
  Stack whole = core;
  whole.dp_sync_per_chunk = false;
  CHECK(bucket.comm(window, whole).exposed_s ==
        Approx(std::max(5 * rs - 4e-3, rs) + std::max(5 * ag - 4e-3, ag)));
}

TEST_CASE("Without interleaving the later stages gather their parameters on the fill's path",
          "[data_parallel][stack]") {
  // BucketCase at PP 4, VP 1: each of the 3 later stages gathers its 200M parameters (2 bytes
  // each) as one all-gather at its first forward, one after another down the pipeline.
  BucketCase bucket;
  bucket.config.pp = 4;
  const DpWindow window{4e-3, 4e-3, 8.0, 0.5e-3, 0.5e-3, 0.0};
  const Stack core = stack_preset("megatron-core");
  const double stage_ag = collective_time_s(Collective::all_gather, 200e6 * 2.0, bucket.link);
  const CommDetail on = bucket.comm(window, core);
  CHECK(on.fill_gathers_per_step == 3.0);
  CHECK(on.fill_gather_s == Approx(stage_ag));
  Stack before = core;  // Megatron-Core before 0.9 gathered at the optimizer step
  before.dp_param_gather_in_fill = false;
  const CommDetail off = bucket.comm(window, before);
  CHECK(on.exposed_s - off.exposed_s == Approx(3.0 * stage_ag));
  CHECK(on.total_s - off.total_s == Approx(3.0 * stage_ag));
  // Interleaved, the aligned gathers run chunk by chunk instead: none on the fill's path.
  bucket.config.virtual_stages = 2;
  CHECK(bucket.comm(window, core).fill_gathers_per_step == 0.0);
}

TEST_CASE("DeepSpeed's ZeRO-1 all-reduces its gradient buckets, then all-gathers the weights",
          "[data_parallel][stack]") {
  // BucketCase (200M parameters, dp 8, ZeRO-1, 40M buckets), no overlap anywhere: five
  // buckets of reduction, five of all-gather, all exposed.
  BucketCase bucket;
  const DpWindow window{100.0, 100.0, 2.0, 50.0, 50.0, 0.0};
  const Stack rs_stack = load_stack(
      "name: r\nbase: megatron-core\ndp_overlap_grad_reduce: false\n"
      "dp_overlap_param_gather: false\n",
      "r.yaml");
  const CommDetail scattered = bucket.comm(window, rs_stack);
  CHECK(scattered.collective == Collective::reduce_scatter);
  CHECK(scattered.exposed_s == Approx(5 * bucket.rs + 5 * bucket.ag));
  // zero1_all_reduces_gradients: each 40M x 4-byte bucket is all-reduced, ring 2(n-1)/n of it
  // against the reduce-scatter's (n-1)/n; the all-gathers stay.
  const Stack ar_stack = load_stack(
      "name: a\nbase: megatron-core\ndp_overlap_grad_reduce: false\n"
      "dp_overlap_param_gather: false\nzero1_all_reduces_gradients: true\n",
      "a.yaml");
  const double ar = collective_time_s(Collective::all_reduce, 40e6 * 4.0, bucket.link);
  const CommDetail reduced = bucket.comm(window, ar_stack);
  CHECK(reduced.collective == Collective::all_reduce);
  CHECK(reduced.exposed_s == Approx(5 * ar + 5 * bucket.ag));
  CHECK(ar > 1.9 * bucket.rs);  // the bandwidth term twice over
  // Not ZeRO-2 (DeepSpeed's stage 2 reduces each rank's partition), not ZeRO 0 (all-reduce
  // either way); the deepspeed-megatron preset sets it, Megatron's distributed optimizer not.
  // A model with MoE layers keeps DeepSpeed's contiguous gradients: reduce-scattered.
  CHECK(dp_comm(bucket.model, bucket.config, {bucket.link, bucket.link, bucket.link}, 200e6, 1,
                window, ar_stack, nullptr, true)
            .collective == Collective::reduce_scatter);
  bucket.config.zero = 2;
  CHECK(bucket.comm(window, ar_stack).collective == Collective::reduce_scatter);
  CHECK(stack_preset("deepspeed-megatron").zero1_all_reduces_gradients);
  CHECK_FALSE(stack_preset("megatron-core").zero1_all_reduces_gradients);
}

TEST_CASE("torchtitan's pipelining reduce-scatters a stage's units in bulk after its last backward",
          "[data_parallel][estimate]") {
  // Small model with 4 layers, PP 2 (2 layers a stage), DP 2, micro-batch 1: m = 8 / 2 = 4.
  // FSDP2 keeps the weights gathered through the micro-batches (one gather per unit), and the
  // schedule's REDUCE_GRAD runs every unit's reduce-scatter after the stage's last backward,
  // the compute stream waiting: both units' reduce-scatters exposed, where one after another
  // behind the backward (pp_bulk_reduce_scatter false) exposes rs + max(0, rs - bwd unit).
  Model model = test::small_model();
  model.layers = 4;
  ParallelConfig config = test::small_config();  // pp 2, dp 2, micro-batch 1
  config.tp = 1;
  config.zero = 3;
  const Placement placement = test::nvlink_placement(1, 2, 2);
  EstimateOptions options;
  options.stack = stack_preset("torchtitan");
  REQUIRE(options.stack.pp_bulk_reduce_scatter);
  options.stack.edge_unit = EdgeUnit::none;  // the layers alone
  const Estimate bulk = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  const double ag = bulk.dp.unit_gather_s;
  const double rs = bulk.dp.unit_scatter_s;
  CHECK(bulk.dp.unit_gathers_per_step == Approx(2.0));
  CHECK(bulk.dp.unit_scatters_per_step == Approx(2.0));
  const LayerTime layer = layer_time(test::round_gpu(), model, config, ComputeFeatures{});
  const double forward = ag + std::max(0.0, ag - layer.forward_s);  // one pass, prefetched
  CHECK(bulk.dp.exposed_s == Approx(forward + 2 * rs));
  options.stack.pp_bulk_reduce_scatter = false;
  const Estimate hidden =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  CHECK(hidden.dp.exposed_s == Approx(forward + rs + std::max(0.0, rs - layer.backward_s)));
  // Interleaved, 2 chunks of one layer: the chunk that finishes last exposes its one unit;
  // the other chunk's run in the cool-down's idle time.
  options.stack.pp_bulk_reduce_scatter = true;
  config.virtual_stages = 2;
  const Estimate interleaved =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  CHECK(interleaved.dp.exposed_s == Approx(forward + rs));
}

TEST_CASE("DeepSpeed's ZeRO-2 reduces every micro-batch's gradients, in 16 bits",
          "[data_parallel][stack]") {
  // 200M parameters on the stage, bf16, dp 8 on one NVLink domain, m = 4, deepspeed-megatron:
  // one bucket (5e8 elements hold all 200M). ZeRO-2 partitions the gradients as each
  // micro-batch's backward makes them, on the compute stream: a reduce-scatter of 200M x 2
  // bytes (communication_data_type) 4 times a step, exposed, then one all-gather of the 16-bit
  // weights, 200M x 2 bytes, exposed too.
  const Model model = test::small_model();
  REQUIRE(model.training.dtype == Dtype::bf16);
  ParallelConfig config;
  config.dp = 8;
  config.micro_batch = 1;
  config.zero = 2;
  const Stack ds = stack_preset("deepspeed-megatron");
  const GroupLink link = test::nvlink_group(8);
  const DpWindow window{};
  const auto comm = [&](const ParallelConfig& c) {
    return dp_comm(model, c, {link, link, link}, 200e6, 4, window, ds, nullptr);
  };
  const double rs16 = collective_time_s(Collective::reduce_scatter, 200e6 * 2, link);
  const double ag16 = collective_time_s(Collective::all_gather, 200e6 * 2, link);
  const CommDetail z2 = comm(config);
  CHECK(z2.calls_per_step == Approx(4.0));
  CHECK(z2.total_s == Approx(4 * rs16 + ag16));
  // A call is a reduce-scatter and the all-gather (validate times the pair); the gather half
  // runs once a step: total = calls x (call - gather) + gather.
  CHECK(z2.time_per_call_s == Approx(rs16 + ag16));
  CHECK(z2.gather_s == Approx(ag16));
  CHECK(z2.total_s == Approx(z2.calls_per_step * (z2.time_per_call_s - z2.gather_s) + z2.gather_s));
  CHECK(z2.exposed_s == Approx(4 * rs16 + ag16));
  // ZeRO-1 waits for the accumulation boundary: one all-reduce of the 16-bit gradients (stage
  // 1 all-reduces its buckets, zero1_all_reduces_gradients).
  config.zero = 1;
  const double ar16 = collective_time_s(Collective::all_reduce, 200e6 * 2, link);
  CHECK(comm(config).calls_per_step == Approx(1.0));
  CHECK(comm(config).exposed_s == Approx(ar16 + ag16));
  // ZeRO-0 is BF16_Optimizer's: the fp32 gradients all-reduced, 200M x 4 bytes.
  config.zero = 0;
  CHECK(comm(config).exposed_s ==
        Approx(collective_time_s(Collective::all_reduce, 200e6 * 4, link)));
  // So is the bf16 optimizer sharding that runs with PP (ZeRO-1 under PP 2): fp32 again.
  config.zero = 1;
  config.pp = 2;
  CHECK(comm(config).exposed_s ==
        Approx(collective_time_s(Collective::all_reduce, 200e6 * 4, link) + ag16));
}

TEST_CASE("a tied embedding's gradients: one all-reduce between the end stages, exposed",
          "[dp][pp]") {
  Model model = model_preset("gpt3-175b");
  model.tied_embeddings = true;
  ParallelConfig config;
  config.tp = 8;
  config.pp = 8;
  config.dp = 4;
  const Stack stack = stack_preset("megatron-core");
  // The pipeline crosses servers: the first and the last stage meet over the network, one rank
  // in each of two domains.
  const GroupLink pp = test::network_group(8, 8, 50.0, 5e-6);
  const CommDetail c = tied_embedding_grads(model, config, stack, pp, nullptr);
  // vocab x h / tp gradients in the fp32 main-grad buffer: 51,200 x 12,288 / 8 x 4 bytes.
  const double bytes = 51200.0 * 12288.0 / 8.0 * 4.0;
  CHECK(model.vocab == 51200);
  CHECK(c.bytes_per_call == bytes);
  CHECK(c.calls_per_step == 1.0);
  CHECK(c.link.ranks == 2);
  CHECK(c.link.domains == 2);
  CHECK(c.time_per_call_s == Approx(collective_time_s(Collective::all_reduce, bytes, c.link)));
  CHECK(c.exposed_s == c.total_s);
  // Untied (an output layer of its own) or one stage: nothing to keep in sync.
  model.tied_embeddings = false;
  CHECK(tied_embedding_grads(model, config, stack, pp, nullptr).calls_per_step == 0.0);
  // Untied with multi-token prediction (DeepSeek-V3): its block on the last stage embeds with
  // the word embedding, all-reduced with the first stage's all the same (Megatron-Core
  // finalize_model_grads.py: share_embeddings_and_output_weights or mtp_num_layers).
  model.mtp_layers = 1;
  CHECK(tied_embedding_grads(model, config, stack, pp, nullptr).bytes_per_call == bytes);
  model.mtp_layers = 0;
  model.tied_embeddings = true;
  config.pp = 1;
  CHECK(tied_embedding_grads(model, config, stack, pp, nullptr).calls_per_step == 0.0);
  // A pipeline inside one NVLink domain: the two end stages' ranks meet over NVLink.
  config.pp = 8;
  const CommDetail inside =
      tied_embedding_grads(model, config, stack, test::nvlink_group(8), nullptr);
  CHECK(inside.link.ranks == 2);
  CHECK(inside.link.domains <= 1);
  CHECK(inside.link.tier == Tier::nvlink);
  CHECK(inside.time_per_call_s < c.time_per_call_s);
}

TEST_CASE("a tied embedding's all-reduce is in the step's DP time", "[dp][pp]") {
  // GPT-3 175B (tied) at TP 8 PP 8 DP 2 on 16 DGX H100: the step's DP time is the gradient
  // reduction's exposed part plus the end stages' all-reduce, whole.
  Cluster cluster = cluster_preset("dgx-h100");
  cluster.servers = 16;
  Model model = model_preset("gpt3-175b");
  model.training.global_batch = 64;
  ParallelConfig config;
  config.tp = 8;
  config.pp = 8;
  config.dp = 2;
  config.micro_batch = 1;
  config.zero = 1;
  config.sequence_parallel = true;
  const Placement placement = default_placement(cluster, config);
  const Estimate e = estimate(cluster, model, config, placement);
  CHECK(e.embedding_grads.calls_per_step == 1.0);
  CHECK(e.embedding_grads.exposed_s > 0.0);
  CHECK(e.time.dp_comm_s == Approx(e.dp.exposed_s + e.edp.exposed_s + e.embedding_grads.exposed_s));
  model.tied_embeddings = false;
  const Estimate untied = estimate(cluster, model, config, placement);
  CHECK(untied.embedding_grads.calls_per_step == 0.0);
  CHECK(untied.time.dp_comm_s == Approx(untied.dp.exposed_s + untied.edp.exposed_s));
}

TEST_CASE("sharded data parallel's copies on the compute stream: FSDP2's copy-out, FSDP1's cat",
          "[dp][stack]") {
  // Small model (2 layers, one stage), tp 1, dp 2, 4 micro-batches. A unit is one layer,
  // 49,280 parameters (4h^2 + 2hf + 2h = 16384 + 32768 + 128).
  const Model model = test::small_model();
  ParallelConfig config;
  config.dp = 2;
  config.micro_batch = 1;
  config.zero = 3;
  const double unit = 49280.0;
  // torchtitan (FSDP2): each gather's output copied into the parameters, read 2 + write 2
  // bytes. Forward, 4 passes: the 2 layers (98,560), the embedding unit (1000 x 64 = 64,000)
  // and the [norm, output] unit (64 + 64,000): 4 x 226,624 x 4 = 3,625,984. Backward re-gathers
  // what reshards after forward, the layers and the embedding unit, not [norm, output]:
  // 4 x 162,560 x 4 = 2,600,960. No cat.
  const Stack titan = stack_preset("torchtitan");
  REQUIRE(titan.zero3_gather_copy_out);
  REQUIRE_FALSE(titan.zero3_gradient_cat);
  REQUIRE(titan.edge_unit == EdgeUnit::embedding);
  const ShardedCopyBytes fsdp2 = sharded_copy_bytes(model, config, titan, 4, 2.0, 0.0, false);
  CHECK(fsdp2.forward == Approx(4.0 * (2 * unit + 64000.0 + 64064.0) * 4.0));
  CHECK(fsdp2.backward == Approx(4.0 * (2 * unit + 64000.0) * 4.0));
  // Routed experts gathered over an expert data-parallel group (1,000 parameters on this GPU):
  // copied with their layers' every gather, 4 x 1000 x 4 more each way; not where unsharded.
  const ShardedCopyBytes moe = sharded_copy_bytes(model, config, titan, 4, 2.0, 1000.0, true);
  CHECK(moe.forward - fsdp2.forward == Approx(16000.0));
  CHECK(moe.backward - fsdp2.backward == Approx(16000.0));
  CHECK(sharded_copy_bytes(model, config, titan, 4, 2.0, 1000.0, false).forward ==
        Approx(fsdp2.forward));
  // fsdp (FSDP1): no copy-out (it gathers into the flat parameter the views read); every
  // backward's cat reads and writes the 16-bit gradients of the layers and the root unit
  // (embedding 64,000 + final norm 64 + untied output layer 64,000): 4 x 4 x 226,624; the
  // experts sit in their layers' flat parameters, sharded or not: 4 x 4 x 1000 more.
  const Stack fsdp1 = stack_preset("fsdp");
  REQUIRE(fsdp1.zero3_gradient_cat);
  REQUIRE_FALSE(fsdp1.zero3_gather_copy_out);
  const ShardedCopyBytes cat = sharded_copy_bytes(model, config, fsdp1, 4, 2.0, 0.0, false);
  CHECK(cat.forward == 0.0);
  CHECK(cat.backward == Approx(4.0 * 4.0 * (2 * unit + 128064.0)));
  CHECK(sharded_copy_bytes(model, config, fsdp1, 4, 2.0, 1000.0, false).backward ==
        Approx(4.0 * 4.0 * (2 * unit + 128064.0 + 1000.0)));
  // fp32 training: the cat moves 4-byte gradients.
  Model fp32 = model;
  fp32.training.dtype = Dtype::fp32;
  CHECK(sharded_copy_bytes(fp32, config, fsdp1, 4, 2.0, 0.0, false).backward ==
        Approx(8.0 * 4.0 * (2 * unit + 128064.0)));
  // PP keeps the gathered weights (torchtitan): one gather a step, none in backward; one
  // layer on the stage beside the embedding: (49,280 + 64,000) x 4.
  ParallelConfig piped = config;
  piped.pp = 2;
  const ShardedCopyBytes kept = sharded_copy_bytes(model, piped, titan, 4, 1.0, 0.0, false);
  CHECK(kept.forward == Approx((unit + 64000.0) * 4.0));
  CHECK(kept.backward == 0.0);
  // Nothing without sharding per unit, or without data parallelism.
  ParallelConfig zero1 = config;
  zero1.zero = 1;
  CHECK(sharded_copy_bytes(model, zero1, titan, 4, 2.0, 0.0, false).forward == 0.0);
  ParallelConfig alone = config;
  alone.dp = 1;
  CHECK(sharded_copy_bytes(model, alone, fsdp1, 4, 2.0, 0.0, false).backward == 0.0);

  // The estimate pays them at the HBM rate: forward and backward against a stack without.
  EstimateOptions with;
  with.stack = titan;
  EstimateOptions without = with;
  without.stack.zero3_gather_copy_out = false;
  const Placement placement = test::nvlink_placement(1, 1, 2);
  const Cluster cluster = test::round_cluster();
  const Estimate a = estimate(cluster, model, config, placement, nullptr, with);
  const Estimate b = estimate(cluster, model, config, placement, nullptr, without);
  CHECK(a.time.forward_s - b.time.forward_s == Approx(hbm_time_s(cluster.gpu, fsdp2.forward)));
  CHECK(a.time.backward_s - b.time.backward_s == Approx(hbm_time_s(cluster.gpu, fsdp2.backward)));
}
