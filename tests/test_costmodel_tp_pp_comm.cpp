// TP and PP traffic of one micro-batch through a stage (costmodel/tp_pp_comm.h): call counts,
// message sizes and the TP time each overlap leaves exposed, derived by hand on the small model.
#include <catch2/catch.hpp>

#include "costmodel/collective.h"
#include "costmodel/tp_pp_comm.h"
#include "costmodel_fixture.h"

namespace trident {
namespace {

TEST_CASE("tp_comm: four all-reduces a layer, two more a recomputed one; SP's pairs", "[tp_pp]") {
  const Model model = test::small_model();       // s = 32, h = 64, bf16
  ParallelConfig config = test::small_config();  // tp 2, micro-batch 1
  const GroupLink link = test::nvlink_group(2);
  // S = b*s*h*2 = 1 x 32 x 64 x 2 = 4096 bytes; 3 layers on the stage: 4 x 3 = 12 calls.
  config.recompute = Recompute::none;
  const CommDetail plain = tp_comm(model, config, link, 3.0, false, nullptr);
  CHECK(plain.bytes_per_call == Approx(4096.0));
  CHECK(plain.calls_per_step == Approx(12.0));
  CHECK(plain.time_per_call_s == Approx(collective_time_s(Collective::all_reduce, 4096.0, link)));
  // Full recompute repeats the two forward all-reduces of every layer: 12 + 2 x 3 = 18.
  config.recompute = Recompute::full;
  CHECK(tp_comm(model, config, link, 3.0, false, nullptr).calls_per_step == Approx(18.0));
  // Sequence parallel: 5 (reduce-scatter + all-gather) pairs a layer, the re-gather among them:
  // 5 x 3 + 2 x 3 = 21; a stack that keeps the gathered input skips the re-gather: 4 x 3 + 6 = 18.
  config.sequence_parallel = true;
  const CommDetail sp = tp_comm(model, config, link, 3.0, false, nullptr);
  CHECK(sp.collective == Collective::reduce_scatter);
  CHECK(sp.calls_per_step == Approx(21.0));
  CHECK(sp.time_per_call_s == Approx(collective_time_s(Collective::reduce_scatter, 4096.0, link) +
                                     collective_time_s(Collective::all_gather, 4096.0, link)));
  CHECK(tp_comm(model, config, link, 3.0, true, nullptr).calls_per_step == Approx(18.0));
  // TP 1: no traffic.
  config.tp = 1;
  CHECK(tp_comm(model, config, link, 3.0, false, nullptr).calls_per_step == Approx(0.0));
}

TEST_CASE("pp_comm: 1/t of the activation per TP rank where it is split, DeepSpeed's mask",
          "[tp_pp]") {
  const Model model = test::small_model();
  ParallelConfig config = test::small_config();  // tp 2, pp 2, no sequence parallelism
  const GroupLink link = test::network_group(2, 2, 25.0, 5e-6);
  // Scattered and gathered (Megatron-LM 2021, DeepSpeed): b*s*h*2 / t = 32 x 64 x 2 / 2 = 2048
  // bytes; one send forward and one backward: 2 calls.
  const CommDetail split = pp_comm(model, config, link, false, true, nullptr);
  CHECK(split.bytes_per_call == Approx(2048.0));
  CHECK(split.calls_per_step == Approx(2.0));
  CHECK(split.time_per_call_s == Approx(collective_time_s(Collective::send_recv, 2048.0, link)));
  // Not split (apex's pipeline, Megatron-Core): every TP rank sends the whole 4096 bytes...
  CHECK(pp_comm(model, config, link, false, false, nullptr).bytes_per_call == Approx(4096.0));
  // ...unless sequence parallelism already shards it: 2048 again.
  config.sequence_parallel = true;
  CHECK(pp_comm(model, config, link, false, false, nullptr).bytes_per_call == Approx(2048.0));
  config.sequence_parallel = false;
  // Interleaved over v = 3 chunks: 2 x 3 = 6 calls.
  config.virtual_stages = 3;
  CHECK(pp_comm(model, config, link, false, true, nullptr).calls_per_step == Approx(6.0));
  // The [1, 1, s, s] mask in half precision with each forward send: 32 x 32 x 2 = 2048 bytes more
  // forward, none backward: the mean call carries 2048 + 2048 / 2 = 3072 bytes.
  config.virtual_stages = 1;
  const CommDetail masked = pp_comm(model, config, link, true, true, nullptr);
  CHECK(masked.bytes_per_call == Approx(3072.0));
  CHECK(masked.time_per_call_s == Approx((collective_time_s(Collective::send_recv, 4096.0, link) +
                                          collective_time_s(Collective::send_recv, 2048.0, link)) /
                                         2.0));
}

TEST_CASE("tp_backward_overlap_layer_s: forward exposed, input-gradient all-reduce behind wgrad",
          "[tp_pp]") {
  LayerTime layer;
  layer.gemm_wgrad_s = {3e-6, 0.0, 8e-6, 0.0};  // QKV and FFN-up weight gradients
  CommDetail tp;
  tp.time_per_call_s = 5e-6;
  // No SP: 2 forward all-reduces (10 us) + max(0, 5 - 3) + max(0, 5 - 8) = 12 us.
  CHECK(tp_backward_overlap_layer_s(layer, tp, 0.0, 0.0, false, false, false) == Approx(12e-6));
  // Full recompute: 4 forward all-reduces: 20 + 2 = 22 us.
  CHECK(tp_backward_overlap_layer_s(layer, tp, 0.0, 0.0, false, true, false) == Approx(22e-6));
  // SP (gather 2 us, scatter 4 us, dgrad 1 us each): per column-parallel layer the output
  // gradient's gather (2) + the input's re-gather beyond dgrad max(0, 2 - 1) + the scatter beyond
  // wgrad: QKV max(0, 4 - 3) = 1, FFN-up max(0, 4 - 8) = 0 -> 10 + (2 + 1 + 1) + (2 + 1 + 0) = 17
  // us; keeping the gathered input drops the two re-gathers: 15 us.
  layer.gemm_dgrad_s = {1e-6, 0.0, 1e-6, 0.0};
  CHECK(tp_backward_overlap_layer_s(layer, tp, 2e-6, 4e-6, true, false, false) == Approx(17e-6));
  CHECK(tp_backward_overlap_layer_s(layer, tp, 2e-6, 4e-6, true, false, true) == Approx(15e-6));
}

TEST_CASE("tp_overlap_layer_s: userbuffers hide each collective behind its GEMM", "[tp_pp]") {
  // GEMMs far longer than the collectives: what remains is the SMs the communication kernels
  // take (1 of 100 for the ring exchanges, 16 of 100 for pipelined and bulk) and the pipelined
  // reduce-scatter's last chunk (scatter / 4).
  LayerTime layer;
  layer.gemm_fprop_s = {100e-6, 100e-6, 100e-6, 100e-6};
  layer.gemm_dgrad_s = {100e-6, 100e-6, 100e-6, 100e-6};
  layer.gemm_wgrad_s = {100e-6, 100e-6, 100e-6, 100e-6};
  const double ring = 100e-6 / (1.0 - 0.01) - 100e-6;  // a GEMM slowed by 1 SM of 100
  const double wide = 100e-6 / (1.0 - 0.16) - 100e-6;  // by 16 SMs of 100
  const double fill = 4e-6 / 4.0;
  // Forward per pair: ring (QKV/FFN-up gather) + wide + fill (projection/FFN-down scatter);
  // backward: ring (projection dgrad gather) + wide (re-gather behind dgrad) + wide (scatter
  // behind wgrad); two pairs a layer.
  const double forward = 2.0 * (ring + wide + fill);
  const double backward = 2.0 * (ring + wide + wide);
  CHECK(tp_overlap_layer_s(layer, 2e-6, 4e-6, 100, false, false) ==
        Approx(forward + backward).epsilon(1e-9));
  // Full recompute repeats the forward overlaps; a kept gathered input drops the re-gathers.
  CHECK(tp_overlap_layer_s(layer, 2e-6, 4e-6, 100, true, false) ==
        Approx(2.0 * forward + backward).epsilon(1e-9));
  CHECK(tp_overlap_layer_s(layer, 2e-6, 4e-6, 100, false, true) ==
        Approx(forward + 2.0 * (ring + wide)).epsilon(1e-9));
}

}  // namespace
}  // namespace trident
