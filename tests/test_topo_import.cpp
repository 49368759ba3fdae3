// Reading servers from `nvidia-smi topo -m` and NCCL's topology dump; the samples in
// tests/data/topo/ are written from the documented formats (see tests/data/topo/README.md).
#include <array>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "cli/topo_yaml.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/failure.h"
#include "topology/link_tier.h"
#include "topology/nccl_xml_import.h"
#include "topology/nvidia_smi_import.h"
#include "topology/server_import.h"

using namespace trident;

namespace {

std::string sample(const std::string& name) {
  std::ifstream in(std::string(TRIDENT_SOURCE_DIR) + "/tests/data/topo/" + name);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ImportedServer smi(const std::string& name) { return parse_nvidia_smi_topo(sample(name), name); }
ImportedServer xml(const std::string& name) { return parse_nccl_topo_xml(sample(name), name); }

std::string smi_error(const std::string& text) {
  try {
    (void)parse_nvidia_smi_topo(text, "topo.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string xml_error(const std::string& text) {
  try {
    (void)parse_nccl_topo_xml(text, "topo.xml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

/// Every pair (i != j) of the server reports `links` NVLinks.
bool all_pairs(const ImportedServer& s, int links) {
  for (int i = 0; i < s.gpus; ++i) {
    for (int j = 0; j < s.gpus; ++j) {
      if (i != j && s.pair_links[i][j] != links) return false;
    }
  }
  return true;
}

// DGX-1V hybrid cube mesh, as configs/clusters/dgx1-v100.yaml lists it.
const std::vector<std::array<int, 3>> kDgx1Mesh{
    {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1}, {1, 5, 2}, {2, 3, 2},
    {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};

bool mesh_is(const ServerNvlink& nv, const std::vector<std::array<int, 3>>& expected) {
  if (nv.mesh.size() != expected.size()) return false;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const MeshLink& m = nv.mesh[i];
    if (m.a != expected[i][0] || m.b != expected[i][1] || m.links != expected[i][2]) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("nvidia-smi: DGX A100, old mlx5 column names, NV12 everywhere", "[import]") {
  const ImportedServer s = smi("dgx_a100_nvidia_smi.txt");
  CHECK(s.gpus == 8);
  CHECK(all_pairs(s, 12));
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  CHECK(nv.links_per_gpu == 12);
  CHECK(nv.degraded.empty());
  // 8 HCAs share a PCIe switch (PXB) with two GPUs each; mlx5_4/5 sit alone (storage).
  CHECK(s.nics == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6",
                                           "mlx5_7", "mlx5_8", "mlx5_9"});
  REQUIRE(s.other_nics.size() == 2);
  CHECK(s.other_nics[0] == "mlx5_4: no GPU behind the same PCIe switch (storage or management)");
  CHECK(s.nic_gbits == 0.0);
  CHECK(guess_gpu_preset(s).empty());  // topo -m alone does not name the GPU
}

TEST_CASE("nvidia-smi: H100 HGX, NIC legend, GPU NUMA ID column, ANSI header", "[import]") {
  const ImportedServer s = smi("h100_hgx_nvidia_smi.txt");
  CHECK(s.gpus == 8);
  CHECK(all_pairs(s, 18));
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  CHECK(nv.links_per_gpu == 18);
  CHECK(nv.degraded.empty());
  CHECK(s.nics.size() == 8);
  CHECK(s.nics.front() == "NIC0 (mlx5_0)");
  CHECK(s.nics.back() == "NIC9 (mlx5_9)");
  CHECK(s.device_name == "NVIDIA H100 80GB HBM3");  // from the nvidia-smi -L lines above it
  CHECK(guess_gpu_preset(s) == "h100-sxm-80g");
}

TEST_CASE("one GPU type per server; every NIC counted when none sits by a GPU, and said",
          "[import]") {
  // GPU 1 an A100 among H100s: the cluster YAML names one GPU (it took the first, and the
  // H100s' 18 NVLinks with it).
  std::string mixed = sample("h100_hgx_nvidia_smi.txt");
  mixed.replace(mixed.find("GPU 1: NVIDIA H100 80GB HBM3"), 28, "GPU 1: NVIDIA A100-SXM4-80GB");
  CHECK(smi_error(mixed) ==
        "topo.txt:3: GPU 1 is 'NVIDIA A100-SXM4-80GB' where GPU 0 is 'NVIDIA H100 80GB HBM3'; a "
        "server of one GPU type is expected");
  std::string xml_mixed = sample("h100_nccl_topo.xml");
  const auto second = xml_mixed.find("device=\"0x2330\"", xml_mixed.find("<gpu dev=\"0\""));
  xml_mixed.replace(second, 15, "device=\"0x20b2\"");
  CHECK(xml_error(xml_mixed).find("; a server of one GPU type is expected") != std::string::npos);
  // GPU 1 on GPU 0's bus id: NVLink targets name GPUs by it, so one's links went to the other.
  std::string same_bus = sample("h100_nccl_topo.xml");
  const std::string bus1 = "<pci busid=\"0000:2a:00.0\"";
  REQUIRE(same_bus.find(bus1) != std::string::npos);
  same_bus.replace(same_bus.find(bus1), bus1.size(), "<pci busid=\"0000:18:00.0\"");
  CHECK(xml_error(same_bus).ends_with("<gpu> dev 1: bus id '0000:18:00.0' is also dev 0's"));
  // Two GPUs of one rank: a merged or corrupt dump (one process per GPU), refused as a
  // repeated dev is.
  std::string same_rank = sample("h100_nccl_topo.xml");
  const std::string rank1 = "<gpu dev=\"1\" sm=\"90\" rank=\"1\"";
  REQUIRE(same_rank.find(rank1) != std::string::npos);
  same_rank.replace(same_rank.find(rank1), rank1.size(), "<gpu dev=\"1\" sm=\"90\" rank=\"0\"");
  CHECK(xml_error(same_rank).ends_with("<gpu> dev 1: rank 0 is also dev 0's"));
  // Every GPU-NIC cell NODE or SYS: all ten NICs counted, and flagged for the YAML's note.
  CHECK_FALSE(smi("h100_hgx_nvidia_smi.txt").no_nic_near_gpu);
  std::string flat = sample("h100_hgx_nvidia_smi.txt");
  for (std::size_t at = flat.find("PXB"); at != std::string::npos; at = flat.find("PXB", at)) {
    flat.replace(at, 3, "SYS");
  }
  for (std::size_t at = flat.find("PIX"); at != std::string::npos; at = flat.find("PIX", at)) {
    flat.replace(at, 3, "SYS");
  }
  const ImportedServer cloud = parse_nvidia_smi_topo(flat, "topo.txt");
  CHECK(cloud.no_nic_near_gpu);
  CHECK(cloud.nics.size() == 10);
  CHECK(cloud.other_nics.empty());
  const std::string yaml =
      cli::cluster_yaml(cloud, cli::ImportOptions{.name = "cloud", .gpu = "h100-sxm-80g"});
  CHECK(yaml.find("# note: no NIC shares a PCIe switch with a GPU (PIX/PXB), so all 10 are "
                  "counted; if some carry storage or management traffic, lower "
                  "network.nics_per_server\n") != std::string::npos);
  CHECK(load_cluster(yaml, "cloud.yaml").network.nics_per_server == 10);
}

TEST_CASE("nvidia-smi: H100 with one NVLink of GPU 3 down (NV17), CRLF and tabs", "[import]") {
  const ImportedServer s = smi("h100_dead_link_nvidia_smi.txt");
  CHECK(s.pair_links[3][0] == 17);
  CHECK(s.pair_links[0][3] == 17);
  CHECK(s.pair_links[0][1] == 18);
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  CHECK(nv.links_per_gpu == 18);
  CHECK(nv.degraded == std::vector<std::string>{"nvlink:0/3"});
  CHECK(nv.notes.front() ==
        "GPU 3 has 17 NVLinks where the others have 18: failure spec nvlink:0/3");
}

TEST_CASE("nvidia-smi: a degraded GPU shown only in its own row still reads as a switch",
          "[import]") {
  ImportedServer s = smi("h100_hgx_nvidia_smi.txt");
  for (int j = 0; j < 8; ++j) {
    if (j != 6) s.pair_links[6][j] = 15;  // GPU 6 reports 15; its peers still print NV18
  }
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  CHECK(nv.degraded == std::vector<std::string>{"nvlink:0/6:3"});  // 18 - 15 = 3 down
}

TEST_CASE("nvidia-smi: cells no switch pattern explains still read as a switch server",
          "[import]") {
  // Read as direct links, a pair shown as SYS on an NV18 matrix gave a mesh of 27 pairs at 18
  // NVLinks each: 108-126 NVLinks per GPU (2700 GB/s) where no GPU has more than 18, and the
  // degraded server planned faster than the healthy one.
  ImportedServer missing = smi("h100_hgx_nvidia_smi.txt");
  missing.pair_links[0][1] = missing.pair_links[1][0] = 0;
  const ServerNvlink nv = infer_nvlink(missing);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  CHECK(nv.links_per_gpu == 18);
  CHECK(nv.degraded.empty());
  REQUIRE(nv.notes.size() == 2);
  CHECK(nv.notes[0] ==
        "GPU 0 shows no NVLink to GPU 1, which no NVSwitch server shows (every pair meets in the "
        "switches at the smaller GPU's count): read as a switch server; check the server");
  // Two degraded GPUs: GPU 5 shows NV16 to six peers and NV17 to GPU 3 (which has 17): GPU 5
  // counts what it shows most (16), not its largest cell.
  ImportedServer two = smi("h100_hgx_nvidia_smi.txt");
  for (int j = 0; j < 8; ++j) {
    if (j == 3 || j == 5) continue;
    two.pair_links[3][j] = two.pair_links[j][3] = 17;
    two.pair_links[5][j] = two.pair_links[j][5] = 16;
  }
  two.pair_links[3][5] = two.pair_links[5][3] = 17;
  const ServerNvlink both = infer_nvlink(two);
  CHECK(both.kind == NvlinkKind::switch_fabric);
  CHECK(both.degraded == std::vector<std::string>{"nvlink:0/3", "nvlink:0/5:2"});
}

TEST_CASE("nvidia-smi: one cell above the others' count is that cell's, not the switch's",
          "[import]") {
  // NV19 in one cell of an NV18 table was read as 19 links per GPU, the seven others each
  // "degraded" at 18 (seven notes, seven --fail-link suggestions). NV12 and NV17 there read as
  // an 18-link switch with the odd cell noted; so do cells above it.
  for (const int odd : {19, 36, 64}) {
    INFO(odd);
    ImportedServer s = smi("h100_hgx_nvidia_smi.txt");
    s.pair_links[2][5] = odd;
    const ServerNvlink nv = infer_nvlink(s);
    CHECK(nv.kind == NvlinkKind::switch_fabric);
    CHECK(nv.links_per_gpu == 18);
    CHECK(nv.degraded.empty());
    REQUIRE(nv.notes.size() == 1);
    CHECK(nv.notes[0] == "GPU 2 shows NV" + std::to_string(odd) +
                             " to GPU 5, which no NVSwitch server shows (every pair meets in the "
                             "switches at the smaller GPU's count): read as a switch server; "
                             "check the server");
  }
  // A whole row above what its peers show back: that GPU's count is what they see (18).
  ImportedServer row = smi("h100_hgx_nvidia_smi.txt");
  for (int j = 1; j < 8; ++j) row.pair_links[0][j] = 19;
  const ServerNvlink nv = infer_nvlink(row);
  CHECK(nv.links_per_gpu == 18);
  CHECK(nv.degraded.empty());
  CHECK(nv.notes.size() == 7);
  // Both cells of the pair at 19: the pair agrees, and what the others show back is 18 still.
  ImportedServer pair = smi("h100_hgx_nvidia_smi.txt");
  pair.pair_links[2][5] = pair.pair_links[5][2] = 19;
  const ServerNvlink both = infer_nvlink(pair);
  CHECK(both.links_per_gpu == 18);
  CHECK(both.degraded.empty());
  CHECK(both.notes.size() == 2);
}

TEST_CASE("nvidia-smi: three healthy GPUs among five degraded keep the switch's count",
          "[import]") {
  // An NV18 switch server whose GPUs 3-7 lost 6 links each: every pair meets at the smaller
  // count, so GPUs 0-2 show NV18 to each other and NV12 to the rest. The majority (12) is not
  // the switch's: three GPUs show 18 both ways to two peers or more (mutual_peers_at).
  ImportedServer s = smi("h100_hgx_nvidia_smi.txt");
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      if (i != j && (i >= 3 || j >= 3)) s.pair_links[i][j] = 12;
    }
  }
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  CHECK(nv.links_per_gpu == 18);
  CHECK(nv.degraded == std::vector<std::string>{"nvlink:0/3:6", "nvlink:0/4:6", "nvlink:0/5:6",
                                                "nvlink:0/6:6", "nvlink:0/7:6"});
}

TEST_CASE("nvidia-smi: a 4-GPU switch table with an odd pair does not say every pair matches",
          "[import]") {
  // 4 GPUs at NV18, GPUs 2-3 at NV12: the odd cells are noted, and the closing note says
  // "most pairs" (it said "every pair shows NV18" right after naming the NV12 pair).
  const std::string text =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\n"
      "GPU0\t X \tNV18\tNV18\tNV18\t0-1\n"
      "GPU1\tNV18\t X \tNV18\tNV18\t0-1\n"
      "GPU2\tNV18\tNV18\t X \tNV12\t0-1\n"
      "GPU3\tNV18\tNV18\tNV12\t X \t0-1\n";
  ImportedServer odd = parse_nvidia_smi_topo(text, "odd.txt");
  const ServerNvlink nv = infer_nvlink(odd);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  REQUIRE(nv.notes.size() == 3);
  CHECK(nv.notes[0].starts_with("GPU 2 shows NV12 to GPU 3"));
  CHECK(nv.notes[2].starts_with("most pairs show NV18: read as an NVSwitch"));
  // Every pair alike: "every pair".
  odd.pair_links[2][3] = odd.pair_links[3][2] = 18;
  const ServerNvlink even = infer_nvlink(odd);
  REQUIRE(even.notes.size() == 1);
  CHECK(even.notes[0].starts_with("every pair shows NV18: read as an NVSwitch"));
}

TEST_CASE("nvidia-smi: DGX-1 V100 hybrid cube mesh (NV1/NV2 with PHB/SYS gaps)", "[import]") {
  const ImportedServer s = smi("dgx1_v100_nvidia_smi.txt");
  CHECK(s.gpus == 8);
  CHECK(s.pair_links[0][3] == 2);
  CHECK(s.pair_links[0][5] == 0);  // SYS: no direct link
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::mesh);
  CHECK(mesh_is(nv, kDgx1Mesh));
  CHECK(nv.links_per_gpu == 6);  // e.g. GPU 0: 1 + 1 + 2 + 2
  CHECK(nv.notes.empty());
  CHECK(s.nics == std::vector<std::string>{"mlx5_0", "mlx5_2", "mlx5_1", "mlx5_3"});
}

TEST_CASE("nvidia-smi: DGX-1 with the 0-4 pair missing", "[import]") {
  const ServerNvlink nv = infer_nvlink(smi("dgx1_v100_missing_pair_nvidia_smi.txt"));
  CHECK(nv.kind == NvlinkKind::mesh);
  CHECK(nv.mesh.size() == 15);
  CHECK(nv.links_per_gpu == 6);
  REQUIRE(nv.notes.size() == 2);  // GPUs 0 and 4: 6 - 2 = 4 links each
  CHECK(nv.notes[0] ==
        "GPU 0 has 4 NVLinks where others have 6: a link may be down (the mesh "
        "lists only the pairs that are up)");
}

TEST_CASE("nvidia-smi: malformed input is named by line", "[import]") {
  CHECK(
      smi_error("hello\n") ==
      "topo.txt: no `nvidia-smi topo -m` matrix found (expected a header line starting with GPU0)");
  CHECK(smi_error("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X\tNV4\t0-7\nGPU1\tNV4\n") ==
        "topo.txt:3: row 'GPU1': expected 2 cells (one per column GPU0..GPU1), got 1");
  // A matrix whose header was cut off, or whose header is out of order, is said at its first
  // line (both read "row 'GPU0' is missing", with no line, though the row was there).
  CHECK(smi_error("GPU0\t X \tNV4\t0-1\nGPU1\tNV4\t X \t0-1\n") ==
        "topo.txt:1: row 'GPU0' before any header line: expected the header of the matrix "
        "(GPU0 GPU1 ... CPU Affinity, as nvidia-smi topo -m prints it) first");
  CHECK(smi_error("\tGPU1\tGPU0\tCPU Affinity\nGPU1\t X \tNV4\t0-1\nGPU0\tNV4\t X \t0-1\n") ==
        "topo.txt:1: column 'GPU1': expected GPU0 (GPU columns in order, before the NICs)");
  CHECK(smi_error("\tGPU0\tGPU1\nGPU0\t X\tNVX\nGPU1\tNV4\tX\n") ==
        "topo.txt:2: row 'GPU0', column 'GPU1': unknown connection 'NVX' (expected X, NV1..NV64, "
        "PIX, PXB, PHB, NODE or SYS)");
  // Counts 1..64 (kMaxNvlinks); X exactly on the diagonal; GPU columns before NIC columns.
  CHECK(smi_error("\tGPU0\tGPU1\nGPU0\t X\tNV999\nGPU1\tNV4\tX\n").find("'NV999'") !=
        std::string::npos);
  CHECK(smi_error("\tGPU0\tGPU1\nGPU0\t X\tNV0\nGPU1\tNV4\tX\n").find("'NV0'") !=
        std::string::npos);
  CHECK(smi_error("\tGPU0\tGPU1\nGPU0\t X\tX\nGPU1\tNV4\tX\n") ==
        "topo.txt:2: row 'GPU0', column 'GPU1': 'X' off the diagonal: X marks a device itself");
  CHECK(smi_error("\tGPU0\tGPU1\nGPU0\t NV4\tNV4\nGPU1\tNV4\tX\n") ==
        "topo.txt:2: row 'GPU0', column 'GPU0': 'NV4' on the diagonal: expected X");
  CHECK(smi_error("\tGPU0\tNIC0\tGPU1\n") ==
        "topo.txt:1: column 'GPU1' after the NIC column 'NIC0': expected the GPU columns first");
  CHECK(smi_error("\tGPU0\tGPU2\n") ==
        "topo.txt:1: column 'GPU2': expected GPU1 (GPU columns in order, before the NICs)");
  CHECK(smi_error("\tGPU0\tGPU1\nGPU0\t X\tNV4\n") == "topo.txt: row 'GPU1' is missing");
  // A cell more than the columns: read as the CPU affinity before; the affinity stays allowed.
  CHECK(smi_error("\tGPU0\tGPU1\nGPU0\t X\tNV4\tNV4\nGPU1\tNV4\tX\n") ==
        "topo.txt:2: row 'GPU0': a connection 'NV4' past the last column (GPU0..GPU1): expected 2 "
        "cells");
  CHECK(smi_error("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X\tNV4\t0-7\nGPU1\tNV4\tX\t0-7\n")
            .find("past the last column") == std::string::npos);
  // The NIC legend: one name per NIC of the matrix, one line each (names reach the YAML).
  const std::string matrix = "\tGPU0\tNIC0\nGPU0\t X\tPIX\nNIC0\tPIX\t X\n";
  CHECK(smi_error(matrix + "NIC0: mlx5_0\nNIC0: mlx5_9\n") ==
        "topo.txt:5: NIC0: named twice in the NIC legend");
  // Two NICs of the matrix, one device name for both: an edited or merged file.
  const std::string two =
      "\tGPU0\tNIC0\tNIC1\nGPU0\t X\tPIX\tPIX\nNIC0\tPIX\t X\tPIX\n"
      "NIC1\tPIX\tPIX\t X\n";
  CHECK(smi_error(two + "NIC0: mlx5_0\nNIC1: mlx5_0\n") ==
        "topo.txt:6: NIC1: 'mlx5_0' is also NIC0's device in the NIC legend; each NIC is its own "
        "device");
  CHECK(smi_error(matrix + "NIC1: mlx5_1\n") ==
        "topo.txt:4: NIC1: in the NIC legend but not a column of the matrix (GPU0..NIC0)");
  CHECK(smi_error(matrix + "NIC0: mlx5\a0\n") ==
        "topo.txt:4: NIC0: expected a string without control characters, got byte 0x07 at byte "
        "5");
  CHECK(smi_error(matrix + "NIC0: mlx5\f0\n") ==
        "topo.txt:4: NIC0: expected one device name ('NIC0: mlx5_0')");
}

TEST_CASE("NCCL XML: H100 on NVSwitch, 5+4+4+5 links per GPU", "[import]") {
  const ImportedServer s = xml("h100_nccl_topo.xml");
  CHECK(s.gpus == 8);
  CHECK(s.switch_links == std::vector<int>(8, 18));
  CHECK(all_pairs(s, 0));  // no direct GPU-GPU link
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::switch_fabric);
  CHECK(nv.links_per_gpu == 18);
  CHECK(nv.degraded.empty());
  CHECK(s.nics.size() == 8);  // mlx5_0..7 at 400000 Mb/s
  CHECK(s.nic_gbits == 400.0);
  // mlx5_8/9 (storage) sit on a PCIe switch with no GPU: left out for that, whatever their
  // speed (a DGX A100's run at the compute NICs' 200 Gb/s and were counted: 31.25 GB/s a GPU).
  CHECK(s.other_nics == std::vector<std::string>{
                            "mlx5_8: no GPU behind the same PCIe switch (storage or management)",
                            "mlx5_9: no GPU behind the same PCIe switch (storage or management)"});
  CHECK(s.sm == 90);
  CHECK(guess_gpu_preset(s) == "h100-sxm-80g");  // PCI device 0x2330
  // The storage NICs at the compute NICs' speed: still left out, 8 NICs carry the traffic.
  std::string same_speed = sample("h100_nccl_topo.xml");
  for (auto at = same_speed.find("speed=\"200000\""); at != std::string::npos;
       at = same_speed.find("speed=\"200000\"")) {
    same_speed.replace(at, 14, "speed=\"400000\"");
  }
  const ImportedServer storage = parse_nccl_topo_xml(same_speed, "h100.xml");
  CHECK(storage.nics.size() == 8);
  CHECK(storage.other_nics.size() == 2);
  CHECK(nvlink_gbps_for("", s.sm) == 25.0);
}

TEST_CASE("NCCL XML: H100 with one NVLink of GPU 5 down (5+4+4+4 = 17)", "[import]") {
  const ImportedServer s = xml("h100_dead_link_nccl_topo.xml");
  CHECK(s.switch_links[5] == 17);
  CHECK(s.switch_links[4] == 18);
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.links_per_gpu == 18);
  CHECK(nv.degraded == std::vector<std::string>{"nvlink:0/5"});
}

TEST_CASE("NCCL XML: DGX-1 V100 direct links (tclass 0x030200)", "[import]") {
  const ImportedServer s = xml("dgx1_v100_nccl_topo.xml");
  CHECK(s.gpus == 8);
  CHECK(s.switch_links == std::vector<int>(8, 0));
  const ServerNvlink nv = infer_nvlink(s);
  CHECK(nv.kind == NvlinkKind::mesh);
  CHECK(mesh_is(nv, kDgx1Mesh));
  CHECK(s.nics.size() == 4);
  CHECK(s.nic_gbits == 100.0);
  CHECK(guess_gpu_preset(s) == "v100-sxm-32g");  // PCI device 0x1db5
}

TEST_CASE("NCCL XML: malformed input is named by line", "[import]") {
  CHECK(xml_error("<system><cpu></system>") ==
        "topo.xml:1: not valid XML (XML_ERROR_MISMATCHED_ELEMENT)");
  CHECK(xml_error("<topology/>") == "topo.xml: no <system> element: not an NCCL topology dump");
  CHECK(xml_error("<system>\n<cpu/>\n</system>") == "topo.xml: no <gpu> element in <system>");
  CHECK(xml_error("<system>\n<cpu>\n<gpu dev=\"0\"/>\n</cpu>\n</system>") ==
        "topo.xml:3: <gpu> outside a <pci> element: cannot tell its bus id");
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\">\n<gpu sm=\"90\"/></pci></system>") ==
        "topo.xml:2: <gpu>: missing attribute 'dev'");
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\">\n"
                  "<nvlink target=\"0000:02:00.0\" count=\"2\" tclass=\"0x030200\"/>"
                  "</gpu></pci></system>") ==
        "topo.xml:2: <nvlink>: target '0000:02:00.0' is not a GPU here");
  // A link to the GPU's own bus id was read as a degraded GPU (14 of 18 links elsewhere).
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\">\n"
                  "<nvlink target=\"0000:01:00.0\" count=\"4\" tclass=\"0x030200\"/>"
                  "</gpu></pci></system>") ==
        "topo.xml:2: <nvlink>: target '0000:01:00.0' is GPU 0 itself; a GPU cannot link to "
        "itself");
}

