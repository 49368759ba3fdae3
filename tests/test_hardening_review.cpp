// Hardening, round three, end to end: what an adversarial review of the CLI found (2026-12-03,
// docs/hardening.md "Round three"). Each run exits 2 with one line naming the input and what
// was expected, and leaves the scene's folder as it was (hardening_scene.h).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "hardening_scene.h"

namespace {

using hardening_test::check_refused;
using hardening_test::kData;
using hardening_test::kPlan;
using hardening_test::kTinyModel;
using hardening_test::replaced;
using hardening_test::Scene;

std::string slurp_data(const std::string& name) { return cli_test::slurp(kData + name); }

}  // namespace

TEST_CASE("review: YAML aliases that cycle or multiply are refused before any reader walks them",
          "[hardening]") {
  Scene scene;
  // "&a [*a]" is a list that contains itself: every reader recursed until the stack overflowed.
  scene.write("cycle.yaml", "x: &a [*a]\n");
  check_refused(scene, "plan --model cycle.yaml",
                "cycle.yaml:1: invalid YAML: an alias inside the node its anchor names (a "
                "cycle); expected a tree");
  scene.write("cycle_map.yaml", "a: &a {b: *a}\n");
  check_refused(scene, "plan --cluster cycle_map.yaml", "cycle_map.yaml:1: invalid YAML: ...");
  // Ten aliases a level: level 6 (line 7) is 11,111,111 nodes, past the 5,000,000 limit,
  // refused at its line (counted, never expanded: the twelve levels the review tried took
  // minutes to walk).
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 12; ++level) {
    const std::string name = std::to_string(level);
    bomb.append("a").append(name).append(": &a").append(name).append(" [");
    const std::string alias = std::string("*a").append(std::to_string(level - 1));
    for (int i = 0; i < 10; ++i) {
      if (i > 0) bomb += ", ";
      bomb += alias;
    }
    bomb += "]\n";
  }
  scene.write("bomb.yaml", bomb);
  check_refused(scene, "plan --stack bomb.yaml",
                "bomb.yaml:7: invalid YAML: the document, its aliases expanded, has more than "
                "5000000 nodes; expected plain data");
  // An alias used as YAML means it still loads: the unknown key is the only complaint.
  scene.write("alias.yaml", kTinyModel + "extra: &e {a: 1}\nmore: *e\n");
  check_refused(scene, "plan --model alias.yaml", "alias.yaml:9: extra: unknown key...");
}

TEST_CASE("review: an input read from standard input is never overwritten", "[hardening]") {
  Scene scene;
  scene.write("m.yaml", kTinyModel);
  const std::string refused =
      "--output 'm.yaml': is the input --model (standard input); refusing to overwrite an input";
  check_refused(scene, "plan --gpus 8 --servers 1 --model - --output m.yaml < m.yaml", refused);
  check_refused(scene, "plan --gpus 8 --servers 1 --model - --svg m.yaml < m.yaml",
                "--svg 'm.yaml': is the input --model (standard input); refusing to overwrite an "
                "input");
  scene.write("a.log", slurp_data("nccl_tests/all_gather_new.txt"));
  check_refused(scene, "calibrate --nccl-tests - --output a.log < a.log",
                "--output 'a.log': is the input --nccl-tests (standard input); refusing to "
                "overwrite an input");
  check_refused(scene, "calibrate --nccl-tests - - < a.log",
                "--nccl-tests: '-' (standard input) given more than once; give it once");
  check_refused(scene, "plan --model - --cluster - < m.yaml",
                "--cluster and --model both read standard input ('-'); give '-' to one of them "
                "only");
  // A pipe on standard input is no file to protect: the run goes ahead.
  const auto piped = scene.run(
      "plan --gpus 8 --servers 1 --model - --top 1 --output out.txt "
      "< m.yaml");
  CHECK(piped.code == 0);
}

