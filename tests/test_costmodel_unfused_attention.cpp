// The unfused attention's scores as Transformer Engine's UnfusedDotProductAttention and
// Megatron's core attention run them: which softmax takes them, what is kept, what is alive at
// the peak and what the kernels move (costmodel/unfused_attention.h).
#include <catch2/catch.hpp>

#include "costmodel/memory.h"
#include "costmodel/unfused_attention.h"
#include "costmodel_fixture.h"

using namespace trident;

namespace {
constexpr UnfusedSoftmax kTe = UnfusedSoftmax::transformer_engine;
constexpr UnfusedSoftmax kMegatron = UnfusedSoftmax::megatron;
}  // namespace

TEST_CASE("the fused masked softmax runs only where its kernel takes the shape",
          "[unfused_attention]") {
  Model model = test::small_model();  // 4 heads
  ParallelConfig config = test::small_config();
  config.tp = 1;
  config.micro_batch = 1;  // b x heads/t = 4: a multiple of 4
  model.seq_len = 2048;
  CHECK(fused_softmax_runs(kTe, model, config, 2.0));
  CHECK(fused_softmax_runs(kMegatron, model, config, 2.0));
  CHECK_FALSE(fused_softmax_runs(kTe, model, config, 4.0));  // fp32 scores: no kernel
  // TE's kernel takes 16 < s < 16384 with s % 8 == 0 (softmax.py L184-187 @v2.2.1); Megatron's
  // 16 < s <= 4096 (fused_softmax.py L150-170 @core_v0.12.0).
  model.seq_len = 8192;
  CHECK(fused_softmax_runs(kTe, model, config, 2.0));
  CHECK_FALSE(fused_softmax_runs(kMegatron, model, config, 2.0));
  model.seq_len = 16384;
  CHECK_FALSE(fused_softmax_runs(kTe, model, config, 2.0));
  model.seq_len = 2052;  // a multiple of 4, not of 8
  CHECK_FALSE(fused_softmax_runs(kTe, model, config, 2.0));
  CHECK(fused_softmax_runs(kMegatron, model, config, 2.0));
  model.seq_len = 16;
  CHECK_FALSE(fused_softmax_runs(kMegatron, model, config, 2.0));
  // b x heads/t must be a multiple of 4: 4 heads over TP 2 with micro-batch 1 is 2.
  model.seq_len = 2048;
  config.tp = 2;
  CHECK_FALSE(fused_softmax_runs(kTe, model, config, 2.0));
  config.micro_batch = 2;
  CHECK(fused_softmax_runs(kTe, model, config, 2.0));
}

