// NCCL topology dump reader (topology/nccl_xml_import.h), on tinyxml2.
#include "topology/nccl_xml_import.h"

#include <tinyxml2.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string_view>

#include "topology/errors.h"
#include "topology/text_check.h"

namespace trident {
namespace {

using tinyxml2::XMLElement;
using tinyxml2::XMLNode;

struct XmlGpu {
  int dev = 0;
  int sm = 0;
  int rank = -1;           ///< NCCL's rank attribute; -1 where the dump has none
  std::string busid;       ///< of the parent <pci>, lower case
  std::string pci_device;  ///< of the parent <pci>
  const XMLElement* element = nullptr;
};

struct XmlNet {
  std::string name;
  double gbits = 0.0;     ///< 0 = not given
  bool near_gpu = false;  ///< a GPU behind the same PCIe switch
};

/// True when `element`'s subtree holds a <gpu>.
bool holds_gpu(const XMLElement* element) {
  for (const XMLElement* child = element->FirstChildElement(); child != nullptr;
       child = child->NextSiblingElement()) {
    if (std::string_view(child->Name()) == "gpu" || holds_gpu(child)) return true;
  }
  return false;
}

/// A NIC shares a PCIe switch with a GPU: <net> in <nic> in its <pci> device, under a <pci>
/// switch whose subtree holds a <gpu> (DGX storage NICs sit on a switch of their own).
bool near_gpu(const XMLElement* net) {
  const XMLNode* device = net->Parent() != nullptr ? net->Parent()->Parent() : nullptr;
  const XMLElement* sw =
      device != nullptr && device->Parent() != nullptr ? device->Parent()->ToElement() : nullptr;
  return sw != nullptr && std::string_view(sw->Name()) == "pci" && holds_gpu(sw);
}

/// "<name>" of an element, for messages.
[[nodiscard]] std::string tag(const XMLElement* at) {
  std::string out(1, '<');
  out.append(at->Name());
  out.push_back('>');
  return out;
}

[[nodiscard]] std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[nodiscard]] ImportedServer read(const std::string& text);

 private:
  [[noreturn]] void fail(const XMLElement* at, const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(at->GetLineNum()) + ": " + what);
  }
  [[nodiscard]] std::string attribute(const XMLElement* at, const char* name) const;
  [[nodiscard]] int int_attribute(const XMLElement* at, const char* name) const;
  [[nodiscard]] std::string pci_class(const XMLElement* link) const;
  void walk(const XMLElement* element);
  void add_gpu(const XMLElement* gpu);
  void add_net(const XMLElement* net);
  void add_links(ImportedServer& server) const;
  void choose_nics(ImportedServer& server) const;

  std::string source_;
  std::vector<XmlGpu> gpus_;
  std::vector<XmlNet> nets_;
};

std::string Reader::attribute(const XMLElement* at, const char* name) const {
  const char* value = at->Attribute(name);
  if (value == nullptr) {
    fail(at, tag(at).append(": missing attribute '").append(name).append("'"));
  }
  return value;
}

int Reader::int_attribute(const XMLElement* at, const char* name) const {
  const std::string text = attribute(at, name);
  // The whole text, in range: tinyxml2's ToInt (sscanf "%d") read "400000.5" as 400000 and
  // an overflowing "99999999999999999999" as -1.
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc() && ptr == end) return value;
  fail(at, tag(at)
               .append(": attribute '")
               .append(name)
               .append("': expected an integer, got '")
               .append(text)
               .append("'"));
}

