// validate/: fits, plan reader, groups, patterns;
// costmodel/calibration_io round trip and error texts.
#include <catch2/catch.hpp>

#include "costmodel/calibration_io.h"
#include "topology/errors.h"
#include "validate/collective_fit.h"
#include "validate/groups.h"
#include "validate/measure.h"
#include "validate/nccl_tests_parser.h"
#include "validate/patterns.h"
#include "validate/plan_reader.h"
#include "validate_fixture.h"

using namespace trident;
using test::data;
using test::error_of;

TEST_CASE("fit recovers a known latency and bandwidth", "[validate][fit]") {
  // all-reduce on 8 ranks: t(S) = 2(8-1) x 5 us + S x 1.75 / 100 GB/s
  std::vector<CollectiveSample> samples;
  for (const double bytes : {1e3, 1e6, 1e8, 1e9}) {
    const double t = 14 * 5e-6 + bytes * 1.75 / 100e9;
    samples.push_back({Collective::all_reduce, 8, Tier::nvlink, bytes, t, 0.0});
  }
  const auto fit = fit_collective(samples);
  CHECK(fit.latency_s == Approx(5e-6).epsilon(1e-9));
  CHECK(fit.busbw_gbps == Approx(100.0).epsilon(1e-9));
  CHECK(fitted_time_s(fit, 1e6) == Approx(14 * 5e-6 + 1e6 * 1.75 / 100e9));
  samples.push_back({Collective::send_recv, 2, Tier::network, 1e6, 1e-4, 10.0});
  samples.push_back({Collective::all_reduce, 1, Tier::nvlink, 1e6, 1e-4, 0.0});
  CHECK(fit_all(samples).size() == 2);  // the 1-rank group is skipped
}

TEST_CASE("fit: sizes that do not determine a bandwidth leave it undetermined", "[validate][fit]") {
  const auto fit_of = [](const std::vector<std::pair<double, double>>& rows) {
    std::vector<CollectiveSample> samples;
    samples.reserve(rows.size());
    for (const auto& [bytes, t] : rows) {
      samples.push_back({Collective::all_reduce, 8, Tier::nvlink, bytes, t, 0.0});
    }
    return fit_collective(samples);
  };
  // A latency sweep, 8 B to 1 KiB at 19.65-19.91 us: t = 19.65 us + 0.254 ns/B x S; at 1 KiB
  // the S term is 0.26 us of 19.9, below the 19.65 us intercept: no bandwidth (it gave 0.061
  // GB/s, latency 0, and plan then priced a TP all-reduce at 1500x its time).
  const auto latency_only =
      fit_of({{8, 19.652e-6}, {64, 19.668e-6}, {256, 19.717e-6}, {1024, 19.912e-6}});
  CHECK(latency_only.busbw_gbps == 0.0);
  CHECK(latency_only.latency_s == 0.0);
  CHECK(fit_of({{1e6, 1e-4}}).busbw_gbps == 0.0);                 // one size
  CHECK(fit_of({{1e6, 2e-4}, {1e7, 1e-4}}).busbw_gbps == 0.0);    // falling with size
  CHECK(fit_of({{1e6, 1e-4}, {1e6, 1.1e-4}}).busbw_gbps == 0.0);  // one distinct size
  // validate's sweep around the plan's own sizes keeps the line through the origin: the
  // measured times at those sizes (t = S x 1.75 / busbw through the weighted points).
  const auto at_plan_sizes =
      fit_collective({{Collective::all_reduce, 8, Tier::nvlink, 8, 19.652e-6, 0.0},
                      {Collective::all_reduce, 8, Tier::nvlink, 1024, 19.912e-6, 0.0}},
                     FitSizes::plans);
  CHECK(at_plan_sizes.latency_s == 0.0);
  CHECK(at_plan_sizes.busbw_gbps > 0.0);
  CHECK(fitted_time_s(at_plan_sizes, 1024) == Approx(19.912e-6).epsilon(0.02));
  // The cost model skips an undetermined fit (its own rate stays).
  Calibration c;
  c.fits.push_back(latency_only);
  CHECK_FALSE(c.collective_fit(Collective::all_reduce, 8, Tier::nvlink).has_value());
  // Bandwidth-bound with a little noise (negative intercept): through the origin.
  const auto bound = fit_of({{1e8, 1.70e-3}, {1e9, 1.75e-2}});  // intercept -56 us
  CHECK(bound.latency_s == 0.0);
  CHECK(bound.busbw_gbps == Approx(101.5).epsilon(0.02));  // 102.9 and 100.0 GB/s, weighted
}