TEST_CASE("review: an empty value is refused, not read as the default", "[hardening]") {
  Scene scene;
  for (const std::string flag : {"--model", "--cluster", "--gpu", "--stack", "--calibration",
                                 "--svg", "--report", "--emit", "--output"}) {
    check_refused(scene, std::string(kPlan).append(" ").append(flag).append(" ''"),
                  std::string(flag).append(": expected a value, got an empty string (see --help)"));
  }
  check_refused(scene, "topo show --cluster ''",
                "--cluster: expected a value, got an empty string (see --help)");
  // An optional value ("--explain [N]") given empty read as the option alone: refused too.
  check_refused(scene, kPlan + " --explain ''",
                "--explain: expected a value, got an empty string (see --help)");
  check_refused(scene, kPlan + " --explain=",
                "--explain: expected a value, got an empty string (see --help)");
}

TEST_CASE("review: names with control characters never reach a table or a launch script",
          "[hardening]") {
  Scene scene;
  // YAML's double-quoted escapes make a newline or a NUL out of plain text.
  scene.write("m.yaml", replaced(kTinyModel, "name: tiny", "name: \"tiny\\nrm -rf $HOME\""));
  check_refused(scene, "plan --gpus 8 --servers 1 --model m.yaml --emit megatron",
                "m.yaml:1: name: expected a string without control characters, got byte 0x0a "
                "at byte 5");
  scene.write("g.yaml",
              "name: \"a\\u0000b\"\npeak_tflops: {bf16: 100}\nmemory_gib: 80\n"
              "memory_gbps: 2000\n");
  check_refused(scene, kPlan + " --gpu g.yaml",
                "g.yaml:1: name: expected a string without control characters, got byte 0x00 "
                "at byte 2");
}

TEST_CASE("review: values that would wrap or mean nothing are refused at their line",
          "[hardening]") {
  Scene scene;
  // (2,097,152 shared + 2 routed) x 1024 = 2^31 + 2048: the experts' FFN width wrapped int and
  // printed negative step times.
  scene.write("moe.yaml", replaced(slurp_data("tiny-moe.yaml"), "  expert_ffn_hidden: 1024\n",
                                   "  expert_ffn_hidden: 1024\n  shared_experts: 2097152\n"));
  check_refused(scene, "plan --gpus 8 --servers 1 --model moe.yaml",
                "moe.yaml:16: moe.shared_experts: (shared_experts + top_k) x expert_ffn_hidden "
                "must be at most 2147483647");
  scene.write("s.yaml", "name: s\nbase: megatron-core\ngrad_reduce_bytes: 3\n");
  check_refused(scene, kPlan + " --stack s.yaml",
                "s.yaml:3: grad_reduce_bytes: expected 2 (bf16) or 4 (fp32)");
  scene.write("mesh.yaml",
              "name: m\ngpu: v100-sxm-32g\nservers: 1\ngpus_per_server: 2\nnvlink:\n"
              "  domain_gpus: 2\n  kind: mesh\n  gbps_per_link: 25\n  links:\n"
              "    - {a: 0, b: 1, count: 65}\nnetwork:\n  nics_per_server: 1\n"
              "  nic_gbits: 100\n");
  check_refused(scene, "plan --cluster mesh.yaml",
                "mesh.yaml:10: nvlink.links[0].count: expected at most 64 NVLinks between two "
                "GPUs, got 65");
  scene.write("c.yaml", replaced(slurp_data("../../configs/clusters/dgx-h100.yaml"),
                                 "name: dgx-h100", "name: x\nstack: nope"));
  check_refused(scene, "plan --cluster c.yaml", "c.yaml:...");
}

