// The --fail-link grammar: parsing, applying to a cluster, and what query_group then sees.
#include <array>
#include <catch2/catch.hpp>
#include <vector>

#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/failure.h"
#include "topology/link_tier.h"

using namespace trident;

namespace {

Cluster h100_64() {
  Cluster c = cluster_preset("dgx-h100");  // 8 x H100, 18 NVLinks x 25 GB/s, 8 x 400 Gb/s NICs
  c.servers = 64;
  return c;
}

Cluster dgx1() { return cluster_preset("dgx1-v100"); }  // 4 servers, hybrid cube mesh

std::string parse_error(const std::string& spec) {
  try {
    (void)parse_failure(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string apply_error(const Cluster& cluster, const std::string& spec) {
  try {
    (void)apply_failure(cluster, parse_failure(spec));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("parse_failure reads every form of the grammar", "[failure]") {
  const Failure one = parse_failure("nvlink:17/3");
  CHECK(one.kind == FailureKind::nvlink);
  CHECK(one.server == 17);
  CHECK(one.gpu == 3);
  CHECK(one.links == 1);
  CHECK(one.spec == "nvlink:17/3");

  const Failure three = parse_failure("nvlink:2/5:3");
  CHECK(three.kind == FailureKind::nvlink);
  CHECK(three.links == 3);

  const Failure all = parse_failure("nvlink:2/5:all");
  CHECK(all.kind == FailureKind::nvlink_all);
  // Any case, as the kind word is read (NVLINK:2/5 was taken, :ALL refused).
  CHECK(parse_failure("NVLINK:2/5:ALL").kind == FailureKind::nvlink_all);
  CHECK(all.gpu == 5);

  const Failure mesh = parse_failure("mesh:1/4-0");  // written either way round
  CHECK(mesh.kind == FailureKind::mesh_link);
  CHECK(mesh.server == 1);
  CHECK(mesh.gpu == 0);
  CHECK(mesh.peer == 4);
  CHECK(parse_failure("nvlink:1/0-4").kind == FailureKind::mesh_link);

  const Failure nic = parse_failure("nic:3/7");
  CHECK(nic.kind == FailureKind::nic);
  CHECK(nic.server == 3);
  CHECK(nic.nic == 7);

  const Failure gpu = parse_failure("gpu:9/1");
  CHECK(gpu.kind == FailureKind::gpu);
  CHECK(gpu.gpu == 1);

  const Failure server = parse_failure("server:12");
  CHECK(server.kind == FailureKind::server);
  CHECK(server.server == 12);
  CHECK(parse_failure("NVLink:0/1").kind == FailureKind::nvlink);  // kind words: any case
}

TEST_CASE("parse_failure rejects malformed specs with one precise line", "[failure]") {
  CHECK(parse_error("nvlink:3") == "'nvlink:3': expected nvlink:SERVER/GPU[:COUNT|:all]");
  CHECK(parse_error("nvlink:3/x") == "'nvlink:3/x': expected nvlink:SERVER/GPU[:COUNT|:all]");
  CHECK(parse_error("nvlink:3/1:0") ==
        "'nvlink:3/1:0': the NVLink count must be at least 1 (or 'all')");
  CHECK(parse_error("nvlink:3/1:some") ==
        "'nvlink:3/1:some': expected nvlink:SERVER/GPU[:COUNT|:all]");
  CHECK(parse_error("nvlink:-1/1") == "'nvlink:-1/1': expected nvlink:SERVER/GPU[:COUNT|:all]");
  CHECK(parse_error("mesh:0/1") == "'mesh:0/1': expected mesh:SERVER/GPU-GPU");
  CHECK(parse_error("mesh:0/2-2") == "'mesh:0/2-2': a link joins two different GPUs");
  CHECK(parse_error("nic:4") == "'nic:4': expected nic:SERVER/NIC");
  CHECK(parse_error("gpu:4/") == "'gpu:4/': expected gpu:SERVER/GPU");
  CHECK(parse_error("server:a") == "'server:a': expected server:SERVER");
  CHECK(parse_error("server:1/2") == "'server:1/2': expected server:SERVER");
  CHECK(parse_error("nvlnk:1/2") == "'nvlnk:1/2': unknown kind 'nvlnk' (did you mean 'nvlink'?)");
  CHECK(parse_error("switch:1") ==
        "'switch:1': unknown kind 'switch' (expected nvlink, mesh, nic, gpu or server)");
  CHECK(parse_error("17/3") ==
        "'17/3': expected KIND:WHERE, one of nvlink:SERVER/GPU[:COUNT|:all], "
        "mesh:SERVER/GPU-GPU, nic:SERVER/NIC, gpu:SERVER/GPU, server:SERVER");
  CHECK(parse_error("nvlink:1234567890/1") ==
        "'nvlink:1234567890/1': expected nvlink:SERVER/GPU[:COUNT|:all]");
}

TEST_CASE("apply_failure rejects parts that do not exist", "[failure]") {
  const Cluster c = h100_64();
  CHECK(apply_error(c, "gpu:70/1") ==
        "'gpu:70/1': server 70 does not exist (cluster has 64 servers, 0-63)");
  CHECK(apply_error(c, "server:64") ==
        "'server:64': server 64 does not exist (cluster has 64 servers, 0-63)");
  CHECK(apply_error(c, "nvlink:3/8") ==
        "'nvlink:3/8': GPU 8 does not exist on server 3 (8 GPUs per server, 0-7)");
  CHECK(apply_error(c, "nic:3/8") ==
        "'nic:3/8': NIC 8 does not exist on server 3 (8 NICs per server, 0-7)");
  CHECK(apply_error(c, "nvlink:0/1:19") ==
        "'nvlink:0/1:19': GPU 1 of server 0 has 18 NVLinks (0 already down), cannot "
        "take 19 more down");
  CHECK(apply_error(c, "mesh:0/1-2") ==
        "'mesh:0/1-2': server 0 has no direct GPU-GPU links (nvlink.kind: switch): "
        "use nvlink:0/GPU[:COUNT|:all]");
  // No NVLink at all: nvlink: is refused too, so it is not the way out.
  Cluster pcie = c;
  pcie.name = "pcie";
  pcie.nvlink.kind = NvlinkKind::none;
  CHECK(apply_error(pcie, "mesh:0/1-2") ==
        "'mesh:0/1-2': cluster 'pcie' has no NVLink (nvlink.kind: none): its GPUs talk over "
        "PCIe; fail a GPU (gpu:0/GPU) or a NIC instead");
}

TEST_CASE("one NVLink down on an H100 server: that GPU keeps 17 of 18 links", "[failure]") {
  const Cluster c = apply_failure(h100_64(), parse_failure("nvlink:17/3"));
  // GPU 3 of server 17 is global GPU 17 x 8 + 3 = 139.
  REQUIRE(c.health.nvlinks_down.size() == 1);
  CHECK(c.health.nvlinks_down.at(139) == 1);
  const std::array<int, 8> server17{136, 137, 138, 139, 140, 141, 142, 143};
  const GroupLink hit = query_group(c, server17);
  CHECK(hit.tier == Tier::nvlink);
  CHECK(hit.intra_gbps == Approx(425.0));  // (18 - 1) links x 25 GB/s
  const std::array<int, 4> spared{136, 137, 138, 140};
  CHECK(query_group(c, spared).intra_gbps == Approx(450.0));  // 18 x 25: no member is hit
  // What a calibration fit measured on the healthy group is scaled by: 425 / 450.
  CHECK(hit.health_fraction == Approx(425.0 / 450.0));
  CHECK(query_group(c, spared).health_fraction == 1.0);
}

TEST_CASE("a calibration's fit is not scaled where the NICs exceed the PCIe links", "[failure]") {
  // 800 Gb/s NICs on H100 servers: 8 x 100 / 8 = 100 GB/s a GPU before its 50 GB/s PCIe link
  // caps it; the healthy group was measured at 50. An NVLink down elsewhere leaves a network
  // group's fraction 1 (it read 50 / 100 = 0.5 when the healthy rate skipped the cap).
  Cluster c = h100_64();
  c.network.nic_gbits = 800;
  c = apply_failure(c, parse_failure("nvlink:17/3"));
  const std::array<int, 2> across{0, 8};
  CHECK(query_group(c, across).inter_gbps == Approx(50.0));
  CHECK(query_group(c, across).health_fraction == 1.0);
  // One of server 0's NICs down: 7 x 100 / 8 = 87.5, still capped at 50: no change either.
  c = apply_failure(c, parse_failure("nic:0/0"));
  CHECK(query_group(c, across).health_fraction == 1.0);
}

TEST_CASE("all NVLinks of a GPU down: its group falls back to PCIe", "[failure]") {
  Cluster c = apply_failure(h100_64(), parse_failure("nvlink:0/2:all"));
  CHECK(c.health.nvlinks_down.at(2) == 18);
  const std::array<int, 4> group{0, 1, 2, 3};
  const GroupLink link = query_group(c, group);
  CHECK(link.tier == Tier::pcie);
  CHECK(link.intra_gbps == Approx(c.pcie.gbps));
  CHECK(link.health_fraction == 1.0);  // a PCIe fit prices it as measured: not scaled again
  // Two more links down on GPU 5 adds up: 2 + 3 = 5 of 18 -> 13 x 25 = 325 GB/s.
  c = apply_failures(c, {parse_failure("nvlink:0/5:2"), parse_failure("nvlink:0/5:3")});
  CHECK(c.health.nvlinks_down.at(5) == 5);
  const std::array<int, 2> pair{4, 5};
  CHECK(query_group(c, pair).intra_gbps == Approx(325.0));
  CHECK(apply_error(c, "nvlink:0/2") ==
        "'nvlink:0/2': GPU 2 of server 0 has 18 NVLinks (18 already down), cannot "
        "take 1 more down");
}

TEST_CASE("a part named twice is refused whichever spec comes first", "[failure]") {
  // Switch: :all after a count took "the rest" down (and a count after :all was refused).
  const Cluster one = apply_failure(h100_64(), parse_failure("nvlink:0/0"));
  CHECK(apply_error(one, "nvlink:0/0:all") ==
        "'nvlink:0/0:all': GPU 0 of server 0 already has 1 of its 18 NVLinks down (named "
        "earlier): :all names them again; give :all alone");
  const Cluster all = apply_failure(h100_64(), parse_failure("nvlink:0/0:all"));
  CHECK(apply_error(all, "nvlink:0/0") ==
        "'nvlink:0/0': GPU 0 of server 0 has 18 NVLinks (18 already down), cannot take 1 more "
        "down");
  // Mesh: a direct link named twice, or named and inside an :all, either order (both were
  // accepted).
  const Cluster linked = apply_failure(dgx1(), parse_failure("mesh:0/0-3"));
  CHECK(apply_error(linked, "nvlink:0/0:all") ==
        "'nvlink:0/0:all': the direct link GPU 0 - GPU 3 of server 0 is already down (named "
        "earlier): :all names it again; give :all alone");
  CHECK(apply_error(linked, "mesh:0/3-0") ==
        "'mesh:0/3-0': the direct link GPU 0 - GPU 3 of server 0 is already down (named "
        "earlier): name each link once");
  const Cluster gpu_all = apply_failure(dgx1(), parse_failure("nvlink:0/0:all"));
  CHECK(apply_error(gpu_all, "mesh:0/0-3") ==
        "'mesh:0/0-3': the direct link GPU 0 - GPU 3 of server 0 is already down (named "
        "earlier): name each link once");
  CHECK(apply_error(gpu_all, "nvlink:0/0:all") ==
        "'nvlink:0/0:all': all NVLinks of GPU 0 of server 0 are already down (named earlier)");
  // Two GPUs that share a link each lose all of theirs: no part named twice (GPU 0 and GPU 3
  // share the 0-3 pair).
  const Cluster both = apply_failure(gpu_all, parse_failure("nvlink:0/3:all"));
  CHECK(both.health.dead_mesh_links.contains({0, 3}));
  CHECK(both.health.dead_mesh_links.contains({3, 7}));
}

TEST_CASE("a NIC down: the server's GPUs share the other seven", "[failure]") {
  const Cluster c = apply_failure(h100_64(), parse_failure("nic:3/1"));
  CHECK(c.health.nics_down.at(3) == 1);
  // GPU 0 of servers 3 and 4 (ids 24, 32): healthy share 8 x 400 Gb/s / 8 bits / 8 GPUs =
  // 50 GB/s; server 3 has 7 NICs left: 7 x 400 / 8 / 8 = 43.75 GB/s.
  const std::array<int, 2> across{24, 32};
  const GroupLink link = query_group(c, across);
  CHECK(link.tier == Tier::network);
  CHECK(link.inter_gbps == Approx(43.75));
  Cluster seven = c;  // NICs 1..7 down, NIC 0 left
  for (int nic = 2; nic < 8; ++nic) {
    seven = apply_failure(seven, parse_failure("nic:3/" + std::to_string(nic)));
  }
  CHECK(seven.health.nics_down.at(3) == 7);
  // One NIC named twice counted as two down.
  CHECK(apply_error(c, "nic:3/1") ==
        "'nic:3/1': NIC 1 of server 3 is already down (named earlier): name each NIC once");
  CHECK(apply_error(seven, "nic:3/0") ==
        "'nic:3/0': that would leave server 3 with no NIC: it is cut off from the "
        "fabric, use server:3");
}

TEST_CASE("dead GPUs and servers", "[failure]") {
  const Cluster c =
      apply_failures(h100_64(), {parse_failure("gpu:1/2"), parse_failure("server:3")});
  const std::vector<int> expected{10, 24, 25, 26, 27, 28, 29, 30, 31};  // 1 x 8 + 2; 3 x 8 .. +7
  CHECK(dead_gpu_ids(c) == expected);
  const std::array<int, 2> with_dead{9, 10};
  CHECK_THROWS_AS(query_group(c, with_dead), PlanError);
  try {
    (void)apply_failures(h100_64(), {parse_failure("gpu:1/2"), parse_failure("gpu:1/2")});
    FAIL("a part named twice must be refused");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "'gpu:1/2': names the same part as 'gpu:1/2'");
  }
  // A part of a part that is down whole, either order: a dead server's GPU or NIC, a dead
  // GPU's NVLinks (the report recommended "takes GPU 3 out" of a dead server).
  const auto refused = [](const std::vector<std::string>& specs) {
    std::vector<Failure> failures;
    failures.reserve(specs.size());
    for (const auto& spec : specs) failures.push_back(parse_failure(spec));
    try {
      (void)apply_failures(h100_64(), failures);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused({"gpu:0/3", "server:0"}) ==
        "'server:0': 'gpu:0/3' is part of 'server:0', which is down whole");
  CHECK(refused({"server:0", "nic:0/1"}) ==
        "'nic:0/1': 'nic:0/1' is part of 'server:0', which is down whole");
  CHECK(refused({"nvlink:0/3", "gpu:0/3"}) ==
        "'gpu:0/3': 'nvlink:0/3' is part of 'gpu:0/3', which is down whole");
  CHECK(refused({"gpu:0/3", "server:1", "nvlink:0/4"}) == "accepted");  // other parts
}

TEST_CASE("mesh servers: a direct link down, by pair", "[failure]") {
  const Cluster healthy = dgx1();
  const Cluster c = apply_failure(healthy, parse_failure("mesh:1/0-4"));
  // Server 1's GPUs are 8..15: the pair (8, 12).
  REQUIRE(c.health.dead_mesh_links.size() == 1);
  CHECK(*c.health.dead_mesh_links.begin() == std::make_pair(8, 12));
  CHECK(mesh_peers(healthy, 1, 0) ==
        std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {3, 2}, {4, 2}});  // 2 links to GPU 4
  // The pair alone: 2 links x 25 GB/s healthy, PCIe once dead.
  const std::array<int, 2> pair{8, 12};
  CHECK(query_group(healthy, pair).intra_gbps == Approx(50.0));
  CHECK(query_group(c, pair).tier == Tier::pcie);
  CHECK(apply_error(healthy, "mesh:0/0-5") ==
        "'mesh:0/0-5': GPUs 0 and 5 of server 0 have no direct NVLink (GPU 0 links "
        "to 1, 2, 3, 4)");
  CHECK(apply_error(healthy, "nvlink:0/1") ==
        "'nvlink:0/1': server 0 has direct GPU-GPU links (nvlink.kind: mesh): name "
        "the pair, mesh:0/1-PEER (GPU 1 links to 0, 2, 3, 5), or nvlink:0/1:all");
  const Cluster cut = apply_failure(healthy, parse_failure("nvlink:0/1:all"));
  CHECK(cut.health.dead_mesh_links.size() == 4);  // GPU 1's four peers: 0, 2, 3, 5
}