TEST_CASE("NCCL XML: a malformed tclass is refused as a missing one is", "[import]") {
  // tclass="bogus" matched no class: the link was dropped and the GPU reported degraded.
  const std::string gpu = "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\">\n";
  const auto tclass = [&](const std::string& value) {
    return xml_error(gpu + "<nvlink target=\"0000:05:00.0\" count=\"18\" tclass=\"" + value +
                     "\"/></gpu></pci></system>");
  };
  for (const std::string bad : {"bogus", "0x", "068000", "0x06800g", "0x0680000000"}) {
    INFO(bad);
    CHECK(tclass(bad) ==
          "topo.xml:2: <nvlink>: attribute 'tclass': expected a PCI class in hex (0x068000 an "
          "NVSwitch, 0x03xxxx a GPU), got '" +
              bad + "'");
  }
  CHECK(xml_error(gpu + "<nvlink target=\"0000:05:00.0\" count=\"18\"/></gpu></pci></system>") ==
        "topo.xml:2: <nvlink>: missing attribute 'tclass'");
  // Hex in either case, and a class other than a switch's or a GPU's (a CPU's) still reads.
  CHECK(tclass("0x068000").find("tclass") == std::string::npos);
  CHECK(tclass("0X068001").find("tclass") == std::string::npos);
}

