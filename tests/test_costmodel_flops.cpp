// FLOPs per GEMM of a layer, per step, and the published closed forms they reduce to.
#include <catch2/catch.hpp>

#include "costmodel/flops.h"
#include "costmodel/model_loader.h"
#include "costmodel_fixture.h"

using namespace trident;

TEST_CASE("layer forward FLOPs, GEMM by GEMM", "[flops]") {
  const Model model = test::small_model();  // h 64, s 32, f 256, 4 heads
  const LayerFlops f = layer_forward_flops(model, 1.0);
  // tokens = 32. QKV: 2*32*64*(64 + 2*64) = 786432
  CHECK(f.qkv == Approx(786432.0));
  // scores and context: 2*b*s^2*h = 2*32*32*64 = 131072 each (not halved)
  CHECK(f.scores == Approx(131072.0));
  CHECK(f.context == Approx(131072.0));
  // output projection 2*32*64*64 = 262144; FFN two matrices 2 * (2*32*64*256) = 2097152
  CHECK(f.out_proj == Approx(262144.0));
  CHECK(f.ffn == Approx(2097152.0));
  // total = 24*b*s*h^2 + 4*b*s^2*h = 3145728 + 262144
  CHECK(f.total() == Approx(3407872.0));
  CHECK(logits_forward_flops(model, 1.0) == Approx(2.0 * 32 * 64 * 1000));
}

TEST_CASE("grouped-query attention shrinks K and V; gated FFN has 3 matrices", "[flops]") {
  Model model = test::small_model();
  model.kv_heads = 2;  // kv_hidden = 2 * 16 = 32
  model.ffn = FfnKind::swiglu;
  const LayerFlops f = layer_forward_flops(model, 1.0);
  CHECK(f.qkv == Approx(2.0 * 32 * 64 * (64 + 2 * 32)));  // 524288
  CHECK(f.ffn == Approx(3.0 * 2 * 32 * 64 * 256));        // 3145728
}

TEST_CASE("step FLOPs reduce to Korthikanti 2022 and Narayanan 2021 eq. 3", "[flops]") {
  const Model model = test::small_model();
  const double B = 8, s = 32, L = 2, h = 64, V = 1000;
  // Korthikanti: model FLOPs 72*B*L*s*h^2*(1 + s/(6h) + V/(12hL)) = 150994944 * 1.734375
  const double korthikanti = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  CHECK(korthikanti == Approx(261881856.0));
  const StepFlops none = step_flops(model, B, Recompute::none);
  CHECK(none.model == Approx(korthikanti));
  CHECK(none.hardware == Approx(korthikanti));
  // Narayanan eq. 3 (full recompute): 96*B*s*L*h^2*(1 + s/(6h) + V/(16Lh)) = 316407808
  const double narayanan = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  const StepFlops full = step_flops(model, B, Recompute::full);
  CHECK(full.hardware == Approx(narayanan));
  CHECK(full.model == Approx(korthikanti));
  // Selective adds the attention core forward once per layer: L*B*4*s^2*h = 2*8*4*32^2*64.
  const StepFlops selective = step_flops(model, B, Recompute::selective);
  CHECK(selective.hardware - selective.model == Approx(2.0 * 8 * 4 * 32 * 32 * 64));
  // Causal halving removes half the attention core: 3 * L * B * 0.5 * 4*s^2*h.
  CHECK(none.model - none.model_causal == Approx(3.0 * 2 * 8 * 0.5 * 4 * 32 * 32 * 64));
}

TEST_CASE("executed FLOPs: a fused kernel skips the masked half, unfused computes it", "[flops]") {
  const Model model = test::small_model();  // 2 layers, h 64, s 32, V 1000
  const double B = 8;
  // One layer's attention core forward, B = 8: 8 x 4 x 32^2 x 64 = 2,097,152.
  const double core = 8.0 * 4 * 32 * 32 * 64;
  const StepFlops unfused = step_flops(model, B, Recompute::selective);
  const StepFlops fused =
      step_flops(model, B, Recompute::selective, SelectiveKind::attention, 1.0, true);
  // Model FLOPs keep the Megatron convention either way.
  CHECK(fused.model == Approx(unfused.model));
  CHECK(fused.model_causal == Approx(unfused.model_causal));
  // Executed per layer, in cores: unfused forward 1 + backward 2 + the selective recompute's
  // forward 1 = 4; fused the causal half, forward 1 + backward 2.5 (its scores recomputed),
  // and the recompute's half: 0.5 x 3.5 + 0.5 = 2.25. Two layers: 2 x 1.75 x 2,097,152 =
  // 7,340,032 fewer.
  CHECK(unfused.hardware - unfused.model == Approx(2.0 * core));
  CHECK(unfused.hardware - fused.hardware == Approx(2.0 * 1.75 * core));
  CHECK(unfused.hardware - fused.hardware == Approx(7340032.0));
  // Without recomputation: 1.75 cores a layer where the causal count has 1.5.
  CHECK(step_flops(model, B, Recompute::none, SelectiveKind::attention, 1.0, true).hardware ==
        Approx(fused.model_causal + 2.0 * 0.25 * core));
}

TEST_CASE("multi-token prediction: one more layer, its projection, another output pass",
          "[flops]") {
  Model model = test::small_model();  // 2 layers, h 64, s 32, V 1000
  const StepFlops plain = step_flops(model, 1.0, Recompute::none);
  model.mtp_layers = 1;
  const StepFlops mtp = step_flops(model, 1.0, Recompute::none);
  // Per forward: layer 3,407,872 (above); logits 2 x 32 x 64 x 1000 = 4,096,000; projection
  // [32 x 64 x 128]: 2 x 32 x 64 x 128 = 524,288. Forward + backward = 3x.
  CHECK(plain.model == Approx(3.0 * (2 * 3407872.0 + 4096000.0)));
  CHECK(mtp.model == Approx(3.0 * (3 * 3407872.0 + 2 * 4096000.0 + 524288.0)));
}

TEST_CASE("MLA's up-projections: what mla_up_proj selective recompute repeats", "[flops]") {
  const Model model = model_preset("deepseek-v3");  // 128 heads, q_lora 1536, kv_lora 512
  const LayerFlops f = layer_forward_flops(model, 1.0);
  // tokens 4096. Q up: 2 x 4096 x 128 x (128 + 64) x 1536 = 309,237,645,312; KV up:
  // 2 x 4096 x 128 x (128 + 128) x 512 = 137,438,953,472; together 446,676,598,784.
  CHECK(f.mla_up == Approx(446676598784.0));
  CHECK(f.mla_up < f.qkv);  // part of the QKV GEMM's FLOPs, not added to the total
  CHECK(recompute_forward_flops(f, Recompute::selective, SelectiveKind::mla_up_proj) ==
        Approx(446676598784.0));
  CHECK(recompute_forward_flops(f, Recompute::selective, SelectiveKind::attention) ==
        Approx(f.attention_core()));
  // Multi-head attention has no up-projections: nothing to repeat.
  const LayerFlops mha = layer_forward_flops(model_preset("llama3-8b"), 1.0);
  CHECK(mha.mla_up == 0.0);
  CHECK(recompute_forward_flops(mha, Recompute::selective, SelectiveKind::mla_up_proj) == 0.0);
}