/// An <nvlink>'s `tclass`, lower case: a PCI class as NCCL writes it ("0x" and hex digits,
/// 0x068000 for an NVSwitch, 0x03xxxx for a GPU). Any other text is refused as a missing one
/// is: "bogus" matched no class, and the link was dropped, leaving its GPU "degraded".
std::string Reader::pci_class(const XMLElement* link) const {
  std::string tclass = lower(attribute(link, "tclass"));
  const bool hex = tclass.size() > 2 && tclass.size() <= 10 && tclass.starts_with("0x") &&
                   std::all_of(tclass.begin() + 2, tclass.end(),
                               [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (!hex) {
    fail(link, tag(link)
                   .append(": attribute 'tclass': expected a PCI class in hex (0x068000 an "
                           "NVSwitch, 0x03xxxx a GPU), got '")
                   .append(one_line(attribute(link, "tclass")))
                   .append("'"));
  }
  return tclass;
}

void Reader::add_gpu(const XMLElement* gpu) {
  const XMLElement* pci = gpu->Parent() ? gpu->Parent()->ToElement() : nullptr;
  if (pci == nullptr || std::string_view(pci->Name()) != "pci") {
    fail(gpu, "<gpu> outside a <pci> element: cannot tell its bus id");
  }
  XmlGpu entry{.dev = int_attribute(gpu, "dev"),
               .sm = gpu->Attribute("sm") == nullptr ? 0 : int_attribute(gpu, "sm"),
               .rank = gpu->Attribute("rank") == nullptr ? -1 : int_attribute(gpu, "rank"),
               .busid = lower(attribute(pci, "busid")),
               .pci_device = pci->Attribute("device") ? pci->Attribute("device") : "",
               .element = gpu};
  if (gpus_.size() >= static_cast<std::size_t>(kMaxImportGpus)) {
    fail(gpu, "<gpu>: more than " + std::to_string(kMaxImportGpus) + " GPUs in one server");
  }
  for (const XmlGpu& other : gpus_) {
    if (other.dev == entry.dev) fail(gpu, "<gpu>: dev " + std::to_string(entry.dev) + " twice");
    // One process per GPU: two GPUs of one rank are a merged or corrupt dump.
    if (entry.rank >= 0 && other.rank == entry.rank) {
      fail(gpu, "<gpu> dev " + std::to_string(entry.dev) + ": rank " + std::to_string(entry.rank) +
                    " is also dev " + std::to_string(other.dev) + "'s");
    }
    // NVLink targets name GPUs by bus id: two on one id sent one's links to the other.
    if (other.busid == entry.busid) {
      fail(gpu, "<gpu> dev " + std::to_string(entry.dev) + ": bus id '" + entry.busid +
                    "' is also dev " + std::to_string(other.dev) + "'s");
    }
  }
  // One GPU type per server: the cluster YAML names one (an A100 beside H100s was imported as
  // an A100 with the H100s' 18 NVLinks).
  if (!gpus_.empty() &&
      (entry.pci_device != gpus_.front().pci_device || entry.sm != gpus_.front().sm)) {
    fail(gpu, "<gpu> dev " + std::to_string(entry.dev) + ": device '" + entry.pci_device + "' sm " +
                  std::to_string(entry.sm) + ", where dev " + std::to_string(gpus_.front().dev) +
                  " is device '" + gpus_.front().pci_device + "' sm " +
                  std::to_string(gpus_.front().sm) + "; a server of one GPU type is expected");
  }
  gpus_.push_back(entry);
}

void Reader::add_net(const XMLElement* net) {
  if (net->Attribute("dev") == nullptr) return;  // NCCL ignores nets without dev too
  if (net->IntAttribute("net", 1) == 0) return;  // a physical NIC fused into a virtual one
  const int mbits = net->Attribute("speed") == nullptr ? 0 : int_attribute(net, "speed");
  if (mbits < 0)
    fail(net, "<net>: attribute 'speed': expected Mb/s >= 0, got " + std::to_string(mbits));
  std::string name = attribute(net, "name");
  // Its name reaches the cluster file's comments: one line (a newline would add keys).
  if (!is_one_line(name)) {
    fail(net, "<net>: attribute 'name': expected one line of printable characters, got '" +
                  one_line(name) + "'");
  }
  nets_.push_back(XmlNet{.name = std::move(name),
                         .gbits = mbits > 0 ? mbits / 1000.0 : 0.0,
                         .near_gpu = near_gpu(net)});
}

void Reader::walk(const XMLElement* element) {
  for (const XMLElement* child = element->FirstChildElement(); child != nullptr;
       child = child->NextSiblingElement()) {
    const std::string_view name = child->Name();
    if (name == "gpu") add_gpu(child);
    if (name == "net") add_net(child);
    walk(child);
  }
}

/// NVLinks GPU g reports so far, to the switch and to its peers.
int total_links(const ImportedServer& server, int g) {
  int total = server.switch_links[g];
  for (const int links : server.pair_links[g]) total += links;
  return total;
}

/// NCCL's classes (src/graph/topo.cc kvDictPciClass): 0x068000 NVSwitch, 0x068001 CPU,
/// 0x03xxxx GPU.
void Reader::add_links(ImportedServer& server) const {
  std::map<std::string, int> by_bus;
  for (int g = 0; g < server.gpus; ++g) by_bus[gpus_[g].busid] = g;
  for (int g = 0; g < server.gpus; ++g) {
    const XMLElement* gpu = gpus_[g].element;
    for (const XMLElement* link = gpu->FirstChildElement("nvlink"); link != nullptr;
         link = link->NextSiblingElement("nvlink")) {
      const int count = int_attribute(link, "count");
      if (count < 1 || count > kMaxNvlinks) {
        fail(link, "<nvlink>: attribute 'count': expected 1.." + std::to_string(kMaxNvlinks) +
                       ", got " + std::to_string(count));
      }
      const std::string tclass = pci_class(link);
      if (tclass == "0x068000") {
        server.switch_links[g] += count;
      } else if (tclass.rfind("0x03", 0) == 0) {
        const auto peer = by_bus.find(lower(attribute(link, "target")));
        if (peer == by_bus.end()) {
          fail(link, "<nvlink>: target '" + attribute(link, "target") + "' is not a GPU here");
        }
        if (peer->second == g) {  // the cluster reader refuses it too ("cannot link to itself")
          fail(link, "<nvlink>: target '" + attribute(link, "target") + "' is GPU " +
                         std::to_string(g) + " itself; a GPU cannot link to itself");
        }
        server.pair_links[g][peer->second] += count;
      }
      if (total_links(server, g) > kMaxNvlinks) {
        fail(link, "<nvlink>: GPU " + std::to_string(g) + " has more than " +
                       std::to_string(kMaxNvlinks) + " NVLinks in all");
      }
    }
  }
}

/// The NICs at the speed most of them have carry the traffic; slower or faster odd ones out
/// (a 100 Gb/s port beside 200 Gb/s ones) are listed as left out. When some NICs share a PCIe
/// switch with a GPU, the others (storage, management: a DGX A100's two on their own switch)
/// are left out first, whatever their speed, as the nvidia-smi reader does.
void Reader::choose_nics(ImportedServer& server) const {
  const bool by_switch =
      std::any_of(nets_.begin(), nets_.end(), [](const XmlNet& n) { return n.near_gpu; });
  server.no_nic_near_gpu = !nets_.empty() && !by_switch;
  std::vector<XmlNet> nets;
  for (const XmlNet& net : nets_) {
    if (!by_switch || net.near_gpu) {
      nets.push_back(net);
    } else {
      server.other_nics.push_back(net.name +
                                  ": no GPU behind the same PCIe switch (storage or management)");
    }
  }
  std::map<double, int> by_speed;
  for (const XmlNet& net : nets) ++by_speed[net.gbits];
  double speed = 0.0;
  int most = 0;
  for (const auto& [gbits, count] : by_speed) {
    if (count > most || (count == most && gbits > speed)) speed = gbits, most = count;
  }
  server.nic_gbits = speed;
  for (const XmlNet& net : nets) {
    if (net.gbits == speed) {
      server.nics.push_back(net.name);
    } else {
      std::string gbits = std::to_string(static_cast<long long>(net.gbits));
      server.other_nics.push_back(net.name + ": " + gbits + " Gb/s where most are " +
                                  std::to_string(static_cast<long long>(speed)) + " Gb/s");
    }
  }
}

ImportedServer Reader::read(const std::string& text) {
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.c_str(), text.size()) != tinyxml2::XML_SUCCESS) {
    throw InputError(source_ + ":" + std::to_string(doc.ErrorLineNum()) + ": not valid XML (" +
                     doc.ErrorName() + ")");
  }
  const XMLElement* system = doc.FirstChildElement("system");
  if (system == nullptr) {
    throw InputError(source_ + ": no <system> element: not an NCCL topology dump");
  }
  // One dump, one root: a second element after it (a concatenated file) is not read silently.
  if (const XMLElement* extra = system->NextSiblingElement(); extra != nullptr) {
    fail(extra, "<" + std::string(extra->Name()) +
                    ">: a second root element after <system> (one NCCL topology dump a file)");
  }
  walk(system);
  if (gpus_.empty()) throw InputError(source_ + ": no <gpu> element in <system>");
  std::sort(gpus_.begin(), gpus_.end(),
            [](const XmlGpu& a, const XmlGpu& b) { return a.dev < b.dev; });
  ImportedServer server;
  server.source = source_;
  server.format = "NCCL topology XML";
  server.gpus = static_cast<int>(gpus_.size());
  server.pair_links.assign(server.gpus, std::vector<int>(server.gpus, 0));
  server.switch_links.assign(server.gpus, 0);
  server.sm = gpus_.front().sm;
  server.pci_device = gpus_.front().pci_device;
  add_links(server);
  choose_nics(server);
  return server;
}

}  // namespace

ImportedServer parse_nccl_topo_xml(const std::string& text, const std::string& source) {
  return Reader(source).read(text);
}

}  // namespace trident