TEST_CASE("review: calibration data is whole or refused", "[hardening]") {
  Scene scene;
  // A repeated key: the last one won and a 58 GB/s fit read 1 GB/s.
  scene.write("dup.json",
              "{\"trident_calibration\": 1, \"gemms\": [], \"collectives\": [], \"fits\": "
              "[{\"collective\": \"all-gather\", \"ranks\": 8, \"tier\": \"network\", "
              "\"latency_s\": 5e-6, \"busbw_gbps\": 58.4, \"busbw_gbps\": 1.0}]}");
  check_refused(scene, kPlan + " --calibration dup.json",
                "dup.json:1: invalid JSON: duplicate key 'busbw_gbps' in one object");
  // Named at its line (round thirty-three): the second object's repeat, the 3rd "x" written.
  scene.write("dup2.json",
              "{\"trident_calibration\": 1,\n \"a\": {\"x\": 1},\n \"b\": {\"x\": 2,\n"
              "  \"x\": 3}}\n");
  check_refused(scene, kPlan + " --calibration dup2.json",
                "dup2.json:4: invalid JSON: duplicate key 'x' in one object");
  const std::string fit =
      "{\"collective\": \"all-gather\", \"ranks\": 8, \"tier\": \"network\", \"latency_s\": "
      "5e-6, \"busbw_gbps\": 58.4}";
  scene.write("twice.json",
              "{\"trident_calibration\": 1, \"gemms\": [], \"collectives\": [], "
              "\"fits\": [" +
                  fit + ", " + fit + "]}");
  check_refused(scene, kPlan + " --calibration twice.json",
                "twice.json:1: fits[1]: repeats fits[0] (the same collective, ranks and tier); "
                "expected one fit each");
  // JSON's escapes make a newline or an escape sequence out of plain text (a GEMM name in a
  // plan file reached the terminal as ANSI colour codes): refused as in YAML.
  scene.write("gpu.json",
              "{\"trident_calibration\": 1, \"gpu\": \"H100\\u001b[31m\", "
              "\"gemms\": [], \"collectives\": [], \"fits\": []}");
  check_refused(scene, kPlan + " --calibration gpu.json",
                "gpu.json:1: gpu: expected a string without control characters, got byte 0x1b at "
                "byte 5");
  // A row of time 0 was dropped without a word; a one-rank log gave an empty calibration.
  const std::string log = slurp_data("nccl_tests/all_gather_new.txt");
  const auto row = log.find("    95.33");
  REQUIRE(row != std::string::npos);
  scene.write("zero.log", std::string(log).replace(row, 9, "     0.00"));
  check_refused(scene, "calibrate --nccl-tests zero.log",
                "zero.log:19: time: expected a positive time at 4.1943e+06 bytes, got 0");
}

