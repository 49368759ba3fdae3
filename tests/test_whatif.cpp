// The failure what-if: keep, re-place, cordon GPU, cordon server, and the recommendation.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "costmodel/model_loader.h"
#include "costmodel/stack.h"
#include "planner/layout.h"
#include "planner/whatif.h"
#include "topology/cluster_loader.h"

using namespace trident;

namespace {

/// The seed question: 512 H100 in 64 servers, GPT-3 175B (batch 1536), --min-tp 4, under the
/// CLI's default stack (megatron-core, its measured error band +/-5.1%).
struct Seed {
  Cluster cluster = cluster_preset("dgx-h100");
  Model model = model_preset("gpt3-175b");
  SearchOptions options;
  Seed() {
    cluster.servers = 64;
    options.min_tp = 4;
    options.stack = stack_preset("megatron-core");
  }
  [[nodiscard]] WhatIf run(const std::string& spec) const {
    return what_if(cluster, model, {parse_failure(spec)}, options);
  }
};

const WhatIfOption& option(const WhatIf& w, WhatIfKind kind) {
  for (const auto& o : w.options) {
    if (o.kind == kind) return o;
  }
  FAIL("option missing");
  return w.options.front();
}

/// DGX-1V (4 servers of a V100 hybrid cube mesh), Llama 2 7B in fp16, TP pinned to 2.
struct Mesh {
  Cluster cluster = cluster_preset("dgx1-v100");
  Model model;
  SearchOptions options;
  Mesh() {
    std::ifstream in(std::string(TRIDENT_SOURCE_DIR) + "/tests/data/failures/llama2-7b-fp16.yaml");
    std::ostringstream text;
    text << in.rdbuf();
    model = load_model(text.str(), "llama2-7b-fp16.yaml");
    options.tp = 2;
    options.stack.attention = AttentionKernel::unfused;  // a V100: no fused attention (sm70)
  }
};

}  // namespace

TEST_CASE("regroupings list each split of a server once, identity first", "[whatif]") {
  CHECK(regroupings(8, 4).size() == 35);   // 8! / (4!^2 x 2!) = 40320 / 1152
  CHECK(regroupings(8, 2).size() == 105);  // 7 x 5 x 3 x 1
  CHECK(regroupings(4, 2) ==
        std::vector<std::vector<int>>{{0, 1, 2, 3}, {0, 2, 1, 3}, {0, 3, 1, 2}});
  CHECK(regroupings(8, 8).size() == 1);
  CHECK(regroupings(16, 4).empty());  // more than 8 GPUs: not tried
  CHECK(regroupings(8, 3).empty());
}

