// Loaders: every error text asserted exactly (file:line: key: what was expected), and every
// preset loads.
#include <catch2/catch.hpp>
#include <string>

#include "cli/cluster_args.h"
#include "configs/presets.h"
#include "costmodel/model_loader.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/json_lines.h"
#include "topology/json_reader.h"
#include "topology/yaml_util.h"

using namespace trident;

namespace {

// Line numbers below count from the first line of this text.
const std::string kCluster = R"(name: test
gpu: h100-sxm-80g
servers: 4
gpus_per_server: 8
nvlink:
  domain_gpus: 8
  kind: switch
  links_per_gpu: 18
  gbps_per_link: 25
network:
  nics_per_server: 8
  nic_gbits: 400
)";

/// kCluster with the first occurrence of `from` replaced by `to`.
std::string cluster_with(const std::string& from, const std::string& to) {
  std::string text = kCluster;
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

std::string cluster_error(const std::string& text) {
  try {
    (void)load_cluster(text, "c.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const std::string kModel = R"(name: tiny
layers: 2
hidden: 64
heads: 8
vocab: 1000
seq_len: 128
)";

std::string model_error(const std::string& text) {
  try {
    (void)load_model(text, "m.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("edit distance and did-you-mean", "[loaders]") {
  CHECK(yaml::edit_distance("kitten", "sitting") == 3);
  CHECK(yaml::edit_distance("", "abc") == 3);
  const std::vector<std::string> keys = {"servers", "gpus_per_server", "nvlink"};
  CHECK(yaml::did_you_mean("server", keys) == " (did you mean 'servers'?)");
  CHECK(yaml::did_you_mean("zzz", keys).empty());
  CHECK(yaml::did_you_mean("gpus", keys) == " (did you mean 'gpus_per_server'?)");
}

TEST_CASE("a good cluster file loads with its defaults", "[loaders]") {
  const Cluster c = load_cluster(kCluster, "c.yaml");
  CHECK(c.name == "test");
  CHECK(c.gpu.name == "h100-sxm-80g");
  CHECK(c.gpus() == 32);
  CHECK(c.nvlink.kind == NvlinkKind::switch_fabric);
  CHECK(c.network.rail_optimized);
  CHECK(c.network.oversubscription == 1.0);
  CHECK(c.pcie.gbps == 50.0);           // from the GPU preset
  CHECK(c.network.latency_us == 14.0);  // from the GPU preset (NCCL NET Simple hop)
}

TEST_CASE("cluster errors name file, line and key", "[loaders]") {
  CHECK(cluster_error(cluster_with("servers: 4", "server: 4")) ==
        "c.yaml:3: server: unknown key (did you mean 'servers'?)");
  CHECK(cluster_error(cluster_with("  kind: switch", "  kindd: switch")) ==
        "c.yaml:7: nvlink.kindd: unknown key (did you mean 'kind'?)");
  // A key that is a list or a mapping (YAML's `? KEY : VALUE`) was "nvlink.: unknown key".
  CHECK(cluster_error(cluster_with("  kind: switch", "  kind: switch\n  ? [a, b]\n  : 1")) ==
        "c.yaml:8: nvlink: expected plain keys, got a list as a key");
  CHECK(cluster_error(cluster_with("servers: 4", "servers: 4\n? {a: 1}\n: 2")) ==
        "c.yaml:4: expected plain keys, got a mapping as a key");
  CHECK(cluster_error(cluster_with("servers: 4", "servers: 4\n~: 2")) ==
        "c.yaml:4: expected plain keys, got null as a key");
  CHECK(cluster_error(cluster_with("  kind: switch", "  kind: swich")) ==
        "c.yaml:7: nvlink.kind: expected switch|mesh|none, got 'swich' (did you mean 'switch'?)");
  CHECK(cluster_error(cluster_with("gpus_per_server: 8\n", "")) ==
        "c.yaml:1: gpus_per_server: missing required key");
  CHECK(cluster_error(cluster_with("  nic_gbits: 400\n", "")) ==
        "c.yaml:10: network.nic_gbits: missing required key");
  CHECK(cluster_error(cluster_with("servers: 4", "servers: -3")) ==
        "c.yaml:3: servers: expected a positive integer, got '-3'");
  CHECK(cluster_error(cluster_with("servers: 4", "servers: 0")) ==
        "c.yaml:3: servers: expected a positive integer, got '0'");
  CHECK(cluster_error(cluster_with("servers: 4", "servers: four")) ==
        "c.yaml:3: servers: expected a positive integer, got 'four'");
  CHECK(cluster_error(cluster_with("servers: 4", "servers: [4]")) ==
        "c.yaml:3: servers: expected a positive integer, got a list");
  CHECK(cluster_error(cluster_with("gbps_per_link: 25", "gbps_per_link: -25")) ==
        "c.yaml:9: nvlink.gbps_per_link: expected a positive number, got '-25'");
  CHECK(cluster_error(cluster_with("nic_gbits: 400", "nic_gbits: -400")) ==
        "c.yaml:12: network.nic_gbits: expected a positive number, got '-400'");
  // With NICs a rate is positive: -400 and 0 are told the same (0 was "positive", -400
  // "non-negative", 2026-12-07); without NICs (a one-domain mesh below) 0 stays allowed.
  CHECK(cluster_error(cluster_with("nic_gbits: 400", "nic_gbits: 0")) ==
        "c.yaml:12: network.nic_gbits: expected a positive number, got '0'");
  CHECK(cluster_error(cluster_with("domain_gpus: 8", "domain_gpus: 6")) ==
        "c.yaml:6: nvlink.domain_gpus: 6 neither divides nor is a multiple of gpus_per_server 8");
  CHECK(cluster_error(cluster_with("nics_per_server: 8", "nics_per_server: 0")) ==
        "c.yaml:11: network.nics_per_server: expected at least 1 NIC per server to connect 4 "
        "NVLink domains, got 0");
  CHECK(cluster_error(kCluster + "  oversubscription: 0.5\n") ==
        "c.yaml:13: network.oversubscription: expected a number >= 1, got '0.5'");
  CHECK(cluster_error(kCluster + "  rail_optimized: maybe\n") ==
        "c.yaml:13: network.rail_optimized: expected true or false, got 'maybe'");
  CHECK(cluster_error(cluster_with("gpu: h100-sxm-80g", "gpu: h100-sxm-80")) ==
        "c.yaml:2: gpu: unknown GPU preset 'h100-sxm-80' (did you mean 'h100-sxm-80g'?); known: "
        "a100-pcie-80g, a100-sxm-40g, a100-sxm-80g, b200, gb200, h100-sxm-80g, h200-sxm-141g, "
        "v100-sxm-32g");
  CHECK(cluster_error(cluster_with("  links_per_gpu: 18\n", "  links: []\n")) ==
        "c.yaml:8: nvlink.links: not used with kind switch");
}

TEST_CASE("an empty document, a list and a YAML syntax error", "[loaders]") {
  CHECK(cluster_error("") == "c.yaml:1: document: expected a mapping, got nothing");
  CHECK(cluster_error("- 1\n- 2\n") == "c.yaml:1: document: expected a mapping, got a list");
  CHECK(cluster_error("name: x\nnvlink: {domain_gpus: 8\n") ==
        "c.yaml:3: invalid YAML: end of map flow not found");
  CHECK(cluster_error("name: x\n  servers: 4\n") == "c.yaml:2: invalid YAML: illegal map value");
}

TEST_CASE("a key twice, a second document", "[loaders]") {
  // yaml-cpp keeps both and a lookup finds the first: refused with both lines.
  CHECK(cluster_error("name: x\nname: y\n") == "c.yaml:2: name: duplicate key (first at line 1)");
  CHECK(cluster_error(cluster_with("  kind: switch\n", "  kind: switch\n  kind: mesh\n")) ==
        "c.yaml:8: nvlink.kind: duplicate key (first at line 7)");
  CHECK(cluster_error(kCluster + "---\nname: other\n")
            .ends_with(": a second YAML document (after '---' or '...'); expected one document"));
  CHECK(cluster_error(kCluster + "...\nservers: 1000\n")
            .ends_with(": a second YAML document (after '---' or '...'); expected one document"));
}

TEST_CASE("aliases: a cycle or a bomb is refused, plain aliases load", "[loaders]") {
  // The guard counts nodes as the parser streams them, each alias as the node it names: a
  // reader walking the tree would meet that many. A cycle has no count: refused at the alias.
  CHECK(cluster_error("x: &a [*a]\n") ==
        "c.yaml:1: invalid YAML: an alias inside the node its anchor names (a cycle); expected a "
        "tree");
  CHECK(cluster_error("name: x\nnvlink: &n\n  inner: {again: *n}\n") ==
        "c.yaml:3: invalid YAML: an alias inside the node its anchor names (a cycle); expected a "
        "tree");
  // Level k, a list of ten aliases of level k-1, is N_k = 1 + 10 N_(k-1) nodes, N_0 = 11 (a
  // list of ten scalars): N_5 = 1,111,111, N_6 = 11,111,111. Levels 0-5 and their keys pass;
  // level 6, on line 7, crosses 5,000,000 at its fourth alias.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 7; ++level) {
    const std::string name = std::to_string(level);
    const std::string alias = std::string("*a").append(std::to_string(level - 1));
    bomb.append("a").append(name).append(": &a").append(name).append(" [").append(alias);
    for (int i = 1; i < 10; ++i) bomb.append(", ").append(alias);
    bomb.append("]\n");
  }
  CHECK(cluster_error(bomb) ==
        "c.yaml:7: invalid YAML: the document, its aliases expanded, has more than 5000000 nodes; "
        "expected plain data");
  // An anchor used twice loads as two copies: the unknown key is what is wrong.
  CHECK(cluster_error(kCluster + "extra: &e {a: 1}\nmore: *e\n") ==
        "c.yaml:13: extra: unknown key (known: name, stack, gpu, servers, gpus_per_server, "
        "nvlink, network, pcie)");
}

TEST_CASE("names: no control characters", "[loaders]") {
  CHECK(cluster_error(cluster_with("name: test", "name: \"te\\nst\"")) ==
        "c.yaml:1: name: expected a string without control characters, got byte 0x0a at "
        "byte 3");
  CHECK(cluster_error(cluster_with("name: test", "name: \"a\\x7fb\"")) ==
        "c.yaml:1: name: expected a string without control characters, got byte 0x7f at "
        "byte 2");
  // YAML's "\L" is U+2028 (a line separator): it breaks lines too. "\N" (NEL) is refused
  // either way (yaml-cpp writes it as the single byte 0x85: not UTF-8).
  CHECK(cluster_error(cluster_with("name: test", "name: \"a\\Nb\"")) ==
        "c.yaml:1: name: expected UTF-8 text");
  CHECK(cluster_error(cluster_with("name: test", "name: \"ab\\L\"")) ==
        "c.yaml:1: name: expected a string without control characters, got a line-breaking "
        "character at byte 3");
  // YAML's "\xe9" is the character U+00E9, written as UTF-8: a name like any other (bytes
  // that are not UTF-8 are refused before parsing, topology/text_check.h).
  CHECK(cluster_error(cluster_with("name: test", "name: \"caf\\xe9\"")) == "no error");
}

TEST_CASE("inline GPU and mesh links", "[loaders]") {
  const std::string mesh = R"(name: mesh4
gpu:
  name: toy
  peak_tflops: {bf16: 100}
  memory_gib: 16
  memory_gbps: 900
servers: 1
gpus_per_server: 4
nvlink:
  domain_gpus: 4
  kind: mesh
  gbps_per_link: 25
  links:
    - {a: 0, b: 1, count: 2}
    - {a: 1, b: 2, count: 1}
    - {a: 2, b: 3, count: 2}
    - {a: 3, b: 0, count: 1}
network:
  nics_per_server: 0
  nic_gbits: 0
)";
  const Cluster c = load_cluster(mesh, "m.yaml");
  CHECK(c.gpu.peak_tflops_fp16 == 100.0);  // defaults to bf16
  CHECK(c.gpu.pcie_gbps == 24.0);          // documented default
  REQUIRE(c.nvlink.mesh.size() == 4);
  CHECK(c.nvlink.links_per_gpu == 3);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = mesh;
    return cluster_error(text.replace(text.find(from), from.size(), to));
  };
  CHECK(with("{a: 3, b: 0, count: 1}", "{a: 3, b: 4, count: 1}") ==
        "c.yaml:17: nvlink.links[3]: GPU 4 is outside the domain of 4 GPUs (0..3)");
  CHECK(with("{a: 3, b: 0, count: 1}", "{a: 1, b: 0, count: 1}") ==
        "c.yaml:17: nvlink.links[3]: pair 1-0 is already listed as nvlink.links[0]");
  CHECK(with("{a: 3, b: 0, count: 1}", "{a: 3, b: 0, coun: 1}") ==
        "c.yaml:17: nvlink.links[3].coun: unknown key (did you mean 'count'?)");
  CHECK(with("{a: 3, b: 0, count: 1}", "{a: 3, b: 0, width: 1}") ==
        "c.yaml:17: nvlink.links[3].width: unknown key (known: a, b, count)");
  CHECK(with("memory_gib: 16", "memory_gb: 16") ==
        "c.yaml:5: gpu.memory_gb: unknown key (did you mean 'memory_gib'?)");
  CHECK(with("servers: 1", "servers: 2") ==
        "c.yaml:19: network.nics_per_server: expected at least 1 NIC per server to connect 2 "
        "NVLink domains, got 0");
}

namespace {

/// `base` with `line` (a GPU key, indented) inserted before its attention curve.
std::string with_key(std::string base, const std::string& line) {
  return base.insert(base.find("  attention_causal_curve:"), line);
}

}  // namespace

TEST_CASE("a GPU's attention curves: points, order and ranges", "[loaders]") {
  // Line 1 is "name: c"; the curve's points are lines 8-9.
  const std::string base = R"(name: c
gpu:
  name: toy
  peak_tflops: {bf16: 100}
  memory_gib: 16
  memory_gbps: 900
  attention_causal_curve:
    - [1024, 0.4, 0.3]
    - [4096, 0.6, 0.5]
servers: 1
gpus_per_server: 8
nvlink: {domain_gpus: 8, kind: switch, links_per_gpu: 18, gbps_per_link: 25}
network: {nics_per_server: 8, nic_gbits: 400}
)";
  const Cluster c = load_cluster(base, "c.yaml");
  REQUIRE(c.gpu.attention_causal.size == 2);
  CHECK(c.gpu.attention_causal.points[1].seq == 4096.0);
  CHECK(c.gpu.attention_causal.points[1].backward == 0.5);
  CHECK(c.gpu.attention_full.empty());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = base;
    return cluster_error(text.replace(text.find(from), from.size(), to));
  };
  CHECK(with("[4096, 0.6, 0.5]", "[1024, 0.6, 0.5]") ==
        "c.yaml:9: gpu.attention_causal_curve[1][0]: expected a sequence length above the "
        "previous point's (1024)");
  CHECK(with("[4096, 0.6, 0.5]", "[4096, 1.6, 0.5]") ==
        "c.yaml:9: gpu.attention_causal_curve[1][1]: expected a number in (0, 1], got '1.6'");
  CHECK(with("[4096, 0.6, 0.5]", "[4096, 0.6]") ==
        "c.yaml:9: gpu.attention_causal_curve[1]: expected [sequence length, forward share, "
        "backward share], got a list");
  CHECK(with("[1024, 0.4, 0.3]", "[0.5, 0.4, 0.3]") ==
        "c.yaml:8: gpu.attention_causal_curve[0][0]: expected a number >= 1, got '0.5'");
  CHECK(with("[1024, 0.4, 0.3]", "[1024.5, 0.4, 0.3]") ==
        "c.yaml:8: gpu.attention_causal_curve[0][0]: expected a whole number of tokens, got "
        "1024.5");
  // Shares where 0 means "not published" take 0 to 1 (fp8_matmul_efficiency: 0 was refused,
  // though documented); compute_capability is 0 or a major.minor (42 was taken).
  CHECK(load_cluster(with_key(base, "  fp8_matmul_efficiency: 0\n"), "c.yaml")
            .gpu.fp8_matmul_efficiency == 0.0);
  CHECK(cluster_error(with_key(base, "  fp8_matmul_efficiency: 1.2\n")) ==
        "c.yaml:7: gpu.fp8_matmul_efficiency: expected 0 (not published) to 1, a share of the "
        "peak, got 1.2");
  CHECK(cluster_error(with_key(base, "  attention_forward_efficiency: 3\n"))
            .find("expected 0 (not published) to 1") != std::string::npos);
  CHECK(cluster_error(with_key(base, "  compute_capability: 42\n")) ==
        "c.yaml:7: gpu.compute_capability: expected 0 (not given) or a major.minor from 1.0 to "
        "20.0, got 42");
  CHECK(load_cluster(with_key(base, "  compute_capability: 12.0\n"), "c.yaml")
            .gpu.compute_capability == 12.0);
  CHECK(with("attention_causal_curve:", "attention_causal_curves:") ==
        "c.yaml:7: gpu.attention_causal_curves: unknown key (did you mean "
        "'attention_causal_curve'?)");
  std::string scalar = base;
  const std::string points = "\n    - [1024, 0.4, 0.3]\n    - [4096, 0.6, 0.5]";
  scalar.replace(scalar.find(points), points.size(), " 0.5");
  CHECK(cluster_error(scalar) ==
        "c.yaml:7: gpu.attention_causal_curve: expected a list of [sequence length, forward share, "
        "backward share], got '0.5'");
}

TEST_CASE("JSON loads too", "[loaders]") {
  const std::string json =
      R"({"name": "j", "layers": 2, "hidden": 64, "heads": 8, "vocab": 1000, "seq_len": 128,
 "training": {"global_batch": 16, "dtype": "fp16"}})";
  const Model m = load_model(json, "m.json");
  CHECK(m.training.global_batch == 16);
  CHECK(m.training.dtype == Dtype::fp16);
  CHECK(model_error(R"({"name": "j", "layers": 2, "hidden": 64, "heads": 8, "vocab": 1000,
 "seq_len": 128, "ffn": "swiglo"})") ==
        "m.yaml:2: ffn: expected gelu|relu|relu2|swiglu|geglu, got 'swiglo' (did you mean "
        "'swiglu'?)");
}

