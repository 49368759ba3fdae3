// Pictures (`plan --svg`, `--report`): the SVG parses as XML (tinyxml2), its element counts
// match the plan, failures are marked, a large cluster stays summarised, and the binary writes
// the SVG and the HTML report end to end; rsvg-convert renders it when installed.
#include <sys/wait.h>
#include <tinyxml2.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/plan_svg.h"
#include "cli/svg.h"
#include "cli/svg_panels.h"
#include "cli_runner.h"
#include "costmodel/pipeline.h"
#include "costmodel_fixture.h"
#include "planner/search.h"

namespace {

using namespace trident;
using trident::cli::PictureInput;

bool has_class(const tinyxml2::XMLElement* e, const std::string& name) {
  const char* value = e->Attribute("class");
  if (value == nullptr) return false;
  std::istringstream words(value);
  std::string word;
  while (words >> word) {
    if (word == name) return true;
  }
  return false;
}

void visit(const tinyxml2::XMLElement* e,
           const std::function<void(const tinyxml2::XMLElement*)>& f) {
  for (; e != nullptr; e = e->NextSiblingElement()) {
    f(e);
    visit(e->FirstChildElement(), f);
  }
}

/// The parsed document; fails the test when it is not well-formed XML.
struct Parsed {
  tinyxml2::XMLDocument doc;
  explicit Parsed(const std::string& text) {
    INFO(text.substr(0, 300));
    REQUIRE(doc.Parse(text.c_str(), text.size()) == tinyxml2::XML_SUCCESS);
    REQUIRE(std::string(doc.RootElement()->Name()) == "svg");
  }
  /// Elements of class `name` (optionally `tag` only), anywhere or under the element `id`.
  int count(const std::string& name, const std::string& tag = "",
            const std::string& id = "") const {
    int n = 0;
    const tinyxml2::XMLElement* root = doc.RootElement();
    if (!id.empty()) {
      visit(root, [&](const tinyxml2::XMLElement* e) {
        if (e->Attribute("id") != nullptr && id == e->Attribute("id")) root = e;
      });
      REQUIRE(root != doc.RootElement());
    }
    visit(root->FirstChildElement(), [&](const tinyxml2::XMLElement* e) {
      if (has_class(e, name) && (tag.empty() || tag == e->Name())) ++n;
    });
    return n;
  }
  const tinyxml2::XMLElement* gpu(int id) const {
    const tinyxml2::XMLElement* found = nullptr;
    visit(doc.RootElement(), [&](const tinyxml2::XMLElement* e) {
      if (has_class(e, "gpu") && e->IntAttribute("data-gpu", -1) == id) found = e;
    });
    return found;
  }
};

/// `servers` DGX-like servers of 8 GPUs (one NVLink domain each) of the round GPU.
Cluster cluster_of(int servers) {
  Cluster c;
  c.name = "test";
  c.gpu = test::round_gpu();
  c.servers = servers;
  c.gpus_per_server = 8;
  return c;
}

/// 8 layers so every pp up to 8 divides them; global batch 32.
Model model_of() {
  Model m = test::small_model();
  m.layers = 8;
  m.training.global_batch = 32;
  return m;
}

PlanResult plan_of(const Cluster& cluster, const Model& model, int tp, int pp, int dp, int v) {
  ParallelConfig config;
  config.tp = tp;
  config.pp = pp;
  config.dp = dp;
  config.virtual_stages = v;
  PlanResult plan = evaluate_plan(cluster, model, config);
  plan.placement.order = RankOrder::tp_dp_pp;  // the layout below is derived for this order
  return plan;
}

PictureInput input_of(const Cluster& cluster, const Model& model, const PlanResult& plan) {
  PictureInput in;
  in.cluster = &cluster;
  in.model = &model;
  in.plans = {plan};
  in.labels = {"#1"};
  return in;
}

}  // namespace

