// `trident plan --fail-link` and `trident topo import` end to end: runs the binary
// (TRIDENT_BINARY) through the seed question and the other failure kinds.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.h"

namespace {

using cli_test::Run;
using cli_test::slurp;
using cli_test::TempDir;

Run trident(const std::string& args) {
  Run run = cli_test::run_trident(args);
  REQUIRE(run.code != -1);
  return run;
}

nlohmann::json json_of(const std::string& args) {
  const Run run = trident(args + " --format json");
  INFO(run.err);
  REQUIRE(run.code == 0);
  return nlohmann::json::parse(run.out);
}

const std::string kSeed = "plan --gpus 512 --servers 64 --min-tp 4";
const std::string kSource = TRIDENT_SOURCE_DIR;

std::vector<std::string> option_kinds(const nlohmann::json& doc) {
  std::vector<std::string> kinds;
  for (const auto& o : doc["impact"]["options"]) kinds.push_back(o["option"]);
  return kinds;
}

}  // namespace

TEST_CASE("seed question: the healthy plan, then one NVLink of server 17 broken",
          "[cli][failures]") {
  const auto healthy = json_of(kSeed);
  const auto& best = healthy["plans"][0];
  // The split is the cost model's choice; TP stays inside the server and all GPUs are used.
  const int tp = best["tp"];
  REQUIRE((tp == 4 || tp == 8));
  CHECK(tp * best["pp"].get<int>() * best["dp"].get<int>() == 512);
  CHECK(best["links"]["tp"] == "nvlink");
  CHECK(best["links"]["pp"] == "network");
  CHECK(best["links"]["dp"] == "network");

  const auto broken = json_of(kSeed + " --fail-link nvlink:17/3");
  CHECK(broken["failures"] == nlohmann::json::array({"nvlink:17/3"}));
  // The baseline is the healthy best plan, same keys and numbers.
  CHECK(broken["baseline"]["step_time_s"] == best["step_time_s"]);
  CHECK(broken["baseline"]["tp"] == tp);
  CHECK(broken["baseline"]["pp"] == best["pp"]);
  const auto& impact = broken["impact"];
  CHECK(impact["recommended"] == "keep");
  CHECK(option_kinds(broken) ==
        std::vector<std::string>{"keep", "cordon-server", "re-place", "cordon-gpu"});
  CHECK(impact["step_time_s_before"] == best["step_time_s"]);
  CHECK(impact["step_time_s_after"].get<double>() > impact["step_time_s_before"].get<double>());
  CHECK(impact["slowdown"].get<double>() == Approx(impact["step_time_s_after"].get<double>() /
                                                       impact["step_time_s_before"].get<double>() -
                                                   1));
  // GPU 3 of server 17 is GPU 139: its TP group (136-139 with TP 4, 136-143 with TP 8) goes
  // from 18 x 25 to 17 x 25 GB/s.
  const auto& hit = impact["groups_hit"][0];
  CHECK(hit["dimension"] == "tp");
  nlohmann::json group = nlohmann::json::array();
  for (int g = 139 / tp * tp; g < 139 / tp * tp + tp; ++g) group.push_back(g);
  CHECK(hit["gpus"] == group);
  CHECK(hit["before"]["intra_gbps"] == 450.0);
  CHECK(hit["after"]["intra_gbps"] == 425.0);
  CHECK(broken["plans"][0]["option"] == "keep");
  CHECK(broken["plans"][0]["step_time_s"] == impact["step_time_s_after"]);
  CHECK(broken["plans"][1]["option"] == "cordon-server");
  CHECK(impact["options"][1]["gpus"].get<int>() < 512);
  CHECK(impact["options"][2]["available"] == false);
}

