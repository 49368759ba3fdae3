#include "costmodel/model.h"

#include <string>

namespace trident {

bool is_gated(FfnKind kind) { return kind == FfnKind::swiglu || kind == FfnKind::geglu; }

const char* to_string(FfnKind kind) {
  switch (kind) {
    case FfnKind::gelu:
      return "gelu";
    case FfnKind::relu:
      return "relu";
    case FfnKind::relu2:
      return "relu2";
    case FfnKind::swiglu:
      return "swiglu";
    case FfnKind::geglu:
      return "geglu";
  }
  return "?";
}

const char* to_string(NormKind kind) {
  return kind == NormKind::layernorm ? "layernorm" : "rmsnorm";
}

const char* to_string(Optimizer optimizer) { return optimizer == Optimizer::adam ? "adam" : "sgd"; }

const char* to_string(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::delayed:
      return "delayed";
    case Fp8Recipe::current:
      return "current";
    case Fp8Recipe::blockwise:
      return "blockwise";
  }
  return "delayed";
}

namespace {

/// LayerNorm carries a scale and a shift per channel, RMSNorm only the scale.
double norm_parameters(const Model& m) {
  const double h = m.hidden;
  return m.norm == NormKind::layernorm ? 2.0 * h : h;
}

/// Q and O are h x h; K and V are h x (kv_heads * head_dim) each (grouped-query attention).
double attention_parameters(const Model& m) {
  const double h = m.hidden;
  const double kv = m.kv_hidden();
  const double weights = h * h + 2.0 * h * kv + h * h;
  const double biases = m.bias ? (h + 2.0 * kv) + h : 0.0;
  return weights + biases;
}

/// Two matrices h x f and f x h; gated FFNs add a second input matrix (gate and up).
double ffn_parameters(const Model& m) {
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double inputs = is_gated(m.ffn) ? 2.0 : 1.0;
  const double weights = (inputs + 1.0) * h * f;
  const double biases = m.bias ? inputs * f + h : 0.0;
  return weights + biases;
}

}  // namespace

ParameterCount count_parameters(const Model& m) {
  const double h = m.hidden;
  ParameterCount count;
  count.embedding = static_cast<double>(m.vocab) * h + (m.learned_positions ? m.seq_len * h : 0.0);
  count.attention_per_layer = attention_parameters(m);
  count.ffn_per_layer = ffn_parameters(m);
  count.norms_per_layer = 2.0 * norm_parameters(m);
  count.per_layer = count.attention_per_layer + count.ffn_per_layer + count.norms_per_layer;
  count.final_norm = norm_parameters(m);
  count.output_layer = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  count.total =
      count.embedding + m.layers * count.per_layer + count.final_norm + count.output_layer;
  return count;
}

namespace {

std::optional<Problem> not_positive(const char* key, long long value) {
  if (value > 0) return std::nullopt;
  return Problem{key, "expected a positive integer, got " + std::to_string(value)};
}

}  // namespace

std::optional<Problem> find_model_problem(const Model& m) {
  if (m.name.empty()) return Problem{"name", "expected a non-empty name"};
  const std::pair<const char*, long long> positive[] = {
      {"layers", m.layers},     {"hidden", m.hidden},         {"heads", m.heads},
      {"kv_heads", m.kv_heads}, {"ffn_hidden", m.ffn_hidden}, {"vocab", m.vocab},
      {"seq_len", m.seq_len}};
  for (const auto& [key, value] : positive) {
    if (auto problem = not_positive(key, value)) return problem;
  }
  if (m.hidden % m.heads != 0) {
    return Problem{"heads", std::to_string(m.heads) + " heads do not divide hidden " +
                                std::to_string(m.hidden)};
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    return Problem{"kv_heads", std::to_string(m.kv_heads) + " does not divide heads " +
                                   std::to_string(m.heads)};
  }
  if (m.training.global_batch < 0 || m.training.global_batch > kMaxGlobalBatch) {
    return Problem{"training.global_batch", "expected a positive integer at most " +
                                                std::to_string(kMaxGlobalBatch) + ", got " +
                                                std::to_string(m.training.global_batch)};
  }
  return std::nullopt;
}

void check_model(const Model& model, const std::string& source) {
  if (const auto problem = find_model_problem(model)) {
    throw InputError(source + ": " + problem->key + ": " + problem->message);
  }
}

}  // namespace trident