TEST_CASE("the JSON readers name the line of a key path", "[loaders]") {
  // Line numbers count from the text's first line.
  const std::string text = R"({
  "fits": [
    {"ranks": 8,
     "busbw_gbps": -1},
    {
      "ranks": 2, "name": "a\"b[0].c", "busbw_gbps": 3
    }
  ],
  "deep": [[1, [2,
    3]]]
})";
  using json_reader::line_of;
  CHECK(line_of(text, "") == 1);                    // the document
  CHECK(line_of(text, "fits") == 2);                // the array starts on the key's line
  CHECK(line_of(text, "fits[0]") == 3);             // each element where it starts
  CHECK(line_of(text, "fits[0].busbw_gbps") == 4);  // a member's value
  CHECK(line_of(text, "fits[1]") == 5);
  CHECK(line_of(text, "fits[1].busbw_gbps") == 6);  // past a string with an escaped quote
  CHECK(line_of(text, "fits[0].tier") == 3);        // missing: its object's line
  CHECK(line_of(text, "fits[7]") == 2);             // no such element: the array's line
  CHECK(line_of(text, "fit") == 1);                 // no such member ("fits" is not a parent)
  CHECK(line_of(text, "deep[0][1][1]") == 10);      // nested arrays, a value on the next line
  // Through a reader: "FILE:LINE: KEY: what was expected".
  const nlohmann::json doc = json_reader::parse(text, "c.json");
  const auto error = [&](const char* name) {
    try {
      const json_reader::Path fit = json_reader::Path::root("c.json", text).child("fits").index(0);
      (void)json_reader::positive_number(doc["fits"][0], fit, name);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(none)");
  };
  CHECK(error("busbw_gbps") == "c.json:4: fits[0].busbw_gbps: expected a positive number");
  CHECK(error("latency_s") == "c.json:3: fits[0].latency_s: missing");
  // Names written with \u escapes are the names nlohmann reads ("\u0062" is "b", a surrogate
  // pair one code point).
  const std::string escaped = "{\n\"\\u0062\": 1,\n\"\\ud83d\\ude00\": {\"x\":\n2}}";
  CHECK(line_of(escaped, "b") == 2);
  CHECK(line_of(escaped, "\U0001F600.x") == 4);
  // A deeply nested document is scanned without recursion, and what is off the key's way is
  // skipped whole: 100,000 levels in constant memory, the key's own depth in a path.
  const std::string deep = std::string(100000, '[') + "\n1" + std::string(100000, ']');
  CHECK(line_of(deep, "x") == 1);
  std::string way;
  for (int i = 0; i < 100000; ++i) way += "[0]";
  CHECK(line_of(deep, way) == 2);
}