TEST_CASE("seed question as a table: baseline, options, recommendation", "[cli][failures]") {
  const Run run = trident(kSeed + " --fail-link nvlink:17/3");
  REQUIRE(run.code == 0);
  CHECK(run.out.find("# failure nvlink:17/3: one of 18 NVLinks of GPU 3 on server 17 (global GPU "
                     "139): it keeps 17\n") != std::string::npos);
  const auto best = json_of(kSeed)["plans"][0];
  const std::string split = "TP" + std::to_string(best["tp"].get<int>()) + " PP" +
                            std::to_string(best["pp"].get<int>()) + " DP" +
                            std::to_string(best["dp"].get<int>());
  CHECK(run.out.find("baseline (healthy, 512 GPUs): " + split) != std::string::npos);
  CHECK(run.out.find(": nvlink 450.00 GB/s -> nvlink 425.00 GB/s\n") != std::string::npos);
  CHECK(run.out.find("\n   1 keep            512 " + split) != std::string::npos);
  CHECK(run.out.find("\n   2 cordon-server   ") != std::string::npos);
  CHECK(run.out.find("\nrecommended: keep: ") != std::string::npos);
}

TEST_CASE("other failure kinds: all links, a dead GPU, a NIC, a server", "[cli][failures]") {
  const auto all = json_of(kSeed + " --fail-link nvlink:17/3:all");
  CHECK(all["impact"]["recommended"] == "cordon-server");
  CHECK(all["impact"]["groups_hit"][0]["after"]["tier"] == "pcie");

  const auto gpu = json_of(kSeed + " --fail-link gpu:17/3");
  CHECK(gpu["impact"]["recommended"] == "cordon-server");
  // `cluster.gpus`: the live GPUs of the degraded cluster, 512 - 1; each option its own.
  CHECK(gpu["cluster"]["gpus"] == 511);
  CHECK(gpu["impact"]["options"][0]["gpus"] == 504);
  // `search`: every search the comparison ran, summed (it was all zeros): at least the
  // healthy one and cordon-server's, so more than one plan fits.
  CHECK(gpu["search"]["configurations_searched"].get<long long>() > 0);
  CHECK(gpu["search"]["feasible"].get<long long>() > 1);
  CHECK(gpu["search"]["evaluations"].get<long long>() >=
        gpu["search"]["configurations_searched"].get<long long>());
  CHECK(gpu["impact"]["options"][1]["option"] == "keep");
  CHECK(gpu["impact"]["options"][1]["available"] == false);

  const auto nic = json_of(kSeed + " --fail-link nic:17/1");
  CHECK(nic["impact"]["recommended"] == "keep");
  CHECK(nic["impact"]["slowdown"].get<double>() > 0.0);

  const auto server = json_of(kSeed + " --fail-link server:17");
  CHECK(server["impact"]["recommended"] == "cordon-server");
  CHECK(server["plans"].size() == 1);
}

TEST_CASE("a NIC lost where the others still carry every GPU's PCIe link: no group slows",
          "[cli][failures]") {
  // dgx-h100 with 800 Gb/s NICs: 7 x 100 GB/s / 8 GPUs = 87.5 GB/s a GPU, above its 50 GB/s
  // PCIe link. The groups through server 0 cross the failed NIC at the same rate: said so, not
  // "no group crosses the failed part".
  TempDir dir;
  const std::string cluster = (dir.path / "fast.yaml").string();
  std::ofstream(cluster) << "name: fast-nics\ngpu: h100-sxm-80g\nservers: 8\ngpus_per_server: 8\n"
                            "nvlink: {domain_gpus: 8, kind: switch, links_per_gpu: 18, "
                            "gbps_per_link: 25}\n"
                            "network: {nics_per_server: 8, nic_gbits: 800}\n";
  const std::string plan =
      "plan --cluster " + cluster + " --model llama3-8b --tp 1 --pp 1 --fail-link nic:0/0";
  const Run run = trident(plan);
  REQUIRE(run.code == 0);
  CHECK(run.out.find("# failure nic:0/0: NIC 0 of 8 on server 0: its GPUs share the other 7, "
                     "87.5 GB/s a GPU, still at least its 50 GB/s PCIe link: no GPU's network "
                     "rate falls\n") != std::string::npos);
  CHECK(run.out.find("groups of the baseline the failures reach: none slowed (1 with a GPU they "
                     "reach keeps its rates)\n") != std::string::npos);
  CHECK(run.out.find("same split on the same GPUs; the groups with a GPU the failures reach "
                     "keep their rates") != std::string::npos);
  CHECK(run.out.find("no group of") == std::string::npos);
  const auto json = json_of(plan);
  CHECK(json["impact"]["groups_hit"].empty());
  CHECK(json["impact"]["groups_unchanged"] == 1);
  CHECK(json["impact"]["slowdown"] == 0.0);
  // More NICs than the PCIe links carry make no step slower: 8 and 16 NICs of 400 Gb/s price
  // the same pinned plan alike (the overlap's NCCL channels are the usable NICs', 2 each).
  std::ofstream(cluster) << "name: many-nics\ngpu: h100-sxm-80g\nservers: 8\ngpus_per_server: 8\n"
                            "nvlink: {domain_gpus: 8, kind: switch, links_per_gpu: 18, "
                            "gbps_per_link: 25}\n"
                            "network: {nics_per_server: 16, nic_gbits: 400}\n";
  const std::string pinned =
      " --model llama3-8b --tp 1 --pp 1 --dp 64 --micro-batch 1 "
      "--recompute none --zero 3 --format json";
  const auto sixteen = nlohmann::json::parse(trident("plan --cluster " + cluster + pinned).out);
  const auto eight =
      nlohmann::json::parse(trident("plan --cluster dgx-h100 --servers 8" + pinned).out);
  CHECK(sixteen["plans"][0]["step_time_s"] == eight["plans"][0]["step_time_s"]);
  CHECK(sixteen["plans"][0]["time"]["overlap_contention_s"].get<double>() > 0.0);
}