TEST_CASE("bytes per score element: kept, at the peak, moved", "[unfused_attention]") {
  Model model = test::small_model();
  ParallelConfig config = test::small_config();
  config.tp = 1;
  config.micro_batch = 1;
  model.seq_len = 2048;
  model.dropout = 0.0;
  // Fused softmax, no dropout: the softmax output kept (2); scores and output alive together
  // (4); forward r2 w2, backward r2 (output) r2 (gradient) w2 in place.
  UnfusedScoreBytes b = unfused_score_bytes(kTe, model, config, 2.0);
  CHECK(b.kept == 2.0);
  CHECK(b.peak == 4.0);
  CHECK(b.forward_moved == 4.0);
  CHECK(b.backward_moved == 6.0);
  // Dropout adds its bool mask (1) and output (2), kept and alive; its kernels r2 w2 w1 both
  // ways: kept 5, peak 7, moved 9 and 11 (the numbers priced before 2026-12-06).
  model.dropout = 0.1;
  b = unfused_score_bytes(kMegatron, model, config, 2.0);
  CHECK(b.kept == 5.0);
  CHECK(b.peak == 7.0);
  CHECK(b.forward_moved == 9.0);
  CHECK(b.backward_moved == 11.0);
  // TE at 16,384 tokens: PyTorch's softmax in fp32. Kept: the fp32 softmax (4) and its 16-bit
  // cast (2) = 6; alive at the cast: scores 2 + fp32 copy 4 + fp32 softmax 4 + cast 2 = 12.
  // Moved forward: cast r2 w4, in-place mask r4 w4, softmax r4 w4, cast r4 w2 = 28; backward:
  // cast r2 w4, softmax's backward r4 r4 w4, the mask's r4 w4, cast r4 w2 = 32.
  model.seq_len = 16384;
  model.dropout = 0.0;
  b = unfused_score_bytes(kTe, model, config, 2.0);
  CHECK(b.kept == 6.0);
  CHECK(b.peak == 12.0);
  CHECK(b.forward_moved == 28.0);
  CHECK(b.backward_moved == 32.0);
  // With dropout its output replaces the cast among the kept (4 + 1 + 2 = 7); the peak stays
  // the cast's 12; its kernels add 5 each way.
  model.dropout = 0.1;
  b = unfused_score_bytes(kTe, model, config, 2.0);
  CHECK(b.kept == 7.0);
  CHECK(b.peak == 12.0);
  CHECK(b.forward_moved == 33.0);
  CHECK(b.backward_moved == 37.0);
  // Megatron's core attention past its kernel's 4096 tokens: the same fp32 softmax (query-key
  // layer scaling turns softmax_in_fp32 on), and it multiplies the fp32 copy by the layer's
  // scale, r4 w4 more each way: 36 and 40.
  model.seq_len = 8192;
  model.dropout = 0.0;
  b = unfused_score_bytes(kMegatron, model, config, 2.0);
  CHECK(b.kept == 6.0);
  CHECK(b.peak == 12.0);
  CHECK(b.forward_moved == 36.0);
  CHECK(b.backward_moved == 40.0);
  // fp32 scores (tf32/fp32 training): no casts; kept the fp32 softmax output (4); at the
  // backward's peak it, the incoming gradient and softmax's input gradient (12); forward the
  // in-place mask r4 w4 and the softmax r4 w4 (16), backward softmax's r4 r4 w4 and the mask's
  // r4 w4 (20).
  b = unfused_score_bytes(kTe, model, config, 4.0);
  CHECK(b.kept == 4.0);
  CHECK(b.peak == 12.0);
  CHECK(b.forward_moved == 16.0);
  CHECK(b.backward_moved == 20.0);
  // Megatron's scale on them: r4 w4 more each way; with dropout its 4-byte output and mask kept
  // (4 + 4 + 1 = 9), its forward's scores, output, mask and dropped output alive (13).
  b = unfused_score_bytes(kMegatron, model, config, 4.0);
  CHECK(b.forward_moved == 24.0);
  CHECK(b.backward_moved == 28.0);
  model.dropout = 0.1;
  b = unfused_score_bytes(kTe, model, config, 4.0);
  CHECK(b.kept == 9.0);
  CHECK(b.peak == 13.0);
  CHECK(b.forward_moved == 25.0);
  CHECK(b.backward_moved == 29.0);
}

TEST_CASE("the working scores of one layer at its peak, beyond those kept", "[unfused_attention]") {
  Model model = test::small_model();  // 4 heads
  ParallelConfig config = test::small_config();
  config.tp = 1;
  config.micro_batch = 1;
  model.seq_len = 16384;
  model.dropout = 0.0;
  // TE's fp32 softmax: (12 - 6) x b x a/t x s^2 = 6 x 4 x 16384^2 = 6,442,450,944 bytes (6 GiB).
  CHECK(unfused_scores_working_bytes(model, config, false, 2.0, kTe) ==
        Approx(6.0 * 4.0 * 16384.0 * 16384.0));
  // The fused softmax at 2048 tokens: (4 - 2) x 4 x 2048^2 = 33,554,432 bytes.
  model.seq_len = 2048;
  CHECK(unfused_scores_working_bytes(model, config, false, 2.0, kTe) ==
        Approx(2.0 * 4.0 * 2048.0 * 2048.0));
  CHECK(unfused_scores_working_bytes(model, config, true, 2.0, kTe) == 0.0);  // fused attention
}