TEST_CASE("a quoted number or boolean is a string: the wrong type, also in JSON", "[loaders]") {
  // JSON "8" and YAML "64" or 'false' are strings (yaml-cpp tags a quoted scalar "!"); they
  // were read as the number and the boolean.
  CHECK(model_error(R"({"name": "j", "layers": "2", "hidden": 64, "heads": 8, "vocab": 1000,
 "seq_len": 128})") ==
        "m.yaml:1: layers: expected a positive integer, got the string '2' (write it without "
        "quotes)");
  CHECK(model_error(kModel + "training: {global_batch: \"64\"}\n") ==
        "m.yaml:7: training.global_batch: expected a positive integer, got the string '64' "
        "(write it without quotes)");
  CHECK(model_error(kModel + "bias: 'false'\n") ==
        "m.yaml:7: bias: expected true or false, got the string 'false' (write it without "
        "quotes)");
  // A quoted word that is no boolean unquoted either is not told to drop its quotes.
  CHECK(model_error(kModel + "bias: \"yes\"\n") ==
        "m.yaml:7: bias: expected true or false, got 'yes'");
  CHECK(model_error(kModel + "dropout: \"0.1\"\n").find("got the string '0.1'") !=
        std::string::npos);
  // YAML 1.1's y/n/yes/no/on/off are not booleans here (yaml-cpp would take them): one of them
  // would change the model without a word.
  for (const char* word : {"y", "n", "yes", "no", "on", "off", "Yes", "OFF"}) {
    CHECK(model_error(kModel + "tied_embeddings: " + word + "\n") ==
          std::string("m.yaml:7: tied_embeddings: expected true or false, got '") + word + "'");
  }
  for (const char* word : {"true", "True", "TRUE", "false", "False", "FALSE"}) {
    CHECK(model_error(kModel + "tied_embeddings: " + word + "\n") == "no error");
  }
}

