// The NeMo v2.4.0 recipes --emit nemo writes for, from their config dataclasses in
// nemo/collections/llm/gpt/model: llama.py (Llama3Config8B, Llama3Config70B, Llama31Config405B),
// gpt.py (GPTConfig175B), mixtral.py (MixtralConfig8x7B, MixtralConfig8x22B: moe_ffn_hidden_size
// unset, so the dense width), qwen3.py (Qwen3Config30B_A3B, Qwen3Config235B_A22B: kv_channels
// 128), deepseek.py (DeepSeekV3Config: moe_layer_freq [0]*3 + [1]*58, sigmoid router, MLA);
// the recipe lines of tests/data/emit/nemo-v2.4.0.txt restate them.
#include "planner/export_nemo_recipes.h"

namespace trident::emit {

namespace {

constexpr NemoRecipe kRecipes[] = {
    {"llama3_8b", 32, 4096, 32, 8, 14336, true},
    {"llama3_70b", 80, 8192, 64, 8, 28672, true},
    {"llama31_405b", 126, 16384, 128, 8, 53248, true},
    {"gpt3_175b", 96, 12288, 96, 96, 49152, false},
    {"mixtral_8x7b", 32, 4096, 32, 8, 14336, true, 0, 8, 2, 14336},
    {"mixtral_8x22b", 56, 6144, 48, 8, 16384, true, 0, 8, 2, 16384},
    {"qwen3_30b_a3b", 48, 2048, 32, 4, 6144, true, 128, 128, 8, 768},
    {"qwen3_235b_a22b", 94, 4096, 64, 4, 12288, true, 128, 128, 8, 1536},
    {"deepseek_v3", 61, 7168, 128, 128, 18432, true, 0, 256, 8, 2048, 2048, 3, MoeRouter::sigmoid,
     MlaSpec{1536, 512, 128, 64, 128}, true},
};

bool same_mla(const MlaSpec& a, const MlaSpec& b) {
  return a.q_lora_rank == b.q_lora_rank && a.kv_lora_rank == b.kv_lora_rank &&
         a.qk_nope_head_dim == b.qk_nope_head_dim && a.qk_rope_head_dim == b.qk_rope_head_dim &&
         a.v_head_dim == b.v_head_dim;
}

/// Attention and experts as the recipe's config builds them.
bool same_layers(const NemoRecipe& r, const Model& m) {
  const bool mla = m.attention == AttentionKind::mla;
  if (mla != (r.mla.kv_lora_rank > 0) || (mla && !same_mla(m.mla, r.mla))) return false;
  // Head width: the config's kv_channels, else hidden / heads (MLA's are its own dims).
  const int head_dim = r.head_dim > 0 ? r.head_dim : r.hidden / r.heads;
  if (!mla && m.head_dim() != head_dim) return false;
  if (m.is_moe() != (r.experts > 0)) return false;
  if (!m.is_moe()) return true;
  const MoeSpec& e = m.moe;
  return e.experts == r.experts && e.top_k == r.top_k && e.expert_ffn_hidden == r.moe_ffn &&
         static_cast<long long>(e.shared_experts) * e.expert_ffn_hidden == r.shared_ffn &&
         e.layer_list.empty() && e.layer_freq == 1 && e.first_dense == r.dense_first &&
         e.router == r.router && e.capacity_factor == 0.0;
}

}  // namespace

const NemoRecipe* nemo_recipe_of(const Model& m) {
  const bool llama = m.ffn == FfnKind::swiglu && m.norm == NormKind::rmsnorm &&
                     !m.learned_positions && !m.tied_embeddings && !m.bias;
  const bool gpt = m.ffn == FfnKind::gelu && m.norm == NormKind::layernorm && m.learned_positions &&
                   m.tied_embeddings;
  for (const NemoRecipe& r : kRecipes) {
    if ((r.llama ? llama : gpt) && r.layers == m.layers && r.hidden == m.hidden &&
        r.heads == m.heads && r.kv_heads == m.kv_heads && r.ffn_hidden == m.ffn_hidden &&
        same_layers(r, m)) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace trident::emit