TEST_CASE("NCCL XML: link counts, NIC speeds and GPU counts are bounded", "[import]") {
  const std::string gpu = "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\">\n";
  const auto link = [&](const std::string& count) {
    return xml_error(gpu + "<nvlink target=\"0000:05:00.0\" count=\"" + count +
                     "\" tclass=\"0x068000\"/></gpu></pci></system>");
  };
  CHECK(link("-1") == "topo.xml:2: <nvlink>: attribute 'count': expected 1..64, got -1");
  CHECK(link("999") == "topo.xml:2: <nvlink>: attribute 'count': expected 1..64, got 999");
  // 40 + 40 links to the switch: each count is fine, the GPU's 80 in all is not.
  CHECK(xml_error(gpu + "<nvlink target=\"0000:05:00.0\" count=\"40\" tclass=\"0x068000\"/>\n"
                        "<nvlink target=\"0000:06:00.0\" count=\"40\" tclass=\"0x068000\"/>"
                        "</gpu></pci></system>") ==
        "topo.xml:3: <nvlink>: GPU 0 has more than 64 NVLinks in all");
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\"/></pci>\n"
                  "<net name=\"mlx5_0\" dev=\"0\" speed=\"fast\"/></system>") ==
        "topo.xml:2: <net>: attribute 'speed': expected an integer, got 'fast'");
  // A NIC's name reaches the cluster file's comments: a newline in it added a `pcie:` key the
  // cluster then read (and an escape byte reached the terminal).
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\"/></pci>\n"
                  "<net name=\"mlx5_0&#10;pcie:&#10;  gbps: 1000 #\" dev=\"0\"/></system>") ==
        "topo.xml:2: <net>: attribute 'name': expected one line of printable characters, got "
        "'mlx5_0?pcie:?  gbps: 1000 #'");
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\"/></pci>\n"
                  "<net name=\"mlx5&#27;[31m0\" dev=\"0\"/></system>") ==
        "topo.xml:2: <net>: attribute 'name': expected one line of printable characters, got "
        "'mlx5?[31m0'");
  // The whole text, in range (sscanf read "400000.5" as 400000 and an overflow as -1).
  for (const std::string speed : {"400000.5", "99999999999999999999"}) {
    CHECK(xml_error("<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\"/></pci>\n"
                    "<net name=\"mlx5_0\" dev=\"0\" speed=\"" +
                    speed + "\"/></system>") ==
          "topo.xml:2: <net>: attribute 'speed': expected an integer, got '" + speed + "'");
  }
  // The GPU's sm the same way (it was read as 0), at its own line.
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\">\n<gpu dev=\"0\" sm=\"abc\"/></pci>"
                  "</system>") ==
        "topo.xml:2: <gpu>: attribute 'sm': expected an integer, got 'abc'");
  // A second root after <system> (two dumps in one file) is refused, not dropped.
  CHECK(xml_error("<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\"/></pci>"
                  "</system>\n<system version=\"1\"><bogus/></system>") ==
        "topo.xml:2: <system>: a second root element after <system> (one NCCL topology dump a "
        "file)");
  std::string many = "<system>";
  for (int g = 0; g <= kMaxImportGpus; ++g) {
    many += "<pci busid=\"0000:" + std::to_string(g) + ":00.0\"><gpu dev=\"" + std::to_string(g) +
            "\"/></pci>";
  }
  CHECK(xml_error(many + "</system>") == "topo.xml:1: <gpu>: more than 1024 GPUs in one server");
}

