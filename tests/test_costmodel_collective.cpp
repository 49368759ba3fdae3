// Collectives: nccl-tests bus-bandwidth factors, alpha-beta time, hierarchical groups.
#include <catch2/catch.hpp>

#include "costmodel/calibration.h"
#include "costmodel/collective.h"
#include "costmodel_fixture.h"
#include "topology/errors.h"

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
  // all-reduce of 1 GB: 2*3 steps * 1 us + 1e9 * 1.5 / 80e9 = 6e-6 + 0.01875
  CHECK(collective_time_s(Collective::all_reduce, 1e9, link) == Approx(0.018756));
  // all-gather of 1 GB: 3 us + 1e9 * 0.75 / 80e9 = 0.009378
  CHECK(collective_time_s(Collective::all_gather, 1e9, link) == Approx(0.009378));
  CHECK(collective_time_s(Collective::all_reduce, 1e9, test::nvlink_group(1)) == 0.0);
}

TEST_CASE("across domains: the faster of NCCL's flat ring and the hierarchy", "[collective]") {
  GroupLink link = test::nvlink_group(16);
  link.tier = Tier::network;
  link.domains = 2;
  link.ranks_per_domain = 8;
  link.inter_gbps = 10.0;  // x 0.94 = 9.4 GB/s per GPU
  link.inter_latency_s = 5e-6;
  // Flat ring: busbw = min(80, 8 * 9.4 = 75.2); latency 28 intra steps * 1 us + 2 inter * 5 us;
  // 1.6e9 * (2*15/16) / 75.2e9 = 0.0398936 -> 0.0399316.
  // Hierarchy: 2 * (7 us + 1.6e9 * 7/8 / 80e9) + (2e8 * 1 / 9.4e9 + 2 * 5 us) = 0.0563006.
  CHECK(collective_time_s(Collective::all_reduce, 1.6e9, link) == Approx(0.0399316));
  // A slow NIC share (2 GB/s -> 1.88): ring 3e9/15.04e9 + 38 us = 0.199506; hierarchy
  // 0.035014 + 2e8/1.88e9 + 10 us = 0.141407 wins.
  link.inter_gbps = 2.0;
  CHECK(collective_time_s(Collective::all_reduce, 1.6e9, link) == Approx(0.141407));
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

TEST_CASE("more bandwidth never slows a collective", "[collective][invariant]") {
  GroupLink link = test::nvlink_group(16);
  link.domains = 2;
  link.ranks_per_domain = 8;
  link.inter_latency_s = 5e-6;
  double previous = 1e30;
  for (double gbps = 1.0; gbps <= 400.0; gbps *= 2.0) {
    link.inter_gbps = gbps;
    const double t = collective_time_s(Collective::all_reduce, 1e8, link);
    CHECK(t <= previous);
    previous = t;
  }
}