TEST_CASE("a CP plan's hit DP groups are its DP x CP gradient groups", "[cli][failures]") {
  // Llama 3 70B at 32K tokens on 256 GPUs: TP 4 x CP 8 x PP 2 x DP 4, gradients reduced over
  // DP x CP = 32 GPUs (comm.dp.ranks); a NIC of server 1 reaches those groups, not the DP-only
  // ones of 4 GPUs.
  const auto doc = json_of(
      "plan --gpus 256 --servers 32 --model llama3-70b --seq-len 32768 --global-batch 64 "
      "--fail-link nic:1/0");
  const auto& base = doc["baseline"];
  REQUIRE(base["cp"].get<int>() > 1);
  const int dp_ranks = base["comm"]["dp"]["ranks"];
  CHECK(dp_ranks == base["dp"].get<int>() * base["cp"].get<int>());
  int dp_hits = 0;
  for (const auto& hit : doc["impact"]["groups_hit"]) {
    if (hit["dimension"] != "dp") continue;
    ++dp_hits;
    CHECK(hit["gpus"].size() == static_cast<std::size_t>(dp_ranks));
  }
  CHECK(dp_hits > 0);
  // The table says what the comparison searched.
  const Run table = trident(
      "plan --gpus 256 --servers 32 --model llama3-70b --seq-len 32768 --global-batch 64 "
      "--fail-link nic:1/0");
  CHECK(table.out.find("\n# searched ") != std::string::npos);
  CHECK(table.out.find("(every search the comparison ran: the healthy cluster, each option, "
                       "each server count tried)\n") != std::string::npos);
}

TEST_CASE("several failures: re-place keeps every failure it cannot lay around",
          "[cli][failures]") {
  // One NVLink down on server 17 and a NIC down on server 20: on an NVSwitch no regrouping
  // helps, and none moves the NIC. Re-place was priced with server 20's NIC healthy (the
  // groups it does not regroup were taken from the healthy cluster) and recommended at
  // 13.127 s, faster than keeping the plan under the NIC failure alone (13.096 s).
  const auto nic = json_of(kSeed + " --fail-link nic:20/1");
  const auto both = json_of(kSeed + " --fail-link nic:20/1 --fail-link nvlink:17/3");
  CHECK(option_kinds(both).front() == "keep");
  double nic_keep_s = 0.0;
  for (const auto& o : nic["impact"]["options"]) {
    if (o["option"] == "keep") nic_keep_s = o["step_time_s"];
  }
  REQUIRE(nic_keep_s > 0.0);
  for (const auto& o : both["impact"]["options"]) {
    INFO(o["option"]);
    if (o.at("option") == "re-place") CHECK_FALSE(o.at("available").get<bool>());
    if (o.contains("step_time_s")) CHECK(o.at("step_time_s").get<double>() >= nic_keep_s);
  }
}