TEST_CASE("cluster YAML from an import loads back as the same server", "[import]") {
  const ImportedServer s = smi("h100_dead_link_nvidia_smi.txt");
  const std::string text = cli::cluster_yaml(
      s, cli::ImportOptions{.name = "h100-box", .gpu = "h100-sxm-80g", .servers = 4});
  const Cluster c = load_cluster(text, "imported.yaml");
  CHECK(c.name == "h100-box");
  CHECK(c.servers == 4);
  CHECK(c.gpus_per_server == 8);
  CHECK(c.nvlink.kind == NvlinkKind::switch_fabric);
  CHECK(c.nvlink.links_per_gpu == 18);
  CHECK(c.nvlink.gbps_per_link == 25.0);
  CHECK(c.network.nics_per_server == 8);
  CHECK(c.network.nic_gbits == 400.0);  // assumed for H100 (NDR), said so in a comment
  CHECK(text.find("# degraded: plan this server (server 0) as it is with --fail-link "
                  "nvlink:0/3\n") != std::string::npos);
  // The input's path reaches a comment: a newline in a file name would end it and add a key.
  ImportedServer named = s;
  named.source = "x\npcie: {gbps: 1000} #.txt";
  const std::string renamed = cli::cluster_yaml(
      named, cli::ImportOptions{.name = "h100-box", .gpu = "h100-sxm-80g", .servers = 4});
  CHECK(renamed.find("# imported by `trident topo import` from x?pcie: {gbps: 1000} #.txt (") !=
        std::string::npos);
  CHECK(load_cluster(renamed, "imported.yaml").pcie.gbps == 50.0);  // the H100's, not 1000
  // The degraded spec applies to the loaded cluster as it stands.
  const Cluster degraded = apply_failure(c, parse_failure("nvlink:0/3"));
  CHECK(degraded.health.nvlinks_down.at(3) == 1);

  const Cluster mesh =
      load_cluster(cli::cluster_yaml(xml("dgx1_v100_nccl_topo.xml"),
                                     cli::ImportOptions{.name = "dgx1", .gpu = "v100-sxm-32g"}),
                   "dgx1.yaml");
  CHECK(mesh.nvlink.kind == NvlinkKind::mesh);
  CHECK(mesh.nvlink.mesh.size() == 16);
  CHECK(mesh.network.nic_gbits == 100.0);  // from the XML's speed="100000"
}

