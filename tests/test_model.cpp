// Parameter counts: exact on hand-derived tiny models, within 0.5% of the published counts
// for the presets.
#include <catch2/catch.hpp>

#include "costmodel/gemms.h"
#include "costmodel/memory.h"
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
  CHECK_THROWS_WITH(check_model(m, "m.yaml"),
                    "m.yaml: heads: 3 heads do not divide hidden 4 (set head_dim if the heads are "
                    "not hidden / heads wide)");
  m.explicit_head_dim = 2;  // 3 heads of 2: Q is 6 wide in a hidden of 4
  CHECK_NOTHROW(check_model(m, "m.yaml"));
  m = tiny_llama();
  m.layers = 0;
  CHECK_THROWS_WITH(check_model(m, "m.yaml"), "m.yaml: layers: expected a positive integer, got 0");
  CHECK_NOTHROW(check_model(tiny_llama(), "m.yaml"));
}

TEST_CASE("a model's own head_dim sets the width of Q, K, V and the output projection", "[model]") {
  // tiny-llama with heads of 4 (its hidden / heads is 2): Q is 2 x 4 = 8 wide, K and V 1 x 4.
  Model m = tiny_llama();
  m.explicit_head_dim = 4;
  REQUIRE(m.head_dim() == 4);
  REQUIRE(m.q_hidden() == 8);
  REQUIRE(m.kv_hidden() == 4);
  // attention: Q 4x8 = 32, K and V 2 x 4x4 = 32, O 8x4 = 32 -> 96 (48 at hidden / heads);
  // per layer 96 + FFN 96 + norms 8 = 200; total 40 + 2 x 200 + 4 + 40 = 484.
  const ParameterCount c = count_parameters(m);
  CHECK(c.attention_per_layer == 96.0);
  CHECK(c.per_layer == 200.0);
  CHECK(c.total == 484.0);
  // GEMMs of one sequence (16 tokens), TP 1: QKV 16 x (8 + 2 x 4) x 4, output 16 x 4 x 8.
  const auto gemms = layer_linear_gemms(m, 1.0, 1);
  CHECK(gemms[0].shape.n == 16.0);
  CHECK(gemms[0].shape.k == 4.0);
  CHECK(gemms[1].shape.n == 4.0);
  CHECK(gemms[1].shape.k == 8.0);
  // Activations kept (16-bit, fused attention, no recompute): Q and K 2(h_q + h_kv), V 2 h_kv
  // and the output projection's input 2 h_q per token. Q and the projection input are 8 wide
  // instead of 4, K and V 4 instead of 2: 2 x (4 + 2 + 2 + 4) = 24 bytes more per token, 16
  // tokens -> 384 bytes.
  ParallelConfig config;
  config.micro_batch = 1;
  CHECK(layer_activation_bytes(m, config, true) -
            layer_activation_bytes(tiny_llama(), config, true) ==
        384.0);
  // MLA gives its own head widths; Q x heads must stay an int.
  Model mla = m;
  mla.attention = AttentionKind::mla;
  mla.mla = {0, 4, 2, 2, 2};
  CHECK_THROWS_WITH(check_model(mla, "m.yaml"),
                    "m.yaml: head_dim: not with attention: mla (its mla: dims give the heads' "
                    "widths)");
  Model wide = m;
  wide.heads = 1 << 20;
  wide.kv_heads = 1 << 20;
  wide.explicit_head_dim = 1 << 11;
  CHECK_THROWS_WITH(check_model(wide, "m.yaml"),
                    "m.yaml: head_dim: heads x head_dim = 2147483648; expected at most 1073741824");
}

TEST_CASE("Qwen3-235B-A22B is counted to the parameter", "[model]") {
  // per layer: attention 2 x 4096 x (64 x 128) + 2 x 4096 x (4 x 128) = 71,303,168; 128
  // experts x 3 x 4096 x 1536 = 2,415,919,104; router 4096 x 128 = 524,288; norms 2 x 4096 =
  // 8,192 -> 2,487,754,752, x 94 = 233,848,946,688; embedding and output 2 x 151936 x 4096 =
  // 1,244,659,712; final norm 4,096 -> 235,093,610,496 (the report's 235B). Active: 8 experts
  // 150,994,944 instead of 128 -> 222,830,592 a layer, x 94 + 1,244,663,808 = 22,190,739,456
  // (the report's 22B).
  const ParameterCount c = count_parameters(model_preset("qwen3-235b-a22b"));
  CHECK(c.total == 235093610496.0);
  CHECK(c.active == 22190739456.0);
}