TEST_CASE("a tagged value or a leading zero is not read as a number", "[loaders]") {
  // `!!str 64` is the string 64 to every other YAML reader; yaml-cpp kept the text and handed
  // it over as the number. `040` is octal 32 to YAML 1.1 readers (PyYAML) and 40 to from_chars:
  // neither is assumed.
  CHECK(model_error(kModel + "training: {global_batch: !!str 64}\n") ==
        "m.yaml:7: training.global_batch: expected a positive integer, got '64' tagged !!str "
        "(YAML tags are not read; write the value alone)");
  CHECK(model_error(kModel + "bias: !!str false\n") ==
        "m.yaml:7: bias: expected true or false, got 'false' tagged !!str (YAML tags are not "
        "read; write the value alone)");
  CHECK(model_error(kModel + "norm: !custom rmsnorm\n").find("tagged !custom") !=
        std::string::npos);
  CHECK(model_error(kModel + "training: {global_batch: 064}\n") ==
        "m.yaml:7: training.global_batch: expected a positive integer, got '064' (a leading "
        "zero, which YAML 1.1 reads as octal; write it without)");
  CHECK(model_error(kModel + "dropout: 00.1\n") == "no error");  // a float to YAML 1.1 too
  CHECK(model_error(kModel + "dropout: 00\n").find("a leading zero") != std::string::npos);
  CHECK(model_error(kModel + "dropout: 0.1\n") == "no error");  // one zero before the point
  CHECK(model_error(kModel + "training: {global_batch: 0}\n").find("leading") ==
        std::string::npos);  // 0 itself: out of range, not a leading zero
  // YAML's core schema signs a number with `+` too (hardening round thirty-three: `+0.5` was
  // refused as "a number in (0, 1]"); one sign only.
  CHECK(model_error(kModel + "dropout: +0.1\n") == "no error");
  CHECK(model_error(kModel + "training: {global_batch: +64}\n") == "no error");
  CHECK(model_error(kModel + "dropout: +-0.1\n").find("got '+-0.1'") != std::string::npos);
  CHECK(model_error(kModel + "training: {global_batch: +064}\n").find("a leading zero") !=
        std::string::npos);
}