TEST_CASE("mesh server: a dead direct link is laid around", "[cli][failures]") {
  // A V100 runs no fused attention (sm70): megatron-core with Transformer Engine's unfused
  // fallback.
  TempDir dir;
  const auto stack = dir.path / "unfused.yaml";
  std::ofstream(stack) << "name: unfused\nbase: megatron-core\nattention: unfused\n";
  const auto doc = json_of("plan --cluster dgx1-v100 --model " + kSource +
                           "/tests/data/failures/llama2-7b-fp16.yaml --tp 2 --stack " +
                           stack.string() + " --fail-link mesh:0/0-1");
  CHECK(doc["impact"]["recommended"] == "re-place");
  CHECK(doc["impact"]["options"][0]["detail"] ==
        "same split, GPUs regrouped: server 0 TP groups [0 4] [1 5] [2 6] [3 7]");
  CHECK(doc["impact"]["slowdown"].get<double>() == Approx(0.0).margin(1e-12));
}

TEST_CASE("failure specs that are wrong or name missing parts exit 2 with one line",
          "[cli][failures]") {
  const Run missing = trident(kSeed + " --fail-link gpu:70/1");
  CHECK(missing.code == 2);
  CHECK(missing.err ==
        "trident: error: --fail-link 'gpu:70/1': server 70 does not exist (cluster has 64 servers, "
        "0-63)\n");
  const Run malformed = trident(kSeed + " --fail-link nvlink:3");
  CHECK(malformed.code == 2);
  CHECK(malformed.err ==
        "trident: error: --fail-link 'nvlink:3': expected nvlink:SERVER/GPU[:COUNT|:all]\n");
  const Run mesh_on_switch = trident(kSeed + " --fail-link mesh:0/1-2");
  CHECK(mesh_on_switch.code == 2);
}

TEST_CASE("topo import: a degraded server's own output feeds plan --fail-link", "[cli][import]") {
  TempDir dir;
  const std::string file = (dir.path / "h100.yaml").string();
  const Run import = trident("topo import --nvidia-smi " + kSource +
                             "/tests/data/topo/h100_dead_link_nvidia_smi.txt --gpu h100-sxm-80g "
                             "--servers 64 --name h100-64 --output " +
                             file);
  REQUIRE(import.code == 0);
  const std::string yaml = slurp(file);
  CHECK(
      yaml.find("# degraded: plan this server (server 0) as it is with --fail-link nvlink:0/3\n") !=
      std::string::npos);
  CHECK(trident("topo show --cluster " + file).code == 0);
  const auto doc = json_of("plan --cluster " + file + " --min-tp 4 --fail-link nvlink:0/3");
  CHECK(doc["cluster"]["name"] == "h100-64");
  CHECK(doc["impact"]["groups_hit"][0]["after"]["intra_gbps"] == 425.0);

  const Run xml =
      trident("topo import --nccl-xml " + kSource + "/tests/data/topo/dgx1_v100_nccl_topo.xml");
  REQUIRE(xml.code == 0);  // GPU from the PCI id 0x1db5, NIC speed from the XML
  CHECK(xml.out.find("gpu: v100-sxm-32g\n") != std::string::npos);
  CHECK(xml.out.find("  kind: mesh\n") != std::string::npos);
  CHECK(xml.out.find("  nic_gbits: 100   # from the input\n") != std::string::npos);

  const Run unnamed =
      trident("topo import --nvidia-smi " + kSource + "/tests/data/topo/dgx_a100_nvidia_smi.txt");
  CHECK(unnamed.code == 2);
  CHECK(unnamed.err.find("cannot tell which GPU this is (no device name): pass --gpu NAME") !=
        std::string::npos);
  // A matrix with no NIC column (a VM's): one server imports, several need the NIC count
  // (--nics), which no other flag sets.
  const std::string vm = (dir.path / "vm.txt").string();
  {
    std::ofstream out(vm);
    out << "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tCPU Affinity\tNUMA Affinity\n";
    for (int row = 0; row < 8; ++row) {
      out << "GPU" << row;
      for (int col = 0; col < 8; ++col) out << (row == col ? "\t X " : "\tNV18");
      out << "\t0-55\t0\n";
    }
  }
  const std::string import_vm = "topo import --nvidia-smi " + vm + " --gpu h100-sxm-80g";
  CHECK(trident(import_vm).code == 0);
  const Run no_nics = trident(import_vm + " --servers 2");
  CHECK(no_nics.code == 2);
  CHECK(no_nics.err.find("vm.txt: lists no NIC, and --servers 2 needs the inter-server "
                         "network: pass --nics N (NICs per server)\n") != std::string::npos);
  const Run nics = trident(import_vm + " --servers 2 --nics 8");
  REQUIRE(nics.code == 0);
  CHECK(nics.out.find("  nics_per_server: 8   # from --nics (the input lists 0)\n") !=
        std::string::npos);
  // --gpu over the GPU the input names: kept (a name's guess can be wrong), said in the file.
  const Run other = trident("topo import --nccl-xml " + kSource +
                            "/tests/data/topo/h100_nccl_topo.xml --gpu v100-sxm-32g");
  REQUIRE(other.code == 0);
  CHECK(other.out.rfind("# note: --gpu v100-sxm-32g where " + kSource +
                            "/tests/data/topo/h100_nccl_topo.xml names PCI device 0x2330 (read "
                            "as h100-sxm-80g): the links are written beside v100-sxm-32g\n",
                        0) == 0);
}

