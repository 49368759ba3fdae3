#pragma once
/// Loader for model descriptions (configs/models/*.yaml, docs/cli.md "Input files"; YAML or
/// JSON) and the built-in model presets. Errors: InputError "SOURCE:LINE: KEY: expected ...".
#include <string>

#include "costmodel/model.h"

namespace trident {

/// Required: name, layers, hidden, heads, vocab, seq_len. Optional with defaults: kv_heads
/// (= heads), ffn_hidden (= 4 x hidden), ffn (gelu), tied_embeddings (false), norm
/// (layernorm | rmsnorm), bias (true), position_embedding (learned | rope: learned),
/// training {global_batch (0 = give --global-batch), dtype (bf16 | fp16 | fp8 | tf32 | fp32:
/// bf16), optimizer (adam | sgd: adam)}.
[[nodiscard]] Model load_model(const std::string& text, const std::string& source);

/// A built-in model by name; unknown -> InputError "unknown model preset 'X' (did you mean
/// 'Y'?); known: ...".
[[nodiscard]] Model model_preset(const std::string& name);

}  // namespace trident