TEST_CASE("model defaults and errors", "[loaders]") {
  const Model m = load_model(kModel, "m.yaml");
  CHECK(m.kv_heads == 8);
  CHECK(m.ffn_hidden == 256);
  CHECK(m.ffn == FfnKind::gelu);
  CHECK(m.norm == NormKind::layernorm);
  CHECK(m.learned_positions);
  CHECK(m.training.global_batch == 0);
  CHECK(m.training.optimizer == Optimizer::adam);
  CHECK(model_error(kModel + "kv_heads: 3\n") == "m.yaml:7: kv_heads: 3 does not divide heads 8");
  CHECK(model_error(kModel + "kv_head: 4\n") ==
        "m.yaml:7: kv_head: unknown key (did you mean 'kv_heads'?)");
  CHECK(model_error("name: tiny\nlayers: 2\nhidden: 64\nheads: 8\nvocab: 1000\n") ==
        "m.yaml:1: seq_len: missing required key");
  CHECK(model_error(kModel + "training:\n  global_batch: 1.5\n") ==
        "m.yaml:8: training.global_batch: expected a positive integer, got '1.5'");
  CHECK(model_error(kModel + "training:\n  optimiser: adam\n") ==
        "m.yaml:8: training.optimiser: unknown key (did you mean 'optimizer'?)");
  CHECK(model_error(kModel + "position_embedding: alibi\n") ==
        "m.yaml:7: position_embedding: expected learned|rope, got 'alibi'");
  // RoPE's base (launch configs only): 10000 by default, a positive integer, and only for a
  // model with RoPE; qk_layernorm a bool.
  CHECK(m.rope_base == 10000);
  CHECK_FALSE(m.qk_layernorm);
  const Model llama = load_model(
      kModel + "position_embedding: rope\nrope_base: 500000\nqk_layernorm: true\n", "m.yaml");
  CHECK(llama.rope_base == 500000);
  CHECK(llama.qk_layernorm);
  CHECK(model_error(kModel + "rope_base: 500000\n") ==
        "m.yaml:7: rope_base: the model has learned positions (position_embedding: learned): set "
        "position_embedding: rope or leave rope_base out");
  CHECK(model_error(kModel + "position_embedding: rope\nrope_base: 0\n") ==
        "m.yaml:8: rope_base: expected a positive integer, got '0'");
  CHECK(model_preset("llama3-70b").rope_base == 500000);
  CHECK(model_preset("qwen3-235b-a22b").qk_layernorm);
  // dropout: 0.1 by default with learned positions, 0 with RoPE; a probability below 1.
  CHECK(m.dropout == Approx(0.1));
  CHECK(load_model(kModel + "position_embedding: rope\n", "m.yaml").dropout == 0.0);
  CHECK(load_model(kModel + "dropout: 0\n", "m.yaml").dropout == 0.0);
  CHECK(model_error(kModel + "dropout: 1\n") ==
        "m.yaml:7: dropout: expected a probability below 1, got 1");
  CHECK(model_error(kModel + "dropout: 1.5\n") ==
        "m.yaml:7: dropout: expected a probability below 1, got 1.5");
  CHECK(model_error(kModel + "dropout: -0.1\n") ==
        "m.yaml:7: dropout: expected a non-negative number, got '-0.1'");
  // mtp_layers: 0 by default; DeepSeek-V3's preset 1; at most 16.
  CHECK(m.mtp_layers == 0);
  CHECK(load_model(kModel + "mtp_layers: 1\n", "m.yaml").mtp_layers == 1);
  CHECK(model_preset("deepseek-v3").mtp_layers == 1);
  CHECK(model_error(kModel + "mtp_layers: 17\n") == "m.yaml:7: mtp_layers: expected at most 16");
  CHECK(model_error(kModel + "mtp_layers: -1\n") ==
        "m.yaml:7: mtp_layers: expected a non-negative integer, got '-1'");
}