TEST_CASE("plan reader", "[validate][plan]") {
  const auto plan = read_plan(data("plan_tp2_pp2_dp2.json"), "plan.json");
  CHECK(plan.world_size() == 8);
  CHECK(plan.order == RankOrder::tp_dp_pp);
  CHECK(plan.dtype == Dtype::bf16);
  REQUIRE(plan.tp.has_value());
  CHECK(plan.tp->bytes_per_call == 262144.0);
  CHECK(plan.pp->collectives == std::vector<Collective>{Collective::send_recv});
  CHECK(plan.pp->tier == Tier::network);
  REQUIRE(plan.gemms.size() == 2);
  CHECK(plan.gemms[1].n == 1024);
  CHECK(plan.gemms[0].flops() == 2.0 * 256 * 768 * 512);
  const auto one = read_plan(data("plan_1gpu.json"), "one.json");
  CHECK(one.world_size() == 1);
  CHECK_FALSE(one.tp.has_value());

  std::string text = data("plan_tp2_pp2_dp2.json");
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    out.replace(out.find(from), from.size(), to);
    return out;
  };
  CHECK(error_of([&] { (void)read_plan(replace("\"tp\": 2,", "\"tp\": 0,"), "plan.json"); }) ==
        "plan.json:10: plans[0].tp: expected a positive integer");
  CHECK(error_of([&] {
          (void)read_plan(replace("\"tp\": 2,", "\"tp\": 16777217,"), "plan.json");
        }) == "plan.json:10: plans[0].tp: expected at most 16777216");
  CHECK(error_of([&] { (void)read_plan(replace("\"tp\": 2,", ""), "plan.json"); }) ==
        "plan.json:9: plans[0].tp: missing");
  CHECK(error_of([&] { (void)read_plan(replace("\"tp-dp-pp\"", "\"dp-tp\""), "plan.json"); }) ==
        "plan.json:12: plans[0].rank_order: expected tp-dp-pp|tp-pp-dp, got 'dp-tp'");
  CHECK(error_of([&] {
          (void)read_plan(replace("\"send-recv\", \"bytes", "\"gossip\", \"bytes"), "plan.json");
        }) == "plan.json:26: plans[0].comm.pp.collective: unknown collective 'gossip'");
  // A collective trident models but validate does not run: refused here, not after MPI started
  // ("validate does not run broadcast", exit 1, no file or key).
  for (const std::string name : {"broadcast", "send-recv+broadcast"}) {
    INFO(name);
    CHECK(error_of([&] {
            (void)read_plan(replace("\"send-recv\", \"bytes", "\"" + name + "\", \"bytes"),
                            "plan.json");
          }) == "plan.json:26: plans[0].comm.pp.collective: '" + name +
                    "': validate does not run broadcast (it runs all-reduce, all-gather, "
                    "reduce-scatter, send-recv and all-to-all)");
  }
  CHECK(error_of([&] {
          (void)read_plan(
              replace("\"ranks\": 2, \"tier\": \"network\"", "\"ranks\": 3, \"tier\": \"network\""),
              "plan.json");
        }) ==
        "plan.json:27: plans[0].comm.pp.ranks: expected 2 (a send-recv between two pipeline "
        "stages)");
  // A split dimension without its entry (TP 2 here): its sweep was skipped without a word.
  CHECK(error_of([&] {
          (void)read_plan(replace("\"tp\": {", "\"tq\": {"), "plan.json");
        }).ends_with(": plans[0].comm.tp: missing (the plan's tp group has 2 ranks)"));
  CHECK(error_of([&] { (void)read_plan(text, "plan.json", 3); }) ==
        "plan.json:8: plans[3]: missing (the file has 1 plans; see --plan-index)");
  CHECK(error_of([] {
          (void)read_plan("{\"plans\": [", "plan.json");
        }).rfind("plan.json:1: invalid JSON at column 12: ", 0) == 0);
}

