#include "costmodel/gemms.h"

namespace trident {

namespace {

/// Output width of the QKV GEMM. Multi-head latent attention runs four projections (Q down
/// and up, KV down and up); they are priced as one GEMM of the same FLOPs per token: its
/// weights' elements over h (docs/cost_model.md#mla, an approximation of the shapes).
double qkv_width(const Model& model) {
  const double h = model.hidden;
  if (model.attention != AttentionKind::mla) {
    return static_cast<double>(model.q_hidden()) + 2.0 * model.kv_hidden();
  }
  const MlaSpec& a = model.mla;
  const double heads = model.heads;
  const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + static_cast<double>(a.q_lora_rank) *
                                                               heads * model.qk_head_dim()
                                     : h * heads * model.qk_head_dim();
  const double kv =
      h * (a.kv_lora_rank + a.qk_rope_head_dim) +
      static_cast<double>(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
  return (q + kv) / h;
}

}  // namespace

std::array<NamedGemm, 2> mla_up_gemms(const Model& model, double sequences, int tp) {
  if (model.attention != AttentionKind::mla) return {{{"q_up", {}}, {"kv_up", {}}}};
  const MlaSpec& a = model.mla;
  const double tokens = sequences * model.seq_len;
  const double heads = static_cast<double>(model.heads) / tp;
  const double q_in = a.q_lora_rank > 0 ? a.q_lora_rank : model.hidden;
  return {{{"q_up", {tokens, heads * model.qk_head_dim(), q_in}},
           {"kv_up",
            {tokens, heads * (a.qk_nope_head_dim + a.v_head_dim),
             static_cast<double>(a.kv_lora_rank)}}}};
}

std::array<NamedGemm, 4> layer_linear_gemms(const Model& model, double sequences, int tp) {
  const double tokens = sequences * model.seq_len;
  const double t = tp;
  const double h = model.hidden;
  const double f = model.ffn_hidden;
  const double in_matrices = is_gated(model.ffn) ? 2.0 : 1.0;
  const double heads_out = static_cast<double>(model.heads) * model.v_head_dim();
  return {{
      {"qkv", {tokens, qkv_width(model) / t, h}},
      {"attention_out", {tokens, h, heads_out / t}},
      {"ffn_up", {tokens, in_matrices * f / t, h}},
      {"ffn_down", {tokens, h, f / t}},
  }};
}

AttentionGemms attention_gemms(const Model& model, double sequences, int tp) {
  const double s = model.seq_len;
  const double qk = model.qk_head_dim();
  const double v = model.v_head_dim();
  const double heads = sequences * model.heads / tp;
  return {{s, s, qk, heads}, {s, v, s, heads}};
}

NamedGemm logits_gemm(const Model& model, double sequences, int tp) {
  return {"logits",
          {sequences * model.seq_len, static_cast<double>(model.vocab) / tp,
           static_cast<double>(model.hidden)}};
}

NamedGemm mtp_projection_gemm(const Model& model, double sequences, int tp) {
  const double h = model.hidden;
  return {"mtp_projection", {sequences * model.seq_len, h / tp, 2.0 * h}};
}

}  // namespace trident