TEST_CASE("MLA and MoE shapes that cannot be priced are refused", "[loaders]") {
  // Twentieth session's review: MLA head dims summed as ints wrapped (a negative step time).
  const std::string mla =
      "name: m\nlayers: 2\nhidden: 256\nheads: 2\nvocab: 1000\n"
      "seq_len: 128\nattention: mla\n";
  const auto dims = [](const std::string& nope) {
    return "mla: {kv_lora_rank: 16, qk_nope_head_dim: " + nope +
           ", qk_rope_head_dim: 1, v_head_dim: 1}\n";
  };
  CHECK_NOTHROW(load_model(mla + dims("1048576"), "m.yaml"));
  CHECK(model_error(mla + dims("2147483647")) ==
        "m.yaml:8: mla.qk_nope_head_dim: expected at most 1048576, got 2147483647");
  // MLA has a K/V head per query head: kv_heads other than heads is refused, heads accepted.
  CHECK(model_error(mla + dims("8") + "kv_heads: 1\n") ==
        "m.yaml:9: kv_heads: with attention: mla, K and V have one head per query head: leave "
        "kv_heads out or set it to heads (2)");
  CHECK_NOTHROW(load_model(mla + dims("8") + "kv_heads: 2\n", "m.yaml"));
  // MoE: a layer listed twice, first_dense beside a list, an imbalance past every token at one
  // expert (experts / top_k).
  const std::string moe =
      "name: e\nlayers: 4\nhidden: 64\nheads: 4\nvocab: 100\nseq_len: 32\n"
      "moe:\n  experts: 8\n  top_k: 2\n  expert_ffn_hidden: 64\n";
  CHECK(model_error(moe + "  layers: [1, 1]\n") ==
        "m.yaml:11: moe.layers: layer 1 is listed twice");
  CHECK(model_error(moe + "  layers: [1, 2]\n  first_dense: 1\n") ==
        "m.yaml:12: moe.first_dense: only with layers: N (a list names the MoE layers itself)");
  CHECK_NOTHROW(load_model(moe + "  layers: 1\n  first_dense: 1\n", "m.yaml"));
  // first_dense past every layer is named at its own line, not at moe.layers'.
  CHECK(model_error(moe + "  layers: 1\n  first_dense: 4\n") ==
        "m.yaml:12: moe.first_dense: 4 leaves no MoE layer (the model has 4 layers)");
  CHECK_NOTHROW(load_model(moe + "  imbalance: 4\n", "m.yaml"));
  CHECK(model_error(moe + "  imbalance: 4.5\n") ==
        "m.yaml:11: moe.imbalance: expected at most experts / top_k (4): every token at the "
        "busiest expert");
  // A capacity factor drops tokens only below experts / top_k (8 / 2 = 4): 1e300 priced as 1
  // and was written to the launch as is.
  CHECK_NOTHROW(load_model(moe + "  capacity_factor: 4\n", "m.yaml"));
  CHECK(model_error(moe + "  capacity_factor: 1e300\n") ==
        "m.yaml:11: moe.capacity_factor: expected at most experts / top_k (4): above it no token "
        "is dropped (dropless: true)");
}

