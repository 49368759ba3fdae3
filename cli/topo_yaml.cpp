// The cluster YAML `trident topo import` writes for an imported server (cli/topo_yaml.h).
#include "cli/topo_yaml.h"

#include <numeric>
#include <sstream>

#include "topology/errors.h"
#include "topology/text_check.h"

namespace trident::cli {

namespace {

[[nodiscard]] std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

[[nodiscard]] std::string summary(const ImportedServer& server, const ServerNvlink& nvlink) {
  std::string text = std::to_string(server.gpus) + " GPUs, ";
  if (nvlink.kind == NvlinkKind::switch_fabric) {
    text += "NVSwitch, " + std::to_string(nvlink.links_per_gpu) + " NVLinks per GPU";
  } else if (nvlink.kind == NvlinkKind::mesh) {
    text += "direct NVLink mesh of " + std::to_string(nvlink.mesh.size()) + " pairs";
  } else {
    text += "no NVLink";
  }
  return text + ", " + std::to_string(server.nics.size()) + " NICs";
}

void write_nvlink(std::ostringstream& out, const ImportedServer& server, const ServerNvlink& nv,
                  double gbps_per_link) {
  out << "nvlink:\n";
  // Without NVLink the server's GPUs share its PCIe fabric: one domain, as pcie-8gpu.
  out << "  domain_gpus: " << server.gpus << "\n";
  out << "  kind: " << to_string(nv.kind) << "\n";
  if (nv.kind == NvlinkKind::none) return;
  if (nv.kind == NvlinkKind::switch_fabric) out << "  links_per_gpu: " << nv.links_per_gpu << "\n";
  out << "  gbps_per_link: " << number(gbps_per_link) << "\n";
  if (nv.kind != NvlinkKind::mesh) return;
  out << "  links:\n";
  for (const MeshLink& link : nv.mesh) {
    out << "    - {a: " << link.a << ", b: " << link.b << ", count: " << link.links << "}\n";
  }
}

void write_network(std::ostringstream& out, const ImportedServer& server,
                   const ImportOptions& options) {
  out << "network:\n";
  if (options.nics > 0) {
    out << "  nics_per_server: " << options.nics << "   # from --nics (the input lists "
        << server.nics.size() << ")\n";
  } else {
    out << "  nics_per_server: " << server.nics.size() << "\n";
  }
  if (options.nic_gbits > 0) {
    out << "  nic_gbits: " << number(options.nic_gbits) << "\n";
  } else if (server.nic_gbits > 0) {
    out << "  nic_gbits: " << number(server.nic_gbits) << "   # from the input\n";
  } else {
    out << "  nic_gbits: " << number(assumed_nic_gbits(options.gpu))
        << "   # assumed: the input does not give the NIC speed (--nic-gbits to set it)\n";
  }
}

void write_header(std::ostringstream& out, const ImportedServer& server, const ServerNvlink& nv) {
  // The input's path as given: a file name may hold a newline, which would end the comment.
  out << "# imported by `trident topo import` from " << one_line(server.source) << " ("
      << server.format << "): " << summary(server, nv) << "\n";
  if (!server.nics.empty()) {
    out << "# NICs used: "
        << std::accumulate(
               std::next(server.nics.begin()), server.nics.end(), server.nics.front(),
               [](std::string a, const std::string& b) { return std::move(a) + ", " + b; })
        << "\n";
  }
  for (const std::string& nic : server.other_nics) out << "# NIC left out: " << nic << "\n";
  if (server.no_nic_near_gpu) {
    out << "# note: no NIC shares a PCIe switch with a GPU (PIX/PXB), so all " << server.nics.size()
        << " are counted; if some carry storage or management traffic, lower "
           "network.nics_per_server\n";
  }
  for (const std::string& note : nv.notes) out << "# note: " << note << "\n";
  if (!nv.degraded.empty()) {
    out << "# degraded: plan this server (server 0) as it is with";
    for (const std::string& spec : nv.degraded) out << " --fail-link " << spec;
    out << "\n";
  }
}

/// A YAML double-quoted scalar: a name such as "foo #bar" or "a: b" stays one string.
std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string cluster_yaml(const ImportedServer& server, const ImportOptions& options) {
  if (server.gpus == 0) throw InputError(server.source + ": no GPU found");
  if (options.gpu.empty()) {
    throw InputError(server.source + ": cannot tell which GPU this is: pass --gpu NAME");
  }
  const ServerNvlink nv = infer_nvlink(server);
  double gbps_per_link = options.gbps_per_link;
  if (gbps_per_link <= 0) gbps_per_link = nvlink_gbps_for(options.gpu, server.sm);
  if (gbps_per_link <= 0 && nv.kind != NvlinkKind::none) {
    throw InputError(server.source + ": cannot tell the NVLink speed of GPU '" + options.gpu +
                     "': pass --nvlink-gbps");
  }
  std::ostringstream out;
  write_header(out, server, nv);
  out << "name: " << yaml_quoted(options.name) << "\n";
  out << "gpu: " << options.gpu << "\n";
  out << "servers: " << options.servers << "\n";
  out << "gpus_per_server: " << server.gpus << "\n";
  write_nvlink(out, server, nv, gbps_per_link);
  write_network(out, server, options);
  return out.str();
}

}  // namespace trident::cli
