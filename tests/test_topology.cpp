// query_group on switch, mesh, none and NVL72 clusters, healthy and degraded. Expected
// bandwidths are derived by hand from the preset numbers (GB/s per GPU, one direction).
#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/link_tier.h"

using namespace trident;

namespace {

std::vector<int> range(int first, int count) {
  std::vector<int> ids(static_cast<std::size_t>(count));
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

GroupLink query(const Cluster& c, const std::vector<int>& ids) { return query_group(c, ids); }

}  // namespace

TEST_CASE("switch server: NVLink inside, NICs across", "[topology]") {
  const Cluster c = cluster_preset("dgx-h100");  // 32 servers x 8 H100, 18 x 25 GB/s, 8 x 400 Gb/s
  const GroupLink tp = query(c, range(0, 8));
  CHECK(tp.tier == Tier::nvlink);
  CHECK(tp.domains == 1);
  CHECK(tp.ranks == 8);
  CHECK(tp.ranks_per_domain == 8);
  CHECK(tp.intra_gbps == 450.0);  // 18 links x 25 GB/s
  CHECK(tp.intra_latency_s == Approx(3.4e-6));
  CHECK(tp.bottleneck_gbps() == 450.0);

  const GroupLink dp = query(c, {0, 8, 16, 24});  // GPU 0 of four servers
  CHECK(dp.tier == Tier::network);
  CHECK(dp.domains == 4);
  CHECK(dp.ranks_per_domain == 1);
  CHECK(dp.inter_gbps == 50.0);  // 8 NICs x 400 Gb/s / 8 bits / 8 GPUs
  CHECK(dp.inter_latency_s == Approx(14e-6));
  CHECK(dp.bottleneck_gbps() == 50.0);

  const GroupLink both = query(c, range(0, 16));
  CHECK(both.domains == 2);
  CHECK(both.ranks_per_domain == 8);
  CHECK(both.intra_gbps == 450.0);
  CHECK(both.bottleneck_gbps() == 50.0);

  const GroupLink unsorted = query(c, {8, 0, 9, 1});
  CHECK(unsorted.domains == 2);
  CHECK(unsorted.ranks_per_domain == 2);
}

TEST_CASE("another GPU in the servers: the link figures left to the GPU follow it", "[topology]") {
  // dgx-h100 leaves pcie to its GPU (h100: 50 GB/s); an A100 in its servers is on PCIe 4, 24
  // GB/s (a100-sxm-80g pcie_gbps). A file's own pcie.gbps stays.
  const Cluster h100 = cluster_preset("dgx-h100");
  CHECK(h100.pcie.gbps == 50.0);
  const Cluster a100 = with_gpu(h100, gpu_preset("a100-sxm-80g"));
  CHECK(a100.pcie.gbps == 24.0);
  CHECK(a100.gpu.name == "a100-sxm-80g");
  CHECK(a100.nvlink.links_per_gpu == h100.nvlink.links_per_gpu);  // the wiring is the cluster's
  const Cluster own = load_cluster(
      "name: c\ngpu: h100-sxm-80g\nservers: 1\ngpus_per_server: 8\n"
      "nvlink: {kind: switch, domain_gpus: 8, links_per_gpu: 18, gbps_per_link: 25, "
      "latency_us: 2.0}\n"
      "network: {nics_per_server: 8, nic_gbits: 400}\npcie: {gbps: 32}\n",
      "c.yaml");
  const Cluster swapped = with_gpu(own, gpu_preset("v100-sxm-32g"));
  CHECK(swapped.pcie.gbps == 32.0);           // set by the file
  CHECK(swapped.nvlink.latency_us == 2.0);    // set by the file
  CHECK(swapped.pcie.latency_us == 5.7);      // the V100's default
  CHECK(swapped.network.latency_us == 14.0);  // the V100's default
}

TEST_CASE("a GPU's NIC share is at most its PCIe link", "[topology]") {
  // dgx-h100 with one GPU per server keeps its eight 400 Gb/s NICs: 8 x 400 / 8 / 1 = 400
  // GB/s, but GPUDirect RDMA reaches them over the GPU's PCIe Gen5 link, 50 GB/s.
  Cluster one = cluster_preset("dgx-h100");
  one.gpus_per_server = 1;
  one.nvlink.domain_gpus = 1;
  CHECK(one.nic_gbps_per_gpu(0) == 50.0);
  // DGX A100: 8 x 200 / 8 / 8 = 25 GB/s of NIC, 24 of PCIe Gen4.
  CHECK(cluster_preset("dgx-a100").nic_gbps_per_gpu(0) == 24.0);
  CHECK(cluster_preset("dgx-h100").nic_gbps_per_gpu(0) == 50.0);  // 8 x 400 / 8 / 8, = PCIe
  CHECK(cluster_preset("dgx-a100").nic_share_gbps(0) == 25.0);    // before the cap
}

TEST_CASE("NICs past what the GPUs' PCIe links carry are not usable", "[topology]") {
  // dgx-h100: 8 GPUs x 50 GB/s of PCIe = 400 GB/s = 8 NICs of 400 Gb/s (50 GB/s): all 8.
  Cluster c = cluster_preset("dgx-h100");
  CHECK(c.usable_nics() == 8);
  c.network.nics_per_server = 16;  // 16 x 50 GB/s: the PCIe links still carry 8 of them
  CHECK(c.usable_nics() == 8);
  CHECK(c.nic_gbps_per_gpu(0) == 50.0);
  c.network.nics_per_server = 4;
  CHECK(c.usable_nics() == 4);
  c.network.nics_per_server = 8;
  c.network.nic_gbits = 800;  // 100 GB/s a NIC: 400 / 100 = 4
  CHECK(c.usable_nics() == 4);
  // dgx-a100: 8 x 24 GB/s of PCIe Gen4 / 25 GB/s a NIC = 7.68, rounded up: all 8.
  CHECK(cluster_preset("dgx-a100").usable_nics() == 8);
  // With every NIC healthy, a GPU's share is capped by its PCIe link as nic_gbps_per_gpu is.
  c.health.nics_down[0] = 1;
  CHECK(c.healthy_nic_gbps_per_gpu() == 50.0);  // 8 x 100 / 8 = 100 -> 50
  CHECK(c.nic_gbps_per_gpu(0) == 50.0);         // 7 x 100 / 8 = 87.5 -> 50
}

TEST_CASE("one NVLink down: that GPU gets 17 x 25 and the group follows it", "[topology]") {
  Cluster c = cluster_preset("dgx-h100");
  c.health.nvlinks_down[3] = 1;
  CHECK(query(c, range(0, 8)).intra_gbps == 425.0);  // 17 x 25
  CHECK(query(c, range(0, 8)).tier == Tier::nvlink);
  CHECK(query(c, {0, 1}).intra_gbps == 450.0);       // GPU 3 not in the group
  CHECK(query(c, range(8, 8)).intra_gbps == 450.0);  // another server
}

TEST_CASE("all NVLinks of a GPU down: its group falls back to PCIe", "[topology]") {
  Cluster c = cluster_preset("dgx-h100");
  c.health.nvlinks_down[3] = 18;
  const GroupLink g = query(c, range(0, 8));
  CHECK(g.tier == Tier::pcie);
  CHECK(g.intra_tier == Tier::pcie);
  CHECK(g.intra_gbps == 50.0);  // H100 PCIe Gen5 x16 preset value
  CHECK(g.intra_latency_s == Approx(5.7e-6));
}

TEST_CASE("a NIC down: the server's GPUs share the remaining NICs", "[topology]") {
  Cluster c = cluster_preset("dgx-h100");
  c.health.nics_down[1] = 1;
  // server 1: 7 NICs x 400 Gb/s / 8 / 8 GPUs = 43.75 GB/s per GPU; server 0 keeps 50
  CHECK(c.nic_gbps_per_gpu(1) == 43.75);
  CHECK(query(c, {0, 8}).inter_gbps == 43.75);
  CHECK(query(c, {0, 16}).inter_gbps == 50.0);
  c.health.nics_down[1] = 8;
  CHECK_THROWS_AS(query(c, {0, 8}), PlanError);
}

TEST_CASE("oversubscription and non-rail fabrics", "[topology]") {
  Cluster c = cluster_preset("dgx-h100");
  c.network.oversubscription = 2.0;
  c.network.rail_optimized = false;
  const GroupLink g = query(c, {0, 8});
  CHECK(g.inter_gbps == 25.0);  // 50 / 2
  CHECK(g.inter_latency_s ==
        Approx(15e-6));  // 14 us (NCCL NET Simple) + 2 extra switch hops x 0.5 us
}

TEST_CASE("dead GPUs and out-of-range ids are refused", "[topology]") {
  Cluster c = cluster_preset("dgx-h100");
  c.health.dead_gpus.insert(9);
  CHECK_THROWS_WITH(query(c, {8, 9}), "GPU 9 (server 1, GPU 1) is dead and cannot be in a group");
  c.health.dead_gpus.clear();
  c.health.dead_servers.insert(2);
  CHECK_THROWS_AS(query(c, {16}), PlanError);
  CHECK_THROWS_WITH(query(c, {256}), "GPU 256 is outside the cluster (GPUs 0..255)");
  CHECK_THROWS_AS(query(c, {}), PlanError);
}

TEST_CASE("GB200 NVL72: one NVLink domain over 18 trays", "[topology]") {
  Cluster c = cluster_preset("gb200-nvl72");
  const GroupLink rack = query(c, range(0, 72));
  CHECK(rack.tier == Tier::nvlink);
  CHECK(rack.domains == 1);
  CHECK(rack.intra_gbps == 900.0);  // 18 x 50 GB/s
  c.health.nvlinks_down[40] = 1;
  CHECK(query(c, range(0, 72)).intra_gbps == 850.0);  // 17 x 50

  c.health = {};
  c.servers = 36;  // two racks
  const GroupLink two = query(c, {0, 72});
  CHECK(two.tier == Tier::network);
  CHECK(two.inter_gbps == 50.0);  // 4 NICs x 400 Gb/s / 8 / 4 GPUs per tray
}

TEST_CASE("GB200 NVL72: a GPU without NVLink reaches other trays through its NIC", "[topology]") {
  Cluster c = cluster_preset("gb200-nvl72");
  c.network.nic_gbits = 100.0;     // 4 x 100 Gb/s / 8 / 4 GPUs = 12.5 GB/s a GPU, below PCIe's 50
  c.health.nvlinks_down[13] = 18;  // tray 3 (GPUs 12-15)
  // Its own tray's GPU over PCIe, as in a DGX server.
  const GroupLink tray = query(c, {12, 13});
  CHECK(tray.intra_tier == Tier::pcie);
  CHECK(tray.intra_gbps == 50.0);
  // Another tray's: no PCIe between trays, the NIC share and the network's latency.
  const GroupLink across = query(c, {5, 13});
  CHECK(across.tier == Tier::network);
  CHECK(across.intra_tier == Tier::network);
  CHECK(across.intra_gbps == 12.5);
  CHECK(across.intra_latency_s == Approx(14e-6));
  // With the stock 400 Gb/s NICs the share (50 GB/s) equals PCIe's: the rate, not the tier.
  c.network.nic_gbits = 400.0;
  CHECK(query(c, {5, 13}).intra_gbps == 50.0);
  CHECK(query(c, {5, 13}).intra_tier == Tier::network);
  // A rack with no NICs: that GPU cannot reach the other trays at all (not a free collective).
  c.network.nics_per_server = 0;
  CHECK_THROWS_WITH(query(c, {5, 13}),
                    "GPU 13 has no NVLink left and its server no working NIC: it cannot reach "
                    "the other servers of its NVLink domain");
  CHECK(query(c, {12, 13}).intra_tier == Tier::pcie);  // its own tray: PCIe still
}

TEST_CASE("DGX-1V hybrid cube mesh: rings over direct links", "[topology]") {
  Cluster c = cluster_preset("dgx1-v100");  // 25 GB/s per NVLink
  // All 8: the NV2 edges form the cycle 0-3-2-1-5-6-7-4 (width 2), the NV1 edges the cycle
  // 0-1-3-7-5-4-6-2 (width 1); each carries a ring both ways: 2 x (2 + 1) x 25 = 150
  CHECK(query(c, range(0, 8)).intra_gbps == 150.0);
  CHECK(query(c, range(0, 8)).tier == Tier::nvlink);
  CHECK(query(c, {0, 3}).intra_gbps == 50.0);  // pair with 2 links
  CHECK(query(c, {0, 1}).intra_gbps == 25.0);  // pair with 1 link
  const GroupLink no_link = query(c, {0, 5});  // no direct link: PCIe Gen3 (12 GB/s)
  CHECK(no_link.tier == Tier::pcie);
  CHECK(no_link.intra_gbps == 12.0);
  // Quad 0-3: best cycle 0-3-2-1 has a 1-link edge (width 1); after peeling it 0-1-3-2
  // remains once more (width 1), then GPU 0 has no edge left: 2 x 2 x 25 = 100
  CHECK(query(c, range(0, 4)).intra_gbps == 100.0);

  c.health.dead_mesh_links.insert({0, 3});
  CHECK(query(c, {0, 3}).tier == Tier::pcie);
  // Quad without 0-3: only cycle 0-1-3-2 (width 1): 2 x 1 x 25 = 50
  CHECK(query(c, range(0, 4)).intra_gbps == 50.0);
  CHECK(query(c, range(8, 4)).intra_gbps == 100.0);  // server 1 is untouched
}

TEST_CASE("PCIe-only server and domains smaller than a server", "[topology]") {
  const Cluster c = cluster_preset("pcie-8gpu");  // A100 PCIe, 4 x 200 Gb/s, not rail-optimised
  const GroupLink box = query(c, range(0, 8));
  CHECK(box.tier == Tier::pcie);
  CHECK(box.intra_gbps == 24.0);
  const GroupLink across = query(c, {0, 8});
  CHECK(across.tier == Tier::network);
  CHECK(across.inter_gbps == 12.5);  // 4 x 200 / 8 / 8
  CHECK(across.inter_latency_s == Approx(15e-6));

  Cluster halves = cluster_preset("dgx-h100");
  halves.nvlink.domain_gpus = 4;  // two NVLink islands per server
  const GroupLink cross = query(halves, {0, 4});
  CHECK(cross.tier == Tier::pcie);
  CHECK(cross.domains == 2);
  CHECK(cross.inter_gbps == 50.0);
}

TEST_CASE("a GPU built in code: its attention curves are checked like a file's", "[topology]") {
  Gpu gpu = gpu_preset("h100-sxm-80g");
  CHECK_FALSE(find_gpu_problem(gpu).has_value());  // the preset's four curves are valid
  gpu.flash2_full.points[1].forward = 0.0;         // a share of 0 would make time infinite
  auto problem = find_gpu_problem(gpu);
  REQUIRE(problem.has_value());
  CHECK(problem->key == "flash2_full_curve");
  CHECK(problem->message == "point 1: expected shares in [1e-06, 1], got 0");
  gpu = gpu_preset("h100-sxm-80g");
  gpu.attention_causal.points[2].seq = 1024.0;  // not above the previous point's 1024
  problem = find_gpu_problem(gpu);
  REQUIRE(problem.has_value());
  CHECK(problem->key == "attention_causal_curve");
  gpu = gpu_preset("h100-sxm-80g");
  gpu.flash2_causal = AttentionCurve{};  // a full curve alone prices nothing
  problem = find_gpu_problem(gpu);
  REQUIRE(problem.has_value());
  CHECK(problem->key == "flash2_full_curve");
  CHECK(problem->message == "expected flash2_causal_curve beside it");
  gpu = gpu_preset("a100-sxm-80g");
  CHECK_FALSE(find_gpu_problem(gpu).has_value());  // its Triton-kernel curves are valid too
  gpu.flash_triton_causal = AttentionCurve{};
  problem = find_gpu_problem(gpu);
  REQUIRE(problem.has_value());
  CHECK(problem->key == "flash_triton_full_curve");
  CHECK(problem->message == "expected flash_triton_causal_curve beside it");
}