TEST_CASE("review: flags that would be ignored, and pins that contradict, say so", "[hardening]") {
  Scene scene;
  check_refused(scene, kPlan + " --emit megatron --format json",
                "--format json: --emit prints a launch configuration, not the ranking; drop one "
                "of them");
  check_refused(scene, kPlan + " --svg-plan 2",
                "--svg-plan: chooses the plan --svg or --report draws; give one of them");
  const std::string big = "plan --gpus 256";
  check_refused(scene, big + " --tp 8 --max-tp 4", "--tp 8 is above --max-tp 4");
  check_refused(scene, big + " --tp 2 --min-tp 4", "--tp 2 is below --min-tp 4");
  check_refused(scene, big + " --vp 2 --pp 1",
                "--vp 2: interleaving splits each pipeline stage into chunks; it needs --pp 2 or "
                "more, and --pp is 1");
  check_refused(scene, big + " --sequence-parallel on --tp 1",
                "--sequence-parallel on: splits the sequence over the TP group; it needs --tp 2 "
                "or more, and --tp is 1");
  // 8 x 8 x 8 = 512 where the cluster has 256; with CP free a smaller product may still fit.
  check_refused(scene, big + " --tp 8 --pp 8 --dp 8",
                "--tp 8 x --pp 8 x --dp 8 = 512 GPUs; the cluster has 256");
  // The 32 is the search's default ceiling, not a --max-cp the user gave: said so.
  check_refused(scene, big + " --min-cp 64",
                "--min-cp 64 is above --max-cp 32, the search's default; raise --max-cp");
  // A MoE model under a stack whose only ZeRO stage is 3: the rule that empties the search,
  // not a rule list that every split obeys.
  const std::string z3 = scene.path("z3.yaml");
  std::ofstream(z3) << "name: z3\nbase: megatron-core\nzero_stages: [3]\nzero_stages_with_pp: []\n";
  check_refused(scene, "plan --model mixtral-8x7b --gpus 64 --servers 8 --stack " + z3,
                "model mixtral-8x7b is MoE, and stack z3 runs only ZeRO-3, which MoE models are "
                "not planned with (sharding experts per unit is not modelled); use a stack with "
                "ZeRO 0, 1 or 2");
  // torchtitan has ZeRO 0 and 3 and runs ZeRO-0 (DDP) with DP alone: a MoE model (ZeRO 0-2)
  // gets DP alone. A TP or PP pin named that rule, not "TP divides heads 32 ..." (which 2
  // does), and no advice to use --zero 3, which MoE refuses next.
  const std::string titan = "plan --model mixtral-8x7b --stack torchtitan --servers 4";
  check_refused(scene, titan + " --tp 2 --zero 0",
                "--tp 2: model mixtral-8x7b is MoE, planned with ZeRO 0-2 (sharding experts per "
                "unit is not modelled), and stack torchtitan has no ZeRO-1 or 2 and runs ZeRO-0 "
                "(DDP) with data parallelism alone (TP, PP and CP 1); drop --tp 2 or use a stack "
                "with ZeRO 1 or 2 (--stack megatron-core)");
  check_refused(scene, titan + " --pp 2",
                "--pp 2: model mixtral-8x7b is MoE, planned with ZeRO 0-2 ...");
  // Sequence parallelism needs TP, held at 1 here: that rule, not the whole rule list.
  check_refused(scene, titan + " --sequence-parallel on",
                "--sequence-parallel on: model mixtral-8x7b is MoE, planned with ZeRO 0-2 ...");
  check_refused(scene, titan + " --dp 16",
                "--dp 16: no configuration of 32 GPUs takes it: DP divides the global batch 256 "
                "and is all the GPUs (a MoE model under stack torchtitan: ZeRO-0 DDP, TP, PP and "
                "CP 1) (without --dp there are configurations)");
  // A shard group dividing no DP is said as its own rule, not the whole rule list (where a
  // stack without pipelines read PP and VP rules it never applies).
  check_refused(scene, "plan --model llama3-8b --gpus 64 --stack fsdp --dp-shard 7",
                "--dp-shard 7: no configuration of 64 GPUs takes it: the HSDP shard group "
                "divides DP, with a ZeRO stage the stack shards per unit (without --dp-shard "
                "there are configurations)");
  // --dp-shard all of DP with ZeRO 0/1 was accepted as plain sharding of nothing.
  check_refused(
      scene, "plan --model llama3-8b --gpus 32 --servers 4 --dp 16 --dp-shard 16 --zero 0",
      "--dp-shard 16 with --zero 0: stack megatron-core shards hybrid only what it shards "
      "per unit (ZeRO-3); use --zero 3 or drop --dp-shard");
  // A product past 32 bits, said exactly (8 x 2147483647 x 1024), not wrapped; a CP of
  // 2^31 - 1 is refused before it (2 x cp wrapped int and passed the sequence check).
  check_refused(scene, big + " --tp 8 --pp 1 --dp 2147483647 --cp 1024",
                "--tp 8 x --pp 1 x --dp 2147483647 x --cp 1024 = 17592186036224 GPUs; the "
                "cluster has 256");
  check_refused(scene, big + " --cp 2147483647",
                "--cp 2147483647: 2 x cp must divide the sequence length 2048 (causal load "
                "balancing: 2 cp chunks)");
  check_refused(scene, "foo",
                "'foo': unknown command; expected plan|topo|validate|calibrate|presets (see "
                "--help)");
  check_refused(scene, "topo foo",
                "'foo': unknown command; expected show|import (see trident topo --help)");
}

