// Placement (planner/layout.h): the tier and bandwidth of each dimension's slowest group, on
// healthy and failed clusters, in both rank orders.
#include <catch2/catch.hpp>
#include <set>

#include "costmodel/placement.h"
#include "planner/layout.h"
#include "planner/search.h"
#include "planner_fixture.h"
#include "topology/errors.h"

using namespace trident;
using test::dgx;
using test::h100;
using test::tiny;

TEST_CASE("rank strides agree with the placement helpers", "[planner]") {
  ParallelConfig config;
  config.tp = 2;
  config.pp = 3;
  config.dp = 4;
  for (const RankOrder order : {RankOrder::tp_dp_pp, RankOrder::tp_pp_dp}) {
    const auto strides = rank_strides(config, order);
    const auto dp = dp_group(config, order, 0);
    const auto pp = pp_group(config, order, 0);
    CHECK(tp_group(config, order, 0) == std::vector<int>{0, 1});
    CHECK(dp[1] - dp[0] == strides.dp);
    CHECK(pp[1] - pp[0] == strides.pp);
  }
  // tp-dp-pp: DP next to TP (stride 2), PP outermost (stride 2*4 = 8).
  CHECK(rank_strides(config, RankOrder::tp_dp_pp).dp == 2);
  CHECK(rank_strides(config, RankOrder::tp_dp_pp).pp == 8);
  // tp-pp-dp: PP next to TP (stride 2), DP outermost (stride 2*3 = 6).
  CHECK(rank_strides(config, RankOrder::tp_pp_dp).pp == 2);
  CHECK(rank_strides(config, RankOrder::tp_pp_dp).dp == 6);
}

TEST_CASE("placement tiers on two DGX servers", "[planner]") {
  const Cluster cluster = dgx(2);
  ParallelConfig config;
  config.tp = 4;
  config.pp = 2;
  config.dp = 2;
  SECTION("tp-dp-pp: TP and DP inside a server, PP crosses") {
    const auto placement = place(cluster, config, RankOrder::tp_dp_pp, true);
    CHECK(placement.tp.tier == Tier::nvlink);   // ranks 0-3 on server 0
    CHECK(placement.dp.tier == Tier::nvlink);   // ranks 0 and 4 on server 0
    CHECK(placement.pp.tier == Tier::network);  // ranks 0 and 8: servers 0 and 1
    CHECK(placement.order == RankOrder::tp_dp_pp);
    // The amax reduction group (TP x DP of a stage): ranks 0-7, server 0.
    CHECK(placement.amax.ranks == 8);
    CHECK(placement.amax.tier == Tier::nvlink);
  }
  SECTION("tp-pp-dp: PP inside a server, DP crosses") {
    const auto placement = place(cluster, config, RankOrder::tp_pp_dp, true);
    CHECK(placement.tp.tier == Tier::nvlink);
    CHECK(placement.pp.tier == Tier::nvlink);   // ranks 0 and 4
    CHECK(placement.dp.tier == Tier::network);  // ranks 0 and 8
    CHECK(placement.dp.domains == 2);
    // Stage 0's TP x DP: ranks 0-3 and 8-11, four on each server; default_placement agrees.
    CHECK(placement.amax.ranks == 8);
    CHECK(placement.amax.domains == 2);
    CHECK(placement.amax.ranks_per_domain == 4);
    CHECK(default_placement(cluster, config, RankOrder::tp_pp_dp).amax.domains == 2);
  }
  SECTION("TP of 16 spans both servers and is priced as network") {
    ParallelConfig wide;
    wide.tp = 16;
    const auto placement = place(cluster, wide, RankOrder::tp_dp_pp);
    CHECK(placement.tp.tier == Tier::network);
    CHECK(placement.tp.domains == 2);
    CHECK(placement.tp.ranks == 16);
    CHECK(placement.dp.ranks == 1);
  }
  SECTION("TP stretched across two servers for --explain") {
    const auto base = place(cluster, config, RankOrder::tp_dp_pp);
    const auto stretched = place_tp_across_domains(cluster, config, base);
    CHECK(stretched.tp.tier == Tier::network);
    CHECK(stretched.tp.domains == 2);
    CHECK(stretched.tp.ranks_per_domain == 2);  // 4 ranks: 2 per server
    CHECK(stretched.pp.tier == base.pp.tier);
  }
}

