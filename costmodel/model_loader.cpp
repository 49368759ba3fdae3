#include "costmodel/model_loader.h"

#include <climits>
#include <vector>

#include "configs/presets.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"
#include "topology/yaml_util.h"

namespace trident {

namespace {

using yaml::MapReader;
using yaml::Range;

const std::vector<std::string> kModelKeys = {
    "name",    "layers",  "hidden",          "heads", "kv_heads", "ffn_hidden",         "ffn",
    "vocab",   "seq_len", "tied_embeddings", "norm",  "bias",     "position_embedding", "dropout",
    "training"};
const std::vector<std::string> kTrainingKeys = {"global_batch", "dtype", "optimizer", "fp8"};
const std::vector<std::string> kFp8Keys = {"recipe", "attention", "communication", "params"};
const std::vector<std::string> kFp8RecipeNames = {"delayed", "current", "blockwise"};
const std::vector<std::string> kFfnNames = {"gelu", "relu", "relu2", "swiglu", "geglu"};
const std::vector<std::string> kNormNames = {"layernorm", "rmsnorm"};
const std::vector<std::string> kPositionNames = {"learned", "rope"};
const std::vector<std::string> kDtypeNames = {"bf16", "fp16", "fp8", "tf32", "fp32"};
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
  constexpr Dtype dtypes[] = {Dtype::bf16, Dtype::fp16, Dtype::fp8, Dtype::tf32, Dtype::fp32};
  training.dtype = dtypes[t->optional_choice("dtype", kDtypeNames, 0)];
  training.optimizer =
      t->optional_choice("optimizer", kOptimizerNames, 0) == 0 ? Optimizer::adam : Optimizer::sgd;
  if (const auto fp8 = t->optional_map("fp8")) {
    if (training.dtype != Dtype::fp8) t->fail("fp8", "expected only with dtype: fp8");
    fp8->reject_unknown(kFp8Keys);
    constexpr Fp8Recipe recipes[] = {Fp8Recipe::delayed, Fp8Recipe::current, Fp8Recipe::blockwise};
    training.fp8.recipe = recipes[fp8->optional_choice("recipe", kFp8RecipeNames, 0)];
    training.fp8.attention = fp8->optional_bool("attention", false);
    training.fp8.communication = fp8->optional_bool("communication", false);
    training.fp8.params = fp8->optional_bool("params", false);
  }
  return training;
}

Model read_model(const MapReader& m) {
  m.reject_unknown(kModelKeys);
  Model model;
  model.name = m.required_string("name");
  model.layers = required_count(m, "layers");
  model.hidden = required_count(m, "hidden");
  model.heads = required_count(m, "heads");
  model.kv_heads = optional_count(m, "kv_heads", model.heads);
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
  model.dropout =
      m.optional_double("dropout", model.learned_positions ? 0.1 : 0.0, Range::non_negative);
  if (model.dropout >= 1.0) m.fail("dropout", "expected a probability below 1");
  model.training = read_training(m.optional_map("training"));
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
  return load_model(std::string(*text), preset_source(PresetKind::model, name));
}

}  // namespace trident