TEST_CASE("--emit under --fail-link writes the option the report recommends", "[cli][failure]") {
  // GPU 11 (server 1, GPU 3) dead on 4 servers of llama3-8b, batch 1024: the report ranks
  // cordon-server first (servers 0, 2, 3: 24 GPUs, TP1 PP6 DP4 with its last stage lightened),
  // cordon-gpu second (31 GPUs).
  const std::string base = "plan --model llama3-8b --gpus 32 --servers 4 --fail-link gpu:1/3";
  const Run recommended = trident(base + " --emit megatron");
  INFO(recommended.err);
  REQUIRE(recommended.code == 0);
  CHECK(recommended.out.find("trident plan TP1 PP6 DP4 ") != std::string::npos);
  CHECK(recommended.out.find("# nodes: servers 0,2-3 of the cluster") != std::string::npos);
  CHECK(recommended.out.find("--nnodes 3 --nproc-per-node 8") != std::string::npos);
  // 32 layers over 6 stages: ceil 6, 4 short, all off the last: 6 | 6 x4 | 2.
  CHECK(recommended.out.find("  --decoder-first-pipeline-num-layers 6 \\\n") != std::string::npos);
  CHECK(recommended.out.find("  --decoder-last-pipeline-num-layers 2 \\\n") != std::string::npos);
  // --explain N picks option N; 31 GPUs sit 8 + 7 + 8 + 8: the launcher cannot start them.
  const Run second = trident(base + " --emit megatron --explain 2");
  CHECK(second.code == 2);
  CHECK(second.err.rfind("trident: error: --emit megatron@core_v0.19.0: option 2 cordon-gpu "
                         "(TP1 PP31 DP1 ",
                         0) == 0);
  const Run keep = trident(base + " --emit megatron --explain 3");
  CHECK(keep.err ==
        "trident: error: --emit: option 3 (keep) cannot run under the failures; "
        "--explain N picks another of the report's options\n");
  const Run past = trident(base + " --emit megatron --explain 9");
  CHECK(past.err == "trident: error: --explain 9: the failure report has 4 options\n");
  // Without --emit the report compares the options: --explain has nothing to pick.
  const Run report = trident(base + " --explain 2");
  CHECK(report.code == 2);
  CHECK(report.err.rfind("trident: error: --explain: under --fail-link", 0) == 0);
}