TEST_CASE("every preset loads and unknown names suggest one", "[loaders]") {
  for (const auto& name : preset_names(PresetKind::gpu)) CHECK_NOTHROW(gpu_preset(name));
  for (const auto& name : preset_names(PresetKind::cluster)) CHECK_NOTHROW(cluster_preset(name));
  for (const auto& name : preset_names(PresetKind::model)) CHECK_NOTHROW(model_preset(name));
  CHECK(preset_names(PresetKind::gpu).size() == 8);
  CHECK(preset_names(PresetKind::cluster).size() == 7);
  CHECK(preset_names(PresetKind::model).size() == 12);  // + mixtral-8x7b/8x22b, deepseek-v3
  CHECK_THROWS_WITH(cluster_preset("dgx-h10"),
                    "unknown cluster preset 'dgx-h10' (did you mean 'dgx-h100'?); known: "
                    "dgx-a100, dgx-b200, dgx-h100, dgx1-v100, gb200-nvl72, hgx-h200, pcie-8gpu");
  CHECK_THROWS_WITH(model_preset("gpt3"),
                    "unknown model preset 'gpt3' (did you mean 'gpt3-175b'?); known: deepseek-v3, "
                    "gpt3-175b, llama2-70b, llama2-7b, llama3-405b, llama3-70b, llama3-8b, "
                    "megatron-1t, mixtral-8x22b, mixtral-8x7b, mt-nlg-530b, qwen3-235b-a22b");
}