TEST_CASE("the slowest TP group is not always rank 0's", "[planner]") {
  // 2 servers x 6 GPUs, TP 4: groups {0-3}, {4-7}, {8-11}; {4-7} straddles the servers.
  const Cluster cluster = dgx(2, 6);
  ParallelConfig config;
  config.tp = 4;
  config.dp = 3;
  const auto placement = place(cluster, config, RankOrder::tp_dp_pp);
  CHECK(placement.tp.tier == Tier::network);
  CHECK(placement.tp.domains == 2);
}

TEST_CASE("the amax reduction group: the slowest stage's, not stage 0's", "[planner]") {
  // 3 servers of 8, TP 2 x DP 3 a stage = 6 GPUs: stage 0 is GPUs 0-5 (one server), stage 1
  // GPUs 6-11 (two): the amax all-reduce of stage 1 crosses the NICs.
  const Cluster cluster = dgx(3);
  ParallelConfig config;
  config.tp = 2;
  config.pp = 4;
  config.dp = 3;
  const auto placement = place(cluster, config, RankOrder::tp_dp_pp, true);
  CHECK(placement.amax.ranks == 6);
  CHECK(placement.amax.tier == Tier::network);
  CHECK(placement.amax.domains == 2);
  // Not asked for (a BF16 run): one rank, no query.
  CHECK(place(cluster, config, RankOrder::tp_dp_pp).amax.ranks == 1);
}

TEST_CASE("a partly filled last NVLink domain", "[planner]") {
  // 28 servers of 4 GPUs in 72-GPU switch domains: GPUs 0-71 and 72-111 (a rack and 10 trays).
  Cluster cluster = dgx(28, 4);
  cluster.nvlink.domain_gpus = 72;
  REQUIRE(!find_cluster_problem(cluster).has_value());
  REQUIRE(cluster.domains() == 2);
  ParallelConfig config;
  config.pp = 7;  // PP outermost: stages of 16 GPUs, 0-15 ... 96-111
  config.dp = 16;
  // Stage 4 holds GPUs 64-79: 8 in the first rack, 8 in the second, so DP crosses the NICs
  // with 8 ranks on each side; the tail's own stages (80-95, 96-111) stay on NVLink.
  const auto placement = place(cluster, config, RankOrder::tp_dp_pp);
  CHECK(placement.dp.tier == Tier::network);
  CHECK(placement.dp.domains == 2);
  CHECK(placement.dp.min_ranks_per_domain == 8);
  CHECK(query_group(cluster, std::vector<int>{96, 100, 111}).tier == Tier::nvlink);
  CHECK(query_group(cluster, std::vector<int>{71, 72}).tier == Tier::network);
}