TEST_CASE("review: an imported cluster's name is one YAML string", "[hardening]") {
  Scene scene;
  const std::string xml = kData + "topo/h100_nccl_topo.xml";
  // Unquoted, '#' began a comment and ': ' a mapping: the name was cut or the file broke.
  const auto imported = scene.run("topo import --nccl-xml " + xml + " --name 'foo #bar: baz'");
  REQUIRE(imported.code == 0);
  CHECK(imported.out.find("name: \"foo #bar: baz\"\n") != std::string::npos);
  scene.write("n.yaml", imported.out);
  const auto shown = scene.run("topo show --cluster n.yaml");
  CHECK(shown.code == 0);
  CHECK(shown.out.starts_with("cluster foo #bar: baz: 8 GPUs"));
  check_refused(
      scene, "topo import --nccl-xml " + xml + " --nic-gbits 1e308",
      "the imported cluster:16: network.nic_gbits: expected a number in [1e-12, "
      "1e+12], got 1e+308 (from --servers, --nics, --nic-gbits, --nvlink-gbps or the input)");
}

TEST_CASE("review four: what the input holds is echoed on one line", "[hardening]") {
  Scene scene;
  // An unknown key with an escape sequence, a value with a newline, a JSON key with ESC:
  // each echoed with '?' for the control character, the error still one line.
  scene.write("key.yaml", kTinyModel + "\"bad\\x1b[31mkey\": 1\n");
  check_refused(scene, "plan --model key.yaml", "key.yaml:9: bad?[31mkey: unknown key...");
  scene.write("value.yaml", kTinyModel + "ffn: \"gel\\nu\"\n");
  check_refused(scene, "plan --model value.yaml",
                "value.yaml:9: ffn: expected gelu|relu|relu2|swiglu|geglu, got 'gel?u' (did you "
                "mean 'gelu'?)");
  scene.write("k.json", "{\"a\\u001b[31m\": 1}");
  scene.write("m.yaml", kTinyModel);
  check_refused(scene, "plan --gpus 8 --servers 1 --model m.yaml --calibration k.json",
                "k.json:1: a?[31m: unknown key");
}

TEST_CASE("review four: CP and EP pins against their own limits, as TP's", "[hardening]") {
  Scene scene;
  scene.write("m.yaml", kTinyModel);
  check_refused(scene, "plan --gpus 8 --servers 1 --model m.yaml --cp 4 --max-cp 2",
                "--cp 4 is above --max-cp 2");
}

