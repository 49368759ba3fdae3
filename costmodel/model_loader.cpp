#include "costmodel/model_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <vector>

#include "configs/presets.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/yaml_util.h"

namespace trident {

namespace {

using yaml::MapReader;
using yaml::Range;

const std::vector<std::string> kModelKeys = {"name",
                                             "layers",
                                             "hidden",
                                             "heads",
                                             "kv_heads",
                                             "head_dim",
                                             "ffn_hidden",
                                             "ffn",
                                             "vocab",
                                             "seq_len",
                                             "tied_embeddings",
                                             "norm",
                                             "bias",
                                             "position_embedding",
                                             "rope_base",
                                             "qk_layernorm",
                                             "dropout",
                                             "mtp_layers",
                                             "training",
                                             "attention",
                                             "mla",
                                             "moe"};
const std::vector<std::string> kMoeKeys = {
    "experts",     "top_k",           "expert_ffn_hidden", "shared_experts", "layers",
    "first_dense", "capacity_factor", "dropless",          "imbalance",      "router"};
const std::vector<std::string> kMlaKeys = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                           "qk_rope_head_dim", "v_head_dim"};
const std::vector<std::string> kAttentionKinds = {"mha", "mla"};
const std::vector<std::string> kRouterNames = {"softmax", "sigmoid"};
const std::vector<std::string> kTrainingKeys = {"global_batch", "dtype", "optimizer", "fp8"};
const std::vector<std::string> kFp8Keys = {"recipe", "attention", "communication", "params"};
const std::vector<std::string> kFfnNames = {"gelu", "relu", "relu2", "swiglu", "geglu"};
const std::vector<std::string> kNormNames = {"layernorm", "rmsnorm"};
const std::vector<std::string> kPositionNames = {"learned", "rope"};
const std::vector<std::string> kOptimizerNames = {"adam", "sgd"};

int to_int32(const MapReader& m, std::string_view key, long long value) {
  if (value > INT_MAX) m.fail(key, "expected at most " + std::to_string(INT_MAX));
  return static_cast<int>(value);
}

int required_count(const MapReader& m, std::string_view key) {
  return to_int32(m, key, m.required_int(key, Range::positive));
}

int optional_count(const MapReader& m, std::string_view key, int fallback) {
  return to_int32(m, key, m.optional_int(key, fallback, Range::positive));
}

Training read_training(const std::optional<MapReader>& t) {
  Training training;
  if (!t) return training;
  t->reject_unknown(kTrainingKeys);
  training.global_batch = t->optional_int("global_batch", 0, Range::positive);
  training.dtype = kDtypes[t->optional_choice("dtype", dtype_names(), 0)];
  if (t->has("dtype")) {
    training.dtype_from = yaml::position(t->source(), t->line("dtype"), t->path("dtype"));
  }
  training.optimizer =
      t->optional_choice("optimizer", kOptimizerNames, 0) == 0 ? Optimizer::adam : Optimizer::sgd;
  if (training.dtype == Dtype::fp8) training.fp8_recipe_from = training.dtype_from;
  if (const auto fp8 = t->optional_map("fp8")) {
    if (training.dtype != Dtype::fp8) t->fail("fp8", "expected only with dtype: fp8");
    fp8->reject_unknown(kFp8Keys);
    training.fp8_recipe_from =
        fp8->has("recipe") ? yaml::position(fp8->source(), fp8->line("recipe"), fp8->path("recipe"))
                           : yaml::position(t->source(), t->line("fp8"), t->path("fp8"));
    training.fp8.recipe = kFp8Recipes[fp8->optional_choice("recipe", fp8_recipe_names(), 0)];
    training.fp8.attention = fp8->optional_bool("attention", false);
    if (fp8->has("attention")) {
      training.fp8_attention_from =
          yaml::position(fp8->source(), fp8->line("attention"), fp8->path("attention"));
    }
    training.fp8.communication = fp8->optional_bool("communication", true);
    training.fp8.params = fp8->optional_bool("params", false);
  }
  return training;
}

/// `layers: N` (every N-th layer, Megatron --moe-layer-freq) or `layers: [i, j, ...]`.
void read_moe_layers(const MapReader& e, MoeSpec& moe) {
  if (!e.has("layers")) return;
  const YAML::Node node = e.node("layers");
  const std::string where = yaml::position(e.source(), e.line("layers"), e.path("layers"));
  if (node.IsSequence()) {
    for (const auto& item : node) {
      moe.layer_list.push_back(static_cast<int>(yaml::to_int(item, Range::non_negative, where)));
    }
    if (moe.layer_list.empty()) e.fail("layers", "expected a frequency N or a list of layers");
    std::sort(moe.layer_list.begin(), moe.layer_list.end());  // Model::layer_list is ascending
    // A list names every MoE layer: first_dense would contradict it, not refine it.
    if (e.has("first_dense")) {
      e.fail("first_dense", "only with layers: N (a list names the MoE layers itself)");
    }
    return;
  }
  moe.layer_freq = to_int32(e, "layers", e.required_int("layers", Range::positive));
}

MoeSpec read_moe(const std::optional<MapReader>& e) {
  MoeSpec moe;
  if (!e) return moe;
  e->reject_unknown(kMoeKeys);
  moe.experts = required_count(*e, "experts");
  moe.top_k = required_count(*e, "top_k");
  moe.expert_ffn_hidden = required_count(*e, "expert_ffn_hidden");
  moe.shared_experts =
      to_int32(*e, "shared_experts", e->optional_int("shared_experts", 0, Range::non_negative));
  // A token's experts run as one FFN of (shared + top_k) x expert_ffn_hidden (moe_active_view):
  // that width has the dense ffn_hidden's bound.
  const double active_width = (static_cast<double>(moe.shared_experts) + moe.top_k) *
                              static_cast<double>(moe.expert_ffn_hidden);
  if (active_width > INT_MAX) {
    e->fail(
        e->has("shared_experts") ? "shared_experts" : "top_k",
        "(shared_experts + top_k) x expert_ffn_hidden must be at most " + std::to_string(INT_MAX));
  }
  moe.first_dense =
      to_int32(*e, "first_dense", e->optional_int("first_dense", 0, Range::non_negative));
  read_moe_layers(*e, moe);
  const bool dropless = e->optional_bool("dropless", !e->has("capacity_factor"));
  if (dropless && e->has("capacity_factor")) {
    e->fail("capacity_factor", "set either capacity_factor or dropless: true, not both");
  }
  if (!dropless) moe.capacity_factor = e->required_double("capacity_factor", Range::positive);
  moe.imbalance = e->optional_double("imbalance", 1.0, Range::positive);
  moe.router = static_cast<MoeRouter>(e->optional_choice("router", kRouterNames, 0));
  return moe;
}

MlaSpec read_mla(const MapReader& m) {
  const MapReader a = m.required_map("mla");
  a.reject_unknown(kMlaKeys);
  MlaSpec mla;
  mla.q_lora_rank =
      to_int32(a, "q_lora_rank", a.optional_int("q_lora_rank", 0, Range::non_negative));
  mla.kv_lora_rank = required_count(a, "kv_lora_rank");
  mla.qk_nope_head_dim = required_count(a, "qk_nope_head_dim");
  mla.qk_rope_head_dim = required_count(a, "qk_rope_head_dim");
  mla.v_head_dim = required_count(a, "v_head_dim");
  return mla;
}

Model read_model(const MapReader& m) {
  m.reject_unknown(kModelKeys);
  Model model;
  model.name = m.required_string("name");
  model.layers = required_count(m, "layers");
  model.hidden = required_count(m, "hidden");
  model.heads = required_count(m, "heads");
  model.kv_heads = optional_count(m, "kv_heads", model.heads);
  if (m.has("head_dim")) model.explicit_head_dim = required_count(m, "head_dim");
  if (!m.has("ffn_hidden") && 4LL * model.hidden > INT_MAX) {
    m.fail("hidden", "with no ffn_hidden the FFN is 4 x hidden, beyond " + std::to_string(INT_MAX) +
                         "; set ffn_hidden or a smaller hidden");
  }
  model.ffn_hidden =
      to_int32(m, "ffn_hidden", m.optional_int("ffn_hidden", 4LL * model.hidden, Range::positive));
  constexpr FfnKind ffns[] = {FfnKind::gelu, FfnKind::relu, FfnKind::relu2, FfnKind::swiglu,
                              FfnKind::geglu};
  model.ffn = ffns[m.optional_choice("ffn", kFfnNames, 0)];
  model.vocab = required_count(m, "vocab");
  model.seq_len = required_count(m, "seq_len");
  model.tied_embeddings = m.optional_bool("tied_embeddings", false);
  model.norm =
      m.optional_choice("norm", kNormNames, 0) == 0 ? NormKind::layernorm : NormKind::rmsnorm;
  model.bias = m.optional_bool("bias", true);
  model.learned_positions = m.optional_choice("position_embedding", kPositionNames, 0) == 0;
  if (m.has("rope_base") && model.learned_positions) {
    m.fail("rope_base",
           "the model has learned positions (position_embedding: learned): set "
           "position_embedding: rope or leave rope_base out");
  }
  model.rope_base = m.optional_int("rope_base", model.rope_base, Range::positive);
  model.qk_layernorm = m.optional_bool("qk_layernorm", false);
  model.dropout =
      m.optional_double("dropout", model.learned_positions ? 0.1 : 0.0, Range::non_negative);
  if (model.dropout >= 1.0) {
    m.fail("dropout", fmt::format("expected a probability below 1, got {:g}", model.dropout));
  }
  model.mtp_layers =
      to_int32(m, "mtp_layers", m.optional_int("mtp_layers", 0, Range::non_negative));
  if (model.mtp_layers > kMaxMtpLayers) {
    m.fail("mtp_layers", "expected at most " + std::to_string(kMaxMtpLayers));
  }
  // The stages count layers and MTP modules together in an int.
  if (model.mtp_layers > std::numeric_limits<int>::max() - model.layers) {
    m.fail("mtp_layers", "expected at most " +
                             std::to_string(std::numeric_limits<int>::max() - model.layers) +
                             " beside " + std::to_string(model.layers) + " layers");
  }
  model.training = read_training(m.optional_map("training"));
  model.attention = m.optional_choice("attention", kAttentionKinds, 0) == 0 ? AttentionKind::mha
                                                                            : AttentionKind::mla;
  if (model.attention == AttentionKind::mla) {
    // MLA's K and V come per query head from the latent (heads x (nope + v)): no GQA groups.
    if (m.has("kv_heads") && model.kv_heads != model.heads) {
      m.fail("kv_heads", "with attention: mla, K and V have one head per query head: leave " +
                             std::string("kv_heads out or set it to heads (") +
                             std::to_string(model.heads) + ")");
    }
    model.mla = read_mla(m);
  } else if (m.has("mla")) {
    m.fail("mla", "only with attention: mla");
  }
  model.moe = read_moe(m.optional_map("moe"));
  return model;
}

}  // namespace

Model load_model(const std::string& text, const std::string& source) {
  const YAML::Node root = yaml::parse(text, source);
  Model model = read_model(MapReader(root, source, "", yaml::line_of(root, 1)));
  if (const auto problem = find_model_problem(model)) {
    yaml::throw_problem(source, yaml::key_lines(root), problem->key, problem->message);
  }
  return model;
}

Model model_preset(const std::string& name) {
  const auto text = preset_text(PresetKind::model, name);
  if (!text) unknown_preset(PresetKind::model, name);
  Model model = load_model(std::string(*text), preset_source(PresetKind::model, name));
  // Built in: the user has no file to look at; the preset's name says where.
  if (!model.training.dtype_from.empty()) {
    model.training.dtype_from = "model " + name + ": training.dtype";
  }
  if (!model.training.fp8_recipe_from.empty()) {
    model.training.fp8_recipe_from = "model " + name + ": training.fp8.recipe";
  }
  return model;
}

}  // namespace trident