TEST_CASE("a PCIe-only server imports as one domain, without NICs on one server", "[import]") {
  // Four GPUs, PHB/SYS only, no NIC column: domain_gpus was 1, so one server of 4 "domains"
  // needed a NIC to join them and the import was refused; the pcie-8gpu preset's domain is the
  // server.
  const std::string text =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tPHB\tSYS\tSYS\t0-7\t0\n"
      "GPU1\tPHB\t X \tSYS\tSYS\t0-7\t0\n"
      "GPU2\tSYS\tSYS\t X \tPHB\t8-15\t1\n"
      "GPU3\tSYS\tSYS\tPHB\t X \t8-15\t1\n";
  const ImportedServer server = parse_nvidia_smi_topo(text, "pix4.txt");
  // A byte order mark before the header reads the same (it was "row 'GPU0' before any header").
  CHECK(parse_nvidia_smi_topo("\xEF\xBB\xBF" + text, "pix4.txt").gpus == 4);
  const std::string yaml =
      cli::cluster_yaml(server, cli::ImportOptions{.name = "pix4", .gpu = "a100-pcie-80g"});
  const Cluster c = load_cluster(yaml, "pix4.yaml");
  CHECK(c.nvlink.kind == NvlinkKind::none);
  CHECK(c.nvlink.domain_gpus == 4);
  CHECK(c.network.nics_per_server == 0);
  // Its GPUs talk over PCIe: a group of all four rides the GPU's PCIe rate.
  const std::array<int, 4> all{0, 1, 2, 3};
  CHECK(query_group(c, all).tier == Tier::pcie);
  CHECK(query_group(c, all).intra_gbps == c.pcie.gbps);
}

TEST_CASE("cluster YAML needs to know the GPU", "[import]") {
  try {
    (void)cli::cluster_yaml(smi("dgx_a100_nvidia_smi.txt"),
                            cli::ImportOptions{.name = "a100", .gpu = ""});
    FAIL("no GPU must be an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "dgx_a100_nvidia_smi.txt: cannot tell which GPU this is: pass --gpu NAME");
  }
}