TEST_CASE("groups follow the planner's tp-dp-pp placement", "[validate][groups]") {
  const auto plan = read_plan(data("plan_tp2_pp2_dp2.json"), "plan.json");
  // tp-dp-pp: rank = tp + 2 dp + 4 pp, so rank 5 = (tp 1, dp 0, pp 1)
  const auto g = rank_groups(plan, 5);
  CHECK(g.coord.tp == 1);
  CHECK(g.coord.dp == 0);
  CHECK(g.coord.pp == 1);
  CHECK(g.tp.members == std::vector<int>{4, 5});
  CHECK(g.dp.members == std::vector<int>{5, 7});
  CHECK(g.pp.members == std::vector<int>{1, 5});
  CHECK(g.pp.group_rank == 1);
  CHECK(g.pp.color == 1);
  CHECK(g.tp.describe() == "tp group (ranks 4,5)");
}

TEST_CASE("plan reader and groups with context and expert parallelism", "[validate][plan]") {
  // tests/data/plan_cp2_ep4.json: trident plan --gpus 8 --servers 1 --model
  // tests/data/tiny-moe.yaml --cp 2 --ep 4 --tp 2 --dp 2 --top 1 --format json
  const auto plan = read_plan(data("plan_cp2_ep4.json"), "plan.json");
  CHECK(plan.world_size() == 8);
  CHECK(plan.config.cp == 2);
  CHECK(plan.config.ep == 4);
  REQUIRE(plan.cp.has_value());
  CHECK(plan.cp->collectives == std::vector<Collective>{Collective::send_recv});
  REQUIRE(plan.ep.has_value());
  CHECK(plan.ep->collectives == std::vector<Collective>{Collective::all_to_all});
  CHECK(plan.ep->ranks == 4);
  CHECK(plan.dp->ranks == 4);  // DP x CP
  // tp-cp-dp-pp: rank = tp + 2 (cp + 2 dp); rank 5 = (tp 1, cp 0, dp 1).
  const auto g = rank_groups(plan, 5);
  CHECK(g.coord.cp == 0);
  CHECK(g.coord.dp == 1);
  CHECK(g.cp.members == std::vector<int>{5, 7});
  CHECK(g.dp.members == std::vector<int>{1, 3, 5, 7});
  CHECK(g.ep.members == std::vector<int>{4, 5, 6, 7});
  CHECK(g.ep.describe() == "ep group (ranks 4,5,6,7)");
}

TEST_CASE("all-to-all pattern: chunk j comes from peer j", "[validate][measure]") {
  // 4 ranks, 8 floats each (chunks of 2): rank 1 receives peer j's elements 2..3.
  std::vector<float> recv(8);
  for (int peer = 0; peer < 4; ++peer) {
    const auto sent = input_pattern(Collective::all_to_all, 4, peer, 8);
    for (std::size_t k = 0; k < 2; ++k) {
      recv[static_cast<std::size_t>(peer) * 2 + k] = sent[2 + k];
    }
  }
  CHECK(count_wrong(Collective::all_to_all, 4, 1, 0, 8, recv) == 0);
  recv[5] += 1.0f;
  CHECK(count_wrong(Collective::all_to_all, 4, 1, 0, 8, recv) == 1);
  CHECK(buffer_counts(Collective::all_to_all, 4, 8).recv == 8);
}

