#pragma once
/// One server as read from its own tools' output (`nvidia-smi topo -m`, NCCL's topology dump),
/// what its NVLink wiring is (NVSwitch, direct mesh, none), and the cluster YAML that
/// describes it (as data; cli/topo_yaml.h writes the YAML). Pure text in, data out.
#include <string>
#include <vector>

#include "topology/cluster.h"

namespace trident {

/// Most GPUs one imported server may have (1024; the largest NVLink domain built, NVL576,
/// has 576): the readers keep a GPUs x GPUs matrix, and a 7 MB dump of 10^5 GPUs asked for 40 GB.
inline constexpr int kMaxImportGpus = 1024;
/// Most NVLinks a GPU may report, to one peer or in all (H100: 18): NV999 is a typo.
inline constexpr int kMaxNvlinks = 64;

/// What the input says about one server. Local GPU indexes 0..gpus-1 in the input's order
/// (nvidia-smi's GPU# / NCCL's CUDA dev).
struct ImportedServer {
  std::string source;  ///< file name, for messages
  std::string format;  ///< "nvidia-smi topo -m" | "NCCL topology XML"
  int gpus = 0;
  /// gpus x gpus: NVLinks GPU i reports towards GPU j (nvidia-smi NV#; NCCL direct links).
  std::vector<std::vector<int>> pair_links;
  /// Per GPU: NVLinks into NVSwitches. Known from NCCL XML (tclass 0x068000); empty when the
  /// input cannot tell (nvidia-smi), then it is inferred from pair_links.
  std::vector<int> switch_links;
  std::vector<std::string> nics;        ///< NICs the GPUs use (next to a GPU, or the fast ones)
  std::vector<std::string> other_nics;  ///< NICs left out (no GPU nearby, slower), with why
  /// No NIC shares a PCIe switch with a GPU (a cloud VM's flattened PCIe, or storage NICs
  /// only): every NIC is counted, and the import says so.
  bool no_nic_near_gpu = false;
  double nic_gbits = 0.0;   ///< per NIC; 0 = the input does not say
  std::string device_name;  ///< "NVIDIA H100 80GB HBM3" when the input names the GPU, else ""
  std::string pci_device;   ///< PCI device id ("0x2330") when known, else ""
  int sm = 0;               ///< compute capability x 10 (90 = Hopper) when known, else 0
};

/// The NVLink wiring inferred from an ImportedServer.
struct ServerNvlink {
  NvlinkKind kind = NvlinkKind::none;
  /// switch: the healthy link count per GPU (the most any GPU has); mesh: the most NVLinks any
  /// one GPU has over all its pairs; none: 0.
  int links_per_gpu = 0;
  std::vector<MeshLink> mesh;  ///< mesh: every connected pair (a < b) with its links
  /// Failure specs (server 0) for what the output shows broken on a switch server:
  /// "nvlink:0/3" for a GPU with 17 links where the others have 18.
  std::vector<std::string> degraded;
  std::vector<std::string> notes;  ///< one line each: what was assumed or looks odd
};

[[nodiscard]] ServerNvlink infer_nvlink(const ImportedServer& server);

/// GPU preset name for a device name as nvidia-smi, nccl-tests and CUDA print it ("NVIDIA
/// H100 80GB HBM3" -> "h100-sxm-80g"), "" when unknown.
[[nodiscard]] std::string gpu_preset_for_device(const std::string& device_name);

/// GPU preset name for what the input says (device name, PCI id), "" when unknown.
[[nodiscard]] std::string guess_gpu_preset(const ImportedServer& server);

/// Nominal GB/s per NVLink, one direction, for a GPU preset name or NCCL SM (25 up to Hopper,
/// 50 from Blackwell; docs/hardware.md NVLink table); 0 when neither says.
[[nodiscard]] double nvlink_gbps_for(const std::string& gpu_preset, int sm);

/// NIC speed (Gb/s) these servers ship with, for an input that does not say (docs/hardware.md:
/// DGX-1 EDR 100, DGX A100 HDR 200, DGX H100 NDR 400).
[[nodiscard]] double assumed_nic_gbits(const std::string& gpu_preset);

}  // namespace trident