TEST_CASE("quick flags resolve to a cluster, errors name the flag", "[loaders][cli]") {
  using cli::ClusterArgs;
  const Cluster base = cli::resolve_cluster(ClusterArgs{});
  CHECK(base.name == "dgx-h100");
  const Cluster c = cli::resolve_cluster(ClusterArgs{"", 512, 64, 0, ""});
  CHECK(c.servers == 64);
  CHECK(c.gpus_per_server == 8);
  CHECK(cli::resolve_cluster(ClusterArgs{"", 64, 0, 0, ""}).servers == 8);
  const Cluster small = cli::resolve_cluster(ClusterArgs{"", 16, 4, 0, "b200"});
  CHECK(small.gpus_per_server == 4);
  CHECK(small.nvlink.domain_gpus == 4);  // the domain was the server: it follows
  CHECK(small.gpu.name == "b200");
  CHECK(cli::resolve_cluster(ClusterArgs{"gb200-nvl72", 144, 0, 0, ""}).domains() == 2);
  CHECK_THROWS_WITH(cli::resolve_cluster(ClusterArgs{"", 500, 64, 0, ""}),
                    "--gpus 500: not divisible into 64 servers");
  CHECK_THROWS_WITH(cli::resolve_cluster(ClusterArgs{"", 500, 0, 0, ""}),
                    "--gpus 500: not divisible into servers of 8 GPUs");
  CHECK_THROWS_WITH(cli::resolve_cluster(ClusterArgs{"", 512, 64, 4, ""}),
                    "--gpus-per-server 4: --gpus 512 over --servers 64 gives 8");
  // 100 GB200 GPUs = 25 trays. The job takes them in segments of the largest tray count up to
  // a rack's 18 that divides 25: 5, so five 20-GPU domains (NeMo's and Megatron-Bridge's
  // --segment rule, nvlink.job_segments).
  const Cluster racks = cli::resolve_cluster(ClusterArgs{"gb200-nvl72", 100, 0, 0, ""});
  CHECK(racks.nvlink.domain_gpus == 20);
  CHECK(racks.nvlink.rack_domain_gpus == 72);
  CHECK(racks.domains() == 5);
  CHECK_FALSE(racks.partial_domain());
  CHECK(racks.domain_of(99) == 4);
  // 256 GPUs = 64 trays: 16-tray segments (16 divides 64; 17 and 18 do not), 64-GPU domains.
  CHECK(cli::resolve_cluster(ClusterArgs{"gb200-nvl72", 256, 0, 0, ""}).nvlink.domain_gpus == 64);
  // 144 GPUs = 36 trays: two whole racks, the rack's own domain (rack_domain_gpus 0).
  const Cluster two = cli::resolve_cluster(ClusterArgs{"gb200-nvl72", 144, 0, 0, ""});
  CHECK(two.nvlink.domain_gpus == 72);
  CHECK(two.nvlink.rack_domain_gpus == 0);
  // 76 GPUs = 19 trays, a prime above 18: segments of 1 tray, no NVLink between trays.
  CHECK(cli::resolve_cluster(ClusterArgs{"gb200-nvl72", 76, 0, 0, ""}).nvlink.domain_gpus == 4);
  // Without job segments the job fills racks in order: one whole rack and 28 GPUs (7 trays)
  // of the next; applying in_job_segments changes nothing, twice included.
  Cluster filled = cluster_preset("gb200-nvl72");
  filled.nvlink.job_segments = false;
  filled.servers = 25;
  filled = in_job_segments(in_job_segments(filled));
  CHECK(filled.domains() == 2);
  CHECK(filled.partial_domain());
  CHECK(filled.domain_size(0) == 72);
  CHECK(filled.domain_size(1) == 28);
  CHECK(filled.domain_of(99) == 1);
  CHECK(in_job_segments(racks).nvlink.domain_gpus == 20);  // idempotent
  CHECK_THROWS_WITH(cli::resolve_cluster(ClusterArgs{"dgx-h10", 0, 0, 0, ""}),
                    "--cluster dgx-h10: unknown cluster preset (did you mean 'dgx-h100'?); "
                    "known: dgx-a100, dgx-b200, dgx-h100, dgx1-v100, gb200-nvl72, hgx-h200, "
                    "pcie-8gpu (or give a .yaml/.json file)");
  CHECK(cli::names_file("a/b"));
  CHECK(cli::names_file("x.json"));
  CHECK_FALSE(cli::names_file("dgx-h100"));
}

TEST_CASE("model flags and the assumptions line", "[loaders][cli]") {
  const cli::ClusterArgs cluster_args;
  const cli::ModelArgs model_args;
  const Cluster cluster = cli::resolve_cluster(cluster_args);
  const Model model = cli::resolve_model(model_args);
  CHECK(model.name == "gpt3-175b");
  CHECK(model.training.global_batch == 1536);
  CHECK(cli::describe_assumptions(cluster_args, model_args, cluster, model) ==
        "assumed: cluster dgx-h100 (8x h100-sxm-80g per server, NVSwitch 18x25 GB/s, 8x400 Gb/s "
        "NICs); model gpt3-175b, global batch 1536; change with "
        "--cluster/--gpu/--model/--global-batch");
  const cli::ModelArgs given{"llama3-8b", 512, 4096, ""};
  const Model llama = cli::resolve_model(given);
  CHECK(llama.training.global_batch == 512);
  CHECK(llama.seq_len == 4096);
  CHECK(cli::describe_assumptions(cli::ClusterArgs{"dgx-h100", 0, 0, 0, ""}, given, cluster, llama)
            .empty());
  CHECK(cli::format_count(174.6e9) == "174.6B");
}

TEST_CASE("a model file's head_dim", "[loaders]") {
  const Model m = load_model(kModel + "head_dim: 16\n", "m.yaml");  // 8 heads of 16 in 64
  CHECK(m.head_dim() == 16);
  CHECK(m.q_hidden() == 128);
  CHECK(load_model(kModel, "m.yaml").explicit_head_dim == 0);
  CHECK(model_error(kModel + "head_dim: 0\n") ==
        "m.yaml:7: head_dim: expected a positive integer, got '0'");
  // Heads that do not divide hidden need head_dim.
  const std::string odd = "name: odd\nlayers: 2\nhidden: 64\nheads: 6\nvocab: 1000\nseq_len: 128\n";
  CHECK(model_error(odd) ==
        "m.yaml:4: heads: 6 heads do not divide hidden 64 (set head_dim if "
        "the heads are not hidden / heads wide)");
  CHECK(load_model(odd + "head_dim: 16\n", "m.yaml").q_hidden() == 96);
}
