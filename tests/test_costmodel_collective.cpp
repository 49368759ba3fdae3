// Collectives: nccl-tests bus-bandwidth factors, alpha-beta time, hierarchical groups.
#include <catch2/catch.hpp>

#include "costmodel/calibration.h"
#include "costmodel/collective.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/failure.h"
#include "topology/link_tier.h"

using namespace trident;

TEST_CASE("bus-bandwidth factors and latency steps follow nccl-tests", "[collective]") {
  CHECK(busbw_factor(Collective::all_reduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(busbw_factor(Collective::all_gather, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(Collective::reduce_scatter, 4) == Approx(3.0 / 4));
  CHECK(busbw_factor(Collective::send_recv, 2) == 1.0);
  CHECK(latency_steps(Collective::all_reduce, 8) == 14.0);
  CHECK(latency_steps(Collective::all_gather, 8) == 7.0);
}

TEST_CASE("collective names parse and print", "[collective]") {
  CHECK(parse_collective("allreduce") == Collective::all_reduce);
  CHECK(parse_collective("Reduce_Scatter") == Collective::reduce_scatter);
  CHECK(std::string(to_string(Collective::send_recv)) == "send-recv");
  CHECK_THROWS_WITH(parse_collective("gather"),
                    "collective 'gather': expected all-reduce|all-gather|reduce-scatter|"
                    "send-recv|all-to-all|broadcast");
}

TEST_CASE("flat ring inside one domain: alpha-beta with the achievable fraction", "[collective]") {
  const GroupLink link = test::nvlink_group(4);  // 100 GB/s x 0.80 = 80 GB/s busbw, 1 us
  // NCCL's Simple protocol wins at 1 GB: base 8.4 us + 2*3 hops x 1 us (the link's hop, NCCL's
  // Simple NVLink value scaled: 3.4 x 1/3.4) + 1e9 * 1.5 / 80e9 = 14.4e-6 + 0.01875. (LL128:
  // 14 + 6 x 1.9/3.4 us + 0.01875 / 0.92 = 0.02040; LL: 0.01875 / 0.5 = 0.0375.)
  CHECK(collective_time_s(Collective::all_reduce, 1e9, link) == Approx(0.0187644));
  // all-gather of 1 GB: 8.4 + 3 x 1 us + 1e9 * 0.75 / 80e9 = 0.0093864
  CHECK(collective_time_s(Collective::all_gather, 1e9, link) == Approx(0.0093864));
  // A tiny message: LL wins: 6.6 us + 3 hops x 0.6/3.4 us + 1e3 * 0.75 / (0.5 * 80e9)
  CHECK(collective_time_s(Collective::all_gather, 1e3, link) ==
        Approx(6.6e-6 + 3 * 0.6e-6 / 3.4 + 750.0 / 40e9));
  CHECK(collective_time_s(Collective::all_reduce, 1e9, test::nvlink_group(1)) == 0.0);
}

TEST_CASE("across domains: the faster of NCCL's flat ring and the hierarchy", "[collective]") {
  GroupLink link = test::network_group(16, 2, 10.0, 5e-6);  // x 0.94 = 9.4 GB/s per GPU
  // Flat ring (Simple): busbw = min(80, 8 * 9.4 = 75.2); latency 8.4 us base + 28 intra hops x
  // 3 us (the link's 1 us raised to NCCL's network-proxy floor for Simple in a ring that crosses
  // nodes, 3 x 1 us) + 2 inter hops x 5 us (NCCL's 14 us scaled by 5/14) = 102.4 us;
  // 1.6e9 * (2*15/16) / 75.2e9 = 0.0398936 -> 0.0399960.
  // Tree: 8.4 us + 2 * (7 us + 1.6e9 * 7/8 / 80e9) + (2e8 * 1 / 9.4e9 + 2 * 5 us) = 0.0563090.
  CHECK(collective_time_s(Collective::all_reduce, 1.6e9, link) == Approx(0.0399960));
  // A slow NIC share (2 GB/s -> 1.88): ring 3e9/15.04e9 + 102.4 us = 0.1995704; tree (Simple;
  // NCCL's tree hops: 4.0 us on NVLink, scaled by 1/3.4, and 14 us on the network, scaled by
  // 5/14) 8.4 + 2 x (7 x 4/3.4 + 1 x 5) = 34.8706 us + 2 x 1.6e9 x 7/8 / 80e9 + 2e8/1.88e9
  // = 0.1414179 wins.
  link.inter_gbps = 2.0;
  CHECK(collective_time_s(Collective::all_reduce, 1.6e9, link) == Approx(0.1414179));
  // All-gather has no tree in NCCL (tuning.cc): the ring even when it is slower.
  CHECK(collective_time_s(Collective::all_gather, 1.6e9, link) ==
        Approx(8.4e-6 + 14 * 3e-6 + 1e-6 * 5 / 14 * 14 + 1.6e9 * 15.0 / 16.0 / 15.04e9));
}

TEST_CASE("a few-byte all-reduce across 32 domains runs NCCL's tree LL", "[collective]") {
  // 256 ranks, 8 per domain, NCCL's own hop latencies (3.4 us NVLink, 14 us network: scale 1).
  const GroupLink link = test::network_group(256, 32, 50.0, 14e-6, 3.4e-6);  // 47 GB/s per GPU
  // Tree LL (tuning.cc): 6.8 + 2 x (7 x 0.6 + log2i(32) = 5 x 5.0) = 65.2 us; wire
  // (2 x 1e3 x 7/8 / 80e9 + 125 x 62/32 / 47e9) / 0.5 = 5.405e-8 s. The ring's LL would pay
  // 6.6 + 448 x 0.6 + 62 x 2.7 = 442.8 us.
  CHECK(collective_time_s(Collective::all_reduce, 1e3, link) ==
        Approx(65.2e-6 + 2.0 * (2e3 * 0.875 / 80e9 + 125.0 * 62.0 / 32.0 / 47e9)).epsilon(1e-6));
}

TEST_CASE("a group split unevenly across domains rides its narrowest cut", "[collective]") {
  // TP 6 split 2 + 4 over two servers: the ring crosses twice, and on the side of 2 only those
  // 2 GPUs' NICs carry it: busbw = min(80, 2 x 9.4 = 18.8), not the 4 side's 37.6.
  GroupLink link = test::nvlink_group(6);
  link.tier = Tier::network;
  link.domains = 2;
  link.ranks_per_domain = 4;
  link.min_ranks_per_domain = 2;
  link.inter_gbps = 10.0;
  link.inter_latency_s = 5e-6;
  // all-gather of 1.2 GB: 8.4 us + 4 intra hops x 3 us (NCCL's floor, above) + 1 inter hop x
  // 5 us + 1.2e9 * 5/6 / 18.8e9 = 25.4e-6 + 0.0531915 = 0.0532169
  CHECK(collective_time_s(Collective::all_gather, 1.2e9, link) == Approx(0.0532169));
}

TEST_CASE("LL across many nodes runs at NCCL's ceiling, not half the bus", "[collective]") {
  // 512 ranks, 8 in each of 64 nodes (ZeRO-3 over a whole cluster), NCCL's own hop latencies.
  const GroupLink link = test::network_group(512, 64, 50.0, 14e-6, 3.4e-6);  // busbw min(80, 376)
  // all-gather of 8 MB: 511 steps, 63 across the network. LL: 6.6 us + 448 intra hops x 1 us
  // (NVLink's 0.6 raised to the 1 us network-proxy floor) + 63 x 2.7 us = 624.7 us, and its
  // bandwidth min(0.5 x 80, 20.4) = 20.4 GB/s (tuning.cc llMaxBws, more than two nodes):
  // 8e6 x 511/512 / 20.4e9 = 391.4 us -> 1016.1 us. LL128: 14 + 448 x 1.9 + 63 x 4.0 = 1117.2
  // us + 7.984e6 / 73.6e9; Simple: 8.4 + 448 x 3.4 + 63 x 14 = 2413.6 us + 7.984e6 / 80e9.
  // (Before the ceiling LL read 445.5 + 199.6 = 645.1 us.)
  CHECK(collective_time_s(Collective::all_gather, 8e6, link) ==
        Approx((6.6 + 448.0 + 63 * 2.7) * 1e-6 + 8e6 * 511.0 / 512.0 / 20.4e9));
  // 1 MB over 64 nodes with one rank each keeps LL at half the bus, 47 x 0.5 = 23.5 GB/s (NCCL
  // 2.23+ runs PAT there, which the ring's LL stands in for): 6.6 + 63 x 2.7 = 176.7 us +
  // 1e6 x 63/64 / 23.5e9 = 41.9 us (LL128: 14 + 63 x 4 = 266 us + 22.8 us).
  const GroupLink one_each = test::network_group(64, 64, 50.0, 14e-6, 3.4e-6);
  CHECK(collective_time_s(Collective::all_gather, 1e6, one_each) ==
        Approx((6.6 + 63 * 2.7) * 1e-6 + 1e6 * 63.0 / 64.0 / 23.5e9));
}

TEST_CASE("send/recv crossing domains rides the NIC share", "[collective]") {
  GroupLink link = test::nvlink_group(2);
  link.domains = 2;
  link.ranks_per_domain = 1;
  link.inter_gbps = 50.0;  // x 0.94 = 47
  link.inter_latency_s = 5e-6;
  // 5 us + 4.7e8 / 47e9 = 0.010005
  CHECK(collective_time_s(Collective::send_recv, 4.7e8, link) == Approx(0.010005));
}

TEST_CASE("a calibration fit replaces the default", "[collective]") {
  Calibration calibration;
  calibration.fits.push_back({Collective::all_reduce, 8, Tier::nvlink, 2e-6, 50.0});
  calibration.gemms.push_back({8192, 8192, 8192, Dtype::bf16, 700.0});
  // nearest group size (8) for ranks 4: 6 steps * 2 us + 1e9 * 1.5 / 50e9 = 0.030012
  CHECK(collective_time_s(Collective::all_reduce, 1e9, test::nvlink_group(4), &calibration) ==
        Approx(0.030012));
  CHECK_FALSE(calibration.collective_fit(Collective::all_gather, 4, Tier::nvlink));
  CHECK(calibration.gemm_tflops(6000, 10000, 8192, Dtype::bf16) == Approx(700.0));
  CHECK_FALSE(calibration.gemm_tflops(2048, 8192, 8192, Dtype::bf16));  // 4x away in m
  CHECK_FALSE(calibration.gemm_tflops(8192, 8192, 8192, Dtype::fp8));
}

TEST_CASE("a group fallen back from the tier its fit measured is never priced faster than the fit",
          "[collective][calibration]") {
  // A helper's find (2026-12-07): an NVLink all-reduce measured at 300 GB/s busbw, a GPU with 2
  // of 18 links left (50 GB/s: the fit scaled by 50/450) priced 22.1 s a step; the 17th link
  // down moved the group to PCIe, where no fit applied and the model's 50 x 0.80 = 40 GB/s
  // priced it faster (20.6 s): one more link down, a faster step.
  Calibration calibration;
  calibration.fits.push_back({Collective::all_reduce, 4, Tier::nvlink, 2e-6, 300.0});
  GroupLink degraded = test::nvlink_group(4);
  degraded.intra_gbps = 50.0;
  degraded.health_fraction = 50.0 / 450.0;
  degraded.built_fraction = 50.0 / 450.0;
  // 6 steps x 2 us + 1e9 x 1.5 / (300e9 / 9) = 0.045012 s
  const double degraded_s = collective_time_s(Collective::all_reduce, 1e9, degraded, &calibration);
  CHECK(degraded_s == Approx(0.045012));
  GroupLink fallen = degraded;
  fallen.tier = Tier::pcie;
  fallen.intra_tier = Tier::pcie;
  fallen.health_fraction = 1.0;  // its own tier's fit would price it as it runs
  fallen.built_tier = Tier::nvlink;
  // No PCIe fit: the NVLink fit at the fallback's rate, 0.045012 s, not the model's faster
  // 1e9 x 1.5 / 40e9 = 0.0375 s (+ latency).
  CHECK(collective_time_s(Collective::all_reduce, 1e9, fallen, &calibration) == Approx(degraded_s));
  CHECK(collective_time_s(Collective::all_reduce, 1e9, fallen) < degraded_s);
  // A fit of its own tier prices it as measured.
  calibration.fits.push_back({Collective::all_reduce, 4, Tier::pcie, 2e-6, 45.0});
  CHECK(collective_time_s(Collective::all_reduce, 1e9, fallen, &calibration) ==
        Approx(6 * 2e-6 + 1e9 * 1.5 / 45e9));
  // A rack-scale domain's member fallen back to its NIC, in a group across domains (built on
  // the network): the network fit is not read for it (its busbw counts a domain's NICs), but
  // it bounds the price, at the group's share of its built rate (a review's find: GB200 with
  // its last NVLink down priced 12% faster than healthy under a 30 GB/s network fit).
  Calibration network;
  network.fits.push_back({Collective::all_reduce, 4, Tier::network, 2e-6, 10.0});
  GroupLink nic = test::nvlink_group(4);
  nic.tier = Tier::network;
  nic.intra_tier = Tier::network;
  nic.built_tier = Tier::network;
  nic.domains = 2;
  nic.intra_gbps = 50.0;
  nic.inter_gbps = 50.0;
  // 6 steps x 2 us + 1e9 x 1.5 / 10e9 = 0.150012 s, slower than the model's own price.
  CHECK(collective_time_s(Collective::all_reduce, 1e9, nic) < 0.150012);
  CHECK(collective_time_s(Collective::all_reduce, 1e9, nic, &network) == Approx(0.150012));
}

TEST_CASE("a rack-scale domain's member fallen back to its NIC is priced by the model, not a fit",
          "[collective][calibration]") {
  // A network fit's busbw counts every NIC of a domain; the fallen-back member has one GPU's
  // share: the fit does not describe it.
  Calibration calibration;
  calibration.fits.push_back({Collective::all_reduce, 4, Tier::network, 2e-6, 140.0});
  GroupLink link = test::nvlink_group(4);
  link.tier = Tier::network;
  link.intra_tier = Tier::network;
  link.intra_gbps = 12.5;
  link.intra_latency_s = 14e-6;
  CHECK(collective_time_s(Collective::all_reduce, 1e9, link, &calibration) ==
        Approx(collective_time_s(Collective::all_reduce, 1e9, link)));
  // The bandwidth term alone: 1e9 x 1.5 / (12.5e9 x 0.94 achievable) = 0.1277 s, far above the
  // fit's 1e9 x 1.5 / 140e9 = 0.0107 s.
  CHECK(collective_time_s(Collective::all_reduce, 1e9, link) > 0.12);
}

TEST_CASE("the GEMM lookup: nearest within a factor of 2, the later of equals, indexed or not",
          "[collective][calibration]") {
  Calibration calibration;
  calibration.gemms = {
      {8192, 8192, 8192, Dtype::bf16, 700.0},  // 0
      {4096, 8192, 8192, Dtype::bf16, 600.0},  // 1
      {6144, 8192, 8192, Dtype::bf16, 650.0},  // 2
      {8192, 8192, 8192, Dtype::bf16, 710.0},  // 3: the same shape as 0, later: it wins
      {8192, 8192, 8192, Dtype::fp8, 1200.0},  // 4
  };
  const auto check = [](const Calibration& c) {
    CHECK(c.gemm_tflops(8192, 8192, 8192, Dtype::bf16) == Approx(710.0));  // 3 beats 0
    CHECK(c.gemm_tflops(8192, 8192, 8192, Dtype::fp8) == Approx(1200.0));
    // m 5000: |ln(5000/4096)| = 0.199, |ln(6144/5000)| = 0.206, |ln(8192/5000)| = 0.494.
    CHECK(c.gemm_tflops(5000, 8192, 8192, Dtype::bf16) == Approx(600.0));
    // m 16384 is exactly 2x the 8192s: inside; 16385 is not, nor is 2048 (2x below 4096: in).
    CHECK(c.gemm_tflops(16384, 8192, 8192, Dtype::bf16) == Approx(710.0));
    CHECK_FALSE(c.gemm_tflops(16385, 8192, 8192, Dtype::bf16));
    CHECK(c.gemm_tflops(2048, 8192, 8192, Dtype::bf16) == Approx(600.0));
    CHECK_FALSE(c.gemm_tflops(2047, 8192, 8192, Dtype::bf16));
    CHECK_FALSE(c.gemm_tflops(8192, 8192, 8192, Dtype::fp16));
  };
  check(calibration);  // built in code: read in order
  index_gemms(calibration);
  REQUIRE(calibration.gemm_index.points.size() == 5);
  check(calibration);  // indexed: the same answers

  // 2,000 random shapes: the window of the sort finds what reading every shape finds.
  Calibration many;
  unsigned state = 12345U;
  const auto next = [&state](long long low, long long high) {
    state = state * 1664525U + 1013904223U;
    return low + static_cast<long long>(state >> 8U) % (high - low + 1);
  };
  for (int i = 0; i < 2000; ++i) {
    many.gemms.push_back({next(64, 65536), next(64, 65536), next(64, 65536),
                          i % 3 == 0 ? Dtype::fp8 : Dtype::bf16,
                          static_cast<double>(next(100, 900))});
  }
  Calibration indexed = many;
  index_gemms(indexed);
  for (int q = 0; q < 2000; ++q) {
    const long long m = next(32, 131072), n = next(32, 131072), k = next(32, 131072);
    const Dtype dtype = q % 2 == 0 ? Dtype::fp8 : Dtype::bf16;
    REQUIRE(indexed.gemm_tflops(m, n, k, dtype) == many.gemm_tflops(m, n, k, dtype));
  }
  // A list changed after indexing is read in order, not through the stale index.
  indexed.gemms.push_back({100000, 100000, 100000, Dtype::bf16, 321.0});
  CHECK(indexed.gemm_tflops(100000, 100000, 100000, Dtype::bf16) == Approx(321.0));
}

TEST_CASE("more bandwidth never slows a collective", "[collective][invariant]") {
  GroupLink link = test::nvlink_group(16);
  link.domains = 2;
  link.ranks_per_domain = 8;
  link.min_ranks_per_domain = 8;
  link.inter_latency_s = 5e-6;
  double previous = 1e30;
  for (double gbps = 1.0; gbps <= 400.0; gbps *= 2.0) {
    link.inter_gbps = gbps;
    const double t = collective_time_s(Collective::all_reduce, 1e8, link);
    CHECK(t <= previous);
    previous = t;
  }
}

TEST_CASE("a measured fit slows with the failures on its group's path", "[collective]") {
  // Half the NVLinks of GPU 3 down (9 of 18): its TP group runs at 225 of 450 GB/s; a fit
  // measured on the healthy group (8-rank all-reduce, 360 GB/s, 2 us a step) is priced at
  // half its bandwidth: t = 2 x 7 x 2 us + 2 x 7/8 x 1 GB / (360 x 0.5 GB/s).
  Cluster healthy = cluster_preset("dgx-h100");  // 8 x H100, 18 x 25 GB/s, 8 x 400 Gb/s NICs
  healthy.servers = 64;
  const Cluster c = apply_failure(healthy, parse_failure("nvlink:0/3:9"));
  const std::array<int, 8> server0{0, 1, 2, 3, 4, 5, 6, 7};
  Calibration measured;
  measured.fits.push_back({Collective::all_reduce, 8, Tier::nvlink, 2e-6, 360.0});
  const double bytes = 1e9;
  const double healthy_s =
      collective_time_s(Collective::all_reduce, bytes, query_group(healthy, server0), &measured);
  const double hit_s =
      collective_time_s(Collective::all_reduce, bytes, query_group(c, server0), &measured);
  CHECK(healthy_s == Approx(14 * 2e-6 + 1.75 * bytes / 360e9));
  CHECK(hit_s == Approx(14 * 2e-6 + 1.75 * bytes / 180e9));
  // A NIC down: 7 of 8 NICs, 43.75 of 50 GB/s across servers.
  const Cluster nic = apply_failure(healthy, parse_failure("nic:3/1"));
  const std::array<int, 2> across{24, 32};
  CHECK(query_group(nic, across).health_fraction == Approx(43.75 / 50.0));
}