TEST_CASE("sweep sizes and result checks", "[validate][measure]") {
  CHECK(sweep_sizes(262144, 2, 16777216) ==
        std::vector<double>{32768, 65536, 131072, 262144, 524288});
  CHECK(sweep_sizes(262144, 2, 100000) == std::vector<double>{32768, 65536, 100000});
  // all-reduce on 4 ranks of 8 floats: element i = (i%13+1) x (1+2+3+4)
  std::vector<float> out(8);
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<float>((i % 13 + 1) * 10);
  CHECK(count_wrong(Collective::all_reduce, 4, 0, 3, 8, out) == 0);
  out[3] = 0.0f;
  CHECK(count_wrong(Collective::all_reduce, 4, 0, 3, 8, out) == 1);
  const auto input = input_pattern(Collective::send_recv, 2, 1, 4);
  CHECK(count_wrong(Collective::send_recv, 2, 0, 1, 4, input) == 0);
}

TEST_CASE("calibration file round trip and errors", "[validate][calibration_io]") {
  Calibration c;
  c.gpu = "NVIDIA H200";
  c.nccl_version = "2.27.3";
  c.date = "2026-12-01T10:00:00Z";
  c.source = "validate";
  c.backend = "nccl";
  c.gemms.push_back({8192, 8192, 8192, Dtype::bf16, 780.0});
  c.collectives.push_back({Collective::all_reduce, 8, Tier::nvlink, 1e9, 0.005, 350.0});
  c.fits.push_back({Collective::all_reduce, 8, Tier::nvlink, 1e-5, 360.0});
  c.comparison.push_back({"tp all-reduce", 0.001, 0.0011, -9.1});
  const Calibration back = parse_calibration(to_json(c), "calib.json");
  CHECK(back.gpu == c.gpu);
  CHECK(back.backend == "nccl");
  REQUIRE(back.gemms.size() == 1);
  CHECK(back.gemms[0].tflops == 780.0);
  // The loader indexes the GEMMs for the nearest-shape lookup (index_gemms).
  CHECK(back.gemm_index.source_size == 1);
  CHECK(back.gemm_index.points.size() == 1);
  CHECK(back.collectives[0].busbw_gbps == 350.0);
  CHECK(back.fits[0].latency_s == 1e-5);
  REQUIRE(back.comparison.size() == 1);
  CHECK(back.comparison[0].error_pct == -9.1);
  CHECK(to_json(back) == to_json(c));

  Calibration no_rows = c;
  no_rows.comparison.clear();
  CHECK(to_json(no_rows).find("comparison") == std::string::npos);

  // A fit whose bandwidth was not determined (busbw 0) is not written.
  Calibration undetermined = c;
  undetermined.fits[0].busbw_gbps = 0.0;
  CHECK(parse_calibration(to_json(undetermined), "calib.json").fits.empty());

  for (int i = 0; i < 2; ++i) c.fits.push_back(c.fits[0]);
  c.fits[2].busbw_gbps = 12345.0;  // written, then made negative in the text
  std::string negative = to_json(c);
  negative.replace(negative.find("12345.0"), 7, "-1.0");
  CHECK(error_of([&] { (void)parse_calibration(negative, "calib.json"); }) ==
        "calib.json:38: fits[2].busbw_gbps: expected a positive number");
  CHECK(error_of([] {
          (void)parse_calibration("{\"trident_calibration\": 1, \"gemms\": []}", "c.json");
        }) == "c.json:1: collectives: missing");
  // A fit over one rank: a collective of one moves nothing, so its bandwidth prices nothing.
  CHECK(error_of([] {
          (void)parse_calibration(
              "{\"trident_calibration\": 1, \"gemms\": [], \"collectives\": [], \"fits\": "
              "[{\"collective\": \"all_reduce\", \"ranks\": 1, \"tier\": \"nvlink\", "
              "\"latency_s\": 1e-5, \"busbw_gbps\": 300}]}",
              "c.json");
        }) ==
        "c.json:1: fits[0].ranks: expected at least 2 (a collective of one rank moves "
        "nothing)");
  CHECK(error_of([] {
          (void)parse_calibration(
              "{\"trident_calibration\": 1, \"gemms\": [], \"collectives\": "
              "[], \"fits\": [], \"colour\": 1}",
              "c.json");
        }) == "c.json:1: colour: unknown key");
  CHECK(error_of([] {
          (void)parse_calibration(
              "{\"trident_calibration\": 1, \"gemms\": [{\"m\": 1, \"n\": 1, "
              "\"k\": 1, \"dtype\": \"bf17\", \"tflops\": 1}], "
              "\"collectives\": [], \"fits\": []}",
              "c.json");
        }) == "c.json:1: gemms[0].dtype: expected bf16|fp16|fp8|tf32|fp32, got 'bf17'");
  // Samples no GPU measured (a message above a petabyte, a call above 1,000 s): refused at
  // their line, where calibrate --validate's fit over them named its own text's line.
  const auto sample_error = [](const std::string& bytes, const std::string& time) {
    return error_of([&] {
      (void)parse_calibration(
          "{\"trident_calibration\": 1, \"gemms\": [], \"fits\": [], \"collectives\": [\n"
          "{\"collective\": \"all-reduce\", \"ranks\": 8, \"tier\": \"nvlink\", \"bytes\": " +
              bytes + ", \"time_s\": " + time + ", \"busbw_gbps\": 1}]}",
          "c.json");
    });
  };
  CHECK(sample_error("1e300", "1") == "c.json:2: collectives[0].bytes: expected at most 1e+15");
  CHECK(sample_error("1e9", "1e290") == "c.json:2: collectives[0].time_s: expected at most 1000");
  CHECK(sample_error("0", "1") == "c.json:2: collectives[0].bytes: expected a positive number");
  // A time whose bus bandwidth is past any link, as the nccl-tests reader refuses a row: 1e-300
  // s was read, and calibrate --validate's fit said "-nan GB/s and 0 us" with no file or key.
  CHECK(sample_error("1e9", "1e-300") ==
        "c.json:2: collectives[0].time_s: 1e-300 s for 1e+09 bytes is a bus bandwidth above "
        "1e+06 GB/s, past any link; expected at least 1.75e-06 s");
  CHECK(sample_error("1e9", "1.8e-6") == "(no error)");  // 972,222 GB/s: under the bound
  // A fraction of a byte is no message (1e-300 bytes in 1e-300 s weighed infinitely in the fit).
  CHECK(sample_error("1e-300", "1e-300") == "c.json:2: collectives[0].bytes: expected at least 1");
  // calibrate checks its fits against the same bounds (fit_in_bounds).
  CHECK(fit_in_bounds({Collective::all_reduce, 8, Tier::nvlink, 1e-5, 360.0}));
  CHECK_FALSE(fit_in_bounds({Collective::all_reduce, 8, Tier::nvlink, 1e-5, 4.6e14}));
  CHECK_FALSE(fit_in_bounds({Collective::all_reduce, 8, Tier::nvlink, 1e4, 360.0}));
}

TEST_CASE("plan reader and groups under hybrid sharding (HSDP)", "[validate][plan]") {
  // tests/data/plan_hsdp2.json: trident plan --model llama3-8b --seq-len 2048 --gpus 8
  // --servers 1 --global-batch 16 --stack torchtitan --dp-shard 2 --tp 1 --pp 1 --top 1
  // --format json: ZeRO-3 sharded over 2 DP ranks, 4 replicas.
  const auto plan = read_plan(data("plan_hsdp2.json"), "plan.json");
  CHECK(plan.config.dp == 8);
  CHECK(plan.config.dp_shard == 2);
  REQUIRE(plan.dp.has_value());
  CHECK(plan.dp->ranks == 2);  // the per-unit collectives run in the shard group
  // tp-dp-pp with tp 1: rank = dp; rank 5's shard group is DP ranks 4-5.
  const auto g = rank_groups(plan, 5);
  CHECK(g.dp.members == std::vector<int>{4, 5});
  // A plan without the key (written before HSDP) shards over all of DP.
  const auto plain = read_plan(data("plan_tp2_pp2_dp2.json"), "plan.json");
  CHECK(plain.config.dp_shard == 0);
}