TEST_CASE("failure_gpus: what each failure reaches", "[whatif]") {
  const Cluster c = cluster_preset("dgx-h100");  // 8 GPUs per server
  CHECK(failure_gpus(c, {parse_failure("nvlink:2/3")}) == std::vector<int>{19});  // 2 x 8 + 3
  CHECK(failure_gpus(c, {parse_failure("nic:1/0"), parse_failure("gpu:1/2")}) ==
        std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
}

TEST_CASE("place_mapped with the identity map prices as place()", "[whatif]") {
  const Seed seed;
  const Cluster degraded = apply_failure(seed.cluster, parse_failure("nvlink:17/3"));
  const ParallelConfig config{.tp = 4, .pp = 4, .dp = 32, .micro_batch = 1};
  std::vector<int> identity(512);
  for (int r = 0; r < 512; ++r) identity[static_cast<std::size_t>(r)] = r;
  std::vector<int> server17;
  for (int g = 136; g < 144; ++g) server17.push_back(g);
  const Placement healthy = place(seed.cluster, config, RankOrder::tp_dp_pp);
  const Placement mapped =
      place_mapped(degraded, config, RankOrder::tp_dp_pp, identity, server17, healthy);
  const Placement direct = place(degraded, config, RankOrder::tp_dp_pp);
  CHECK(same_links(mapped, direct));
  CHECK(mapped.tp.intra_gbps == Approx(425.0));  // 17 x 25
  // HSDP (ZeRO-3 sharded over 8 DP ranks, 4 replicas): its shard and replicate links too.
  ParallelConfig hybrid = config;
  hybrid.zero = 3;
  hybrid.dp_shard = 8;
  const Placement hybrid_mapped =
      place_mapped(degraded, hybrid, RankOrder::tp_dp_pp, identity, server17,
                   place(seed.cluster, hybrid, RankOrder::tp_dp_pp));
  CHECK(same_links(hybrid_mapped, place(degraded, hybrid, RankOrder::tp_dp_pp)));
  CHECK(hybrid_mapped.shard.ranks == 8);
  CHECK(hybrid_mapped.replicate.ranks == 4);
}

TEST_CASE("seed question: one NVLink of GPU 3 on server 17 down", "[whatif]") {
  const WhatIf w = Seed().run("nvlink:17/3");
  const ParallelConfig& base = w.baseline.config;
  // The split itself is the cost model's choice; what the test pins is its shape: TP 4 or 8
  // inside the server, all 512 GPUs used.
  REQUIRE((base.tp == 4 || base.tp == 8));
  CHECK(base.tp * base.pp * base.dp == 512);
  // The TP group of GPU 139 (136-139 with TP 4, 136-143 with TP 8) drops from 18 x 25 = 450 to
  // 17 x 25 = 425 GB/s; the DP group through it drops the same inside server 17.
  std::vector<int> tp_group_of_139;
  for (int g = 139 / base.tp * base.tp; g < 139 / base.tp * base.tp + base.tp; ++g) {
    tp_group_of_139.push_back(g);
  }
  REQUIRE(w.groups_hit.size() >= 1);
  CHECK(w.groups_hit[0].dimension == "tp");
  CHECK(w.groups_hit[0].gpus == tp_group_of_139);
  CHECK(w.groups_hit[0].before.intra_gbps == Approx(450.0));
  CHECK(w.groups_hit[0].after.intra_gbps == Approx(425.0));
  for (std::size_t i = 1; i < w.groups_hit.size(); ++i) {
    // Other groups through GPU 139 (DP, PP) keep their network bandwidth: only NVLink is hit.
    CHECK(w.groups_hit[i].after.inter_gbps == Approx(w.groups_hit[i].before.inter_gbps));
  }

  REQUIRE(w.options.front().kind == WhatIfKind::keep);  // recommended
  const WhatIfOption& keep = w.options.front();
  const double before = w.baseline.estimate.time.step_s;
  CHECK(keep.step_time_s > before);
  // Only the bandwidth term of the TP collectives grows, by at most 450/425.
  const double tp_before = w.baseline.estimate.time.tp_comm_s;
  const double tp_after = keep.plan->estimate.time.tp_comm_s;
  CHECK(tp_after > tp_before);
  CHECK(tp_after <= tp_before * 450.0 / 425.0 + 1e-12);
  CHECK(keep.slowdown == Approx(keep.step_time_s / before - 1.0));

  const WhatIfOption& replace = option(w, WhatIfKind::replace);
  CHECK_FALSE(replace.available);
  if (base.tp == 8) {
    CHECK(replace.note == OptionNote::tp_whole_server);
  } else {
    CHECK(replace.note == OptionNote::switch_no_gain);
  }
  const WhatIfOption& gpu = option(w, WhatIfKind::cordon_gpu);
  CHECK_FALSE(gpu.available);
  // 511 = 7 x 73: no TP x PP x DP with TP | 96 heads, PP | 96 layers, DP | 1536.
  CHECK(gpu.note == OptionNote::cordoned);
  CHECK(gpu.cordoned == std::vector<int>{139});
  CHECK(gpu.replan.result == Replan::no_split);
  CHECK(gpu.replan.gpus == 511);
  const WhatIfOption& server = option(w, WhatIfKind::cordon_server);
  REQUIRE(server.available);
  // 63 servers = 504 GPUs = 2^3 x 3^2 x 7: the default stack (megatron-core) splits layers
  // unevenly, so PP need not divide 96 and takes the 7 (e.g. TP 8 x PP 21, at most 5 layers a
  // stage, x DP 3 | 1536): all 504 GPUs are used and no server is left idle.
  CHECK(server.gpus == 504);
  CHECK(server.servers == 63);
  CHECK(server.spare_servers == 0);
  CHECK(server.cordoned == std::vector<int>{17});
  CHECK(server.step_time_s > keep.step_time_s);
}

TEST_CASE("all NVLinks of a GPU down: PCIe is slow enough that cordoning wins", "[whatif]") {
  const WhatIf w = Seed().run("nvlink:17/3:all");
  REQUIRE(w.groups_hit.size() >= 1);
  CHECK(w.groups_hit[0].after.tier == Tier::pcie);
  CHECK(w.options.front().kind == WhatIfKind::cordon_server);
  const WhatIfOption& keep = option(w, WhatIfKind::keep);
  REQUIRE(keep.available);
  CHECK(keep.step_time_s > w.options.front().step_time_s);
}

TEST_CASE("taking one more NVLink down never makes keeping the plan faster", "[whatif]") {
  // H100: 18 NVLinks x 25 GB/s, PCIe 50 GB/s. One link left (25 GB/s) was priced below none
  // left (PCIe, 50 GB/s): 17 links down came out far slower than all 18. NCCL's search moves
  // to the PCIe path before it accepts a lower bandwidth, so one link left runs over PCIe.
  const Seed seed;
  double previous_s = 0.0;
  for (const char* spec :
       {"nvlink:17/3:15", "nvlink:17/3:16", "nvlink:17/3:17", "nvlink:17/3:all"}) {
    INFO(spec);
    const double keep_s = option(seed.run(spec), WhatIfKind::keep).step_time_s;
    CHECK(keep_s >= previous_s);
    previous_s = keep_s;
  }
}

TEST_CASE("a dead GPU: the plan cannot keep running, no spare to re-place onto", "[whatif]") {
  const WhatIf w = Seed().run("gpu:17/3");
  CHECK_FALSE(option(w, WhatIfKind::keep).available);
  CHECK(option(w, WhatIfKind::keep).note == OptionNote::ranks_on_dead);
  CHECK(option(w, WhatIfKind::replace).note == OptionNote::no_spare);
  CHECK(w.options.front().kind == WhatIfKind::cordon_server);
  CHECK(w.groups_hit.front().lost);
}

TEST_CASE("pins that take every GPU: no cordon runs, and the pins are why", "[whatif]") {
  Seed seed;
  seed.options.tp = 8;  // TP 8 x PP 8 x DP 8 = 512: every GPU of the 64 servers
  seed.options.pp = 8;
  seed.options.dp = 8;
  const WhatIf w = seed.run("server:0");
  const WhatIfOption& server = option(w, WhatIfKind::cordon_server);
  CHECK_FALSE(server.available);
  CHECK(server.replan.result == Replan::no_split);
  CHECK(server.replan.gpus == 504);  // 63 servers x 8
  CHECK(server.replan.pinned_gpus == 512);
  const WhatIf gpu_down = seed.run("gpu:0/3");
  const WhatIfOption& gpu = option(gpu_down, WhatIfKind::cordon_gpu);
  CHECK(gpu.replan.gpus == 511);
  CHECK(gpu.replan.pinned_gpus == 512);
  // TP and PP pinned, DP free: 511 = 7 x 73 has no TP 8 x PP 8 split, and the pins narrow it.
  seed.options.dp.reset();
  const WhatIf free_dp = seed.run("gpu:0/3");
  const WhatIfOption& narrowed = option(free_dp, WhatIfKind::cordon_gpu);
  CHECK(narrowed.replan.result == Replan::no_split);
  CHECK(narrowed.replan.pinned_gpus == 0);
  CHECK(narrowed.replan.pinned);
}

TEST_CASE("a one-server job: cordoning its server leaves no GPU, and says so", "[whatif]") {
  Seed seed;
  seed.cluster.servers = 1;
  seed.model = model_preset("llama3-8b");
  seed.options.min_tp = 1;
  const WhatIf w = seed.run("nic:0/3");
  const WhatIfOption& server = option(w, WhatIfKind::cordon_server);
  CHECK_FALSE(server.available);
  CHECK(server.replan.result == Replan::no_gpu_left);  // was Replan::none: an empty reason
}

TEST_CASE("a NIC down: every group leaving the server shares seven NICs", "[whatif]") {
  const WhatIf w = Seed().run("nic:17/1");
  CHECK(w.options.front().kind == WhatIfKind::keep);
  bool network_hit = false;
  for (const GroupHit& hit : w.groups_hit) {
    // 8 NICs x 400 Gb/s / 8 bits / 8 GPUs = 50 GB/s; 7 NICs: 43.75 GB/s.
    if (hit.before.inter_gbps == Approx(50.0) && hit.after.inter_gbps == Approx(43.75))
      network_hit = true;
  }
  CHECK(network_hit);
  CHECK(option(w, WhatIfKind::cordon_gpu).note == OptionNote::not_one_gpu);
}

TEST_CASE("mesh: a dead link in a TP pair is laid around by regrouping the server", "[whatif]") {
  const Mesh mesh;
  const WhatIf w = what_if(mesh.cluster, mesh.model, {parse_failure("mesh:0/0-1")}, mesh.options);
  CHECK(w.baseline.config.tp == 2);
  // TP pair {0, 1} had one NVLink (25 GB/s); without it the pair talks over PCIe.
  REQUIRE(!w.groups_hit.empty());
  CHECK(w.groups_hit[0].gpus == std::vector<int>{0, 1});
  CHECK(w.groups_hit[0].after.tier == Tier::pcie);
  const WhatIfOption& best = w.options.front();
  REQUIRE(best.kind == WhatIfKind::replace);
  // Pairs 0-4, 1-5 (2 NVLinks each), 2-6, 3-7 (1 each): no TP pair slower than a healthy
  // server's slowest (1 NVLink), so the step is the healthy one.
  CHECK(best.note == OptionNote::regrouped);
  REQUIRE(best.regrouped.size() == 1);
  CHECK(best.regrouped[0].server == 0);
  CHECK(best.regrouped[0].order == std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(best.step_time_s == Approx(w.baseline.estimate.time.step_s));
  CHECK(option(w, WhatIfKind::keep).step_time_s > best.step_time_s);
}

TEST_CASE("several failures: a regrouping is priced with every other failure in place",
          "[whatif]") {
  // A NIC down on another server stays down whatever server 0's GPUs regroup into: re-place
  // can lay around the mesh link, not around the NIC. It was priced with the healthy links
  // everywhere but on the regrouped server (faster than the NIC failure alone).
  const Mesh mesh;
  const WhatIf nic = what_if(mesh.cluster, mesh.model, {parse_failure("nic:1/1")}, mesh.options);
  const WhatIf both =
      what_if(mesh.cluster, mesh.model, {parse_failure("mesh:0/0-1"), parse_failure("nic:1/1")},
              mesh.options);
  const double nic_keep_s = option(nic, WhatIfKind::keep).step_time_s;
  CHECK(nic_keep_s > nic.baseline.estimate.time.step_s);  // the NIC failure costs something
  const WhatIfOption& replace = option(both, WhatIfKind::replace);
  REQUIRE(replace.available);
  CHECK(replace.step_time_s == Approx(nic_keep_s));  // the mesh link laid around, the NIC not
}

TEST_CASE("mesh: dead links on two servers are laid around on both", "[whatif]") {
  // Regrouped one server at a time against the whole plan, neither server alone beat keeping
  // it (the other server's dead link still set the slowest TP pair): re-place was "no
  // regrouping beats keeping the plan". Each server is now regrouped as is best for it alone
  // (alike servers share the search), then the plan is priced once.
  const Mesh mesh;
  const WhatIf w =
      what_if(mesh.cluster, mesh.model, {parse_failure("mesh:0/0-1"), parse_failure("mesh:2/0-1")},
              mesh.options);
  const WhatIfOption& best = w.options.front();
  REQUIRE(best.kind == WhatIfKind::replace);
  REQUIRE(best.regrouped.size() == 2);
  CHECK(best.regrouped[0].server == 0);
  CHECK(best.regrouped[1].server == 2);
  CHECK(best.regrouped[1].order == std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(best.step_time_s == Approx(w.baseline.estimate.time.step_s));
  CHECK(option(w, WhatIfKind::keep).step_time_s > best.step_time_s);
}

TEST_CASE("no plan fits the healthy cluster: nothing to compare the failures with", "[whatif]") {
  Cluster one = cluster_preset("dgx-h100");
  one.servers = 1;  // 8 x 80 GB cannot hold Llama 3 405B's weights and optimizer state
  CHECK_THROWS_AS(
      what_if(one, model_preset("llama3-405b"), {parse_failure("gpu:0/1")}, SearchOptions{}),
      NoHealthyPlanError);
}

TEST_CASE("an HSDP plan's hit groups are its shard group and its replicas", "[whatif]") {
  // Llama 3 8B under torchtitan on the seed's 512 GPUs, TP 1, ZeRO-3 sharded over 8 DP ranks
  // (one server) and replicated 64 times; a NIC of server 17 goes down.
  Seed seed;
  seed.model = model_preset("llama3-8b");
  seed.model.training.global_batch = 512;
  seed.options = {};
  seed.options.stack = stack_preset("torchtitan");
  seed.options.tp = 1;
  seed.options.pp = 1;
  seed.options.zero = 3;
  seed.options.dp_shard = 8;
  const WhatIf w = seed.run("nic:17/0");
  REQUIRE(w.baseline.config.hybrid_shard());
  bool replica = false;
  for (const GroupHit& hit : w.groups_hit) {
    CHECK(hit.dimension != "dp");  // never the whole DP group
    if (hit.dimension == "dp replica") {
      replica = true;
      CHECK(hit.gpus.size() == 64u);  // one GPU per server: across the NICs
    }
  }
  CHECK(replica);
}

TEST_CASE("cordon-server keeps the most servers unless fewer are faster beyond the band",
          "[whatif]") {
  // Seed, GPU 139 dead: 63 servers (504 GPUs) run TP4 PP21 DP6; 60 servers (480 GPUs, DP 12)
  // run within megatron-core's band of it (faster until 2026-12-05; since the bubble's fill and
  // drain cross PP 21's lighter stages, 0.06% slower), so the job stays on 63. Below 63, the 16
  // next counts with a split are searched (half the servers, 32, is the floor).
  const Seed seed;
  const WhatIf w = seed.run("gpu:17/3");
  const WhatIfOption& server = option(w, WhatIfKind::cordon_server);
  REQUIRE(server.available);
  CHECK(server.servers == 63);
  CHECK(server.scan.most_servers == 63);
  CHECK(server.scan.most_servers_step_s == server.step_time_s);
  CHECK(server.scan.counts_searched == 17);
  CHECK(server.scan.lowest_count >= 32);
  CHECK(server.scan.lowest_count < 60);
  Cluster sixty = seed.cluster;
  sixty.servers = 60;
  const PlanResult on_sixty = search(sixty, seed.model, seed.options).plans.front();
  CHECK(on_sixty.estimate.step_s_low <= server.step_time_s);  // tied: not worth 3 servers
  CHECK(server.step_time_s <= on_sixty.estimate.step_s_high);
}

TEST_CASE("cordon-server sets more servers aside when that is faster beyond the band", "[whatif]") {
  // Llama 2 7B with a global batch of 64 on 16 DGX H100: server 0 dead leaves 15 servers, 120
  // GPUs = 2^3 x 3 x 5. DP must divide 64, so DP <= 8 and 15 model-parallel ranks remain: TP 1
  // x PP 15 or its like, a deep pipeline for 64 / 8 = 8 micro-batches. 14 servers (112 GPUs =
  // TP 4 x PP 7 x DP 4) run faster by more than the band: the job runs there, 1 spare.
  Seed seed;
  seed.cluster.servers = 16;
  seed.model = model_preset("llama2-7b");
  seed.model.training.global_batch = 64;
  seed.options.min_tp = 1;
  const WhatIf w = seed.run("server:0");
  const WhatIfOption& server = option(w, WhatIfKind::cordon_server);
  REQUIRE(server.available);
  CHECK(server.scan.most_servers == 15);
  CHECK(server.servers == 14);
  CHECK(server.spare_servers == 1);
  CHECK(server.gpus == 112);
  CHECK(server.scan.most_servers_step_s > server.plan->estimate.step_s_high);
  // The search ran on 14 healthy servers in place of the cluster with servers 0 and 15 out
  // (alike where each NVLink domain is one server): the plan prices the same on either.
  REQUIRE(server.cluster.has_value());
  CHECK(server.cluster->health.dead_servers == std::set<int>{0, 15});
  const PlanResult on_cluster = evaluate_plan(*server.cluster, seed.model, server.plan->config,
                                              nullptr, estimate_options(seed.options));
  CHECK(on_cluster.estimate.time.step_s == Approx(server.step_time_s).epsilon(1e-12));
  Cluster fourteen = seed.cluster;
  fourteen.servers = 14;
  CHECK(search(fourteen, seed.model, seed.options).plans.front().estimate.time.step_s ==
        Approx(server.step_time_s).epsilon(1e-12));
}
