// Bad input everywhere, end to end: every command and flag given a bad value or a broken file
// exits 2 with exactly one line on stderr that names the input, the position and what was
// expected, prints nothing on stdout and leaves no output file behind. Absurd but well-formed
// inputs give a correct answer (finite, positive numbers) or such an error.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace {

const std::string kBinary = TRIDENT_BINARY;
const std::string kData = std::string(TRIDENT_SOURCE_DIR) + "/tests/data/";

using cli_test::Run;
using cli_test::slurp;

/// A file in a per-process scratch folder (removed at exit by the OS's /tmp policy).
std::string scratch(const std::string& name) {
  const std::string dir = "/tmp/trident_test_bad_input_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

std::string write(const std::string& name, const std::string& text) {
  std::string path = scratch(name);
  std::ofstream(path) << text;
  return path;
}

Run trident(const std::string& args) {
  const std::string out = scratch("stdout.txt");
  const std::string err = scratch("stderr.txt");
  // In ASan builds a command that starts MPI (validate) leak-checks Open MPI's exit-time
  // allocations too: suppress those (tests/lsan_mpi.supp), never trident's own.
  const std::string env =
      "ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 LSAN_OPTIONS="
      "suppressions=" +
      std::string(TRIDENT_SOURCE_DIR) +
      "/tests/lsan_mpi.supp:print_suppressions=0 "
      "OMPI_MCA_mca_base_component_disable_dlclose=1 ";
  const int status = std::system(
      (env + "timeout 120 " + kBinary + " " + args + " > " + out + " 2> " + err).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

/// Exit 2, nothing on stdout (unless the command reports progress there before the error), one line
/// on stderr: "trident: error: " + `message` (a prefix when `message` ends with "...").
void check_refused(const std::string& args, std::string message, bool report_before = false) {
  const Run r = trident(args);
  INFO("trident " << args << "\nstderr: " << r.err << "stdout: " << r.out.substr(0, 300));
  CHECK(r.code == 2);
  if (!report_before) CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  const bool prefix = message.ends_with("...");
  if (prefix) message.resize(message.size() - 3);
  const std::string expected = "trident: error: " + message;
  if (prefix) {
    CHECK(r.err.starts_with(expected));
  } else {
    CHECK(r.err == expected + "\n");
  }
}

const std::string kModel = " --gpus 8 --servers 1 --model llama3-8b";
const std::string kSmi = kData + "topo/h100_hgx_nvidia_smi.txt";

const std::string kClusterHead =
    "name: absurd\ngpu: h100-sxm-80g\nservers: SERVERS\ngpus_per_server: PER\nnvlink:\n"
    "  domain_gpus: PER\n  kind: switch\n  links_per_gpu: 18\n  gbps_per_link: NVLINK\n"
    "network:\n  nics_per_server: 8\n  nic_gbits: NIC\n";

/// The cluster YAML above with its placeholders filled.
std::string cluster_yaml(const std::string& servers, const std::string& per,
                         const std::string& nvlink, const std::string& nic) {
  std::string text = kClusterHead;
  const std::pair<std::string, std::string> fills[] = {
      {"SERVERS", servers}, {"PER", per}, {"PER", per}, {"NVLINK", nvlink}, {"NIC", nic}};
  for (const auto& [key, value] : fills) text.replace(text.find(key), key.size(), value);
  return text;
}

std::string model_yaml(const std::string& layers, const std::string& hidden,
                       const std::string& heads, const std::string& vocab,
                       const std::string& seq_len, const std::string& batch) {
  return "name: absurd\nlayers: " + layers + "\nhidden: " + hidden + "\nheads: " + heads +
         "\nvocab: " + vocab + "\nseq_len: " + seq_len + "\ntraining:\n  global_batch: " + batch +
         "\n";
}

/// Every number in a plan document is finite (JSON has no inf/NaN: they would print as null),
/// every time is non-negative and every step time positive.
void check_numbers(const nlohmann::json& value, const std::string& key) {
  INFO("key " << key);
  CHECK_FALSE(value.is_null());
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) check_numbers(v, k);
  } else if (value.is_array()) {
    for (const auto& v : value) check_numbers(v, key);
  } else if (value.is_number()) {
    const double x = value.get<double>();
    CHECK(std::isfinite(x));
    if (key.ends_with("_s") || key == "compute_s" || key.ends_with("_gib")) CHECK(x >= 0.0);
    if (key == "step_time_s" || key == "tokens_per_s" || key == "mfu") CHECK(x > 0.0);
  }
}

/// Runs a plan that must succeed and checks its JSON.
nlohmann::json check_answer(const std::string& args) {
  const Run r = trident(args + " --format json --top 3");
  INFO("trident " << args << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  auto doc = nlohmann::json::parse(r.out);
  REQUIRE(!doc.at("plans").empty());
  check_numbers(doc.at("plans"), "plans");
  return doc;
}

}  // namespace

TEST_CASE("bad input: plan flags", "[bad_input][plan]") {
  check_refused("plan --gpus 0", "--gpus: expected a positive integer, got '0' (see --help)");
  check_refused("plan --gpus abc", "--gpus: expected a positive integer, got 'abc' (see --help)");
  // Past INT_MAX (2147483647): the project's wording with the bound (it was CLI11's "Could not
  // convert: --gpus = 99999999999"), also past long long.
  check_refused("plan --gpus 99999999999",
                "--gpus: expected a positive integer at most 16777216, got '99999999999' (see "
                "--help)");
  check_refused("plan --top 99999999999999999999",
                "--top: expected a positive integer at most 2147483647, got '99999999999999999999' "
                "(see --help)");
  check_refused("plan --gpus", "--gpus: expected a value (INT:N), got none (see --help)");
  // A leading zero would read as octal (CLI11's base detection: 010 = 8) or fail in its words.
  check_refused(
      "plan --gpus 010",
      "--gpus: expected a positive integer without leading zeros, got '010' (see --help)");
  check_refused("plan --tp 09",
                "--tp: expected a positive integer without leading zeros, got '09' (see --help)");
  check_refused("topo --version",
                "topo: expected a command: show|import (see trident topo --help)");
  check_refused("", "expected a command: plan|topo|validate|calibrate|presets (see --help)");
  check_refused("topo", "topo: expected a command: show|import (see trident topo --help)");
  check_refused("plan --servers 3 --gpus 16", "--gpus 16: not divisible into 3 servers");
  check_refused("plan --bogus", "not a flag or value of this command: --bogus (see --help)");
  check_refused("plan" + kModel + " --tp 0",
                "--tp: expected a positive integer, got '0' (see --help)");
  check_refused("plan" + kModel + " --dp -1",
                "--dp: expected a positive integer, got '-1' (see --help)");
  check_refused("plan" + kModel + " --pp 1000",
                "--pp 1000: more stages than the model's 32 layers");
  check_refused("plan" + kModel + " --micro-batch 0",
                "--micro-batch: expected a positive integer, got '0' (see --help)");
  check_refused("plan" + kModel + " --vp 0",
                "--vp: expected a positive integer, got '0' (see --help)");
  check_refused("plan" + kModel + " --recompute maybe",
                "--recompute: expected none|selective|full, got 'maybe' (see --help)");
  check_refused("plan" + kModel + " --zero 4", "--zero: expected 0|1|2|3, got '4' (see --help)");
  check_refused("plan" + kModel + " --sequence-parallel yes",
                "--sequence-parallel: expected on|off, got 'yes' (see --help)");
  check_refused("plan" + kModel + " --top -1",
                "--top: expected a positive integer, got '-1' (see --help)");
  check_refused("plan" + kModel + " --top 0",
                "--top: expected a positive integer, got '0' (see --help)");
  check_refused("plan" + kModel + " --format xml",
                "--format: expected table|json|csv, got 'xml' (see --help)");
  check_refused("plan" + kModel + " --explain 0",
                "--explain: expected a positive integer, got '0' (see --help)");
  check_refused("plan" + kModel + " --explain 999999", "--explain 999999: the ranking has ...");
  check_refused("plan" + kModel + " --emit foo",
                "--emit 'foo': expected megatron|nemo|nemo-hydra|deepspeed|torchtitan|"
                "megatron-deepspeed, optionally @VERSION: megatron@core_v0.19.0|nemo@v2.4.0|"
                "nemo-hydra@v2.4.0|deepspeed@v0.19.5|deepspeed@v0.19.3|torchtitan@v0.2.2|"
                "megatron-deepspeed@f4157bea");
  check_refused("plan" + kModel + " --min-tp 4 --max-tp 2", "--min-tp 4 is above --max-tp 2");
  check_refused("plan" + kModel + " --fail-link bogus",
                "--fail-link 'bogus': expected KIND:WHERE, one of nvlink:SERVER/GPU[:COUNT|:all], "
                "mesh:SERVER/GPU-GPU, nic:SERVER/NIC, gpu:SERVER/GPU, server:SERVER");
  check_refused("plan" + kModel + " --fail-link server:5",
                "--fail-link 'server:5': server 5 does not exist (cluster has 1 server, 0)");
  check_refused("plan" + kModel + " --fail-link gpu:0/0 --fail-link gpu:0/0",
                "--fail-link 'gpu:0/0': names the same part as 'gpu:0/0'");
}

TEST_CASE("bad input: plan files and presets", "[bad_input][plan]") {
  check_refused("plan --cluster nope", "--cluster nope: unknown cluster preset; known: ...");
  check_refused("plan --gpu nope", "--gpu nope: unknown GPU preset; known: ...");
  check_refused("plan --model gpt5", "--model gpt5: unknown model preset; known: ...");
  check_refused("plan --model /nonexistent/m.yaml",
                "--model '/nonexistent/m.yaml': cannot read the file: No such file or directory");
  const std::string missing = write("missing.yaml", "name: x\nlayers: 2\n");
  check_refused("plan --model " + missing, missing + ":1: hidden: missing required key");
  const std::string vocab0 = write("vocab0.yaml", model_yaml("2", "64", "4", "0", "16", "8"));
  check_refused("plan --model " + vocab0,
                vocab0 + ":5: vocab: expected a positive integer, got '0'");
  const std::string empty = write("empty.yaml", "");
  check_refused("plan --model " + empty, empty + ":1: document: expected a mapping, got nothing");
  const std::string bad = write("bad.json", "{bad json");
  check_refused("plan --model " + bad, bad + ":1: invalid YAML: end of map flow not found");
  check_refused("plan" + kModel + " --calibration /nonexistent/c.json",
                "--calibration '/nonexistent/c.json': cannot read the file: "
                "No such file or directory");
  // The line and column of the byte nlohmann stopped at, its reason without its own tag.
  check_refused("plan" + kModel + " --calibration " + bad,
                bad + ":1: invalid JSON at column 2: syntax error while parsing object key ...");
  const std::string huge = write("huge.json", "{\"trident_calibration\": 1e999}");
  check_refused("plan" + kModel + " --calibration " + huge,
                huge + ": invalid JSON: number overflow ...");
}

TEST_CASE("bad input: topo", "[bad_input][topo]") {
  check_refused("topo show --cluster nope", "--cluster nope: unknown cluster preset; known: ...");
  check_refused("topo show --format xml", "--format: expected table|json, got 'xml' (see --help)");
  check_refused("topo import", "topo import: give one of --nvidia-smi FILE or --nccl-xml FILE");
  check_refused("topo import --nvidia-smi /nonexistent/t.txt",
                "--nvidia-smi '/nonexistent/t.txt': cannot read the file: "
                "No such file or directory");
  const std::string empty = write("empty_topo.txt", "");
  check_refused("topo import --nvidia-smi " + empty,
                empty +
                    ": no `nvidia-smi topo -m` matrix found (expected a header line starting "
                    "with GPU0)");
  const std::string bad = write("bad_topo.xml", "{bad json");
  check_refused("topo import --nccl-xml " + bad,
                bad + ":1: not valid XML (XML_ERROR_PARSING_TEXT)");
  check_refused("topo import --nvidia-smi " + kSmi + " --servers 0",
                "--servers: expected a positive integer, got '0' (see --help)");
  check_refused("topo import --nvidia-smi " + kSmi + " --gpu nope",
                "--gpu: unknown GPU preset 'nope'; known: ...");
  check_refused("topo import --nvidia-smi " + kSmi + " --nic-gbits -1",
                "--nic-gbits: expected a positive number, got '-1' (see --help)");
  check_refused("topo import --nvidia-smi " + kSmi + " --nvlink-gbps nan",
                "--nvlink-gbps: expected a positive number, got 'nan' (see --help)");
  check_refused("topo import --nvidia-smi " + kSmi + " --output /nonexistent/x.yaml",
                "--output '/nonexistent/x.yaml': cannot write: No such file or directory");
}

TEST_CASE("bad input: calibrate, validate, presets", "[bad_input]") {
  check_refused("calibrate --nccl-tests /nonexistent/l.txt",
                "--nccl-tests '/nonexistent/l.txt': cannot read the file: "
                "No such file or directory");
  const std::string empty = write("empty.log", "");
  check_refused("calibrate --nccl-tests " + empty,
                empty +
                    ": no nccl-tests result table (a '#  size  count  type ...' header "
                    "followed by rows)");
  const std::string log = kData + "nccl_tests/sendrecv.json";
  check_refused("calibrate --nccl-tests " + log + " --tier fast",
                "--tier: expected nvlink|pcie|network, got 'fast' (see --help)");
  check_refused("calibrate --nccl-tests " + log + " --output /nonexistent/c.json",
                "--output '/nonexistent/c.json': cannot write: No such file or directory", true);
  // Samples within the bounds whose fit is none: a few bytes in minutes. The fit is named; it was
  // "calibration:32: fits[0].busbw_gbps", the line of calibrate's own text.
  const auto samples = [](const std::vector<std::string>& bytes_and_times) {
    std::string out =
        "{\"trident_calibration\": 1, \"gemms\": [], \"fits\": [], \"collectives\": [";
    for (const std::string& sample : bytes_and_times) {
      out += std::string(out.back() == '[' ? "" : ",") +
             "\n{\"collective\": \"all-reduce\", \"ranks\": 8, \"tier\": \"nvlink\", "
             "\"busbw_gbps\": 1, \"bytes\": " +
             sample + "}";
    }
    return out + "]}";
  };
  check_refused("calibrate --validate " +
                    write("slow.json", samples({"8, \"time_s\": 100", "16, \"time_s\": 200",
                                                "32, \"time_s\": 400"})),
                "calibrate --validate: the all-reduce fit over 8 ranks (nvlink) comes out at "
                "1.4e-10 GB/s and 0 us, outside what plan --calibration reads (1e-06 to 1e+06 "
                "GB/s, at most 1000 s): its samples' bytes and times are no GPU's");
  // A sample faster than any link (1e-300 s: its fit said "-nan GB/s and 0 us", naming no file
  // or key) is refused at its line, as the nccl-tests reader refuses such a row.
  const std::string tiny =
      write("tiny.json", samples({"1e9, \"time_s\": 0.005", "2e9, \"time_s\": 1e-300"}));
  check_refused("calibrate --validate " + tiny,
                tiny +
                    ":3: collectives[1].time_s: 1e-300 s for 2e+09 bytes is a bus bandwidth "
                    "above 1e+06 GB/s, past any link; expected at least 3.5e-06 s");
  // A 40,000-letter line (or -J's args[0]) overflowed std::regex's recursion: SIGSEGV.
  const std::string long_line = write("long.txt", std::string(40000, 'x') + "\n");
  check_refused("calibrate --nccl-tests " + long_line + " --output " + scratch("o.json"),
                long_line +
                    ": no nccl-tests result table (a '#  size  count  type ...' header followed "
                    "by rows)");
  const std::string long_json =
      write("long.json", "{\"version\": 2, \"args\": [\"./build/" + std::string(40000, 'x') +
                             "\"], \"config\": {\"nthreads\": 1, \"ngpus\": 2}, "
                             "\"results\": []}");
  check_refused("calibrate --nccl-tests " + long_json,
                long_json +
                    ": args: cannot tell which nccl-tests binary wrote this file (no '*_perf' "
                    "name in args[0] nor in the file name)");
  const std::string plan = kData + "plan_1gpu.json";
  check_refused("validate --plan /nonexistent/p.json",
                "--plan '/nonexistent/p.json': cannot read the file: No such file or directory");
  const std::string bad = write("bad_plan.json", "{\"plans\": [");
  check_refused("validate --plan " + bad, bad + ":1: invalid JSON at column ...");
  check_refused("validate --plan " + plan + " --plan-index 5",
                plan + ":8: plans[5]: missing (the file has 1 plans; see --plan-index)");
  check_refused("validate --plan " + plan + " --plan-index -1",
                "--plan-index: expected a non-negative integer, got '-1' (see --help)");
  check_refused("validate --plan " + plan + " --backend fpga",
                "--backend: expected auto|cuda|cpu, got 'fpga'");
  check_refused("validate --plan " + plan + " --iters 0",
                "--iters: expected a positive integer at most 100000, got '0' (see --help)");
  check_refused(
      "validate --plan " + plan + " --iters 2147483647",
      "--iters: expected a positive integer at most 100000, got '2147483647' (see --help)");
  check_refused("validate --plan " + plan + " --warmup -1",
                "--warmup: expected a non-negative integer at most 100000, got '-1' (see --help)");
  check_refused(
      "validate --plan " + plan + " --warmup 2147483647",
      "--warmup: expected a non-negative integer at most 100000, got '2147483647' (see --help)");
  check_refused("validate --plan " + plan + " --timeout-s 0",
                "--timeout-s: expected a positive number, got '0' (see --help)");
  check_refused("validate --plan " + plan + " --max-bytes -5",
                "--max-bytes: expected a positive integer at most 1099511627776, got '-5' (see "
                "--help)");
  // A fraction of a byte (it ran 8 bytes and fitted 0 GB/s) and past any GPU's memory.
  check_refused("validate --plan " + plan + " --max-bytes 0.5",
                "--max-bytes: expected a positive integer at most 1099511627776, got '0.5' (see "
                "--help)");
  check_refused("validate --plan " + plan + " --max-bytes 1e308",
                "--max-bytes: expected a positive integer at most 1099511627776, got '1e308' (see "
                "--help)");
  // Below the smallest message validate sends (one fp32 element on each of 2 ranks): it ran 8
  // bytes under a header saying "messages capped at 3 bytes", busbw 0.000.
  check_refused("validate --plan " + plan + " --max-bytes 3",
                "--max-bytes: expected at least 8 (one fp32 element on each of 2 ranks, the "
                "smallest message validate sends), got '3' (see --help)");
  // ... and below the plan's own smallest, one element on each rank of its widest group (before
  // MPI starts: the plan read first).
  const std::string wide = kData + "plan_cp2_ep4.json";
  check_refused("validate --plan " + wide + " --max-bytes 12",
                "--max-bytes: expected at least 16, the smallest message of " + wide +
                    " plans[0]'s dp group (one fp32 element on each of its 4 ranks), got 12");
  // A collective trident models that validate does not run: refused with its line before MPI
  // starts (it failed after, exit 1, naming no file or key).
  std::string text = slurp(kData + "plan_tp2_pp2_dp2.json");
  text.replace(text.find("\"collective\": \"all-reduce\""), 26, "\"collective\": \"broadcast\"");
  const std::string broadcast = write("broadcast_plan.json", text);
  check_refused("validate --plan " + broadcast,
                broadcast +
                    ":23: plans[0].comm.tp.collective: 'broadcast': validate does not run "
                    "broadcast (it runs all-reduce, all-gather, reduce-scatter, send-recv and "
                    "all-to-all)");
  check_refused("presets --bogus", "not a flag or value of this command: --bogus (see --help)");
  check_refused("presets extra", "not a flag or value of this command: extra (see --help)");
}

TEST_CASE("bad input: no partial output file is left behind", "[bad_input][output]") {
  const std::string out = scratch("never.json");
  check_refused("plan" + kModel + " --tp 8 --pp 2 --output " + out,
                "--tp 8 x --pp 2 = 16 GPUs; the cluster has 8");
  CHECK_FALSE(std::filesystem::exists(out));
  check_refused("plan" + kModel + " --explain 999999 --output " + out,
                "--explain 999999: the ranking has ...");
  CHECK_FALSE(std::filesystem::exists(out));
  const std::string svg = scratch("never.svg");
  check_refused("plan" + kModel + " --tp 8 --pp 2 --svg " + svg, "--tp 8 x --pp 2 = 16 GPUs; ...");
  CHECK_FALSE(std::filesystem::exists(svg));
  const std::string report = scratch("never_report");
  check_refused("plan" + kModel + " --tp 8 --pp 2 --report " + report,
                "--tp 8 x --pp 2 = 16 GPUs; ...");
  CHECK_FALSE(std::filesystem::exists(report));
  const std::string kept = write("kept.json", "keep");  // an existing file stays as it was
  check_refused("plan" + kModel + " --zero 7 --output " + kept,
                "--zero: expected 0|1|2|3, got '7' (see --help)");
  CHECK(slurp(kept) == "keep");
  const std::string yaml = scratch("never.yaml");
  check_refused("topo import --nvidia-smi " + kSmi + " --gpu nope --output " + yaml,
                "--gpu: unknown GPU preset 'nope'; known: ...");
  CHECK_FALSE(std::filesystem::exists(yaml));
  const std::string calib = scratch("never_calib.json");
  check_refused("calibrate --nccl-tests " + write("e.log", "") + " --output " + calib, "...");
  CHECK_FALSE(std::filesystem::exists(calib));
}

TEST_CASE("absurd inputs: an error naming the input, never an overflow", "[bad_input][absurd]") {
  // 10^9 GPUs: refused at the flag (2^24 is the documented limit; until round thirty-three
  // at the cluster, the flag naming an int's 2^31 - 1); past 2^24 only as servers x GPUs per
  // server, at the cluster (servers x gpus_per_server would overflow an int at 2^31, and the
  // planner walks every GPU).
  check_refused("plan --gpus 1000000000 --servers 125000000",
                "--gpus: expected a positive integer at most 16777216, got '1000000000' (see "
                "--help)");
  check_refused("plan --servers 2097153 --gpus-per-server 8",
                "--servers 2097153 --gpus-per-server 8: servers: 2097153 servers x 8 GPUs = "
                "16777224 GPUs; at most 16777216");
  const std::string huge = write("huge.yaml", cluster_yaml("2000000000", "8", "25", "400"));
  check_refused("plan --cluster " + huge,
                huge +
                    ":3: servers: 2000000000 servers x 8 GPUs = 16000000000 GPUs; at most "
                    "16777216");
  check_refused("topo show --cluster " + huge, huge + ":3: servers: ...");
  const std::string vocab0 = write("v0.yaml", model_yaml("2", "64", "4", "0", "16", "8"));
  check_refused("plan --model " + vocab0, vocab0 + ":5: vocab: ...");
  // A GPU of 1e-300 TFLOP/s gave a step of 1.6e305 s; a little less and it was inf.
  const std::string slow_gpu =
      write("slow_gpu.yaml",
            "name: slowpoke\npeak_tflops:\n  bf16: 1e-300\nmemory_gib: 80\n"
            "memory_gbps: 3000\n");
  check_refused("plan" + kModel + " --gpu " + slow_gpu,
                slow_gpu + ":3: peak_tflops.bf16: expected a number in [1e-12, 1e+12], got 1e-300");
  // A calibrated bus bandwidth of 1e-308 GB/s made the step time NaN (printed as null).
  const std::string calib =
      write("tiny_busbw.json",
            "{\"trident_calibration\": 1, \"gemms\": [], \"collectives\": [], \"fits\": "
            "[{\"collective\": \"all-reduce\", \"ranks\": 8, \"tier\": \"nvlink\", "
            "\"latency_s\": 1e-5, \"busbw_gbps\": 1e-308}]}");
  check_refused("plan" + kModel + " --tp 8 --calibration " + calib,
                calib + ":1: fits[0].busbw_gbps: expected at least 1e-06");
}

TEST_CASE("absurd inputs: a correct answer with finite, positive numbers", "[bad_input][absurd]") {
  const std::string one_gpu = write("one.yaml", cluster_yaml("1", "1", "25", "400"));
  const std::string small = write("small.yaml", model_yaml("4", "256", "4", "1000", "1024", "8"));
  const auto single = check_answer("plan --cluster " + one_gpu + " --model " + small);
  CHECK(single["plans"][0]["tp"] == 1);
  CHECK(single["plans"][0]["pp"] == 1);
  CHECK(single["plans"][0]["dp"] == 1);
  // Bandwidth 1e-9 GB/s on NVLink and 1e-9 Gb/s on the NICs: slow, but a number.
  const std::string slow = write("slow.yaml", cluster_yaml("1", "8", "1e-9", "1e-9"));
  (void)check_answer("plan --cluster " + slow + " --model " + small);
  // The table too: tokens/s below 100 with three significant digits and MFU below 0.1% with
  // two, not "0" and "0.0" beside the JSON's positive rates.
  const auto slow_table =
      cli_test::run_trident("plan --cluster " + slow + " --model " + small + " --top 1");
  REQUIRE(slow_table.code == 0);
  const std::string row = slow_table.out.substr(slow_table.out.find("\n   1 ") + 1);
  std::stringstream cells(row.substr(0, row.find('\n')));
  std::vector<std::string> words;
  for (std::string word; cells >> word;) words.push_back(word);
  REQUIRE(words.size() > 11);
  CHECK(std::stod(words[10]) > 0.0);    // tokens/s
  CHECK(std::stod(words[10]) < 100.0);  // the case: printed "0" before
  CHECK(std::stod(words[11]) > 0.0);    // MFU %
  // Global batch 1: DP 1, one micro-batch.
  const auto batch1 = check_answer("plan" + kModel + " --global-batch 1");
  CHECK(batch1["plans"][0]["dp"] == 1);
  CHECK(batch1["plans"][0]["num_micro_batches"] == 1);
  // 10^6 layers (tiny ones) and a 10^7-token sequence.
  const std::string deep = write("deep.yaml", model_yaml("1000000", "16", "1", "1000", "128", "8"));
  (void)check_answer("plan --gpus 8 --servers 1 --model " + deep);
  const std::string long_seq =
      write("long.yaml", model_yaml("4", "256", "4", "1000", "10000000", "8"));
  (void)check_answer("plan --gpus 8 --servers 1 --model " + long_seq);
  // 2x10^8 layers on a GPU of 10^9 GiB: the fewest recomputed layers is a binary search over
  // the chunk's counts (their list took 1 GB and a minute).
  std::string huge_gpu;
  for (std::string line; const char c : cli_test::run_trident("presets --show h100-sxm-80g").out) {
    if (c != '\n') {
      line += c;
      continue;
    }
    huge_gpu += (line.starts_with("memory_gib:") ? "memory_gib: 1e9" : line) + "\n";
    line.clear();
  }
  const std::string big_gpu = write("huge_gpu.yaml", huge_gpu);
  const std::string deeper =
      write("deeper.yaml", model_yaml("200000000", "8", "1", "1", "8", "16777216"));
  (void)check_answer("plan --gpus 8 --servers 1 --gpu " + big_gpu + " --model " + deeper);
}
