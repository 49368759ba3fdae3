#include "costmodel/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

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

const char* to_string(AttentionKind kind) { return kind == AttentionKind::mla ? "mla" : "mha"; }

bool Model::is_moe_layer(int index) const {
  if (!is_moe()) return false;
  if (!moe.layer_list.empty()) {
    return std::binary_search(moe.layer_list.begin(), moe.layer_list.end(), index);
  }
  return index >= moe.first_dense && index % moe.layer_freq == 0;
}

int Model::moe_layers() const { return moe_layers_in(0, layers); }

int Model::moe_layers_in(int begin, int end) const {
  if (!is_moe()) return 0;
  begin = std::max(begin, 0);
  end = std::min(end, layers);
  if (begin >= end) return 0;
  if (!moe.layer_list.empty()) {
    // The list's layers are distinct (find_model_problem) and ascending (the loader sorts
    // them): those in [begin, end) lie between two bisections.
    const auto first = std::lower_bound(moe.layer_list.begin(), moe.layer_list.end(), begin);
    return static_cast<int>(std::lower_bound(first, moe.layer_list.end(), end) - first);
  }
  // Multiples of layer_freq in [max(begin, first_dense), end).
  const int freq = std::max(1, moe.layer_freq);
  const int low = std::max(begin, std::max(0, moe.first_dense));
  const int first = (low + freq - 1) / freq * freq;
  return first >= end ? 0 : (end - 1 - first) / freq + 1;
}

const char* to_string(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::delayed:
      return "delayed";
    case Fp8Recipe::current:
      return "current";
    case Fp8Recipe::blockwise:
      return "blockwise";
    case Fp8Recipe::mxfp8:
      return "mxfp8";
  }
  return "delayed";
}

const std::vector<std::string>& fp8_recipe_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Fp8Recipe recipe : kFp8Recipes) out.emplace_back(to_string(recipe));
    return out;
  }();
  return names;
}

bool is_block_scaled(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::blockwise || recipe == Fp8Recipe::mxfp8;
}

