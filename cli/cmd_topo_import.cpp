// trident topo import: a cluster YAML from a server's own `nvidia-smi topo -m` output or NCCL
// topology dump (topology/nvidia_smi_import.h, topology/nccl_xml_import.h).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/cluster_args.h"
#include "cli/commands.h"
#include "cli/input_file.h"
#include "cli/output_file.h"
#include "cli/topo_yaml.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/nccl_xml_import.h"
#include "topology/nvidia_smi_import.h"
#include "topology/server_import.h"
#include "topology/text_check.h"

namespace trident::cli {
namespace {

struct ImportFlags {
  std::string nvidia_smi;
  std::string nccl_xml;
  std::string name;
  std::string gpu;
  std::string output;
  int servers = 1;
  int nics = 0;
  double nic_gbits = 0.0;
  double nvlink_gbps = 0.0;
};

[[nodiscard]] ImportedServer read_server(const ImportFlags& flags) {
  if (flags.nvidia_smi.empty() == flags.nccl_xml.empty()) {
    throw InputError("topo import: give one of --nvidia-smi FILE or --nccl-xml FILE");
  }
  if (!flags.nvidia_smi.empty()) {
    return parse_nvidia_smi_topo(read_input_file(flags.nvidia_smi, "--nvidia-smi"),
                                 input_source(flags.nvidia_smi));
  }
  return parse_nccl_topo_xml(read_input_file(flags.nccl_xml, "--nccl-xml"),
                             input_source(flags.nccl_xml));
}

/// --gpu, else the preset the input's device name or PCI id points to; checked to exist.
[[nodiscard]] std::string resolve_gpu(const ImportFlags& flags, const ImportedServer& server) {
  std::string guess = guess_gpu_preset(server);
  const std::string seen = !server.device_name.empty()  ? "'" + server.device_name + "'"
                           : !server.pci_device.empty() ? "PCI device " + server.pci_device
                                                        : "no device name";
  if (!flags.gpu.empty()) {
    try {
      (void)gpu_preset(flags.gpu);  // throws "unknown GPU preset ... (did you mean ...)"
    } catch (const InputError& e) {
      throw InputError(std::string("--gpu: ") + e.what());
    }
    return flags.gpu;
  }
  if (guess.empty()) {
    throw InputError(server.source + ": cannot tell which GPU this is (" + seen +
                     "): pass --gpu NAME (trident presets lists them)");
  }
  return guess;
}

[[nodiscard]] std::string default_name(const ImportedServer& server) {
  return std::filesystem::path(server.source).stem().string();
}

/// --name goes into a YAML file: one line of printable characters (a newline would add keys).
void check_name(const std::string& name) {
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      throw InputError(
          fmt::format("--name: expected one line of printable characters, got a "
                      "control character (0x{:02x})",
                      byte));
    }
  }
  check_one_line(name, "--name");  // C1 controls, U+2028/2029, bidirectional controls; UTF-8
}

void run_import(const ImportFlags& flags) {
  check_name(flags.name);
  RunOutputs files;
  files.add_input("--nvidia-smi", flags.nvidia_smi);
  files.add_input("--nccl-xml", flags.nccl_xml);
  files.add_output("--output", flags.output);
  files.check();
  const ImportedServer server = read_server(flags);
  // Servers talk over their NICs: a dump that lists none (a VM's matrix without NIC columns)
  // needs the count from the user for more than one server.
  if (flags.servers > 1 && flags.nics == 0 && server.nics.empty()) {
    throw InputError(server.source + ": lists no NIC, and --servers " +
                     std::to_string(flags.servers) +
                     " needs the inter-server network: pass --nics N (NICs per server)");
  }
  ImportOptions options{.name = flags.name.empty() ? default_name(server) : flags.name,
                        .gpu = resolve_gpu(flags, server),
                        .servers = flags.servers,
                        .nics = flags.nics,
                        .nic_gbits = flags.nic_gbits,
                        .gbps_per_link = flags.nvlink_gbps};
  std::string yaml = cluster_yaml(server, options);
  // --gpu over a GPU the input names (a guess read from a device name can be wrong: GH200 reads
  // as h200-sxm-141g): kept, and said where the file and its reader see it.
  if (const std::string guess = guess_gpu_preset(server);
      !flags.gpu.empty() && !guess.empty() && guess != flags.gpu) {
    const std::string note = fmt::format(
        "# note: --gpu {} where {} names {} (read as {}): the links are written beside {}\n",
        flags.gpu, server.source,
        !server.device_name.empty() ? "'" + server.device_name + "'"
                                    : "PCI device " + server.pci_device,
        guess, flags.gpu);
    yaml = note + yaml;
    if (!flags.output.empty()) std::fputs(note.c_str(), stderr);  // stdout has it in the file
  }
  // What we print must load as a cluster; a value it refuses came from a flag or the input.
  try {
    (void)load_cluster(yaml, "the imported cluster");
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) +
                     " (from --servers, --nics, --nic-gbits, --nvlink-gbps or the input)");
  }
  files.set_text("--output", yaml);
  files.commit();
  if (!flags.output.empty()) {
    std::fprintf(stderr, "trident: wrote %s (%d server%s of %d GPUs, GPU %s)\n",
                 flags.output.c_str(), flags.servers, flags.servers == 1 ? "" : "s", server.gpus,
                 options.gpu.c_str());
  }
}

}  // namespace

void add_topo_import_subcommand(CLI::App& topo) {
  auto flags = std::make_shared<ImportFlags>();
  auto* sub = topo.add_subcommand(
      "import",
      "Print a cluster YAML for servers like the one described by `nvidia-smi topo -m` output "
      "or an NCCL topology dump (NCCL_TOPO_DUMP_FILE); a degraded server (NV17 instead of "
      "NV18, a missing pair) is described from its own output");
  auto* smi = sub->add_option("--nvidia-smi", flags->nvidia_smi, "`nvidia-smi topo -m` output")
                  ->type_name("FILE");
  auto* xml =
      sub->add_option("--nccl-xml", flags->nccl_xml, "NCCL topology XML dump")->type_name("FILE");
  smi->excludes(xml);
  sub->add_option("--name", flags->name, "cluster name (default: the file's name)");
  sub->add_option("--gpu", flags->gpu,
                  "GPU preset (default: from the device name or PCI id in the input)");
  sub->add_option("--servers", flags->servers, "servers like this one (default 1)")
      ->check(positive_integer_check());
  sub->add_option("--nics", flags->nics,
                  "NICs per server for the inter-server network (default: those the input lists)")
      ->check(positive_integer_check());
  sub->add_option("--nic-gbits", flags->nic_gbits,
                  "NIC speed, Gb/s (default: NCCL XML's speed, else assumed from the GPU)")
      ->check(positive_number_check());
  sub->add_option("--nvlink-gbps", flags->nvlink_gbps,
                  "GB/s per NVLink, one direction (default: from the GPU: 25, 50 from Blackwell)")
      ->check(positive_number_check());
  sub->add_option("--output", flags->output, "write the YAML here instead of stdout")
      ->type_name("FILE");
  sub->callback([flags] { run_import(*flags); });
}

}  // namespace trident::cli