TEST_CASE("review four: calibrate and topo import take only what they can use", "[hardening]") {
  Scene scene;
  scene.write("a.log", slurp_data("nccl_tests/all_reduce_old.txt"));
  // --output -: the file alone on standard output, the summary on standard error.
  const auto to_stdout = scene.run("calibrate --nccl-tests a.log --output -");
  REQUIRE(to_stdout.code == 0);
  CHECK(to_stdout.out.starts_with("{"));
  CHECK(to_stdout.err.find("all_reduce_perf: 8 ranks") != std::string::npos);
  // A GEMM rate above the GPU's peak (it gave MFU 102.9%).
  scene.write("fast.json",
              "{\"trident_calibration\": 1, \"gpu\": \"NVIDIA H100 80GB HBM3\", \"collectives\": "
              "[], \"fits\": [], \"gemms\": [{\"m\": 8192, \"n\": 8192, \"k\": 8192, "
              "\"dtype\": \"bf16\", \"tflops\": 1000000}]}");
  scene.write("m.yaml", kTinyModel);
  check_refused(scene, "plan --gpus 8 --servers 1 --model m.yaml --calibration fast.json",
                "fast.json:1: gemms[0].tflops: 1e+06 TFLOP/s is above the h100-sxm-80g's bf16 peak "
                "of 989; a measurement cannot beat the peak (a calibration of another GPU?)");
  // Measured on a GPU that is none of the built-in ones (or on no named GPU), planned on a
  // built-in one: refused (twentieth session; it was applied with only a comment saying so).
  scene.write("banana.json",
              "{\"trident_calibration\": 1, \"gpu\": \"banana\", \"collectives\": [], "
              "\"fits\": [], \"gemms\": []}");
  check_refused(scene, "plan --gpus 8 --servers 1 --model m.yaml --calibration banana.json",
                "banana.json:1: gpu: measured on 'banana', not a GPU trident knows as "
                "h100-sxm-80g, and the cluster's GPU is the built-in h100-sxm-80g: its fits and "
                "GEMM rates would be applied to a GPU they were not measured on; calibrate on "
                "h100-sxm-80g (validate writes its device name), or describe the measured GPU in "
                "a --gpu FILE");
  // Rows and names the summary would only have failed on later, or misread: a time whose
  // busbw is past any link, a log without '#  Rank' lines (one host or several?), a GPU name
  // with a bidirectional control.
  std::string log = slurp_data("nccl_tests/all_reduce_old.txt");
  scene.write("fast.log", replaced(log, "    61.20   17.13", "    1e-05   17.13"));
  check_refused(
      scene, "calibrate --nccl-tests fast.log",
      "fast.log:20: time: 1e-05 us at 1.04858e+06 bytes is a bus bandwidth of 1.83501e+08 "
      "GB/s; expected at most 1e+06");
  std::string no_ranks = log;
  for (int rank = 0; rank < 8; ++rank) {
    const auto at = no_ranks.find("#   Rank");
    no_ranks.erase(at, no_ranks.find('\n', at) - at + 1);
  }
  scene.write("noranks.log", no_ranks);
  check_refused(scene, "calibrate --nccl-tests noranks.log", "noranks.log: all_reduce_perf: no...");
  CHECK(scene.run("calibrate --nccl-tests noranks.log --tier network").code == 0);
  // Every device line's name (two names in one log are refused before the name is read).
  std::string rlo = log;
  for (auto at = rlo.find("] NVIDIA A100"); at != std::string::npos;
       at = rlo.find("] NVIDIA A100", at + 1)) {
    rlo.replace(at, 13, "] NVIDIA \u202eA100");
  }
  scene.write("rlo.log", rlo);
  check_refused(scene, "calibrate --nccl-tests rlo.log", "rlo.log: the GPU name of its...");
  // A speed of 0 given outright is refused, not read as "not given".
  scene.write("smi.txt", slurp_data("topo/h100_hgx_nvidia_smi.txt"));
  check_refused(scene, "topo import --nvidia-smi smi.txt --nic-gbits 0",
                "--nic-gbits: expected a positive number, got '0' (see --help)");
}