TEST_CASE("placement under failures", "[planner]") {
  ParallelConfig config;
  config.tp = 8;
  config.dp = 2;
  SECTION("a GPU with an NVLink down slows its TP group") {
    Cluster cluster = dgx(2);
    cluster.health.nvlinks_down[9] = 1;  // GPU 1 of server 1: 17 of 18 links left
    const auto placement = place(cluster, config, RankOrder::tp_dp_pp);
    const std::vector<int> hit{8, 9, 10, 11, 12, 13, 14, 15};
    const auto expected = query_group(cluster, hit);
    CHECK(placement.tp.intra_gbps == Approx(expected.intra_gbps));
    CHECK(placement.tp.intra_gbps < query_group(dgx(2), hit).intra_gbps);
  }
  SECTION("ranks skip a dead server") {
    Cluster cluster = dgx(3);
    cluster.health.dead_servers.insert(1);
    const auto live = live_gpus(cluster);
    REQUIRE(live.size() == 16u);
    CHECK(live[8] == 16);  // rank 8 runs on server 2's first GPU
    const auto placement = place(cluster, config, RankOrder::tp_dp_pp);
    CHECK(placement.tp.tier == Tier::nvlink);
    CHECK(placement.dp.tier == Tier::network);
    ParallelConfig too_big;
    too_big.tp = 8;
    too_big.dp = 3;
    CHECK_THROWS_WITH(place(cluster, too_big, RankOrder::tp_dp_pp),
                      "placement needs 24 GPUs, the cluster has 16 live");
  }
  SECTION("live GPUs skip dead GPUs and dead servers, in order") {
    Cluster cluster = dgx(3, 4);  // GPUs 0-11, servers of 4
    cluster.health.dead_gpus = {0, 5, 6, 9};
    cluster.health.dead_servers.insert(2);  // GPUs 8-11, 9 among them
    CHECK(live_gpus(cluster) == std::vector<int>{1, 2, 3, 4, 7});
    // A Placer lists the same live GPUs and places as place() does.
    ParallelConfig pair;
    pair.tp = 2;
    pair.dp = 2;
    Placer placer(cluster);
    CHECK(placer.live() == live_gpus(cluster));
    CHECK(same_links(place(cluster, pair, RankOrder::tp_dp_pp),
                     placer.place(pair, RankOrder::tp_dp_pp, false)));
  }
}

TEST_CASE("a Placer reused over many splits places each as place() does", "[planner]") {
  // 30 servers of 4 GPUs in 72-GPU domains (GB200 NVL72 trays): 120 GPUs, domains 0-71 and
  // 72-119. Server 3 (GPUs 12-15) dead leaves a gap inside the first domain; a NIC of server 20
  // down and an NVLink of GPU 41 down slow the groups that reach them. The Placer remembers each
  // dimension's slowest group by (GPUs, size, stride, collective, pairs): every split it places
  // after others must get the links a fresh place() walks for it alone.
  Cluster cluster = dgx(30, 4);
  cluster.nvlink.domain_gpus = 72;
  cluster.health.dead_servers.insert(3);
  cluster.health.nics_down[20] = 1;
  cluster.health.nvlinks_down[41] = 1;
  REQUIRE(!find_cluster_problem(cluster).has_value());
  Placer placer(cluster);
  REQUIRE(placer.live().size() == 116u);
  int placed = 0;
  std::set<Tier> dp_tiers;
  for (const int tp : {1, 2, 4, 8}) {
    for (const int pp : {1, 2, 4}) {
      for (const int dp : {1, 2, 7, 14}) {
        for (const int cp : {1, 2}) {
          ParallelConfig config;
          config.tp = tp;
          config.pp = pp;
          config.dp = dp;
          config.cp = cp;
          config.ep = (cp == 1 && dp % 2 == 0) ? 2 : 1;
          if (config.gpus() > 116) continue;
          for (const RankOrder order : {RankOrder::tp_dp_pp, RankOrder::tp_pp_dp}) {
            if (order == RankOrder::tp_pp_dp && (cp > 1 || config.ep > 1)) continue;
            const Placement reused = placer.place(config, order, true);
            const Placement fresh = place(cluster, config, order, true);
            CHECK(same_links(reused, fresh));
            dp_tiers.insert(reused.dp.tier);
            ++placed;
          }
        }
      }
    }
  }
  CHECK(placed > 100);
  CHECK(dp_tiers.size() > 1);  // the splits' DP groups ride different links
  // HSDP's shard and replicate groups too.
  ParallelConfig hsdp;
  hsdp.dp = 16;
  hsdp.dp_shard = 4;
  const Placement base = placer.place(hsdp, RankOrder::tp_dp_pp, false);
  CHECK(same_links(placer.with_shard_links(hsdp, base), with_shard_links(cluster, hsdp, base)));
  CHECK(placer.with_shard_links(hsdp, base).shard.ranks == 4);
}
