// Parameter counts: exact on hand-derived tiny models, within 0.5% of the published counts
// for the presets.
#include <catch2/catch.hpp>

#include "costmodel/model.h"
#include "costmodel/model_loader.h"
#include "topology/errors.h"

using namespace trident;

namespace {

Model tiny_llama() {
  Model m;
  m.name = "tiny-llama";
  m.layers = 2;
  m.hidden = 4;
  m.heads = 2;
  m.kv_heads = 1;
  m.ffn_hidden = 8;
  m.ffn = FfnKind::swiglu;
  m.vocab = 10;
  m.seq_len = 16;
  m.tied_embeddings = false;
  m.norm = NormKind::rmsnorm;
  m.bias = false;
  m.learned_positions = false;
  return m;
}

Model tiny_gpt() {
  Model m = tiny_llama();
  m.name = "tiny-gpt";
  m.layers = 1;
  m.kv_heads = 2;
  m.ffn_hidden = 16;
  m.ffn = FfnKind::gelu;
  m.seq_len = 3;
  m.tied_embeddings = true;
  m.norm = NormKind::layernorm;
  m.bias = true;
  m.learned_positions = true;
  return m;
}

}  // namespace

TEST_CASE("tiny gated GQA model is counted exactly", "[model]") {
  // h 4, heads 2 -> head_dim 2, kv_heads 1 -> kv_hidden 2, f 8, V 10, L 2, no bias, rmsnorm.
  // embedding 10*4 = 40 (rope: no position table)
  // attention: Q 4*4 + K,V 2*4*2 + O 4*4 = 16 + 16 + 16 = 48
  // FFN swiglu: 3*4*8 = 96; norms: 2 rmsnorms * 4 = 8 -> per layer 152
  // total = 40 + 2*152 + final norm 4 + output 10*4 = 40 + 304 + 4 + 40 = 388
  const ParameterCount c = count_parameters(tiny_llama());
  CHECK(c.embedding == 40.0);
  CHECK(c.attention_per_layer == 48.0);
  CHECK(c.ffn_per_layer == 96.0);
  CHECK(c.norms_per_layer == 8.0);
  CHECK(c.per_layer == 152.0);
  CHECK(c.final_norm == 4.0);
  CHECK(c.output_layer == 40.0);
  CHECK(c.total == 388.0);
}

TEST_CASE("tiny GPT layer matches 12h^2 + 13h", "[model]") {
  // h 4, f 16 = 4h, MHA, biases, layernorm: per layer 12*16 + 13*4 = 192 + 52 = 244
  // (attention 64 + 16 biases, FFN 128 + 20 biases, norms 2*(2*4) = 16).
  // embedding 10*4 + positions 3*4 = 52; final layernorm 8; tied output 0 -> 304
  const ParameterCount c = count_parameters(tiny_gpt());
  CHECK(c.attention_per_layer == 80.0);
  CHECK(c.ffn_per_layer == 148.0);
  CHECK(c.per_layer == 244.0);
  CHECK(c.embedding == 52.0);
  CHECK(c.output_layer == 0.0);
  CHECK(c.total == 304.0);
}

TEST_CASE("gated FFNs have three matrices", "[model]") {
  CHECK(is_gated(FfnKind::swiglu));
  CHECK(is_gated(FfnKind::geglu));
  CHECK_FALSE(is_gated(FfnKind::gelu));
  CHECK_FALSE(is_gated(FfnKind::relu));
  CHECK_FALSE(is_gated(FfnKind::relu2));
  CHECK(std::string(to_string(FfnKind::relu2)) == "relu2");
}

TEST_CASE("preset parameter counts are within 0.5% of the published ones", "[model]") {
  // Published: GPT-3 175B 174.6B (Brown et al. 2020), Llama 3 8B 8.03B, 70B 70.6B,
  // 405B 405.9B (Llama 3 paper / model cards), Megatron 1T 1008B (Narayanan et al. 2021
  // Table 1), Llama 2 7B 6.74B, 70B 68.98B (released checkpoints).
  const std::pair<const char*, double> published[] = {
      {"gpt3-175b", 174.6e9},   {"llama3-8b", 8.03e9},   {"llama3-70b", 70.6e9},
      {"llama3-405b", 405.9e9}, {"megatron-1t", 1008e9}, {"llama2-7b", 6.74e9},
      {"llama2-70b", 68.98e9},  {"mt-nlg-530b", 530e9}};
  for (const auto& [name, count] : published) {
    INFO(name);
    CHECK(count_parameters(model_preset(name)).total == Approx(count).epsilon(0.005));
  }
}

TEST_CASE("Llama 3 8B is counted to the parameter", "[model]") {
  // per layer: attention 2*4096^2 + 2*4096*1024 = 41,943,040; FFN 3*4096*14336 = 176,160,768;
  // norms 2*4096 = 8,192 -> 218,112,000; x32 = 6,979,584,000
  // embedding + output 2*128256*4096 = 1,050,673,152; final norm 4,096 -> 8,030,261,248
  CHECK(count_parameters(model_preset("llama3-8b")).total == 8030261248.0);
}

TEST_CASE("check_model rejects impossible shapes", "[model]") {
  Model m = tiny_llama();
  m.kv_heads = 3;
  m.heads = 4;
  m.hidden = 8;
  CHECK_THROWS_WITH(check_model(m, "m.yaml"), "m.yaml: kv_heads: 3 does not divide heads 4");
  m = tiny_llama();
  m.heads = 3;
  CHECK_THROWS_WITH(check_model(m, "m.yaml"), "m.yaml: heads: 3 heads do not divide hidden 4");
  m = tiny_llama();
  m.layers = 0;
  CHECK_THROWS_WITH(check_model(m, "m.yaml"), "m.yaml: layers: expected a positive integer, got 0");
  CHECK_NOTHROW(check_model(tiny_llama(), "m.yaml"));
}