TEST_CASE("cordon-server runs on fewer servers when the most with a split are slow",
          "[cli][failures]") {
  // Llama 2 7B, global batch 64, 16 DGX H100, server 0 dead: 15 servers (120 GPUs) have only
  // deep-pipeline splits (DP | 64); 14 servers (TP4 PP7 DP4) are faster beyond megatron-core's
  // +/-5.4% band, so one more server idles and the launch is for servers 1-14.
  const std::string base =
      "plan --model llama2-7b --global-batch 64 --gpus 128 --fail-link server:0";
  const auto doc = json_of(base);
  REQUIRE(doc["impact"]["recommended"] == "cordon-server");
  const auto& server = doc["impact"]["options"][0];
  CHECK(server["servers"] == 14);
  CHECK(server["spare_servers"] == 1);
  CHECK(server["most_servers"] == 15);
  CHECK(server["most_servers_step_time_s"].get<double>() >
        server["step_time_s"].get<double>() * 1.054);
  // Counts 15 down to (15 + 1) / 2 = 8 that have a split; 15 and 14 among them.
  CHECK(server["server_counts_searched"].get<int>() >= 2);
  CHECK(server["server_counts_searched"].get<int>() <= 8);
  const std::string detail = server["detail"];
  CHECK(detail.rfind("takes server 0 out; on 15 servers, the most with a plan, a step takes ", 0) ==
        0);
  CHECK(
      detail.find(
          "slower than on fewer by more than the stack's measured error (+/-5.4%), so 1 more idle "
          "as spares: re-plans on 14 servers (112 GPUs)") != std::string::npos);
  const Run emit = trident(base + " --emit megatron");
  INFO(emit.err);
  REQUIRE(emit.code == 0);
  CHECK(emit.out.find("# nodes: servers 1-14 of the cluster") != std::string::npos);
  CHECK(emit.out.find("--nnodes 14 --nproc-per-node 8") != std::string::npos);
}

TEST_CASE("--format csv under --fail-link: the baseline, then each option that runs",
          "[cli][failures]") {
  const Run run = trident(kSeed + " --fail-link nvlink:17/3 --format csv");
  INFO(run.err);
  REQUIRE(run.code == 0);
  std::vector<std::string> lines;
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // Header, the healthy plan (rank 0), keep and cordon-server (re-place and cordon-gpu cannot
  // run: no row). The table's own columns, then option,gpus,slowdown.
  REQUIRE(lines.size() == 4);
  CHECK(
      lines[0].ends_with(",memory_tight,recompute_layers,attention,first_stage_layers,"
                         "last_stage_layers,option,gpus,slowdown"));
  CHECK(lines[1].rfind("0,4,8,16,", 0) == 0);
  CHECK(lines[1].ends_with(",healthy,512,0"));
  CHECK(lines[2].rfind("1,4,8,16,", 0) == 0);
  CHECK(lines[2].find(",keep,512,") != std::string::npos);
  CHECK(lines[3].rfind("2,4,21,6,", 0) == 0);
  CHECK(lines[3].find(",cordon-server,504,") != std::string::npos);
  // The slowdown is the option's step time over the healthy plan's, less one (column 11 is
  // step_time_s, the last the slowdown): keep loses well under 1%, cordoning a server 10-15%.
  const auto fields = [](const std::string& line) {
    std::vector<std::string> out;
    std::istringstream row(line);
    for (std::string f; std::getline(row, f, ',');) out.push_back(f);
    return out;
  };
  const auto healthy = fields(lines[1]);
  for (int i : {2, 3}) {
    const auto option = fields(lines[i]);
    const double slowdown = std::stod(option.back());
    CHECK(slowdown == Approx(std::stod(option[10]) / std::stod(healthy[10]) - 1.0).epsilon(1e-3));
  }
  CHECK(std::stod(fields(lines[2]).back()) < 0.01);
  CHECK(std::stod(fields(lines[3]).back()) > 0.10);
  CHECK(std::stod(fields(lines[3]).back()) < 0.15);
}

