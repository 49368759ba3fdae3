#pragma once
/// One server as read from its own tools' output (`nvidia-smi topo -m`, NCCL's topology dump),
/// what its NVLink wiring is (NVSwitch, direct mesh, none), and the cluster YAML that
/// describes it. Pure text in, text out: cli reads and writes the files.
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
  double nic_gbits = 0.0;               ///< per NIC; 0 = the input does not say
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
  /// --fail-link specs (server 0) for what the output shows broken on a switch server:
  /// "nvlink:0/3" for a GPU with 17 links where the others have 18.
  std::vector<std::string> degraded;
  std::vector<std::string> notes;  ///< one line each: what was assumed or looks odd
};

[[nodiscard]] ServerNvlink infer_nvlink(const ImportedServer& server);

/// GPU preset name for what the input says (device name, PCI id), "" when unknown.
[[nodiscard]] std::string guess_gpu_preset(const ImportedServer& server);

/// Nominal GB/s per NVLink, one direction, for a GPU preset name or NCCL SM (25 up to Hopper,
/// 50 from Blackwell; docs/hardware.md NVLink table); 0 when neither says.
[[nodiscard]] double nvlink_gbps_for(const std::string& gpu_preset, int sm);

struct ImportOptions {
  std::string name;  ///< cluster name
  std::string gpu;   ///< GPU preset (required)
  int servers = 1;
  double nic_gbits = 0.0;      ///< overrides the input; 0 = from the input, else assumed
  double gbps_per_link = 0.0;  ///< overrides; 0 = from the GPU
};

/// A cluster YAML (configs/clusters format) of `options.servers` servers like this one,
/// commented with what was read and assumed; degraded links are listed as --fail-link specs.
/// Throws InputError when the GPU is unknown or the server has no GPU.
[[nodiscard]] std::string cluster_yaml(const ImportedServer& server, const ImportOptions& options);

}  // namespace trident