namespace {

/// LayerNorm carries a scale and a shift per channel, RMSNorm only the scale.
double norm_parameters(const Model& m) {
  const double h = m.hidden;
  return m.norm == NormKind::layernorm ? 2.0 * h : h;
}

/// Multi-head latent attention (DeepSeek-V3 modeling: q_a_proj h x q_lora, q_a_layernorm,
/// q_b_proj q_lora x heads*(nope+rope); kv_a_proj_with_mqa h x (kv_lora + rope),
/// kv_a_layernorm, kv_b_proj kv_lora x heads*(nope+v); o_proj heads*v x h). No biases.
double mla_parameters(const Model& m) {
  const double h = m.hidden;
  const double heads = m.heads;
  const MlaSpec& a = m.mla;
  const double q = a.q_lora_rank > 0
                       ? h * a.q_lora_rank + a.q_lora_rank +
                             static_cast<double>(a.q_lora_rank) * heads * m.qk_head_dim()
                       : h * heads * m.qk_head_dim();
  const double kv =
      h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
      static_cast<double>(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + heads * a.v_head_dim * h;
}

/// Q is h x (heads * head_dim) and O its transpose (h x h unless the model sets head_dim); K
/// and V are h x (kv_heads * head_dim) each (grouped-query attention).
double attention_parameters(const Model& m) {
  if (m.attention == AttentionKind::mla) return mla_parameters(m);
  const double h = m.hidden;
  const double q = m.q_hidden();
  const double kv = m.kv_hidden();
  const double weights = h * q + 2.0 * h * kv + q * h;
  const double biases = m.bias ? (q + 2.0 * kv) + h : 0.0;
  return weights + biases;
}

/// Two matrices h x f and f x h; gated FFNs add a second input matrix (gate and up).
double ffn_parameters(const Model& m, double f) {
  const double h = m.hidden;
  const double inputs = is_gated(m.ffn) ? 2.0 : 1.0;
  const double weights = (inputs + 1.0) * h * f;
  const double biases = m.bias ? inputs * f + h : 0.0;
  return weights + biases;
}

}  // namespace

double routed_expert_parameters(const Model& m) {
  return m.is_moe() ? ffn_parameters(m, m.moe.expert_ffn_hidden) : 0.0;
}

ParameterCount count_parameters(const Model& m) {
  const double h = m.hidden;
  ParameterCount count;
  count.embedding = static_cast<double>(m.vocab) * h + (m.learned_positions ? m.seq_len * h : 0.0);
  count.attention_per_layer = attention_parameters(m);
  count.ffn_per_layer = ffn_parameters(m, m.ffn_hidden);
  if (m.is_moe()) {
    // Dense FFNs, shared experts and routers (h x experts, replicated) averaged per layer;
    // routed experts apart.
    const double moe = m.moe_layers();
    const double dense = m.layers - moe;
    const double f_e = m.moe.expert_ffn_hidden;
    const double shared = m.moe.shared_experts * ffn_parameters(m, f_e);
    const double router = h * m.moe.experts;
    count.ffn_per_layer =
        (dense * ffn_parameters(m, m.ffn_hidden) + moe * (shared + router)) / m.layers;
    count.per_expert = routed_expert_parameters(m);
    count.routed_experts = moe * m.moe.experts * count.per_expert;
  }
  count.norms_per_layer = 2.0 * norm_parameters(m);
  count.per_layer = count.attention_per_layer + count.ffn_per_layer + count.norms_per_layer;
  count.final_norm = norm_parameters(m);
  count.output_layer = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  count.total = count.embedding + m.layers * count.per_layer + count.final_norm +
                count.output_layer + count.routed_experts;
  count.active = count.total - count.routed_experts +
                 static_cast<double>(m.moe_layers()) * m.moe.top_k * count.per_expert;
  return count;
}

namespace {

std::optional<Problem> not_positive(const char* key, long long value) {
  if (value > 0) return std::nullopt;
  return Problem{key, "expected a positive integer, got " + std::to_string(value)};
}

std::optional<Problem> above(const char* key, long long value, long long most) {
  if (value <= most) return std::nullopt;
  return Problem{key,
                 "expected at most " + std::to_string(most) + ", got " + std::to_string(value)};
}

std::optional<Problem> find_moe_problem(const Model& m) {
  if (!m.is_moe()) return std::nullopt;
  const MoeSpec& e = m.moe;
  const std::pair<const char*, long long> positive[] = {
      {"moe.top_k", e.top_k},
      {"moe.expert_ffn_hidden", e.expert_ffn_hidden},
      {"moe.layers", e.layer_freq}};
  for (const auto& [key, value] : positive) {
    if (auto problem = not_positive(key, value)) return problem;
  }
  if (e.top_k > e.experts) {
    return Problem{"moe.top_k", std::to_string(e.top_k) + " is more than the " +
                                    std::to_string(e.experts) + " experts"};
  }
  for (const int layer : e.layer_list) {
    if (layer < 0 || layer >= m.layers) {
      return Problem{"moe.layers", "layer " + std::to_string(layer) + " is not in 0.." +
                                       std::to_string(m.layers - 1)};
    }
  }
  // Ascending, as is_moe_layer and moe_layers_in search it (the loader sorts a file's list).
  if (!std::is_sorted(e.layer_list.begin(), e.layer_list.end())) {
    return Problem{"moe.layers", "expected the layers in ascending order"};
  }
  // Ascending, a repeat sits by its twin.
  const std::vector<int>& sorted = e.layer_list;
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    return Problem{"moe.layers", "layer " + std::to_string(*twice) + " is listed twice"};
  }
  if (m.moe_layers() == 0 && e.layer_list.empty() && e.first_dense > 0) {
    return Problem{"moe.first_dense", std::to_string(e.first_dense) +
                                          " leaves no MoE layer (the model has " +
                                          std::to_string(m.layers) + " layers)"};
  }
  if (m.moe_layers() == 0) return Problem{"moe.layers", "no layer is a MoE layer"};
  if (e.capacity_factor < 0.0 || (e.capacity_factor > 0.0 && e.capacity_factor < 1.0)) {
    return Problem{"moe.capacity_factor", "expected at least 1 (or dropless: true)"};
  }
  if (e.imbalance < 1.0) return Problem{"moe.imbalance", "expected at least 1.0"};
  // The busiest expert takes at most every token once: experts / top_k times the mean load.
  const double most = static_cast<double>(e.experts) / e.top_k;
  // A capacity above that drops nothing (and Megatron pads every expert's input to it).
  if (e.capacity_factor > most) {
    return Problem{"moe.capacity_factor", "expected at most experts / top_k (" +
                                              fmt::format("{:g}", most) +
                                              "): above it no token is dropped (dropless: true)"};
  }
  if (e.imbalance > most) {
    return Problem{"moe.imbalance", "expected at most experts / top_k (" +
                                        fmt::format("{:g}", most) +
                                        "): every token at the busiest expert"};
  }
  return std::nullopt;
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
  if (m.explicit_head_dim > 0 && m.attention == AttentionKind::mla) {
    return Problem{"head_dim", "not with attention: mla (its mla: dims give the heads' widths)"};
  }
  if (static_cast<long long>(m.heads) * m.explicit_head_dim > kMaxQHidden) {
    return Problem{"head_dim",
                   "heads x head_dim = " +
                       std::to_string(static_cast<long long>(m.heads) * m.explicit_head_dim) +
                       "; expected at most " + std::to_string(kMaxQHidden)};
  }
  if (m.explicit_head_dim == 0 && m.hidden % m.heads != 0) {
    return Problem{"heads", std::to_string(m.heads) + " heads do not divide hidden " +
                                std::to_string(m.hidden) +
                                " (set head_dim if the heads are not hidden / heads wide)"};
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    return Problem{"kv_heads", std::to_string(m.kv_heads) + " does not divide heads " +
                                   std::to_string(m.heads)};
  }
  if (auto problem = find_moe_problem(m)) return problem;
  if (m.attention == AttentionKind::mla) {
    const MlaSpec& a = m.mla;
    const std::pair<const char*, long long> dims[] = {{"mla.kv_lora_rank", a.kv_lora_rank},
                                                      {"mla.qk_nope_head_dim", a.qk_nope_head_dim},
                                                      {"mla.qk_rope_head_dim", a.qk_rope_head_dim},
                                                      {"mla.v_head_dim", a.v_head_dim}};
    for (const auto& [key, value] : dims) {
      if (auto problem = not_positive(key, value)) return problem;
      if (auto problem = above(key, value, kMaxMlaDim)) return problem;
    }
    if (auto problem = above("mla.q_lora_rank", a.q_lora_rank, kMaxMlaDim)) return problem;
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
