#pragma once
/// Internal to planner/export_nemo.cpp: the NeMo v2.4.0 pretraining recipes (nemo/collections/
/// llm/recipes/NAME.py) whose model a plan can be, with their config dataclass's shape
/// (tests/data/emit/nemo-v2.4.0.txt's `recipe` lines, generated from the checkout).
#include "costmodel/model.h"

namespace trident::emit {

struct NemoRecipe {
  const char* name;
  int layers, hidden, heads, kv_heads, ffn_hidden;
  bool llama;  ///< SwiGLU, RMSNorm, RoPE, untied, no biases; else GeLU, LayerNorm, learned, tied
  int head_dim = 0;  ///< the config's kv_channels; 0: hidden / heads
  /// Routed experts (0: dense), per token, their width; the shared experts' total width; the
  /// leading dense layers (the rest MoE); the router's score function. Every MoE config is
  /// dropless (no capacity factor).
  int experts = 0, top_k = 0, moe_ffn = 0, shared_ffn = 0, dense_first = 0;
  MoeRouter router = MoeRouter::softmax;
  MlaSpec mla{};     ///< kv_lora_rank 0: multi-head attention
  bool mtp = false;  ///< pretrain_recipe takes use_mtp (one MTP layer)
};

/// The recipe whose model is `model`'s shape; nullptr when none is.
[[nodiscard]] const NemoRecipe* nemo_recipe_of(const Model& model);

}  // namespace trident::emit