TEST_CASE("an option faster than the healthy plan says the gain is the batch's",
          "[cli][failures]") {
  // Llama 3 70B (batch 1024) on 8 GB200 NVL72 racks: 512 GPUs run faster than all 576, so
  // cordoning the server of one degraded NVLink "wins": the recommendation says why.
  const Run run = trident(
      "plan --cluster gb200-nvl72 --gpus 576 --model llama3-70b "
      "--fail-link nvlink:5/3");
  INFO(run.err);
  REQUIRE(run.code == 0);
  CHECK(run.out.find("recommended: cordon-server: ") != std::string::npos);
  CHECK(run.out.find("vs the healthy") != std::string::npos);
  CHECK(run.out.find("it runs faster than the healthy plan on all 576 GPUs: with this global "
                     "batch fewer GPUs run faster, the healthy cluster's too (plan uses every "
                     "GPU it is given; plan --gpus 512 plans for that many), so the gain is the "
                     "batch's, not the failure's") != std::string::npos);
}

TEST_CASE("cordon-server on GB200: a new job in its own segments, wherever the tray died",
          "[cli][failures]") {
  // DeepSeek-V3 on 256 GB200s (64 trays, four 16-tray segments). A dead tray: the re-plan is a
  // new job on fewer trays, which its launcher segments for its own count (63 trays: the
  // largest divisor of 63 at most 18 trays a rack, 9-tray segments of 36 GPUs), priced as
  // `plan --gpus 252` prices it (PP 21 with ends of a layer each; 60 trays when only the
  // default split was searched). Before, the new job kept the old job's 64-GPU domains with the
  // ranks shifted across the hole: 113.4 s with tray 0 dead, 96.4 s with tray 48.
  const std::string base = "plan --model deepseek-v3 --cluster gb200-nvl72 --gpus 256";
  const auto first = json_of(base + " --fail-link server:0");
  const auto late = json_of(base + " --fail-link server:48");
  const auto fresh = json_of("plan --model deepseek-v3 --cluster gb200-nvl72 --gpus 252");
  REQUIRE(first["impact"]["recommended"] == "cordon-server");
  const auto& a = first["impact"]["options"][0];
  const auto& b = late["impact"]["options"][0];
  CHECK(a["servers"] == 63);
  CHECK(a["step_time_s"].get<double>() == Approx(b["step_time_s"].get<double>()));
  CHECK(a["step_time_s"].get<double>() == Approx(fresh["plans"][0]["step_time_s"].get<double>()));
  CHECK(fresh["cluster"]["domain_gpus"] == 36);
  // The launch config says which segments it was priced with (a dense model: --emit writes no
  // MoE flags yet).
  const Run emitted =
      trident("plan --model llama3-70b --cluster gb200-nvl72 --gpus 256 --emit megatron");
  REQUIRE(emitted.code == 0);
  CHECK(emitted.out.find("# SLURM: submit with --segment=16: the plan was priced with its 64 "
                         "nodes in segments of 16") != std::string::npos);
}

TEST_CASE("a group whose NICs fell but whose ring's narrowest cut did not says so",
          "[cli_failures]") {
  // A helper's find (2026-12-07): 3 of server 1's 4 NICs down on pcie-8gpu listed the DP group
  // "across servers 12.50 -> 3.12 GB/s" beside keep +0.0%. The ring's cut: min(in-server 24 x
  // 0.80 = 19.2, 8 members x 3.125 x 0.94 = 23.5) = 19.2 GB/s, as healthy (8 x 12.5 x 0.94).
  const Run r = trident(
      "plan --cluster pcie-8gpu --model llama2-7b --top 1 --fail-link nic:1/0 --fail-link "
      "nic:1/1 --fail-link nic:1/2");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("across servers 12.50 -> 3.12 GB/s (its ring's narrowest cut stays 19.20 "
                   "GB/s: 8 members a server share the crossing)") != std::string::npos);
  // One NIC of 8 on the seed cluster: the DP groups' cut (2 members x 43.75 x 0.94) does fall.
  const Run seed = trident("plan --gpus 512 --servers 64 --min-tp 4 --fail-link nic:17/3");
  REQUIRE(seed.code == 0);
  CHECK(seed.out.find("narrowest cut stays") == std::string::npos);
}
