// End to end: `mpirun -np 8 trident validate --backend cpu` on loopback (TP2 x PP2 x DP2),
// the calibration file it writes, refusals (world size, malformed plan), `trident calibrate`.
#include <fmt/format.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "costmodel/calibration_io.h"

using namespace trident;

namespace {

const std::string kBinary = TRIDENT_BINARY;
const std::string kData = std::string(TRIDENT_SOURCE_DIR) + "/tests/data/";

/// mpirun as root in a container, TCP on loopback only; leak checks off in the MPI children
/// (Open MPI's own allocations), one BLAS thread per rank. (tests/lsan_mpi.supp suppresses Open
/// MPI instead, but LSan's tracer crashed with signal 11 at exit of complete 8-rank runs under
/// load: docs/hardening.md.)
std::string mpirun(int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return "ASAN_OPTIONS=detect_leaks=0 OPENBLAS_NUM_THREADS=1 timeout 300 mpirun "
         "--allow-run-as-root --oversubscribe -np " +
         std::to_string(ranks) +
         " --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "
         "-x ASAN_OPTIONS -x OPENBLAS_NUM_THREADS " +
         kBinary;
}

int run(const std::string& command, const std::string& log) {
  const int status = std::system((command + " > " + log + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string temp(const std::string& name) {
  return std::string("/tmp/trident_test_cli_validate_") + std::to_string(getpid()) + "_" + name;
}

}  // namespace

TEST_CASE("8-rank CPU validate writes a calibration file", "[cli][validate][mpi]") {
  const std::string out = temp("calib.json");
  const std::string log = temp("validate.log");
  const int code = run(mpirun(8) + " validate --plan " + kData + "plan_tp2_pp2_dp2.json " +
                           "--backend cpu --iters 3 --warmup 1 --timeout-s 60 --output " + out,
                       log);
  INFO(slurp(log));
  REQUIRE(code == 0);
  const Calibration c = parse_calibration(slurp(out), out);
  CHECK(c.backend == "mpi");
  CHECK(c.source == "validate");
  // tp all-reduce, pp send-recv, dp all-reduce on groups of 2; 5 sweep sizes each
  CHECK(c.collectives.size() == 15);
  bool all_reduce = false, send_recv = false;
  for (const auto& s : c.collectives) {
    CHECK(s.ranks == 2);
    CHECK(s.busbw_gbps > 0.0);
    all_reduce = all_reduce || s.collective == Collective::all_reduce;
    send_recv = send_recv || (s.collective == Collective::send_recv && s.tier == Tier::network);
  }
  CHECK(all_reduce);
  CHECK(send_recv);
  // one fit per (collective, ranks, tier): tp and dp all-reduce share (all-reduce, 2, nvlink)
  CHECK(c.fits.size() == 2);
  REQUIRE(c.gemms.size() == 2);
  CHECK(c.gemms[0].dtype == Dtype::fp32);
  CHECK(c.gemms[0].tflops > 0.0);
  REQUIRE(c.comparison.size() == 5);
  CHECK(c.comparison[0].component == "tp all-reduce");
  CHECK(c.comparison[1].component == "pp send-recv");
  CHECK(c.comparison[4].component == "gemm ffn_up");
  CHECK(slurp(log).find("predicted vs measured") != std::string::npos);
}

TEST_CASE("validate: a GEMM too large to allocate is named, not a bare bad_alloc",
          "[cli][validate][mpi]") {
  // plan_1gpu.json with its first GEMM's m raised to 2^30, uncapped (--max-gemm-dim 0): its
  // fp32 operands are (2^30 k + k n + 2^30 n) x 4 bytes, terabytes; the rank says which GEMM.
  auto doc = nlohmann::json::parse(slurp(kData + "plan_1gpu.json"));
  auto& gemm = doc["plans"][0]["gemms"][0];
  gemm["m"] = 1073741824LL;
  const std::string plan = temp("mbig.json");
  std::ofstream(plan) << doc.dump(2);
  const std::string log = temp("mbig.log");
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's allocator reports a request of terabytes as a fatal error instead of
  // throwing std::bad_alloc: what the rank says is checked in the unsanitized build only.
  SUCCEED("the sanitized build's allocator aborts on the request by design");
  return;
#endif
  const int code = run(mpirun(1) + " validate --plan " + plan +
                           " --backend cpu --iters 1 --warmup 0 --max-gemm-dim 0",
                       log);
  INFO(slurp(log));
  CHECK(code == 1);
  CHECK(slurp(log).find("trident: error: validate (rank 0): gemm " +
                        gemm["name"].get<std::string>() + " (1073741824 x ") != std::string::npos);
  CHECK(slurp(log).find("could not be allocated on this rank; cap its dimensions with "
                        "--max-gemm-dim N") != std::string::npos);
  CHECK(slurp(log).find("bad_alloc") == std::string::npos);
}

TEST_CASE("validate runs what plan --format json writes: PP 4", "[cli][validate][mpi]") {
  // The plan prices a pipeline's send-recv between two stages (comm.pp.ranks 2) whatever PP
  // is; validate read that as "expected 4 (the plan's pp)" and refused every plan with PP > 2.
  const std::string model = temp("tiny.yaml");
  std::ofstream(model) << "name: tiny\nlayers: 4\nhidden: 256\nheads: 4\nvocab: 1000\n"
                          "seq_len: 128\ntraining:\n  global_batch: 8\n";
  const std::string plan = temp("pp4.json");
  const std::string out = temp("pp4_calib.json");
  const std::string log = temp("pp4.log");
  REQUIRE(run(kBinary + " plan --gpus 4 --servers 1 --model " + model +
                  " --tp 1 --pp 4 --dp 1 --top 1 --format json --output " + plan,
              log) == 0);
  const int code = run(mpirun(4) + " validate --plan " + plan +
                           " --backend cpu --iters 3 --warmup 1 --timeout-s 60 --output " + out,
                       log);
  INFO(slurp(log));
  REQUIRE(code == 0);
  const Calibration c = parse_calibration(slurp(out), out);
  REQUIRE_FALSE(c.collectives.empty());
  for (const auto& s : c.collectives) {
    CHECK(s.collective == Collective::send_recv);  // TP 1, DP 1: the pipeline's only
    CHECK(s.ranks == 2);                           // recorded as the pair the plan prices
  }
  // calibrate --validate: validate's file merged with a copy (two runs), refitted, its own
  // predicted-vs-measured rows left out; the same file twice is refused (counted twice).
  const std::string merged = temp("merged.json");
  const std::string second = temp("pp4_calib_2.json");
  std::ofstream(second) << slurp(out);
  REQUIRE(run(kBinary + " calibrate --validate " + out + " --validate " + second + " --output " +
                  merged,
              log) == 0);
  CHECK(run(kBinary + " calibrate --validate " + out + " " + out, log) == 2);
  CHECK(slurp(log).find("the same file as --validate") != std::string::npos);
  const Calibration m = parse_calibration(slurp(merged), merged);
  CHECK(m.collectives.size() == 2 * c.collectives.size());
  CHECK(m.gemms.size() == 2 * c.gemms.size());
  REQUIRE(m.fits.size() == 1);  // (send-recv, 2 ranks, nvlink)
  CHECK(m.fits[0].collective == Collective::send_recv);
  CHECK(m.comparison.empty());
  CHECK(m.gpu == c.gpu);
  CHECK(m.backend == "mpi");
  CHECK(m.source == "calibrate --validate");
  // An nccl-tests log of another GPU beside it: refused, one line.
  CHECK(run(kBinary + " calibrate --validate " + out + " --nccl-tests " + kData +
                "nccl_tests/all_reduce_old.txt",
            log) == 2);
  CHECK(slurp(log).find("measured on 'NVIDIA A100-SXM4-80GB', the inputs before it on '" + c.gpu +
                        "'; a calibration describes one GPU type") != std::string::npos);
}

TEST_CASE("validate refuses a world size that differs from the plan", "[cli][validate][mpi]") {
  const std::string log = temp("mismatch.log");
  const int code = run(mpirun(4) + " validate --plan " + kData + "plan_tp2_pp2_dp2.json " +
                           "--backend cpu --timeout-s 20",
                       log);
  INFO(slurp(log));
  CHECK(code != 0);
  CHECK(slurp(log).find("plans[0] needs 8 ranks (tp 2 x pp 2 x dp 2) but the launcher started "
                        "4: use mpirun -np 8 (or srun -n 8)") != std::string::npos);
}

TEST_CASE("validate: malformed plan JSON exits 2", "[cli][validate]") {
  const std::string plan = temp("bad.json");
  std::ofstream(plan) << "{\"plans\": [{\"tp\": 2,";
  const std::string log = temp("bad.log");
  CHECK(run(kBinary + " validate --plan " + plan, log) == 2);
  CHECK(slurp(log).find("invalid JSON") != std::string::npos);
  // A GEMM cap below a tensor-core tile times launches, not rates: refused (0 is no cap).
  const std::string cap_log = temp("cap.log");
  CHECK(run(kBinary + " validate --max-gemm-dim 1 --plan " + plan, cap_log) == 2);
  CHECK(slurp(cap_log) ==
        "trident: error: --max-gemm-dim: expected 0 (no cap) or at least 64, got '1' (see "
        "--help)\n");
}

TEST_CASE("calibrate reads the three nccl-tests formats", "[cli][calibrate]") {
  const std::string out = temp("nccl.json");
  const std::string log = temp("calibrate.log");
  // The three logs ran on three GPUs: each is its own calibration.
  struct Format {
    const char* file;
    std::size_t rows;
    Tier tier;
    const char* gpu;
  };
  for (const Format& f :
       {Format{"all_reduce_old.txt", 5, Tier::nvlink, "NVIDIA A100-SXM4-80GB"},
        Format{"all_gather_new.txt", 5, Tier::network, "NVIDIA H100 80GB HBM3"},
        Format{"sendrecv.json", 4, Tier::nvlink, "NVIDIA H200"},
        // srun -l labels, NCCL_TESTS_SPLIT_MASK=0x7: 8 pairs across 2 hosts
        Format{"all_reduce_split_srun.txt", 6, Tier::network, "NVIDIA H100 80GB HBM3"}}) {
    INFO(f.file);
    std::string command = kBinary;
    for (const std::string& part :
         {std::string(" calibrate --nccl-tests "), kData, std::string("nccl_tests/"),
          std::string(f.file), std::string(" --output "), out}) {
      command += part;
    }
    const int code = run(command, log);
    INFO(slurp(log));
    REQUIRE(code == 0);
    const Calibration c = parse_calibration(slurp(out), out);
    CHECK(c.collectives.size() == f.rows);
    REQUIRE(c.fits.size() == 1);
    CHECK(c.fits[0].tier == f.tier);  // one host, two hosts, one host, a pair over two hosts
    CHECK(c.gpu == f.gpu);
    if (std::string(f.file).starts_with("all_reduce_split")) {
      CHECK(c.fits[0].ranks == 2);  // the split communicator's, not the 16 of the device lines
      CHECK(slurp(log).starts_with(
          "all_reduce_perf: 2 ranks on 2 host(s) (group 0, rank 0's, of 8 split groups measured at "
          "once, NCCL_TESTS_SPLIT), NVIDIA H100 80GB HBM3, NCCL 2.26.3 -> all-reduce as "
          "network\n"));
    }
  }
  // Together they were merged under the first's GPU: a calibration describes one GPU type.
  CHECK(run(kBinary + " calibrate --nccl-tests " + kData + "nccl_tests/all_reduce_old.txt " +
                kData + "nccl_tests/all_gather_new.txt --output " + out,
            log) == 2);
  CHECK(slurp(log) == "trident: error: --nccl-tests " + kData +
                          "nccl_tests/all_gather_new.txt: measured on 'NVIDIA H100 80GB HBM3', "
                          "the inputs before it on 'NVIDIA A100-SXM4-80GB'; a calibration "
                          "describes one GPU type\n");
  CHECK(run(kBinary + " calibrate --nccl-tests " + kData + "plan_1gpu.json", log) == 2);
}

TEST_CASE("calibrate --tier against the log's hosts: said beside the summary", "[cli]") {
  // all_gather_new.txt ran 8 ranks on 2 hosts: read as nvlink only in a rack-scale domain;
  // sendrecv.json ran on one host: read as network only with NCCL kept off NVLink.
  const std::string log = temp("tier_note.log");
  REQUIRE(run(kBinary + " calibrate --nccl-tests " + kData +
                  "nccl_tests/all_gather_new.txt --tier nvlink --output " + temp("tn1.json"),
              log) == 0);
  CHECK(slurp(log).find("# note: " + kData +
                        "nccl_tests/all_gather_new.txt: ranks on 2 hosts read as nvlink "
                        "(--tier): right for one rack-scale NVLink domain") != std::string::npos);
  REQUIRE(run(kBinary + " calibrate --nccl-tests " + kData +
                  "nccl_tests/sendrecv.json --tier network --output " + temp("tn2.json"),
              log) == 0);
  CHECK(slurp(log).find("sendrecv.json: every rank on one host read as network (--tier)") !=
        std::string::npos);
  // PCIe does not reach another host: said so, not as a rack-scale domain.
  REQUIRE(run(kBinary + " calibrate --nccl-tests " + kData +
                  "nccl_tests/all_gather_new.txt --tier pcie --output " + temp("tn4.json"),
              log) == 0);
  CHECK(slurp(log).find("all_gather_new.txt: ranks on 2 hosts read as pcie (--tier): PCIe does "
                        "not reach another host") != std::string::npos);
  // The tier the hosts say: no note.
  REQUIRE(run(kBinary + " calibrate --nccl-tests " + kData +
                  "nccl_tests/all_gather_new.txt --tier network --output " + temp("tn3.json"),
              log) == 0);
  CHECK(slurp(log).find("# note:") == std::string::npos);
}

TEST_CASE("plan --calibration refuses link fits the cluster's links cannot carry", "[cli][plan]") {
  // all_gather_new.txt: two H100 servers over the network, a 57.8 GB/s fit; the same file with
  // the fit raised to 19355 GB/s (43x a 450 GB/s NVLink, 387x dgx-h100's 50 GB/s NIC share) or
  // lowered to 0.00001 GB/s is refused at the key.
  const std::string calib = temp("links_calib.json");
  const std::string log = temp("links.log");
  REQUIRE(run(kBinary + " calibrate --nccl-tests " + kData + "nccl_tests/all_gather_new.txt" +
                  " --output " + calib,
              log) == 0);
  const std::string plan =
      kBinary + " plan --gpus 16 --servers 2 --model llama3-8b --top 1 --calibration " + calib;
  REQUIRE(run(plan, log) == 0);
  auto doc = nlohmann::json::parse(slurp(calib));
  // Failures do not move the bound: it is the links as built (six of server 0's eight NICs
  // down leave 12.5 GB/s a GPU there; the 57.8 GB/s fit was measured on all of them).
  std::string nics;
  for (int nic = 0; nic < 6; ++nic) nics += " --fail-link nic:0/" + std::to_string(nic);
  CHECK(run(plan + nics, log) == 0);
  // A network fit reads the ring's crossing traffic over every NIC of a server: 373 GB/s
  // between two H100 servers (8 x 50 GB/s) is within reach.
  doc["fits"][0]["busbw_gbps"] = 373.0;
  std::ofstream(calib) << doc.dump(2);
  CHECK(run(plan, log) == 0);
  for (const double busbw : {19355.0, 1e-5}) {
    doc["fits"][0]["busbw_gbps"] = busbw;
    std::ofstream(calib) << doc.dump(2);
    CHECK(run(plan, log) == 2);
    CHECK(slurp(log).find("fits[0].busbw_gbps: " + fmt::format("{:g}", busbw) +
                          " GB/s over network is ") != std::string::npos);
    CHECK(slurp(log).find(busbw > 1.0 ? "more than 3x the cluster dgx-h100's 400 GB/s of an "
                                        "NVLink domain's NICs"
                                      : "under a thousandth of the cluster dgx-h100's 50 GB/s a "
                                        "GPU there") != std::string::npos);
  }
}

TEST_CASE("validate on the planner's own plan; plan --calibration then predicts slower",
          "[cli][validate][mpi][plan]") {
  const std::string plan_args =
      " plan --gpus 8 --servers 2 --gpu h100-sxm-80g --model llama2-7b "
      "--tp 2 --pp 2 --dp 2 --format json --output ";
  const std::string plan = temp("plan.json");
  const std::string calibrated = temp("plan_calibrated.json");
  const std::string calib = temp("planner_calib.json");
  const std::string log = temp("planner.log");
  REQUIRE(run(kBinary + plan_args + plan, log) == 0);
  const int code = run(mpirun(8) + " validate --plan " + plan + " --backend cpu --iters 2 " +
                           "--warmup 1 --max-bytes 1048576 --max-gemm-dim 128 --output " + calib,
                       log);
  INFO(slurp(log));
  REQUIRE(code == 0);
  REQUIRE(run(kBinary + plan_args + calibrated + " --calibration " + calib, log) == 0);
  const auto before = nlohmann::json::parse(slurp(plan))["plans"][0]["step_time_s"].get<double>();
  const auto after =
      nlohmann::json::parse(slurp(calibrated))["plans"][0]["step_time_s"].get<double>();
  // loopback TCP moves well under 1 GB/s against NVLink's default 450 GB/s: slower, not faster
  CHECK(after > before);
}

TEST_CASE("validate runs a plan's CP ring send-recv and EP all-to-all at the plan's sizes",
          "[cli][validate][mpi][plan]") {
  const std::string plan = temp("plan_cp_ep.json");
  const std::string calib = temp("cp_ep_calib.json");
  const std::string log = temp("cp_ep.log");
  REQUIRE(run(kBinary + " plan --gpus 8 --servers 1 --model " + kData +
                  "tiny-moe.yaml --cp 2 --ep 4 --tp 2 --dp 2 --top 1 --format json --output " +
                  plan,
              log) == 0);
  const int code = run(mpirun(8) + " validate --plan " + plan + " --backend cpu --iters 2 " +
                           "--warmup 1 --max-bytes 1048576 --max-gemm-dim 128 --output " + calib,
                       log);
  INFO(slurp(log));
  REQUIRE(code == 0);
  const std::string out = slurp(log);
  CHECK(out.find("cp   send-recv") != std::string::npos);
  CHECK(out.find("ep   all-to-all") != std::string::npos);
  const auto c = nlohmann::json::parse(slurp(calib));
  bool all_to_all = false;
  for (const auto& fit : c.at("fits"))
    all_to_all = all_to_all || fit.at("collective") == "all-to-all";
  CHECK(all_to_all);
}
