// What an imported server's NVLink wiring is (the cluster YAML is written by cli/topo_yaml.cpp).
#include "topology/server_import.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <string_view>

#include "topology/errors.h"

namespace trident {
namespace {

/// "nvlink:0/G", "nvlink:0/G:K" or "nvlink:0/G:all" for a GPU that has `have` of `want` links.
[[nodiscard]] std::string degraded_spec(int gpu, int have, int want) {
  const std::string base = "nvlink:0/" + std::to_string(gpu);
  if (have == 0) return base + ":all";
  const int down = want - have;
  return down == 1 ? base : base + ":" + std::to_string(down);
}

[[nodiscard]] std::string degraded_note(int gpu, int have, int want) {
  return "GPU " + std::to_string(gpu) + " has " + std::to_string(have) + " NVLinks where the " +
         "others have " + std::to_string(want) + ": failure spec " + degraded_spec(gpu, have, want);
}

void add_switch_degraded(ServerNvlink& out, const std::vector<int>& per_gpu) {
  for (int g = 0; g < static_cast<int>(per_gpu.size()); ++g) {
    if (per_gpu[g] >= out.links_per_gpu) continue;
    out.degraded.push_back(degraded_spec(g, per_gpu[g], out.links_per_gpu));
    out.notes.push_back(degraded_note(g, per_gpu[g], out.links_per_gpu));
  }
}

[[nodiscard]] ServerNvlink from_switch_links(const ImportedServer& server) {
  ServerNvlink out;
  out.kind = NvlinkKind::switch_fabric;
  out.links_per_gpu = *std::max_element(server.switch_links.begin(), server.switch_links.end());
  add_switch_degraded(out, server.switch_links);
  for (int i = 0; i < server.gpus; ++i) {
    for (int j = i + 1; j < server.gpus; ++j) {
      if (server.pair_links[i][j] == 0) continue;
      out.notes.push_back("GPUs " + std::to_string(i) + " and " + std::to_string(j) +
                          " also have a direct NVLink: not modelled beside the NVSwitch");
    }
  }
  return out;
}

/// Each GPU's count as its peers see it too: the largest in its row, but no more than the
/// largest its column shows (what some peer reports back). Through a switch a GPU meets every
/// peer at the smaller count, so one cell above what any peer shows back (NV19 on an NV18
/// table) is that cell's oddity, not the GPU's count: read as 19 links, it made 19 the
/// switch's and every other GPU "degraded" at 18.
[[nodiscard]] std::vector<int> seen_links(const ImportedServer& server) {
  std::vector<int> out(server.gpus, 0);
  for (int i = 0; i < server.gpus; ++i) {
    int row = 0;
    int column = 0;
    for (int j = 0; j < server.gpus; ++j) {
      if (i == j) continue;
      row = std::max(row, server.pair_links[i][j]);
      column = std::max(column, server.pair_links[j][i]);
    }
    out[i] = std::min(row, column);
  }
  return out;
}

/// The count most GPUs have (ties: the larger; GPUs without NVLink aside): the switch's. A GPU
/// cannot have more links than the switch gives the others, so counts above it are odd cells
/// (NV19 between two GPUs of an NV18 table), not two healthy GPUs among six degraded.
[[nodiscard]] int majority_count(const std::vector<int>& links) {
  std::map<int, int> gpus_with;
  for (const int count : links) {
    if (count > 0) ++gpus_with[count];
  }
  int best = 0;
  int count_of_best = 0;
  for (const auto& [count, gpus] : gpus_with) {
    if (gpus >= best) {
      best = gpus;
      count_of_best = count;
    }
  }
  return count_of_best;
}

/// Peers of GPU `gpu` that it shows at `count` links or more and that show it as many back.
[[nodiscard]] int mutual_peers_at(const ImportedServer& server, int gpu, int count) {
  int peers = 0;
  for (int j = 0; j < server.gpus; ++j) {
    if (j != gpu && server.pair_links[gpu][j] >= count && server.pair_links[j][gpu] >= count) {
      ++peers;
    }
  }
  return peers;
}

/// `links` no higher than what each GPU's peers show it, nor than the majority's count unless
/// the GPU shares its higher count with two peers or more (mutual_peers_at).
[[nodiscard]] std::vector<int> capped(const ImportedServer& server, std::vector<int> links) {
  for (int i = 0; i < server.gpus; ++i) {
    int column = 0;
    for (int j = 0; j < server.gpus; ++j) {
      if (i != j) column = std::max(column, server.pair_links[j][i]);
    }
    if (column > 0) links[i] = std::min(links[i], column);
  }
  // Above the majority's count, a GPU that shows it both ways with at least two peers is one
  // of three or more healthy GPUs among degraded ones (an NV18 switch with five GPUs at NV12);
  // one pair at it (an NV19 cell, or a row and its echo) is the table's oddity, not a switch.
  const int majority = majority_count(links);
  if (majority > 0) {
    for (int i = 0; i < server.gpus; ++i) {
      if (links[i] <= majority || mutual_peers_at(server, i, links[i]) >= 2) continue;
      links[i] = majority;
    }
  }
  return links;
}

/// NVSwitch servers show every pair as NV<links of the GPU>; a degraded GPU shows its own count
/// in its row, and its peers show either the same or the smaller of the two.
[[nodiscard]] bool looks_switched(const ImportedServer& server, const std::vector<int>& links) {
  for (int i = 0; i < server.gpus; ++i) {
    for (int j = 0; j < server.gpus; ++j) {
      if (i == j) continue;
      const int cell = server.pair_links[i][j];
      if (cell != links[i] && cell != std::min(links[i], links[j])) return false;
    }
  }
  return true;
}

[[nodiscard]] ServerNvlink from_pairs_mesh(const ImportedServer& server) {
  ServerNvlink out;
  out.kind = NvlinkKind::mesh;
  std::vector<int> per_gpu(server.gpus, 0);
  for (int i = 0; i < server.gpus; ++i) {
    for (int j = i + 1; j < server.gpus; ++j) {
      const int there = server.pair_links[i][j];
      const int back = server.pair_links[j][i];
      const int links = std::min(there, back);
      if (there != back) {
        out.notes.push_back("GPU " + std::to_string(i) + " reports " + std::to_string(there) +
                            " NVLinks to GPU " + std::to_string(j) + ", which reports " +
                            std::to_string(back) + ": using " + std::to_string(links));
      }
      if (links == 0) continue;
      out.mesh.push_back(MeshLink{.a = i, .b = j, .links = links});
      per_gpu[i] += links;
      per_gpu[j] += links;
    }
  }
  out.links_per_gpu = *std::max_element(per_gpu.begin(), per_gpu.end());
  for (int g = 0; g < server.gpus; ++g) {
    if (per_gpu[g] >= out.links_per_gpu) continue;
    out.notes.push_back("GPU " + std::to_string(g) + " has " + std::to_string(per_gpu[g]) +
                        " NVLinks where others have " + std::to_string(out.links_per_gpu) +
                        ": a link may be down (the mesh lists only the pairs that are up)");
  }
  return out;
}

/// Each GPU's most common count in its row (ties: the smaller): on a switch server whose table
/// has cells no switch pattern explains, what the GPU shows to most of its peers.
[[nodiscard]] std::vector<int> row_mode(const ImportedServer& server) {
  std::vector<int> out(server.gpus, 0);
  for (int i = 0; i < server.gpus; ++i) {
    std::map<int, int> seen;  // NVLink counts only: a SYS cell is one of the odd cells
    for (int j = 0; j < server.gpus; ++j) {
      if (i != j && server.pair_links[i][j] > 0) ++seen[server.pair_links[i][j]];
    }
    int best = 0;
    for (const auto& [count, times] : seen) {
      if (times > best) {
        best = times;
        out[i] = count;
      }
    }
  }
  return out;
}

/// The most NVLinks one GPU has: 18 (H100, H200, B200, GB200; A100 12, V100 6: NVIDIA's
/// datasheets). A direct mesh cannot give a GPU more.
constexpr int kMostNvlinksPerGpu = 18;

/// A matrix read as direct links that would give some GPU more NVLinks than any GPU has: it
/// is an NVSwitch server whose table shows cells no switch pattern explains (a pair as SYS, a
/// count unlike either row's). True with a note per such cell.
[[nodiscard]] bool switched_beyond_mesh(const ImportedServer& server, const std::vector<int>& links,
                                        std::vector<std::string>& notes) {
  int most_summed = 0;
  for (int i = 0; i < server.gpus; ++i) {
    int summed = 0;
    for (int j = 0; j < server.gpus; ++j) {
      if (i != j) summed += std::min(server.pair_links[i][j], server.pair_links[j][i]);
    }
    most_summed = std::max(most_summed, summed);
  }
  if (most_summed <= kMostNvlinksPerGpu) return false;
  for (int i = 0; i < server.gpus; ++i) {
    for (int j = 0; j < server.gpus; ++j) {
      const int cell = server.pair_links[i][j];
      if (i == j || cell == links[i] || cell == std::min(links[i], links[j])) continue;
      notes.push_back("GPU " + std::to_string(i) + " shows " +
                      (cell == 0 ? std::string("no NVLink") : "NV" + std::to_string(cell)) +
                      " to GPU " + std::to_string(j) +
                      ", which no NVSwitch server shows (every pair meets in the switches at "
                      "the smaller GPU's count): read as a switch server; check the server");
    }
  }
  return true;
}

[[nodiscard]] ServerNvlink from_pairs(const ImportedServer& server) {
  const bool any = std::any_of(
      server.pair_links.begin(), server.pair_links.end(), [](const std::vector<int>& row) {
        return std::any_of(row.begin(), row.end(), [](int cell) { return cell > 0; });
      });
  if (server.gpus < 2 || !any) return ServerNvlink{};
  std::vector<int> links = capped(server, seen_links(server));
  int most = *std::max_element(links.begin(), links.end());
  std::vector<std::string> odd_cells;
  if (!looks_switched(server, links)) {
    const std::vector<int> usual = capped(server, row_mode(server));
    if (!switched_beyond_mesh(server, usual, odd_cells)) return from_pairs_mesh(server);
    links = usual;
    most = *std::max_element(links.begin(), links.end());
  }
  ServerNvlink out;
  out.kind = NvlinkKind::switch_fabric;
  out.links_per_gpu = most;
  out.notes = std::move(odd_cells);
  add_switch_degraded(out, links);
  if (server.gpus <= 4) {
    // "every pair" only where it is so; a table with odd cells has them noted above.
    bool uniform = true;
    for (int i = 0; i < server.gpus; ++i) {
      for (int j = 0; j < server.gpus; ++j)
        uniform = uniform && (i == j || server.pair_links[i][j] == most);
    }
    out.notes.push_back((uniform ? "every pair shows NV" : "most pairs show NV") +
                        std::to_string(most) +
                        ": read as an NVSwitch; a board with direct links between every pair "
                        "reads the same here (NCCL's XML tells them apart)");
  }
  return out;
}

}  // namespace

ServerNvlink infer_nvlink(const ImportedServer& server) {
  const bool has_switch = std::any_of(server.switch_links.begin(), server.switch_links.end(),
                                      [](int l) { return l > 0; });
  ServerNvlink out = has_switch ? from_switch_links(server) : from_pairs(server);
  if (out.kind == NvlinkKind::none && server.gpus > 1) {
    out.notes.push_back("no NVLink between any two GPUs: PCIe only");
  }
  return out;
}

namespace {

struct PresetHint {
  std::string_view needle;  ///< found in the device name or equal to the PCI id
  std::string_view preset;
};

// PCI ids from the PCI ID database (pci-ids.ucw.cz, vendor 10de); names as nvidia-smi -L prints.
constexpr std::array<PresetHint, 7> kPciIds{{
    {"0x1db5", "v100-sxm-32g"},
    {"0x20b0", "a100-sxm-40g"},
    {"0x20b2", "a100-sxm-80g"},
    {"0x2330", "h100-sxm-80g"},
    {"0x2335", "h200-sxm-141g"},
    {"0x2901", "b200"},
    {"0x2941", "gb200"},
}};
constexpr std::array<PresetHint, 10> kNames{{
    {"V100-SXM2-32GB", "v100-sxm-32g"},
    {"A100-SXM4-40GB", "a100-sxm-40g"},
    {"A100-SXM4-80GB", "a100-sxm-80g"},
    {"A100 80GB PCIe", "a100-pcie-80g"},
    {"A100-PCIE-80GB", "a100-pcie-80g"},
    {"H100 80GB HBM3", "h100-sxm-80g"},
    {"H100-SXM5-80GB", "h100-sxm-80g"},
    {"H200", "h200-sxm-141g"},
    {"GB200", "gb200"},
    {"B200", "b200"},
}};

[[nodiscard]] std::string lower_hex(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::string gpu_preset_for_device(const std::string& device_name) {
  for (const auto& hint : kNames) {
    if (device_name.find(hint.needle) != std::string::npos) return std::string(hint.preset);
  }
  return "";
}

std::string guess_gpu_preset(const ImportedServer& server) {
  if (std::string preset = gpu_preset_for_device(server.device_name); !preset.empty()) {
    return preset;
  }
  const std::string id = lower_hex(server.pci_device);
  for (const auto& hint : kPciIds) {
    if (id == hint.needle) return std::string(hint.preset);
  }
  return "";
}

double nvlink_gbps_for(const std::string& gpu_preset, int sm) {
  if (sm >= 100) return 50.0;
  if (sm >= 70) return 25.0;
  const std::string name = lower_hex(gpu_preset);
  for (const char* fast : {"b200", "gb200", "b100", "b300", "gb300"}) {
    if (name.rfind(fast, 0) == 0) return 50.0;
  }
  for (const char* nominal : {"v100", "a100", "a800", "h100", "h800", "h200", "h20"}) {
    if (name.rfind(nominal, 0) == 0) return 25.0;
  }
  return 0.0;
}

double assumed_nic_gbits(const std::string& gpu) {
  if (gpu.rfind("v100", 0) == 0) return 100.0;
  if (gpu.rfind("a100", 0) == 0) return 200.0;
  return 400.0;
}

}  // namespace trident
