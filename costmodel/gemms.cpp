#include "costmodel/gemms.h"

namespace trident {

std::array<NamedGemm, 4> layer_linear_gemms(const Model& model, double sequences, int tp) {
  const double tokens = sequences * model.seq_len;
  const double t = tp;
  const double h = model.hidden;
  const double f = model.ffn_hidden;
  const double in_matrices = is_gated(model.ffn) ? 2.0 : 1.0;
  return {{
      {"qkv", {tokens, (h + 2.0 * model.kv_hidden()) / t, h}},
      {"attention_out", {tokens, h, h / t}},
      {"ffn_up", {tokens, in_matrices * f / t, h}},
      {"ffn_down", {tokens, h, f / t}},
  }};
}

AttentionGemms attention_gemms(const Model& model, double sequences, int tp) {
  const double s = model.seq_len;
  const double d = model.head_dim();
  const double heads = sequences * model.heads / tp;
  return {{s, s, d, heads}, {s, d, s, heads}};
}

NamedGemm logits_gemm(const Model& model, double sequences, int tp) {
  return {"logits",
          {sequences * model.seq_len, static_cast<double>(model.vocab) / tp,
           static_cast<double>(model.hidden)}};
}

}  // namespace trident