TEST_CASE("svg writer escapes text and attributes and formats numbers") {
  CHECK(cli::xml_escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
  CHECK(cli::svg_num(12.5) == "12.5");
  CHECK(cli::svg_num(3.0) == "3");
  CHECK(cli::svg_num(0.004) == "0");
  CHECK(cli::svg_num(1.236) == "1.24");
  cli::SvgWriter svg;
  svg.open_group({{"id", "g"}});
  svg.text(1, 2, "x < y", {{"class", "t"}});
  CHECK_THROWS_AS(svg.document(10, 10, ""), std::logic_error);
  svg.close_group();
  const Parsed parsed(svg.document(10, 10, ""));
  CHECK(parsed.count("t", "text", "g") == 1);
  CHECK(
      std::string(
          parsed.doc.RootElement()->FirstChildElement("g")->FirstChildElement("text")->GetText()) ==
      "x < y");
}

TEST_CASE("1F1B picture: a box per GPU, a lane per stage, 2*m*pp blocks") {
  const Cluster cluster = cluster_of(4);
  const Model model = model_of();
  // TP 2 x PP 4 x DP 4 = 32 GPUs; m = 32 / (4 * 1) = 8 micro-batches.
  const PlanResult plan = plan_of(cluster, model, 2, 4, 4, 1);
  REQUIRE(plan.estimate.num_micro_batches == 8);
  const Parsed svg(cli::plan_svg(input_of(cluster, model, plan)));
  CHECK(svg.count("gpu", "rect") == 32);  // 4 servers of 8, all drawn
  CHECK(svg.count("tpgroup") == 16);      // 32 GPUs / TP 2
  CHECK(svg.count("stage", "rect", "gantt-step") == 4);
  CHECK(svg.count("fwd", "rect", "gantt-step") == 8 * 4);  // m * pp
  CHECK(svg.count("bwd", "rect", "gantt-step") == 8 * 4);
  CHECK(svg.count("failed") == 0);
  CHECK(svg.count("bar", "g") == 1);
  // tp-dp-pp: rank = tp + 2 * (dp + 4 * pp). GPU 9 = 1 + 2 * (0 + 4 * 1): TP 1, DP 0, stage 1;
  // GPU 30 = 0 + 2 * (3 + 4 * 3): TP 0, DP 3, stage 3.
  const auto* gpu9 = svg.gpu(9);
  REQUIRE(gpu9 != nullptr);
  CHECK(gpu9->IntAttribute("data-stage") == 1);
  CHECK(gpu9->IntAttribute("data-tp") == 1);
  CHECK(gpu9->IntAttribute("data-dp") == 0);
  const auto* gpu30 = svg.gpu(30);
  REQUIRE(gpu30 != nullptr);
  CHECK(gpu30->IntAttribute("data-stage") == 3);
  CHECK(gpu30->IntAttribute("data-dp") == 3);
}

TEST_CASE("interleaved picture: 2*m*pp*v blocks, micro-batch numbers on the blocks") {
  const Cluster cluster = cluster_of(4);
  const Model model = model_of();
  // TP 2 x PP 4 x DP 4, v = 2: m = 8 (a multiple of pp); blocks = 2 * 8 * 4 * 2 = 128.
  const PlanResult plan = plan_of(cluster, model, 2, 4, 4, 2);
  const Parsed svg(cli::plan_svg(input_of(cluster, model, plan)));
  CHECK(svg.count("fwd", "rect", "gantt-step") == 64);
  CHECK(svg.count("bwd", "rect", "gantt-step") == 64);
  CHECK(svg.count("stage", "rect", "gantt-step") == 4);
  int numbered = 0;
  visit(svg.doc.RootElement(), [&](const tinyxml2::XMLElement* e) {
    if (std::string(e->Name()) == "text" && e->GetText() != nullptr &&
        std::string(e->GetText()) == "7") {
      ++numbered;
    }
  });
  CHECK(numbered > 0);  // micro-batch 7 is labelled somewhere (main chart or zoom)
}

TEST_CASE("the Gantt chart runs on the cost model's times: makespan = ideal + bubble") {
  const Cluster cluster = cluster_of(4);
  const Model model = model_of();
  for (const int v : {1, 2}) {
    const PlanResult plan = plan_of(cluster, model, 2, 4, 4, v);
    const Estimate& e = plan.estimate;
    const cli::GanttTimes g = cli::gantt_times(e, plan.config);
    // Per micro-batch forward + backward = (compute + exposed TP) / m + the PP share: exposed PP
    // / m where blocking pairs lengthen each micro-batch (v = 1), and, where PP's exposed time
    // is the whole step's increase (v = 2: overlapped interleaved p2p), exposed PP / (m +
    // (p-1)/v). The uniform schedule's makespan (m + (p-1)/v) * (t_f + t_b) is then ideal * (1 +
    // (p-1)/(v*m)) + the whole-step PP = the cost model's ideal + bubble (+ that PP).
    // The last stage holds the output layer: the others run r = bubble_fill_ratio of its time
    // (the drawing's blocks), its last chunk the rest (g.tail), and the bubble's (p-1)/v slots
    // are the others': makespan 8 x t_last + r x 3/v x t_last.
    const double ideal = e.time.compute_s() + e.time.tp_comm_s;
    const double r = e.bubble_fill_ratio;
    REQUIRE(r < 1.0);
    const double spans = 8.0 + r * 3.0 / v;
    CHECK(e.pp_whole_step == (v > 1));
    const double pp_per_block = e.time.pp_comm_s / (e.pp_whole_step ? spans : 8.0);
    const double last_stage_s = g.forward_s + g.backward_s + g.tail.forward_s + g.tail.backward_s;
    CHECK(8 * last_stage_s == Approx(ideal + 8 * pp_per_block).epsilon(1e-12));
    CHECK(g.forward_s + g.backward_s == Approx(r * last_stage_s).epsilon(1e-12));
    const double makespan =
        schedule_makespan_s(schedule_1f1b(4, 8, v, g.forward_s, g.backward_s, 0.0, g.tail));
    const double whole_step_pp = e.pp_whole_step ? e.time.pp_comm_s : 0.0;
    CHECK(makespan == Approx(ideal + (e.pp_whole_step ? 0.0 : e.time.pp_comm_s) + e.time.bubble_s +
                             whole_step_pp)
                          .epsilon(1e-9));
    CHECK(makespan + g.tail_dp_s + g.tail_optimizer_s == Approx(e.time.step_s).epsilon(1e-9));
  }
}

TEST_CASE("the Gantt chart of a MoE plan holds its exposed all-to-alls") {
  // The small model with 8 experts of top-2 on every layer, TP 2 x PP 4 x DP 4 x EP 4 on 32
  // GPUs: the dispatch/combine all-to-alls are exposed per micro-batch (and inside the cost
  // model's bubble), so each block carries its share and the drawn step is the priced one (the
  // blocks left them out: Qwen3-235B's drawn step was 4.5 s short of its 26.6 s).
  const Cluster cluster = cluster_of(4);
  Model model = model_of();
  model.moe.experts = 8;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = model.ffn_hidden;
  ParallelConfig config;
  config.tp = 2;
  config.pp = 4;
  config.dp = 4;
  config.ep = 4;
  config.sequence_parallel = true;
  const PlanResult plan = evaluate_plan(cluster, model, config);
  const Estimate& e = plan.estimate;
  REQUIRE(e.time.ep_comm_s > 0.0);
  const cli::GanttTimes g = cli::gantt_times(e, plan.config);
  const double makespan = schedule_makespan_s(schedule_1f1b(
      4, static_cast<int>(e.num_micro_batches), 1, g.forward_s, g.backward_s, 0.0, g.tail));
  CHECK(makespan + g.tail_dp_s + g.tail_optimizer_s == Approx(e.time.step_s).epsilon(1e-9));
}

TEST_CASE("failed GPU and NVLink are marked once each") {
  Cluster cluster = cluster_of(4);
  cluster.health.dead_gpus.insert(11);
  cluster.health.nvlinks_down[20] = 1;
  const Model model = model_of();
  const PlanResult plan = plan_of(cluster_of(4), model, 2, 4, 4, 1);
  const Parsed svg(cli::plan_svg(input_of(cluster, model, plan)));
  CHECK(svg.count("failed") == 2);
  int dead = 0, nvlink = 0;
  visit(svg.doc.RootElement(), [&](const tinyxml2::XMLElement* e) {
    if (!has_class(e, "failed")) return;
    const std::string kind = e->Attribute("data-failure");
    dead += kind == "gpu";
    nvlink += kind == "nvlink";
  });
  CHECK(dead == 1);
  CHECK(nvlink == 1);
}

TEST_CASE("131,072 GPUs: 8 servers drawn, the rest summarised with counts") {
  const Cluster cluster = cluster_of(16384);
  Model model = model_of();
  model.layers = 16;
  model.training.global_batch = 1024;
  // TP 8 x PP 16 x DP 1024 = 131,072 GPUs; m = 1024 / 1024 = 1: 2 * 1 * 16 blocks.
  const PlanResult plan = plan_of(cluster, model, 8, 16, 1024, 1);
  const std::string text = cli::plan_svg(input_of(cluster, model, plan));
  CHECK(text.size() < 400'000);
  const Parsed svg(text);
  CHECK(svg.count("gpu", "rect") == 8 * 8);
  CHECK(svg.count("fwd", "rect", "gantt-step") == 16);
  int summarised = 0;
  int drawn = 0;
  visit(svg.doc.RootElement(), [&](const tinyxml2::XMLElement* e) {
    if (has_class(e, "summary")) summarised += e->IntAttribute("data-servers");
    if (has_class(e, "server")) ++drawn;
  });
  CHECK(drawn == 8);
  CHECK(drawn + summarised == 16384);
}

namespace {

struct Run {
  int code = -1;
  std::string err;
};

using cli_test::slurp;
using cli_test::TempDir;

Run run(const std::string& command, const TempDir& dir) {
  const std::string err_path = (dir.path / "stderr").string();
  const int status = std::system((command + " >/dev/null 2>" + err_path).c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err_path);
  return r;
}

const std::string kSeed = std::string(TRIDENT_BINARY) + " plan --gpus 512 --servers 64 --min-tp 4";

}  // namespace

TEST_CASE("plan --svg --report end to end on the seed question") {
  const TempDir dir;
  const auto svg = dir.path / "seed.svg";
  const auto report = dir.path / "report";
  const auto json = dir.path / "plans.json";
  const Run r = run(kSeed + " --format json --output " + json.string() + " --svg " + svg.string() +
                        " --report " + report.string(),
                    dir);
  REQUIRE(r.code == 0);
  const auto best = nlohmann::json::parse(slurp(json))["plans"][0];
  const int pp = best["pp"];
  const int v = best["virtual_stages"];
  const int m = best["num_micro_batches"];
  const Parsed parsed(slurp(svg));
  // 64 servers: 8 drawn in full (64 GPU boxes), the other 56 in summary boxes.
  CHECK(parsed.count("gpu", "rect") == 64);
  const auto* root = parsed.doc.RootElement();
  CHECK(root->IntAttribute("width") == 1400);
  CHECK(parsed.count("fwd", "rect", "gantt-step") == m * pp * v);
  CHECK(parsed.count("bwd", "rect", "gantt-step") == m * pp * v);
  CHECK(parsed.count("stage", "rect", "gantt-step") == pp);
  const std::string page = slurp(report / "index.html");
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("<svg xmlns=") != std::string::npos);
  CHECK(page.find("<h2>Ranked plans</h2>") != std::string::npos);
  CHECK(page.find("<h2>Explanation</h2>") != std::string::npos);
  CHECK(page.find("The three numbers") != std::string::npos);
  CHECK(page.find("http") == page.find("http://www.w3.org/2000/svg"));  // nothing fetched
  // No temporary files left beside the outputs.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(report))
    files += entry.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("plan --svg-plan N draws plan N; past the ranking is an error") {
  const TempDir dir;
  const auto svg = dir.path / "two.svg";
  REQUIRE(run(kSeed + " --top 3 --svg-plan 6 --svg " + svg.string(), dir).code == 0);
  const Parsed parsed(slurp(svg));
  bool found = false;
  visit(parsed.doc.RootElement(), [&](const tinyxml2::XMLElement* e) {
    if (has_class(e, "bar") && std::string(e->Attribute("data-plan")) == "#6") found = true;
  });
  CHECK(found);
  const Run bad = run(std::string(TRIDENT_BINARY) +
                          " plan --gpus 8 --servers 1 --model llama3-8b --tp 8 --pp 1 --dp 1 "
                          "--micro-batch 1 --vp 1 --recompute none --zero 1 "
                          "--sequence-parallel on --svg-plan 2 --svg " +
                          svg.string() + "x",
                      dir);
  CHECK(bad.code == 2);
  CHECK(bad.err == "trident: error: --svg-plan 2: the ranking has 1 plans that fit\n");
  CHECK_FALSE(std::filesystem::exists(svg.string() + "x"));
}

TEST_CASE("plan --fail-link --svg: the failed GPU marked, healthy against failed") {
  const TempDir dir;
  const auto svg = dir.path / "fail.svg";
  REQUIRE(run(kSeed + " --fail-link gpu:17/3 --svg " + svg.string(), dir).code == 0);
  const Parsed parsed(slurp(svg));
  CHECK(parsed.count("failed") == 1);
  const auto* gpu = parsed.gpu(17 * 8 + 3);
  CHECK(gpu != nullptr);  // the failed server is among those drawn in full
  std::vector<std::string> bars;
  visit(parsed.doc.RootElement(), [&](const tinyxml2::XMLElement* e) {
    if (has_class(e, "bar")) bars.emplace_back(e->Attribute("data-plan"));
  });
  REQUIRE(bars.size() >= 2);
  CHECK(bars[0] == "healthy");
  CHECK(bars[1].rfind("best: ", 0) == 0);
}

TEST_CASE("plan --report into a missing parent writes nothing") {
  const TempDir dir;
  const auto svg = dir.path / "a.svg";
  const std::string report = (dir.path / "no" / "such").string();
  const Run r = run(kSeed + " --svg " + svg.string() + " --report " + report, dir);
  CHECK(r.code == 2);
  CHECK(r.err == "trident: error: --report '" + report +
                     "': cannot create the directory: No such file or directory\n");
  CHECK_FALSE(std::filesystem::exists(svg));
}

TEST_CASE("rsvg-convert renders the seed picture at its size") {
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    WARN("rsvg-convert not installed (Debian: librsvg2-bin): rendering not checked");
    return;
  }
  const TempDir dir;
  const auto svg = dir.path / "seed.svg";
  const auto png = dir.path / "seed.png";
  REQUIRE(run(kSeed + " --svg " + svg.string(), dir).code == 0);
  REQUIRE(run("rsvg-convert -o " + png.string() + " " + svg.string(), dir).code == 0);
  const std::string bytes = slurp(png);
  REQUIRE(bytes.size() > 24);
  CHECK(bytes.substr(1, 3) == "PNG");
  const auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned char>(bytes[at]) << 24) |
           (static_cast<unsigned char>(bytes[at + 1]) << 16) |
           (static_cast<unsigned char>(bytes[at + 2]) << 8) |
           static_cast<unsigned char>(bytes[at + 3]);
  };
  const Parsed parsed(slurp(svg));
  CHECK(be32(16) == 1400);  // IHDR width, then height: the SVG's own size
  CHECK(static_cast<int>(be32(20)) == parsed.doc.RootElement()->IntAttribute("height"));
  CHECK(bytes.size() > 20'000);  // three panels of colour, not a blank page
}