TEST_CASE("review seven: pins and bounds whose product passes the cluster", "[hardening]") {
  Scene scene;
  // heads, layers and FFN 2^20, sequences of 2^24 tokens: TP and CP of 2^16 each divide them.
  // Heads of 8 (hidden / heads would be 1): cuDNN's attention takes multiples of 8, and a head
  // it does not falls back to TE's unfused attention, which refuses CP before these bounds.
  scene.write("big.yaml",
              "name: big\nlayers: 1048576\nhidden: 1048576\nheads: 1048576\nhead_dim: 8\n"
              "ffn_hidden: 1048576\nvocab: 1000\nseq_len: 16777216\ntraining:\n  "
              "global_batch: 8\n");
  // TP x CP = 2^32 wrapped an int to 0, then divided by it (SIGFPE): now the pins' product,
  // refused with and without --fail-link.
  check_refused(scene, "plan --model big.yaml --gpus 64 --servers 8 --tp 1048576 --cp 4096",
                "--tp 1048576 x --cp 4096 = 4294967296 GPUs; the cluster has 64");
  check_refused(scene,
                "plan --model big.yaml --gpus 64 --servers 8 --tp 1048576 --pp 1 --dp 1 "
                "--cp 4096 --fail-link server:0",
                "--tp 1048576 x --pp 1 x --dp 1 x --cp 4096 = 4294967296 GPUs; the cluster has "
                "64");
  check_refused(scene, "plan --gpus 512 --servers 64 --tp 8 --pp 8 --dp 16 --fail-link gpu:0/0",
                "--tp 8 x --pp 8 x --dp 16 = 1024 GPUs; the cluster has 512");
  // The same product reached through bounds (2^16 x 2^16 on 2^24 GPUs): no split, no crash.
  check_refused(scene,
                "plan --model big.yaml --gpus 16777216 --servers 2097152 --min-tp 65536 "
                "--min-cp 65536 --max-cp 65536",
                "no configuration of 16777216 GPUs obeys the rules and pins...");
}

/// Runs the trident binary with `args` in a child process: its standard output onto `out_fd`
/// (-1: this process's), its standard error into the file `err_path`; `as_nobody` under root
/// runs it as uid/gid 65534 (exit 126 if that fails, 127 if the binary cannot be run). Returns
/// the wait status.
int run_child(const std::vector<std::string>& args, int out_fd, const std::string& err_path,
              bool as_nobody) {
  std::vector<char*> argv{const_cast<char*>(TRIDENT_BINARY)};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (as_nobody && ::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(126);
    }
    if (out_fd >= 0) ::dup2(out_fd, 1);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    ::dup2(err_fd, 2);
    ::execv(TRIDENT_BINARY, argv.data());
    ::_exit(127);
  }
  int status = 0;
  return ::waitpid(child, &status, 0) == child ? status : -1;
}

TEST_CASE("review thirty-three: a closed pipe is a write error, not a death by SIGPIPE",
          "[hardening]") {
  // `trident plan --svg plan.svg | head -1` once died by SIGPIPE (status 141, nothing said) and
  // left its staged `.trident-XXXXXX` beside plan.svg. Deterministic here: standard output is
  // a pipe whose read end is closed before trident runs.
  const cli_test::TempDir dir;
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  const std::string svg = (dir.path / "plan.svg").string();
  const std::string err = (dir.path / "stderr").string();
  const int status =
      run_child({"plan", "--model", "llama3-8b", "--gpus", "64", "--svg", svg}, fds[1], err, false);
  ::close(fds[1]);
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));  // not killed by a signal
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(cli_test::slurp(err) == "trident: error: standard output: cannot write: Broken pipe\n");
  // Nothing left: neither the SVG nor its staged temporary.
  int left = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path)) ++left;
  CHECK(left == 1);  // the stderr file alone
}

TEST_CASE("review thirty-three: --output refuses a file its owner made read-only", "[hardening]") {
  namespace fs = std::filesystem;
  // A rename asks the folder's permission, not the file's: `--output k.json` replaced a
  // read-only k.json where the shell's `>` says "Permission denied". Root may write it (as the
  // shell lets root), so under root the run drops to `nobody` first.
  const cli_test::TempDir dir;
  fs::permissions(dir.path, fs::perms::all);
  const std::string target = (dir.path / "k.json").string();
  std::ofstream(target) << "keep\n";
  fs::permissions(target, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string err = (dir.path / "stderr").string();
  const int status = run_child({"plan", "--model", "llama3-8b", "--gpus", "64", "--output", target},
                               -1, err, true);
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127) {
    WARN("could not run trident as an unprivileged user here: not checked");
    return;
  }
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(cli_test::slurp(err) ==
        "trident: error: --output '" + target + "': cannot write: Permission denied\n");
  CHECK(cli_test::slurp(target) == "keep\n");
}
