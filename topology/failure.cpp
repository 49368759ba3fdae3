// The --fail-link grammar (topology/failure.h): parsing and applying to a cluster.
#include "topology/failure.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "topology/errors.h"
#include "topology/yaml_util.h"  // edit_distance

namespace trident {
namespace {

struct KindForm {
  std::string_view word;
  std::string_view form;  ///< what a spec of this kind looks like, for error messages
};

constexpr std::array<KindForm, 5> kKinds{{
    {"nvlink", "nvlink:SERVER/GPU[:COUNT|:all]"},
    {"mesh", "mesh:SERVER/GPU-GPU"},
    {"nic", "nic:SERVER/NIC"},
    {"gpu", "gpu:SERVER/GPU"},
    {"server", "server:SERVER"},
}};

[[noreturn]] void spec_error(const std::string& spec, const std::string& what) {
  throw SpecError(SpecKind::failure, spec, what);
}

[[noreturn]] void expected(const std::string& spec, std::string_view form) {
  spec_error(spec, "expected " + std::string(form));
}

[[noreturn]] void unknown_kind(const std::string& spec, const std::string& word) {
  std::string message = "unknown kind '" + word + "' (expected nvlink, mesh, nic, gpu or server)";
  for (const auto& kind : kKinds) {
    if (yaml::edit_distance(word, kind.word) <= 2) {
      message = "unknown kind '" + word + "' (did you mean '" + std::string(kind.word) + "'?)";
      break;
    }
  }
  spec_error(spec, message);
}

/// A non-negative decimal of at most 9 digits, or nothing.
[[nodiscard]] std::optional<int> parse_index(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

/// Splits "A<sep>B" at the first `sep`; nothing when `sep` is absent.
[[nodiscard]] std::optional<std::pair<std::string_view, std::string_view>> split(
    std::string_view text, char sep) {
  const auto at = text.find(sep);
  if (at == std::string_view::npos) return std::nullopt;
  return std::make_pair(text.substr(0, at), text.substr(at + 1));
}

/// "S/X" -> (S, X text); throws with the kind's form when malformed.
[[nodiscard]] std::pair<int, std::string_view> server_slash(const std::string& spec,
                                                            std::string_view rest,
                                                            std::string_view form) {
  const auto parts = split(rest, '/');
  if (!parts) expected(spec, form);
  const auto server = parse_index(parts->first);
  if (!server) expected(spec, form);
  return {*server, parts->second};
}

[[nodiscard]] int index_or_throw(const std::string& spec, std::string_view text,
                                 std::string_view form) {
  const auto value = parse_index(text);
  if (!value) expected(spec, form);
  return *value;
}

[[nodiscard]] Failure parse_mesh_pair(const std::string& spec, int server, std::string_view pair,
                                      std::string_view form) {
  const auto ends = split(pair, '-');
  if (!ends) expected(spec, form);
  Failure failure{.kind = FailureKind::mesh_link, .server = server, .spec = spec};
  failure.gpu = index_or_throw(spec, ends->first, form);
  failure.peer = index_or_throw(spec, ends->second, form);
  if (failure.gpu == failure.peer) spec_error(spec, "a link joins two different GPUs");
  if (failure.peer < failure.gpu) std::swap(failure.gpu, failure.peer);
  return failure;
}

[[nodiscard]] std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

[[nodiscard]] Failure parse_nvlink(const std::string& spec, std::string_view rest) {
  constexpr std::string_view form = kKinds[0].form;
  const auto [server, tail] = server_slash(spec, rest, form);
  if (tail.find('-') != std::string_view::npos) return parse_mesh_pair(spec, server, tail, form);
  Failure failure{.kind = FailureKind::nvlink, .server = server, .spec = spec};
  const auto count = split(tail, ':');
  failure.gpu = index_or_throw(spec, count ? count->first : tail, form);
  if (!count) return failure;
  if (lower(count->second) == "all") {  // any case, as the kind word (NVLINK:0/0:ALL)
    failure.kind = FailureKind::nvlink_all;
    failure.links = 0;
    return failure;
  }
  failure.links = index_or_throw(spec, count->second, form);
  if (failure.links < 1) spec_error(spec, "the NVLink count must be at least 1 (or 'all')");
  return failure;
}

[[nodiscard]] Failure parse_server_index(const std::string& spec, std::string_view rest,
                                         FailureKind kind, std::string_view form) {
  const auto [server, tail] = server_slash(spec, rest, form);
  Failure failure{.kind = kind, .server = server, .spec = spec};
  const int index = index_or_throw(spec, tail, form);
  (kind == FailureKind::nic ? failure.nic : failure.gpu) = index;
  return failure;
}

}  // namespace

Failure parse_failure(const std::string& spec) {
  const auto kind_rest = split(spec, ':');
  if (!kind_rest) {
    spec_error(spec,
               "expected KIND:WHERE, one of nvlink:SERVER/GPU[:COUNT|:all], "
               "mesh:SERVER/GPU-GPU, nic:SERVER/NIC, gpu:SERVER/GPU, server:SERVER");
  }
  const std::string word = lower(kind_rest->first);
  const std::string_view rest = kind_rest->second;
  if (word == "nvlink") return parse_nvlink(spec, rest);
  if (word == "mesh") {
    const auto [server, pair] = server_slash(spec, rest, kKinds[1].form);
    return parse_mesh_pair(spec, server, pair, kKinds[1].form);
  }
  if (word == "nic") return parse_server_index(spec, rest, FailureKind::nic, kKinds[2].form);
  if (word == "gpu") return parse_server_index(spec, rest, FailureKind::gpu, kKinds[3].form);
  if (word == "server") {
    return Failure{.kind = FailureKind::server,
                   .server = index_or_throw(spec, rest, kKinds[4].form),
                   .spec = spec};
  }
  unknown_kind(spec, word);
}

namespace {

[[nodiscard]] std::string range_text(int count) {
  return count == 1 ? "0" : "0-" + std::to_string(count - 1);
}

void check_server(const Cluster& cluster, const Failure& f) {
  if (f.server < cluster.servers) return;
  spec_error(f.spec, "server " + std::to_string(f.server) + " does not exist (cluster has " +
                         std::to_string(cluster.servers) +
                         (cluster.servers == 1 ? " server, " : " servers, ") +
                         range_text(cluster.servers) + ")");
}

void check_gpu(const Cluster& cluster, const Failure& f, int local) {
  if (local < cluster.gpus_per_server) return;
  spec_error(f.spec, "GPU " + std::to_string(local) + " does not exist on server " +
                         std::to_string(f.server) + " (" + std::to_string(cluster.gpus_per_server) +
                         " GPUs per server, " + range_text(cluster.gpus_per_server) + ")");
}

[[nodiscard]] int global_id(const Cluster& cluster, int server, int local) {
  return server * cluster.gpus_per_server + local;
}

/// Index of `gpu_id` inside its NVLink domain (what MeshLink's a/b count).
[[nodiscard]] int domain_local(const Cluster& cluster, int gpu_id) {
  return gpu_id % cluster.nvlink.domain_gpus;
}

}  // namespace

std::vector<std::pair<int, int>> mesh_peers(const Cluster& cluster, int server, int local) {
  const int id = global_id(cluster, server, local);
  const int domain_base = id - domain_local(cluster, id);
  const int me = domain_local(cluster, id);
  std::vector<std::pair<int, int>> peers;
  for (const MeshLink& link : cluster.nvlink.mesh) {
    const int other = link.a == me ? link.b : (link.b == me ? link.a : -1);
    if (other < 0) continue;
    const int other_id = domain_base + other;
    if (cluster.server_of(other_id) != server) continue;  // a peer on another server of the domain
    peers.emplace_back(other_id % cluster.gpus_per_server, link.links);
  }
  std::sort(peers.begin(), peers.end());
  return peers;
}

namespace {

[[nodiscard]] std::string peer_list(const std::vector<std::pair<int, int>>& peers) {
  std::string text;
  for (const auto& [peer, links] : peers) {
    text += (text.empty() ? "" : ", ") + std::to_string(peer);
  }
  return text.empty() ? "none" : text;
}

[[nodiscard]] std::pair<int, int> ordered(int a, int b) { return {std::min(a, b), std::max(a, b)}; }

void apply_switch_nvlink(Cluster& cluster, const Failure& f) {
  const int id = global_id(cluster, f.server, f.gpu);
  const int total = cluster.nvlink.links_per_gpu;
  int& down = cluster.health.nvlinks_down[id];
  const int already = down;
  // :all names every link, those an earlier spec took down too: refused as a part named twice
  // is (in either order: a count after :all finds none left).
  if (f.kind == FailureKind::nvlink_all && already > 0) {
    spec_error(f.spec, "GPU " + std::to_string(f.gpu) + " of server " + std::to_string(f.server) +
                           " already has " + std::to_string(already) + " of its " +
                           std::to_string(total) +
                           " NVLinks down (named earlier): :all names them again; give :all "
                           "alone");
  }
  const int more = f.kind == FailureKind::nvlink_all ? total : f.links;
  if (already + more > total) {
    spec_error(f.spec, "GPU " + std::to_string(f.gpu) + " of server " + std::to_string(f.server) +
                           " has " + std::to_string(total) + " NVLinks (" +
                           std::to_string(already) + " already down), cannot take " +
                           std::to_string(more) + " more down");
  }
  down = already + more;
}

/// "the direct link GPU 0 - GPU 3 of server 0", the lower index first whichever end is named.
[[nodiscard]] std::string mesh_link_text(int gpu, int peer, int server) {
  return "the direct link GPU " + std::to_string(std::min(gpu, peer)) + " - GPU " +
         std::to_string(std::max(gpu, peer)) + " of server " + std::to_string(server);
}

/// All of a mesh GPU's links down. Its own :all twice, or a link a `mesh:` spec named, is a
/// part named twice (refused); a link another GPU's :all took down is not (two GPUs each lose
/// all their links, the one they share among them).
void apply_mesh_all(Cluster& cluster, const Failure& f) {
  ClusterHealth& health = cluster.health;
  const int id = global_id(cluster, f.server, f.gpu);
  if (!health.mesh_all_gpus.insert(id).second) {
    spec_error(f.spec, "all NVLinks of GPU " + std::to_string(f.gpu) + " of server " +
                           std::to_string(f.server) + " are already down (named earlier)");
  }
  for (const auto& [peer, links] : mesh_peers(cluster, f.server, f.gpu)) {
    const auto link = ordered(id, global_id(cluster, f.server, peer));
    if (health.named_mesh_links.contains(link)) {
      spec_error(f.spec, mesh_link_text(f.gpu, peer, f.server) +
                             " is already down (named earlier): :all names it again; give :all "
                             "alone");
    }
    health.dead_mesh_links.insert(link);
  }
}

void apply_nvlink(Cluster& cluster, const Failure& f) {
  check_gpu(cluster, f, f.gpu);
  const NvlinkKind kind = cluster.nvlink.kind;
  if (kind == NvlinkKind::none) {
    spec_error(f.spec, "cluster '" + cluster.name + "' has no NVLink (nvlink.kind: none)");
  }
  if (kind == NvlinkKind::switch_fabric) return apply_switch_nvlink(cluster, f);
  if (f.kind == FailureKind::nvlink_all) return apply_mesh_all(cluster, f);
  const auto peers = mesh_peers(cluster, f.server, f.gpu);
  spec_error(f.spec, "server " + std::to_string(f.server) +
                         " has direct GPU-GPU links (nvlink.kind: mesh): name the pair, mesh:" +
                         std::to_string(f.server) + "/" + std::to_string(f.gpu) + "-PEER (GPU " +
                         std::to_string(f.gpu) + " links to " + peer_list(peers) + "), or nvlink:" +
                         std::to_string(f.server) + "/" + std::to_string(f.gpu) + ":all");
}

void apply_mesh_link(Cluster& cluster, const Failure& f) {
  check_gpu(cluster, f, f.gpu);
  check_gpu(cluster, f, f.peer);
  if (cluster.nvlink.kind == NvlinkKind::none) {  // nvlink: would be refused as well
    spec_error(f.spec, "cluster '" + cluster.name +
                           "' has no NVLink (nvlink.kind: none): its GPUs talk over PCIe; fail a "
                           "GPU (gpu:" +
                           std::to_string(f.server) + "/GPU) or a NIC instead");
  }
  if (cluster.nvlink.kind != NvlinkKind::mesh) {
    spec_error(f.spec, "server " + std::to_string(f.server) +
                           " has no direct GPU-GPU links (nvlink.kind: switch): use nvlink:" +
                           std::to_string(f.server) + "/GPU[:COUNT|:all]");
  }
  const auto peers = mesh_peers(cluster, f.server, f.gpu);
  const bool linked = std::any_of(peers.begin(), peers.end(),
                                  [&](const auto& peer) { return peer.first == f.peer; });
  if (!linked) {
    spec_error(f.spec, "GPUs " + std::to_string(f.gpu) + " and " + std::to_string(f.peer) +
                           " of server " + std::to_string(f.server) +
                           " have no direct NVLink (GPU " + std::to_string(f.gpu) + " links to " +
                           peer_list(peers) + ")");
  }
  // A link named twice, or one an :all of either end took down, is a part named twice.
  ClusterHealth& health = cluster.health;
  const int a = global_id(cluster, f.server, f.gpu);
  const int b = global_id(cluster, f.server, f.peer);
  if (health.named_mesh_links.contains(ordered(a, b)) || health.mesh_all_gpus.contains(a) ||
      health.mesh_all_gpus.contains(b)) {
    spec_error(f.spec, mesh_link_text(f.gpu, f.peer, f.server) +
                           " is already down (named earlier): name each link once");
  }
  health.named_mesh_links.insert(ordered(a, b));
  health.dead_mesh_links.insert(ordered(a, b));
}

void apply_nic(Cluster& cluster, const Failure& f) {
  const int nics = cluster.network.nics_per_server;
  if (f.nic >= nics) {
    spec_error(f.spec, "NIC " + std::to_string(f.nic) + " does not exist on server " +
                           std::to_string(f.server) + " (" + std::to_string(nics) +
                           " NICs per server, " + range_text(nics) + ")");
  }
  if (cluster.health.named_nics.contains({f.server, f.nic})) {
    spec_error(f.spec, "NIC " + std::to_string(f.nic) + " of server " + std::to_string(f.server) +
                           " is already down (named earlier): name each NIC once");
  }
  int& down = cluster.health.nics_down[f.server];
  if (down + 1 >= nics) {
    spec_error(f.spec, "that would leave server " + std::to_string(f.server) +
                           " with no NIC: it is cut off from the fabric, use server:" +
                           std::to_string(f.server));
  }
  ++down;
  cluster.health.named_nics.insert({f.server, f.nic});
}

}  // namespace

Cluster apply_failure(const Cluster& cluster, const Failure& failure) {
  Cluster out = cluster;
  check_server(out, failure);
  switch (failure.kind) {
    case FailureKind::nvlink:
    case FailureKind::nvlink_all:
      apply_nvlink(out, failure);
      break;
    case FailureKind::mesh_link:
      apply_mesh_link(out, failure);
      break;
    case FailureKind::nic:
      apply_nic(out, failure);
      break;
    case FailureKind::gpu:
      check_gpu(out, failure, failure.gpu);
      out.health.dead_gpus.insert(global_id(out, failure.server, failure.gpu));
      break;
    case FailureKind::server:
      out.health.dead_servers.insert(failure.server);
      break;
  }
  return out;
}

namespace {

/// Failures that name the same part (a NIC, a GPU, a server or a mesh pair twice).
[[nodiscard]] bool same_part(const Failure& a, const Failure& b) {
  if (a.kind != b.kind || a.server != b.server) return false;
  switch (a.kind) {
    case FailureKind::nvlink:
      return false;  // nvlink:S/G twice = two links down
    case FailureKind::nvlink_all:
    case FailureKind::gpu:
      return a.gpu == b.gpu;
    case FailureKind::mesh_link:
      return a.gpu == b.gpu && a.peer == b.peer;
    case FailureKind::nic:
      return a.nic == b.nic;
    case FailureKind::server:
      return true;
  }
  return false;
}

/// `whole` is down whole and `part` is inside it: a dead server's GPUs, links and NICs, a dead
/// GPU's links (the report would take the part out again: "takes GPU 3 out" of a dead server).
[[nodiscard]] bool inside(const Failure& part, const Failure& whole) {
  if (part.server != whole.server || part.kind == FailureKind::server) return false;
  if (whole.kind == FailureKind::server) return true;
  if (whole.kind != FailureKind::gpu) return false;
  switch (part.kind) {
    case FailureKind::nvlink:
    case FailureKind::nvlink_all:
      return part.gpu == whole.gpu;
    case FailureKind::mesh_link:
      return part.gpu == whole.gpu || part.peer == whole.gpu;
    default:
      return false;
  }
}

}  // namespace

Cluster apply_failures(const Cluster& cluster, const std::vector<Failure>& failures) {
  Cluster out = cluster;
  for (std::size_t i = 0; i < failures.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (same_part(failures[i], failures[j])) {
        spec_error(failures[i].spec, "names the same part as '" + failures[j].spec + "'");
      }
      for (const auto& [part, whole] : {std::pair{i, j}, std::pair{j, i}}) {
        if (inside(failures[part], failures[whole])) {
          spec_error(failures[i].spec, "'" + failures[part].spec + "' is part of '" +
                                           failures[whole].spec + "', which is down whole");
        }
      }
    }
    out = apply_failure(out, failures[i]);
  }
  return out;
}

std::vector<int> dead_gpu_ids(const Cluster& cluster) {
  std::set<int> dead(cluster.health.dead_gpus.begin(), cluster.health.dead_gpus.end());
  for (const int server : cluster.health.dead_servers) {
    for (int g = 0; g < cluster.gpus_per_server; ++g) dead.insert(global_id(cluster, server, g));
  }
  return {dead.begin(), dead.end()};
}

}  // namespace trident
