// Software stacks (costmodel/stack.h): presets, the file format, what each stack refuses, and
// the mechanisms a stack switches: per-unit sharded data parallel, uneven pipeline stages.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <optional>

#include "configs/presets.h"
#include "costmodel/collective.h"
#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/memory.h"
#include "costmodel/model_loader.h"
#include "costmodel/pipeline.h"
#include "costmodel/stack.h"
#include "costmodel_fixture.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"

using namespace trident;

namespace {

Placement dp_placement(int dp) { return test::nvlink_placement(1, 1, dp); }

}  // namespace

TEST_CASE("every built-in stack loads, and megatron-core is the default's values", "[stack]") {
  const auto names = preset_names(PresetKind::stack);
  for (const char* want : {"megatron-core", "megatron-core-perf", "megatron-2021",
                           "deepspeed-megatron", "fsdp", "torchtitan"}) {
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  for (const auto& name : names) {
    const Stack stack = stack_preset(name);
    CHECK(stack.name == name);
    CHECK(stack.measured_error > 0.0);  // every preset carries its measured accuracy
  }
  // EstimateOptions{} prices as the default preset does: one source of truth for tests.
  const Stack preset = stack_preset("megatron-core");
  const Stack defaults;
  CHECK(preset.attention == defaults.attention);
  CHECK(preset.zero_stages == defaults.zero_stages);
  CHECK(preset.zero_stages_with_pp == defaults.zero_stages_with_pp);
  CHECK(preset.dp_bucket_parameters == defaults.dp_bucket_parameters);
  CHECK(preset.dp_bucket_parameters_per_rank == defaults.dp_bucket_parameters_per_rank);
  CHECK(preset.grad_reduce_bytes == defaults.grad_reduce_bytes);
  CHECK(preset.uneven_stages == defaults.uneven_stages);
  CHECK(preset.loss_bytes_per_logit == defaults.loss_bytes_per_logit);
  CHECK(preset.adam_state_bytes == defaults.adam_state_bytes);
  CHECK(preset.partial_recompute == defaults.partial_recompute);
}

TEST_CASE("memory keys of the stacks, as their files cite", "[stack][memory]") {
  // Cross-entropy per logit: Megatron's in-place fp32 (6), PyTorch's F.cross_entropy on
  // logits.float() (12), flash-attn's 16-bit (4).
  CHECK(stack_preset("megatron-core").loss_bytes_per_logit == 6.0);
  CHECK(stack_preset("torchtitan").loss_bytes_per_logit == 12.0);
  CHECK(stack_preset("fsdp").loss_bytes_per_logit == 4.0);
  // With TP > 1 torchtitan's loss is vocab-parallel: fp32 log-probabilities saved, and
  // backward's zeros, exp, sum and product alive together: 4 x 4 = 16. Megatron's is the
  // same loss at any TP.
  CHECK(stack_preset("torchtitan").loss_bytes_per_logit_at(1) == 12.0);
  CHECK(stack_preset("torchtitan").loss_bytes_per_logit_at(8) == 16.0);
  CHECK(stack_preset("megatron-core").loss_bytes_per_logit_at(8) == 6.0);
  CHECK(stack_preset("torchtitan").tp_keeps_gathered_inputs);
  CHECK_FALSE(stack_preset("megatron-core").tp_keeps_gathered_inputs);
  // Megatron-LM makes gradients fp32 for bf16 only: under fp16 the buffer and its reduction
  // keep the fp16 param dtype (2 bytes), as Megatron 2021 and DeepSpeed's fp16 do.
  for (const char* name : {"megatron-core", "megatron-2021", "deepspeed-megatron"}) {
    CHECK(stack_preset(name).buffer_bytes(Dtype::bf16) == 4.0);
    CHECK(stack_preset(name).buffer_bytes(Dtype::fp16) == 2.0);
    CHECK(stack_preset(name).reduce_bytes(Dtype::fp16) == 2.0);
  }
  // FSDP shards only the fp32 parameter; Megatron-Core's gradient buffer has the reduce dtype.
  CHECK(stack_preset("torchtitan").zero3_fp32_shard_only);
  CHECK_FALSE(stack_preset("deepspeed-megatron").zero3_fp32_shard_only);
  CHECK(stack_preset("megatron-core-perf").grad_buffer_bytes == 2.0);
  CHECK(stack_preset("megatron-core").adam_state_bytes == 12.0);
  const std::string head = "name: x\nattention: flash\ntp_overlap: none\n";
  CHECK_THROWS_WITH(load_stack(head + "loss_bytes_per_logit: 100\n", "s.yaml"),
                    "s.yaml:4: loss_bytes_per_logit: expected at most 64");
  CHECK_THROWS_WITH(load_stack(head + "loss_parallel_bytes_per_logit: 65\n", "s.yaml"),
                    "s.yaml:4: loss_parallel_bytes_per_logit: expected at most 64");
  CHECK(stack_preset("torchtitan").sequence_parallel_required);
  CHECK_FALSE(stack_preset("megatron-core").sequence_parallel_required);
  CHECK_THROWS_WITH(load_stack(head + "sequence_parallel_required: true\n", "s.yaml"),
                    "s.yaml:4: sequence_parallel_required: true needs sequence_parallel: true");
  CHECK_THROWS_WITH(load_stack(head + "tp_keeps_gathered_inputs: maybe\n", "s.yaml"),
                    Catch::Contains("s.yaml:4: tp_keeps_gathered_inputs"));
  // The NaN check and the 1/DP scaling pass over a main-grad buffer: refused without one, at
  // the key this file sets (hardening round thirty-three: FSDP and torchtitan priced them).
  CHECK_THROWS_WITH(load_stack(head + "zeroes_grad_buffer: false\ngrad_prescale: true\n", "s.yaml"),
                    "s.yaml:5: grad_prescale: expected false: the stack keeps no main-grad buffer "
                    "(zeroes_grad_buffer false) to check or scale");
  CHECK_THROWS_WITH(
      load_stack(head + "grad_nan_check: true\nzeroes_grad_buffer: false\n", "s.yaml"),
      Catch::Contains("s.yaml:4: grad_nan_check: expected false"));
  CHECK_NOTHROW(load_stack(head + "zeroes_grad_buffer: false\n", "s.yaml"));
  CHECK_THROWS_WITH(load_stack(head + "adam_state_bytes: 20\n", "s.yaml"),
                    "s.yaml:4: adam_state_bytes: expected at most 16");
  CHECK_THROWS_WITH(load_stack(head + "adam_step_bytes: 300\n", "s.yaml"),
                    "s.yaml:4: adam_step_bytes: expected at most 256");
  // Bounded since the twentieth session (1e100 priced a step of 1e99 s, 1e308 a NaN):
  for (const char* key : {"rmsnorm_bytes_per_element", "rope_bytes_per_element",
                          "mla_rope_bytes_per_element", "glu_bytes_per_element"}) {
    CHECK_THROWS_WITH(load_stack(head + key + ": 1e100\n", "s.yaml"),
                      std::string("s.yaml:4: ") + key + ": expected at most 256");
  }
  CHECK_THROWS_WITH(load_stack(head + "dtypes: [fp8]\nfp8_recipes: []\n", "s.yaml"),
                    "s.yaml:4: dtypes: fp8 is listed, but fp8_recipes is empty: list a recipe or "
                    "drop fp8");
  // The converse, and interleaving without pipelines: refused at their lines, not planned.
  CHECK_THROWS_WITH(load_stack(head + "dtypes: [bf16]\nfp8_recipes: [delayed]\n", "s.yaml"),
                    "s.yaml:5: fp8_recipes: recipes listed, but dtypes has no fp8: add fp8 or "
                    "leave them out");
  CHECK_THROWS_WITH(
      load_stack(head + "zero_stages_with_pp: []\ninterleaved_pipeline: true\n", "s.yaml"),
      "s.yaml:5: interleaved_pipeline: true, but the stack has no pipeline parallelism "
      "(zero_stages_with_pp is empty)");
  // A band of +/-100% (low end 0, every plan tied with the leader) says nothing.
  CHECK_THROWS_WITH(load_stack(head + "measured_error: 1\n", "s.yaml"),
                    "s.yaml:4: measured_error: expected a number in (0, 1)");
  CHECK_THROWS_WITH(load_stack(head + "measured_error: 1.5\n", "s.yaml"),
                    "s.yaml:4: measured_error: expected a number in (0, 1)");
  CHECK(load_stack(head + "measured_error: 0.5\n", "s.yaml").measured_error == 0.5);
  CHECK_THROWS_WITH(load_stack(head + "dp_bucket_parameters: 1e-300\n", "s.yaml"),
                    "s.yaml:4: dp_bucket_parameters: expected 1 to 1e18 parameters");
  CHECK_THROWS_WITH(load_stack(head + "dp_bucket_parameters_per_rank: 1e300\n", "s.yaml"),
                    "s.yaml:4: dp_bucket_parameters_per_rank: expected at most 1e18 parameters");
  CHECK_THROWS_WITH(load_stack(head + "adam_step_bytes: 0\n", "s.yaml"),
                    Catch::Contains("s.yaml:4: adam_step_bytes"));
  // A list names each choice once (duplicates were taken silently).
  CHECK_THROWS_WITH(load_stack(head + "zero_stages: [0, 0, 1]\n", "s.yaml"),
                    "s.yaml:4: zero_stages: ZeRO stage 0 listed twice");
  CHECK_THROWS_WITH(load_stack(head + "recompute: [full, full]\n", "s.yaml"),
                    "s.yaml:4: recompute: 'full' listed twice");
  CHECK_THROWS_WITH(load_stack(head + "context_parallel: [p2p, p2p]\n", "s.yaml"),
                    "s.yaml:4: context_parallel: 'p2p' listed twice");
}

TEST_CASE("which stacks split a PP activation over TP without sequence parallelism", "[stack]") {
  // Megatron-LM 2021's scatter/gather and DeepSpeed's pipe partitioning send 1/t; Megatron-Core
  // (and NeMo 1.x on apex's pipeline, whose file says so) sends the whole activation.
  CHECK(stack_preset("megatron-2021").pp_scatter_gather);
  CHECK(stack_preset("deepspeed-megatron").pp_scatter_gather);
  CHECK_FALSE(stack_preset("megatron-core").pp_scatter_gather);
  CHECK_FALSE(stack_preset("megatron-core-perf").pp_scatter_gather);
  // A file without base: the 2021 split; with base: megatron-core its value unless it says.
  CHECK(load_stack("name: x\nattention: flash\ntp_overlap: none\n", "s.yaml").pp_scatter_gather);
  CHECK_FALSE(load_stack("name: x\nbase: megatron-core\n", "s.yaml").pp_scatter_gather);
  // Whose unfused attention runs, and FP8 parameters only from a sharded optimizer, as the
  // presets cite them; a bad value names the key.
  CHECK(stack_preset("megatron-core").unfused_softmax == UnfusedSoftmax::transformer_engine);
  CHECK(stack_preset("megatron-2021").unfused_softmax == UnfusedSoftmax::megatron);
  CHECK(stack_preset("deepspeed-megatron").unfused_softmax == UnfusedSoftmax::megatron);
  CHECK(stack_preset("megatron-core").fp8_params_need_sharded_optimizer);
  CHECK(stack_preset("megatron-core-perf").fp8_params_need_sharded_optimizer);
  CHECK_FALSE(stack_preset("torchtitan").fp8_params_need_sharded_optimizer);
  // Megatron-Core's DistributedOptimizer is Adam's only (distrib_optimizer.py L688-695
  // @core_v0.19.0): SGD at ZeRO-0 there; FSDP and torchtitan shard any optimizer.
  Training sgd;
  sgd.optimizer = Optimizer::sgd;
  CHECK(stack_preset("megatron-core").runs_optimizer_at(0, sgd));
  CHECK_FALSE(stack_preset("megatron-core").runs_optimizer_at(1, sgd));
  CHECK_FALSE(stack_preset("megatron-core-perf").runs_optimizer_at(3, sgd));
  CHECK(stack_preset("megatron-core").runs_optimizer_at(1, Training{}));  // Adam
  CHECK(stack_preset("torchtitan").runs_optimizer_at(3, sgd));
  CHECK(stack_preset("fsdp").runs_optimizer_at(3, sgd));
  CHECK(load_stack("name: x\nbase: megatron-core\nunfused_softmax: megatron\n", "s.yaml")
            .unfused_softmax == UnfusedSoftmax::megatron);
  CHECK_THROWS_WITH(load_stack("name: x\nbase: megatron-core\nunfused_softmax: apex\n", "s.yaml"),
                    Catch::Contains("s.yaml:3: unfused_softmax"));
  // On a base the name may be left out too: the file's own, without directories or extension.
  CHECK(load_stack("base: megatron-core\n", "stacks/my-variant.yaml").name == "my-variant");
  CHECK_THROWS_WITH(load_stack("attention: cudnn\ntp_overlap: none\n", "stacks/s.yaml"),
                    Catch::Contains("name: missing required key"));
  CHECK(load_stack("name: x\nbase: megatron-core\npp_scatter_gather: true\n", "s.yaml")
            .pp_scatter_gather);
  CHECK_THROWS_WITH(load_stack("name: x\nbase: megatron-core\npp_scatter_gather: 2\n", "s.yaml"),
                    Catch::Contains("s.yaml:3: pp_scatter_gather"));
}

TEST_CASE("what each stack's pipeline holds beyond the layers' activations", "[stack]") {
  // torch.distributed.pipelining: a receive buffer per micro-batch, outputs held until their
  // backward (torchtitan passes return_outputs=False); Megatron and DeepSpeed neither.
  CHECK(stack_preset("torchtitan").pp_recv_buffers_per_micro_batch);
  // FSDP2's side-stream pools: torchtitan's FSDP2 only (FSDP1 gathers into the flat parameter
  // itself); the kept reduce-scatter input is torch 2.6's, a stack file's key.
  CHECK(stack_preset("torchtitan").zero3_side_stream_pools);
  CHECK_FALSE(stack_preset("torchtitan").pp_keeps_last_reduce_scatter_input);
  CHECK_FALSE(stack_preset("fsdp").zero3_side_stream_pools);
  CHECK_FALSE(stack_preset("megatron-core").zero3_side_stream_pools);
  CHECK(
      load_stack("name: x\nbase: torchtitan\npp_keeps_last_reduce_scatter_input: true\n", "s.yaml")
          .pp_keeps_last_reduce_scatter_input);
  CHECK(stack_preset("torchtitan").pp_keeps_outputs == PpKeptOutputs::in_flight);
  for (const char* name : {"megatron-core", "megatron-2021", "deepspeed-megatron"}) {
    CHECK_FALSE(stack_preset(name).pp_recv_buffers_per_micro_batch);
    CHECK(stack_preset(name).pp_keeps_outputs == PpKeptOutputs::none);
  }
  // A file says which; a file without base: neither.
  const Stack older = load_stack("name: x\nbase: torchtitan\npp_keeps_outputs: all\n", "s.yaml");
  CHECK(older.pp_keeps_outputs == PpKeptOutputs::all);
  CHECK(older.pp_recv_buffers_per_micro_batch);
  const Stack bare = load_stack("name: x\nattention: flash\ntp_overlap: none\n", "s.yaml");
  CHECK(bare.pp_keeps_outputs == PpKeptOutputs::none);
  CHECK_FALSE(bare.pp_recv_buffers_per_micro_batch);
  CHECK_THROWS_WITH(load_stack("name: x\nbase: torchtitan\npp_keeps_outputs: some\n", "s.yaml"),
                    Catch::Contains("s.yaml:3: pp_keeps_outputs"));
  CHECK_THROWS_WITH(
      load_stack("name: x\nbase: torchtitan\npp_recv_buffers_per_micro_batch: 3\n", "s.yaml"),
      Catch::Contains("s.yaml:3: pp_recv_buffers_per_micro_batch"));
}

TEST_CASE("the Adam step's HBM bytes, as each stack's optimizer runs it", "[stack][compute]") {
  // Fused (apex / Transformer Engine / DeepSpeed FusedAdam): read master, grad, m, v = 16,
  // write master, m, v = 12 and the 16-bit weight = 2, the clip's read of the grad = 4: 34.
  CHECK(stack_preset("megatron-core").adam_step_bytes == 34.0);
  CHECK(stack_preset("deepspeed-megatron").adam_step_bytes == 34.0);
  // PyTorch's foreach AdamW, one pass per op: weight decay 4+4, lerp of m 8+4, mul of v 4+4,
  // addcmul of v 8+4, sqrt 4+4, div 4+4, + eps 4+4, addcdiv of the weight 12+4 = 80; the clip
  // reads the grad for its norm and always scales it: 4 + 4+4 = 12. 92.
  CHECK(stack_preset("fsdp").adam_step_bytes == 80.0 + 12.0);
  // torch fused AdamW (torchtitan since 2025): 16 read + 12 written + the clip's 12 = 40.
  CHECK(stack_preset("torchtitan").adam_step_bytes == 16.0 + 12.0 + 12.0);
  const Stack file = load_stack("name: x\nattention: flash\ntp_overlap: none\n", "s.yaml");
  CHECK(file.adam_step_bytes == 34.0);  // a file without base: the fused kernel
  // 1e9 local parameters at 92 bytes on a GPU of 1000 GB/s (85% achievable):
  // 92e9 / (1000e9 x 0.85) = 0.108235 s; SGD keeps its 22 bytes whatever the stack says.
  Gpu gpu;
  gpu.memory_gbps = 1000.0;
  CHECK(optimizer_time_s(gpu, Optimizer::adam, 1e9, 92.0) == Approx(92.0 / 850.0));
  CHECK(optimizer_time_s(gpu, Optimizer::sgd, 1e9, 92.0) == Approx(22.0 / 850.0));
}

TEST_CASE("the loss kernels' bytes per logit, as each stack runs its cross-entropy",
          "[stack][compute]") {
  // Megatron op by op (38 forward, 14 backward: the one-hot subtracted by index, x grad r4 w4,
  // the cast back r4 w2); NeMo's performance scripts with Transformer
  // Engine's Triton kernel (6, 4; the 16-bit logits, overwritten by the gradient, at the peak:
  // 2); llm-foundry's flash-attn kernel (2, 4).
  CHECK(stack_preset("megatron-core").loss_forward_bytes_per_logit == 38.0);
  CHECK(stack_preset("megatron-core").loss_backward_bytes_per_logit == 14.0);
  CHECK(stack_preset("megatron-core-perf").loss_forward_bytes_per_logit == 6.0);
  CHECK(stack_preset("megatron-core-perf").loss_backward_bytes_per_logit == 4.0);
  CHECK(stack_preset("megatron-core-perf").loss_bytes_per_logit == 2.0);
  CHECK(stack_preset("fsdp").loss_forward_bytes_per_logit == 2.0);
  // torchtitan, PyTorch's F.cross_entropy(logits.float()): cast 6 + log_softmax 16 = 22;
  // nll_loss's zeroed gradient 4 + log_softmax backward 16 + the cast back 6 = 26.
  CHECK(stack_preset("torchtitan").loss_forward_bytes_per_logit == 22.0);
  CHECK(stack_preset("torchtitan").loss_backward_bytes_per_logit == 26.0);
  CHECK(stack_preset("deepspeed-megatron").loss_backward_bytes_per_logit == 14.0);
  const std::string head = "name: x\nattention: flash\ntp_overlap: none\n";
  CHECK(load_stack(head, "s.yaml").loss_forward_bytes_per_logit == 38.0);  // no base: Megatron's
  CHECK_THROWS_WITH(load_stack(head + "loss_forward_bytes_per_logit: 0\n", "s.yaml"),
                    Catch::Contains("s.yaml:4: loss_forward_bytes_per_logit"));
  CHECK_THROWS_WITH(load_stack(head + "loss_backward_bytes_per_logit: 65\n", "s.yaml"),
                    "s.yaml:4: loss_backward_bytes_per_logit: expected at most 64");

  // The time they add on the last stage, small model (tp 2, micro-batch 1, s 32, V 1000):
  // 32 x 1000 / 2 = 16,000 logit elements. Jit-fused (22, 6) against op by op (38, 14) saves
  // 16 x 16,000 bytes forward and 8 x 16,000 backward, at the GPU's achievable HBM rate.
  const Model model = test::small_model();
  const ParallelConfig config = test::small_config();
  const Gpu gpu = test::round_gpu();
  const LayerTime op_by_op = logits_time(gpu, model, config);
  const LayerTime fused = logits_time(gpu, model, config, nullptr, {22.0, 6.0});
  CHECK(op_by_op.forward_s - fused.forward_s == Approx(hbm_time_s(gpu, 16.0 * 16000.0)));
  CHECK(op_by_op.backward_s - fused.backward_s == Approx(hbm_time_s(gpu, 8.0 * 16000.0)));
  CHECK(fused.gemm_forward_s == Approx(op_by_op.gemm_forward_s));  // the GEMM is the same
}

TEST_CASE("stack files: one runtime's copies and FP8 layout, refused where they make no sense",
          "[stack]") {
  // FSDP2 copies its gathers out, FSDP1 concatenates its gradients: not both.
  CHECK_THROWS_WITH(load_stack("name: x\nbase: torchtitan\nzero3_gradient_cat: true\n", "s.yaml"),
                    "s.yaml:3: zero3_gradient_cat: zero3_gather_copy_out (FSDP2) and "
                    "zero3_gradient_cat (FSDP1) are two runtimes' copies; set the other false");
  CHECK_FALSE(load_stack("name: x\nbase: torchtitan\nzero3_gather_copy_out: false\n"
                         "zero3_gradient_cat: true\n",
                         "s.yaml")
                  .zero3_gather_copy_out);
  // Only where the stack shards per unit (ZeRO-3, or ZeRO-2 per unit).
  CHECK_THROWS_WITH(
      load_stack("name: x\nbase: megatron-2021\nzero3_gather_copy_out: true\n", "s.yaml"),
      "s.yaml:3: zero3_gather_copy_out: true needs sharding per unit (zero_stages with 3, or 2 "
      "with zero2_per_unit: true)");
  // An inherited key the file's stages never use is left alone.
  CHECK(load_stack("name: x\nbase: torchtitan\nzero_stages: [0]\nzero_stages_with_pp: [0]\n",
                   "s.yaml")
            .zero3_gather_copy_out);
  // Transformer Engine 1.x's layout: only on TE's FP8 linears.
  CHECK_THROWS_WITH(load_stack("name: x\nbase: torchtitan\nfp8_tn_only: true\n", "s.yaml"),
                    "s.yaml:3: fp8_tn_only: true needs Transformer Engine's FP8 linears "
                    "(fp8_saves_fp8_inputs: true and an fp8_recipes entry)");
  CHECK_THROWS_WITH(load_stack("name: x\nbase: megatron-2021\nfp8_tn_only: true\n", "s.yaml"),
                    Catch::StartsWith("s.yaml:3: fp8_tn_only: true needs"));
  CHECK(load_stack("name: x\nbase: megatron-core\nfp8_tn_only: true\n", "s.yaml").fp8_tn_only);
}

TEST_CASE("stack files: errors name the file, line and key", "[stack]") {
  CHECK_THROWS_WITH(
      load_stack("name: x\nattention: flsh\ntp_overlap: none\n", "s.yaml"),
      "s.yaml:2: attention: expected unfused|flash|cudnn|flash_triton, got 'flsh' (did you mean "
      "'flash'?)");
  CHECK_THROWS_WITH(
      load_stack("name: x\nattention: flash\ntp_overlap: none\nzero_stages: [0, 4]\n", "s.yaml"),
      "s.yaml:4: zero_stages: expected ZeRO stages 0..3, got 4");
  CHECK_THROWS_WITH(load_stack("name: x\nattention: flash\ntp_overlap: none\nzero_stages: [0]\n"
                               "zero_stages_with_pp: [0, 1]\n",
                               "s.yaml"),
                    "s.yaml:5: zero_stages_with_pp: expected a subset of zero_stages");
  // Stages none of which runs with PP, and no zero_stages_with_pp: pipeline parallelism was
  // dropped unsaid (`base: megatron-core`, `zero_stages: [2]`); [] says it.
  CHECK_THROWS_WITH(load_stack("name: x\nbase: megatron-core\nzero_stages: [2]\n", "s.yaml"),
                    "s.yaml:3: zero_stages: expected a stage among them that base megatron-core "
                    "runs with pipeline parallelism ([0, 1]), or zero_stages_with_pp beside it "
                    "(the stages that run with PP; [] for none)");
  CHECK_THROWS_WITH(
      load_stack("name: x\nattention: flash\ntp_overlap: none\nzero_stages: [3]\n", "s.yaml"),
      "s.yaml:4: zero_stages: expected 0 or 1 among them (a stage that runs with "
      "pipeline parallelism), or zero_stages_with_pp beside it (the stages that "
      "run with PP; [] for none)");
  // The default is the base's stages with PP among the file's: torchtitan runs ZeRO-3 with PP;
  // fsdp has no PP, so nothing is dropped; an empty list says what it lacks.
  CHECK(load_stack("name: x\nbase: torchtitan\nzero_stages: [3]\n", "s.yaml").zero_stages_with_pp ==
        0b1000u);
  CHECK(load_stack("name: x\nbase: torchtitan\nzero_stages: [0, 3]\n", "s.yaml")
            .zero_stages_with_pp == 0b1001u);
  CHECK_FALSE(load_stack("name: x\nbase: fsdp\nzero_stages: [2, 3]\n", "s.yaml").pipelines());
  CHECK_THROWS_WITH(load_stack("name: x\nbase: megatron-core\nzero_stages: []\n", "s.yaml"),
                    "s.yaml:3: zero_stages: expected at least one ZeRO stage");
  CHECK_FALSE(load_stack("name: x\nbase: megatron-core\nzero_stages: [2]\nzero_stages_with_pp: "
                         "[]\n",
                         "s.yaml")
                  .pipelines());
  CHECK_THROWS_AS(
      load_stack("name: x\nattention: flash\ntp_overlap: none\nprefetch: 2\n", "s.yaml"),
      InputError);
  CHECK_THROWS_WITH(stack_preset("fsdq"), Catch::Contains("did you mean 'fsdp'"));
  const Stack s = load_stack(
      "name: mine\nattention: unfused\ntp_overlap: backward\n"
      "recompute: [none, full]\nzero_stages: [0, 1]\n",
      "s.yaml");
  CHECK(s.attention == AttentionKernel::unfused);
  CHECK(s.supports(Recompute::full));
  CHECK_FALSE(s.supports(Recompute::selective));
  CHECK(s.supports_zero(1, 4));  // with_pp defaults to the stages 0/1 the stack has
  CHECK_FALSE(s.supports_zero(3, 1));
  // Megatron-Core's recompute_modules ["mla_up_proj"]: applies to MLA models only.
  const Stack up = load_stack("name: up\nbase: megatron-core\nselective: mla_up_proj\n", "s.yaml");
  CHECK(up.selective == SelectiveKind::mla_up_proj);
  CHECK(std::string(to_string(up.selective)) == "mla_up_proj");
  CHECK(selective_applies(up.selective, model_preset("deepseek-v3")));
  CHECK_FALSE(selective_applies(up.selective, model_preset("llama3-8b")));
  CHECK(selective_applies(SelectiveKind::attention, model_preset("llama3-8b")));
  CHECK_THROWS_WITH(load_stack("name: x\nbase: megatron-core\nselective: mla\n", "s.yaml"),
                    Catch::Contains("selective"));
}

TEST_CASE("a stack file with base: says only what differs from a preset", "[stack]") {
  const Stack perf = stack_preset("megatron-core-perf");
  const Stack mine =
      load_stack("name: mine\nbase: megatron-core-perf\nadam_state_bytes: 4\n", "s.yaml");
  CHECK(mine.name == "mine");
  CHECK(mine.adam_state_bytes == 4.0);  // the one key it sets
  // Everything else is the preset's, the keys added to the preset later included.
  CHECK(mine.tp_overlap == perf.tp_overlap);
  CHECK(mine.grad_buffer_bytes == perf.grad_buffer_bytes);
  CHECK(mine.fp8_recipes == perf.fp8_recipes);
  CHECK(mine.cp_kinds == perf.cp_kinds);
  CHECK(mine.expert_parallel == perf.expert_parallel);
  CHECK(mine.zero_stages_with_pp == perf.zero_stages_with_pp);
  CHECK(mine.measured_error == perf.measured_error);
  // Eager elementwise ops: a stack file's choice; every preset prices fused kernels (4, 4, 6).
  CHECK(mine.elementwise.rmsnorm == 4.0);
  CHECK(mine.elementwise.rope == 4.0);
  CHECK(mine.elementwise.glu == 6.0);
  CHECK_FALSE(mine.elementwise.gqa_repeat_kv);
  const Stack eager = load_stack(
      "name: e\nbase: fsdp\nrmsnorm_bytes_per_element: 36\nrope_bytes_per_element: 20\n"
      "glu_bytes_per_element: 10\ngqa_repeat_kv: true\n",
      "s.yaml");
  CHECK(eager.elementwise.rmsnorm == 36.0);
  CHECK(eager.elementwise.rope == 20.0);
  CHECK(eager.elementwise.glu == 10.0);
  CHECK(eager.elementwise.gqa_repeat_kv);
  CHECK_THROWS_WITH(load_stack("name: e\nbase: fsdp\nrope_bytes_per_element: 0\n", "s.yaml"),
                    Catch::StartsWith("s.yaml:3: rope_bytes_per_element"));
  // A new zero_stages list sets its own PP default, as without a base.
  const Stack only_zero1 = load_stack("name: z\nbase: megatron-core\nzero_stages: [1]\n", "s.yaml");
  CHECK(only_zero1.supports_zero(1, 4));
  CHECK_FALSE(only_zero1.supports_zero(0, 1));
  CHECK_THROWS_WITH(load_stack("name: x\nbase: megatron-cor\n", "s.yaml"),
                    Catch::StartsWith("s.yaml:2: base: unknown stack preset 'megatron-cor' (did "
                                      "you mean 'megatron-core'?); known: deepspeed-megatron"));
  // torchtitan requires sequence parallelism with TP: turning it off says what else to change.
  CHECK_THROWS_WITH(load_stack("name: x\nbase: torchtitan\nsequence_parallel: false\n", "s.yaml"),
                    "s.yaml:3: sequence_parallel: false, but the base stack requires sequence "
                    "parallelism (set sequence_parallel_required: false too)");
  CHECK_NOTHROW(load_stack(
      "name: x\nbase: torchtitan\nsequence_parallel: false\nsequence_parallel_required: false\n",
      "s.yaml"));
  // Separate blocking sends and receives are priced for DeepSpeed's 1F1B only.
  CHECK_THROWS_WITH(
      load_stack("name: x\nbase: megatron-core\npp_separate_send_recv: true\n", "s.yaml"),
      "s.yaml:3: pp_separate_send_recv: true prices DeepSpeed's 1F1B pipeline "
      "(separate blocking sends and receives); it needs pp_overlap: false and "
      "interleaved_pipeline: false");
  CHECK_THROWS_WITH(load_stack("name: x\nbase: deepspeed-megatron\npp_overlap: true\n", "s.yaml"),
                    "s.yaml:3: pp_overlap: true, but the base stack sends and receives apart "
                    "(pp_separate_send_recv: true), which is priced for DeepSpeed's 1F1B only");
  CHECK_NOTHROW(
      load_stack("name: x\nbase: deepspeed-megatron\npp_sends_attention_mask: false\n", "s.yaml"));
}

TEST_CASE("base: FILE chains stack files through the caller's reader", "[stack]") {
  // An in-memory file system: the reader answers file names (".yaml"), presets fall through.
  std::map<std::string, std::string> files{
      {"common.yaml",
       "name: common\nbase: megatron-core\nattention: flash\nadam_state_bytes: 10\n"},
      {"variant.yaml", "name: variant\nbase: common.yaml\nadam_state_bytes: 4\n"},
      {"loop-a.yaml", "name: a\nbase: loop-b.yaml\n"},
      {"loop-b.yaml", "name: b\nbase: loop-a.yaml\n"}};
  for (int i = 0; i < kMaxStackBaseFiles; ++i) {
    files["deep" + std::to_string(i) + ".yaml"] =
        "name: d\nbase: deep" + std::to_string(i + 1) + ".yaml\n";
  }
  files["deep" + std::to_string(kMaxStackBaseFiles) + ".yaml"] = "name: d\nbase: fsdp\n";
  const StackFileReader reader = [&files](const std::string& name, const std::string&,
                                          const std::string& where) -> std::optional<StackText> {
    if (!name.ends_with(".yaml")) return std::nullopt;
    const auto it = files.find(name);
    if (it == files.end()) throw InputError(where + " '" + name + "': cannot read the file");
    // The file's identity as the file system would resolve it: "sub/../x.yaml" is "x.yaml".
    std::string identity = name;
    if (identity.starts_with("sub/../")) identity.erase(0, 7);
    return StackText{it->second, name, identity};
  };
  const Stack core = stack_preset("megatron-core");
  const Stack variant = load_stack(files["variant.yaml"], "variant.yaml", reader);
  CHECK(variant.name == "variant");
  CHECK(variant.adam_state_bytes == 4.0);              // its own key
  CHECK(variant.attention == AttentionKernel::flash);  // common.yaml's
  CHECK(variant.tp_overlap == core.tp_overlap);        // megatron-core's, two bases down
  CHECK(variant.measured_error == core.measured_error);
  // Without a reader a file name is looked up as a preset, and is not one.
  CHECK_THROWS_WITH(load_stack(files["variant.yaml"], "variant.yaml"),
                    Catch::StartsWith("variant.yaml:2: base: unknown stack preset 'common.yaml'"));
  CHECK_THROWS_WITH(load_stack("name: x\nbase: gone.yaml\n", "x.yaml", reader),
                    "x.yaml:2: base 'gone.yaml': cannot read the file");
  CHECK_THROWS_WITH(
      load_stack(files["loop-a.yaml"], "loop-a.yaml", reader),
      "loop-b.yaml:2: base: 'loop-a.yaml' is already in the chain of bases (a cycle)");
  // A cycle spelled another way is the same file: the identity, not the spelling, is compared
  // (the top file's identity given; files["sub/../spelled.yaml"] is what "spelled.yaml" reads).
  files["spelled.yaml"] = "name: s\nbase: sub/../spelled.yaml\n";
  files["sub/../spelled.yaml"] = files["spelled.yaml"];
  CHECK_THROWS_WITH(
      load_stack(files["spelled.yaml"], "spelled.yaml", reader, "spelled.yaml"),
      "spelled.yaml:2: base: 'sub/../spelled.yaml' is already in the chain of bases (a cycle)");
  // deep0 -> deep1 -> ... -> deep8 is nine files: one more than kMaxStackBaseFiles (8).
  CHECK_THROWS_WITH(load_stack(files["deep0.yaml"], "deep0.yaml", reader),
                    "deep7.yaml:2: base: more than 8 stack files chained by base:; expected a "
                    "shorter chain");
  CHECK_NOTHROW(load_stack(files["deep1.yaml"], "deep1.yaml", reader));  // eight files: fine
}

TEST_CASE("what a stack runs: ZeRO with and without PP, PP at all, uneven stages", "[stack]") {
  // ZeRO-3 with PP 2: megatron-core no (Megatron-FSDP without PP), torchtitan yes.
  CHECK_FALSE(stack_preset("megatron-core").supports_zero(3, 2));
  CHECK(stack_preset("megatron-core").supports_zero(3, 1));
  CHECK(stack_preset("torchtitan").supports_zero(3, 2));
  // 4 layers over PP 3: megatron-2021 needs even stages, megatron-core splits unevenly.
  CHECK_FALSE(stack_preset("megatron-2021").uneven_stages);
  CHECK(stack_preset("megatron-core").uneven_stages);
  // llm-foundry's FSDP has no pipeline at all.
  CHECK_FALSE(stack_preset("fsdp").pipelines());
  CHECK(stack_preset("deepspeed-megatron").pipelines());
  // DeepSpeed's pipeline engine sends and receives in separate blocking calls; Megatron batches.
  CHECK(stack_preset("deepspeed-megatron").pp_separate_send_recv);
  CHECK(stack_preset("deepspeed-megatron").pp_sends_attention_mask);
  CHECK_FALSE(stack_preset("megatron-2021").pp_separate_send_recv);
  CHECK_FALSE(stack_preset("megatron-core").pp_separate_send_recv);
}

TEST_CASE("uneven pipeline stages split as the frameworks do", "[stack][pipeline]") {
  // Llama 3 405B: 126 layers over 16 stages: ceil 8, shortfall 16*8 - 126 = 2: one off the
  // last and one off the first (Llama 3 paper: first and last stage one layer fewer).
  const StageLayers llama = stage_layers(126, 16);
  CHECK((llama.first == 7 && llama.middle == 8 && llama.last == 7));
  // BLOOM 176B: 70 over 12: ceil 6, shortfall 2: 5 | 6 x 10 | 5 (bigscience tr11 README).
  const StageLayers bloom = stage_layers(70, 12);
  CHECK((bloom.first == 5 && bloom.middle == 6 && bloom.last == 5));
  // 70 over 8: ceil 9, shortfall 2: 8 | 9 | 8.
  const StageLayers seventy = stage_layers(70, 8);
  CHECK((seventy.first == 8 && seventy.middle == 9 && seventy.last == 8));
  // 9 over 8: ceil 2, shortfall 7: last 1, first 1, five middle stages lose one (6 stages
  // remain): the busiest middle stage keeps 2. 1 + 2 + 5x1 + 1 = 9.
  const StageLayers nine = stage_layers(9, 8);
  CHECK((nine.first == 1 && nine.middle == 2 && nine.last == 1));
  // Even splits are untouched; one stage holds everything.
  const StageLayers even = stage_layers(96, 8);
  CHECK((even.first == 12 && even.middle == 12 && even.last == 12));
  CHECK(stage_layers(96, 1).first == 96);
  CHECK(stage_layers(96, 1).most() == 96);
  // Memory: the first stage of 70 over 12 holds 5 layers' parameters, a middle stage 6.
  Model model = test::small_model();
  model.layers = 70;
  ParallelConfig config;
  config.pp = 12;
  const ParameterCount count = count_parameters(model);
  const double per_layer = count.attention_per_layer + count.ffn_per_layer + count.norms_per_layer;
  CHECK(stage_parameters(model, config, false, false) == Approx(6 * per_layer));
  CHECK(stage_parameters(model, config, true, false) == Approx(5 * per_layer + count.embedding));
}

TEST_CASE("sharded data parallel per unit: FSDP FULL_SHARD's schedule", "[stack][estimate]") {
  // Small model (2 layers, one stage), tp 1, dp 2 on one NVLink domain, micro-batch 1: m = 4.
  const Model model = test::small_model();
  ParallelConfig config;
  config.dp = 2;
  config.micro_batch = 1;
  config.zero = 3;
  EstimateOptions options;
  options.stack = stack_preset("torchtitan");  // BACKWARD_PRE-style prefetch of one unit
  options.stack.edge_unit = EdgeUnit::none;    // the layers alone here; the edge unit below
  const Placement placement = dp_placement(2);
  const Estimate e = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  // A unit is one layer: 4h^2 attention + 2hf FFN + 2h norms = 16384 + 32768 + 128 = 49280
  // parameters; its all-gather moves 49280 x 2 bytes, its reduce-scatter 49280 x 4 (fp32).
  const double unit = 49280.0;
  CHECK(e.dp.gather_bytes_per_call == Approx(unit * 2));
  CHECK(e.dp.bytes_per_call == Approx(unit * 4));
  const double ag = collective_time_s(Collective::all_gather, unit * 2, placement.dp);
  const double rs = collective_time_s(Collective::reduce_scatter, unit * 4, placement.dp);
  CHECK(e.dp.unit_gather_s == Approx(ag));
  CHECK(e.dp.unit_scatter_s == Approx(rs));
  // Per micro-batch: 2 gathers forward + 2 again backward (reshard after forward) and 2
  // reduce-scatters: 4 micro-batches x 2 layers -> 16 gathers, 8 reduce-scatters.
  CHECK(e.dp.unit_gathers_per_step == Approx(16.0));
  CHECK(e.dp.unit_scatters_per_step == Approx(8.0));
  CHECK(e.dp.total_s == Approx(16 * ag + 8 * rs));
  // Exposed per micro-batch: forward: the first gather + (2-1) x max(0, ag - fwd layer);
  // backward: the first (ag + rs) + (2-1) x max(0, ag + rs - bwd layer). Times 4.
  const LayerTime layer = layer_time(test::round_gpu(), model, config, ComputeFeatures{});
  const double forward = ag + std::max(0.0, ag - layer.forward_s);
  const double backward = (ag + rs) + std::max(0.0, ag + rs - layer.backward_s);
  CHECK(e.dp.exposed_s == Approx(4 * (forward + backward)));
  CHECK(e.time.dp_comm_s == Approx(e.dp.exposed_s));

  // BACKWARD_POST (Composer's default): every backward gather waits for the previous unit's
  // gradients, so both gathers are exposed and only the reduce-scatter overlaps.
  options.stack.backward_prefetch = BackwardPrefetch::post;
  const Estimate post = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  const double post_backward = 2 * ag + rs + std::max(0.0, rs - layer.backward_s);
  CHECK(post.dp.exposed_s == Approx(4 * (forward + post_backward)));

  // A stack that reduces only on the last micro-batch: 2 reduce-scatters per step.
  options.stack.backward_prefetch = BackwardPrefetch::pre;
  options.stack.reduce_every_micro_batch = false;
  const Estimate once = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  CHECK(once.dp.unit_scatters_per_step == Approx(2.0));
  const double gather_only = ag + std::max(0.0, ag - layer.backward_s);
  CHECK(once.dp.exposed_s == Approx(4 * forward + backward + 3 * gather_only));

  // torchtitan's own embedding unit (edge_unit: embedding): 1000 x 64 = 64,000 parameters
  // gathered before the first layer (2 bytes each) and reduce-scattered after the last (4),
  // nothing to hide behind: every micro-batch, 4 x (ag_e + rs_e) more, exposed.
  options.stack = stack_preset("torchtitan");
  REQUIRE(options.stack.edge_unit == EdgeUnit::embedding);
  const Estimate edged =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  const double ag_e = collective_time_s(Collective::all_gather, 64000.0 * 2, placement.dp);
  const double rs_e = collective_time_s(Collective::reduce_scatter, 64000.0 * 4, placement.dp);
  CHECK(edged.dp.total_s == Approx(16 * ag + 8 * rs + 4 * (ag_e + rs_e)));
  CHECK(edged.dp.exposed_s == Approx(4 * (forward + backward + ag_e + rs_e)));
  // FSDP1's root unit (edge_unit: root) holds the final norm (64) and the untied output layer
  // (64,000) beside the embedding: 128,064 parameters.
  options.stack.edge_unit = EdgeUnit::root;
  const Estimate root = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  const double ag_r = collective_time_s(Collective::all_gather, 128064.0 * 2, placement.dp);
  const double rs_r = collective_time_s(Collective::reduce_scatter, 128064.0 * 4, placement.dp);
  CHECK(root.dp.exposed_s == Approx(4 * (forward + backward + ag_r + rs_r)));
}

TEST_CASE(
    "ZeRO-3 with PP keeps the gathered weights: one gather and one reduce-scatter per "
    "unit per step",
    "[stack][estimate]") {
  const Model model = test::small_model();
  ParallelConfig config;
  config.pp = 2;
  config.dp = 2;
  config.micro_batch = 1;
  config.zero = 3;
  EstimateOptions options;
  options.stack = stack_preset("torchtitan");
  Placement placement = dp_placement(2);
  placement.pp = test::nvlink_group(2);
  const Estimate e = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  // One layer per stage, m = 8 / (2 x 1) = 4: gathered once and reduce-scattered once.
  CHECK(e.dp.unit_gathers_per_step == Approx(1.0));
  CHECK(e.dp.unit_scatters_per_step == Approx(1.0));
  // Memory: the whole 16-bit weights and fp32 gradients stay (not divided by dp); the Adam
  // state is sharded: 12 / 2 bytes per parameter.
  const double params = stage_parameters(model, config, false, true);
  CHECK(e.memory.weights_bytes == Approx(params * 2));
  CHECK(e.memory.gradients_bytes == Approx(params * 4));
  CHECK(e.memory.optimizer_bytes == Approx(params * 6));
}

TEST_CASE("MFU under the causal convention and the step-time band", "[stack][estimate]") {
  const Model model = test::small_model();
  ParallelConfig config;
  config.dp = 2;
  EstimateOptions options;
  options.stack.measured_error = 0.1;
  const Estimate e =
      estimate(test::round_cluster(), model, config, dp_placement(2), nullptr, options);
  CHECK(e.mfu_causal < e.mfu);
  CHECK(e.mfu_causal == Approx(e.mfu * e.model_flops_causal / e.model_flops));
  CHECK(e.step_s_low == Approx(0.9 * e.time.step_s));
  CHECK(e.step_s_high == Approx(1.1 * e.time.step_s));
}

TEST_CASE("the band: the stack's measured error, its MoE rows' for MoE models", "[stack]") {
  const Stack core = stack_preset("megatron-core");
  // bench/accuracy 2026-12-05 (twenty-fifth session): Megatron-Core's 127 dense rows 5.4% (134 rows
  // 5.2% on 2026-12-06, the band left the wider); 2026-12-06 (twenty-ninth session): its
  // nine MoE rows 15.0% (dgxc-benchmarking 25.04's three GB200 DeepSeek-V3 rows left out, the
  // stack file says why); 2026-12-07 (forty-first session): 14.5%; (forty-second): 14.1%;
  // (forty-third, the slowest of a job's GPUs): 13.8%; (and the DDP's NaN check): 13.7%.
  CHECK(core.error_for(model_preset("llama3-8b")) == Approx(0.054));
  CHECK(core.error_for(model_preset("deepseek-v3")) == Approx(0.137));
  CHECK(core.error_for(model_preset("qwen3-235b-a22b")) == Approx(0.137));
  // The same rows measure megatron-core-perf's MoE error (the same software): one number,
  // which the twentieth session found left at the eighteenth's 9.3% in megatron-core-perf.yaml.
  const Stack perf = stack_preset("megatron-core-perf");
  CHECK(perf.error_for(model_preset("deepseek-v3")) == Approx(core.measured_error_moe));
  const Stack titan = stack_preset("torchtitan");  // no MoE rows: the dense error for both
  CHECK(titan.error_for(model_preset("deepseek-v3")) == Approx(titan.measured_error));
}

TEST_CASE("gradient accumulation outside the GEMMs: bytes per gradient and the time it adds",
          "[stack][estimate]") {
  // DeepSpeed: fp16 adds into the 16-bit .grad (read 2, read 2, write 2 = 6); bf16 casts the
  // gradient into an fp32 temporary (read 2, write 4), then adds it into the fp32 buffer
  // (read 4 + 4, write 4): 18.
  const Stack deepspeed = stack_preset("deepspeed-megatron");
  ParallelConfig piped;  // the stacks' grad_accumulation: the pass with PP
  piped.pp = 2;
  CHECK(deepspeed.grad_accumulation_bytes(Dtype::fp16, piped) == 6.0);
  CHECK(deepspeed.grad_accumulation_bytes(Dtype::bf16, piped) == 18.0);
  // Megatron 2021: one mixed-dtype add, fp16 into fp16 (6) or bf16 into fp32 (2 + 4 + 4 = 10).
  const Stack megatron2021 = stack_preset("megatron-2021");
  CHECK(megatron2021.grad_accumulation_bytes(Dtype::fp16, piped) == 6.0);
  CHECK(megatron2021.grad_accumulation_bytes(Dtype::bf16, piped) == 10.0);
  // Megatron-Core fuses it into the weight-gradient GEMM; FSDP accumulates only its shard.
  CHECK(stack_preset("megatron-core").grad_accumulation_bytes(Dtype::bf16, piped) == 0.0);
  CHECK(stack_preset("fsdp").grad_accumulation_bytes(Dtype::bf16, piped) == 0.0);
  // The word embedding's dense gradient each micro-batch: zero-filled in the weight dtype (2),
  // plus Megatron-Core's hook add into the fp32 main grad where the GEMMs fuse the rest
  // (2 + 4 + 4): 12; 2 + 2 + 2 into megatron-core-perf's bf16 buffer: 8; the zero fill alone
  // where the accumulation pass covers it already (Megatron 2021) or FSDP keeps no buffer.
  ParallelConfig single;
  CHECK(stack_preset("megatron-core").embedding_gradient_bytes(Dtype::bf16, single) == 12.0);
  CHECK(stack_preset("megatron-core-perf").embedding_gradient_bytes(Dtype::bf16, single) == 8.0);
  // Tied on the one stage: the output layer's zeroed dummy gradient (write 2) summed with the
  // embedding's (read 2 + 2, write 2) before the hook: 12 + 8 = 20, and 8 + 8 = 16.
  CHECK(stack_preset("megatron-core").embedding_gradient_bytes(Dtype::bf16, single, true) == 20.0);
  CHECK(stack_preset("megatron-core-perf").embedding_gradient_bytes(Dtype::bf16, single, true) ==
        16.0);
  CHECK(megatron2021.embedding_gradient_bytes(Dtype::bf16, single) == 2.0);
  CHECK(megatron2021.embedding_gradient_bytes(Dtype::bf16, single, true) == 2.0);
  CHECK(stack_preset("torchtitan").embedding_gradient_bytes(Dtype::bf16, single) == 2.0);
  CHECK(stack_preset("torchtitan").embedding_gradient_bytes(Dtype::fp32, single) == 4.0);
  // A stack that fuses it only with PP (NeMo 2022): the bf16-into-fp32 add (10) at PP 1, none
  // with PP; a file that leaves the key out gets its grad_accumulation for both.
  const Stack nemo2022 =
      load_stack("name: n\nbase: megatron-core\ngrad_accumulation_without_pp: add\n", "n.yaml");
  ParallelConfig one_stage;
  ParallelConfig two_stages;
  two_stages.pp = 2;
  CHECK(nemo2022.grad_accumulation_bytes(Dtype::bf16, one_stage) == 10.0);
  CHECK(nemo2022.grad_accumulation_bytes(Dtype::bf16, two_stages) == 0.0);
  CHECK(megatron2021.grad_accumulation_bytes(Dtype::bf16, one_stage) == 10.0);
  CHECK(megatron2021.grad_accumulation_bytes(Dtype::bf16, two_stages) == 10.0);
  const Stack own = load_stack("name: o\nbase: megatron-core\ngrad_accumulation: add\n", "o.yaml");
  CHECK(own.grad_accumulation_bytes(Dtype::bf16, one_stage) == 10.0);
  CHECK_THROWS_WITH(
      load_stack("name: b\nbase: megatron-core\ngrad_accumulation_without_pp: sum\n", "b.yaml"),
      Catch::Contains("b.yaml:3") && Catch::Contains("grad_accumulation_without_pp"));

  // Small model, one stage, dp 2, micro-batch 1: m = 4 passes over the stage's parameters at
  // the round GPU's 1000 GB/s x 0.85.
  const Model model = test::small_model();
  ParallelConfig config;
  config.dp = 2;
  config.micro_batch = 1;
  EstimateOptions options;
  options.stack = megatron2021;
  const Placement placement = dp_placement(2);
  const Estimate added =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  options.stack.grad_accumulation = GradAccumulation::none;
  options.stack.grad_accumulation_without_pp = GradAccumulation::none;  // PP 1's pass
  const Estimate fused =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  const double params = stage_parameters(model, config, true, true);
  CHECK(added.time.backward_s - fused.time.backward_s == Approx(4 * 10.0 * params / 850e9));

  // Megatron-Core's main-grad buffer: the embedding's hook add, 10 bytes over its 1000 x 64
  // gradients (tp 1 here), after each of the 4 micro-batches; the buffer's fp32 zeroing, 4 bytes
  // over every parameter, once before the step.
  options.stack = stack_preset("megatron-core");
  const Estimate buffer =
      estimate(test::round_cluster(), model, config, placement, nullptr, options);
  options.stack.zeroes_grad_buffer = false;
  const Estimate none = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  CHECK(buffer.time.backward_s - none.time.backward_s == Approx(4 * 10.0 * 1000 * 64 / 850e9));
  CHECK(buffer.time.optimizer_s - none.time.optimizer_s == Approx(4.0 * params / 850e9));
  // Its DDP's NaN check (a norm over each bucket: a 4-byte read of every fp32 gradient) and,
  // without averaging in the collective, the 1/DP scaling (a read and a write, 8 bytes) before
  // each bucket's reduction, once a step: 12 bytes over every parameter at DP 2.
  CHECK(options.stack.grad_nan_check);
  CHECK(options.stack.grad_prescale);
  options.stack.grad_nan_check = false;
  options.stack.grad_prescale = false;
  const Estimate bare = estimate(test::round_cluster(), model, config, placement, nullptr, options);
  CHECK(none.time.optimizer_s - bare.time.optimizer_s == Approx(12.0 * params / 850e9));
  // At DP 1 there is nothing to scale by: the check's read alone.
  ParallelConfig alone = config;
  alone.dp = 1;
  options.stack.grad_nan_check = true;
  options.stack.grad_prescale = true;
  const Estimate one =
      estimate(test::round_cluster(), model, alone, dp_placement(1), nullptr, options);
  options.stack.grad_nan_check = false;
  options.stack.grad_prescale = false;
  const Estimate one_bare =
      estimate(test::round_cluster(), model, alone, dp_placement(1), nullptr, options);
  CHECK(one.time.optimizer_s - one_bare.time.optimizer_s == Approx(4.0 * params / 850e9));
  // NeMo 2's recipes and Megatron-Bridge average in the collective: megatron-core-perf checks,
  // does not scale.
  CHECK(stack_preset("megatron-core-perf").grad_nan_check);
  CHECK_FALSE(stack_preset("megatron-core-perf").grad_prescale);
  for (const char* name : {"megatron-2021", "deepspeed-megatron", "fsdp", "torchtitan"}) {
    CHECK_FALSE(stack_preset(name).grad_nan_check);
    CHECK_FALSE(stack_preset(name).grad_prescale);
  }
}

TEST_CASE("partial recompute: which layer counts each stack runs", "[stack]") {
  // torchtitan's every k-th block: k must divide the chunk for every chunk of a rank to
  // recompute chunk / k (its counter runs on across chunks): 8 layers take 4 (k 2), 2 (k 4)
  // and 1 (k 8); 3 is no k's; all 8 is plain full recompute.
  CHECK(every_kth_interval(8, 4) == 2);
  CHECK(every_kth_interval(8, 2) == 4);
  CHECK(every_kth_interval(8, 1) == 8);
  CHECK(every_kth_interval(8, 3) == 0);
  CHECK(every_kth_interval(8, 8) == 0);
  const Stack titan = stack_preset("torchtitan");
  CHECK(titan.partial_recompute == PartialRecompute::every_kth);
  CHECK(titan.runs_partial_recompute(8, 2, true));
  CHECK_FALSE(titan.runs_partial_recompute(8, 3, true));
  // Uneven stages: a shorter stage counts its blocks from 1 and recomputes fewer.
  CHECK_FALSE(titan.runs_partial_recompute(8, 2, false));
  // Megatron-Core's block method: any count below the chunk's layers, even stages or not.
  const Stack core = stack_preset("megatron-core");
  CHECK(core.partial_recompute == PartialRecompute::block);
  CHECK(core.runs_partial_recompute(8, 3, false));
  CHECK_FALSE(core.runs_partial_recompute(8, 8, true));
  CHECK_FALSE(core.runs_partial_recompute(8, 0, true));
  for (const char* name : {"megatron-2021", "deepspeed-megatron", "fsdp"}) {
    CHECK_FALSE(stack_preset(name).runs_partial_recompute(8, 4, true));
  }
}

TEST_CASE("cuDNN trains wide heads on Blackwell only where the stack lists them",
          "[stack][attention]") {
  // Transformer Engine's nvte_get_fused_attn_backend: heads up to 128 anywhere; on Hopper up to
  // 256; on Blackwell (compute capability 10.0) the shapes the stack's TE and cuDNN add:
  // 192/128 (MLA) from TE v2.5 with cuDNN 9.11, 256/256 from TE v2.18 with cuDNN 9.23.
  const Stack core = stack_preset("megatron-core");
  CHECK(core.cudnn_blackwell_heads == 0b01u);  // [192/128]
  const Gpu b200 = gpu_preset("b200");
  const Gpu h100 = gpu_preset("h100-sxm-80g");
  const Gpu a100 = gpu_preset("a100-sxm-80g");
  CHECK(cudnn_trains_heads(core, 128, 128, b200));
  CHECK(cudnn_trains_heads(core, 128, 128, a100));
  CHECK(cudnn_trains_heads(core, 192, 128, b200));
  CHECK_FALSE(cudnn_trains_heads(core, 192, 192, b200));  // Nemotron-4 340B: in no TE release
  CHECK_FALSE(cudnn_trains_heads(core, 256, 256, b200));  // TE v2.18 + cuDNN 9.23: not listed
  CHECK(cudnn_trains_heads(core, 192, 192, h100));        // Hopper: up to 256
  CHECK(cudnn_trains_heads(core, 256, 256, h100));
  CHECK_FALSE(cudnn_trains_heads(core, 320, 320, h100));
  CHECK_FALSE(cudnn_trains_heads(core, 160, 160, a100));  // Ampere: up to 128
  CHECK_FALSE(cudnn_trains_heads(core, 100, 100, h100));  // not a multiple of 8
  CHECK_FALSE(flash2_takes_heads(100, 100, h100));        // nor for FlashAttention 2: unfused
  CHECK(attention_run(
            core,
            [] {
              Model m = model_preset("llama3-8b");
              m.explicit_head_dim = 100;
              return m;
            }(),
            h100) == AttentionKernel::unfused);
  Gpu unknown = b200;
  unknown.compute_capability = 0.0;  // no capability stated: nothing to refuse on
  CHECK(cudnn_trains_heads(core, 192, 192, unknown));

  // A stack file for an older container lists none; a newer one both.
  const Stack old_te =
      load_stack("name: nemo-2504\nbase: megatron-core\ncudnn_blackwell_heads: []\n", "old.yaml");
  CHECK(old_te.cudnn_blackwell_heads == 0u);
  CHECK_FALSE(cudnn_trains_heads(old_te, 192, 128, b200));
  const Stack new_te = load_stack(
      "name: te218\nbase: megatron-core\ncudnn_blackwell_heads: [192/128, 256/256]\n", "new.yaml");
  CHECK(new_te.cudnn_blackwell_heads == 0b11u);
  CHECK(cudnn_trains_heads(new_te, 256, 256, b200));
  // A file without base: starts from none; a shape TE never listed is refused at its line.
  CHECK(
      load_stack("name: x\nattention: cudnn\ntp_overlap: none\n", "x.yaml").cudnn_blackwell_heads ==
      0u);
  CHECK_THROWS_WITH(
      load_stack("name: x\nbase: megatron-core\ncudnn_blackwell_heads: [192/192]\n", "x.yaml"),
      Catch::StartsWith(
          "x.yaml:3: cudnn_blackwell_heads: expected 192/128|256/256, got '192/192'"));
}

TEST_CASE("heads cuDNN does not train run Transformer Engine's fallback, priced as such",
          "[stack][attention]") {
  const Gpu gb200 = gpu_preset("gb200");
  // DeepSeek-V3's MLA heads: Q/K 128 + 64 rotary = 192, V 128. Under TE v2.2 (none listed)
  // cuDNN refuses them on GB200 and FlashAttention takes no MLA: the unfused attention runs.
  const Model dsv3 = model_preset("deepseek-v3");
  REQUIRE(dsv3.qk_head_dim() == 192);
  REQUIRE(dsv3.v_head_dim() == 128);
  const Stack old_te =
      load_stack("name: nemo-2504\nbase: megatron-core\ncudnn_blackwell_heads: []\n", "old.yaml");
  CHECK(attention_run(old_te, dsv3, gb200) == AttentionKernel::unfused);
  CHECK(attention_run(stack_preset("megatron-core"), dsv3, gb200) == AttentionKernel::cudnn);
  CHECK(attention_run(old_te, dsv3, gpu_preset("h100-sxm-80g")) == AttentionKernel::cudnn);
  // Equal wide heads (hidden 18432 over 96 heads = 192, Nemotron-4 340B's): FlashAttention 2,
  // which takes equal heads up to 256 (over 192 on 8.0, 9.0, 10.0, 12.0 only).
  Model wide = model_preset("llama3-70b");
  wide.hidden = 18432;
  wide.heads = 96;
  wide.kv_heads = 8;
  REQUIRE(wide.head_dim() == 192);
  CHECK(attention_run(stack_preset("megatron-core-perf"), wide, gb200) == AttentionKernel::flash);
  CHECK(attention_run(stack_preset("megatron-core"), wide, gpu_preset("a100-sxm-80g")) ==
        AttentionKernel::flash);
  CHECK(attention_run(stack_preset("megatron-core"), wide, gpu_preset("h100-sxm-80g")) ==
        AttentionKernel::cudnn);
  Gpu ada = gpu_preset("a100-sxm-80g");
  ada.compute_capability = 8.9;
  CHECK(flash2_takes_heads(192, 192, ada));
  CHECK_FALSE(flash2_takes_heads(256, 256, ada));  // over 192: sm80/90/100/120 only
  CHECK(flash2_takes_heads(256, 256, gb200));
  CHECK_FALSE(flash2_takes_heads(250, 250, gb200));  // not a multiple of 8
  CHECK_FALSE(flash2_takes_heads(192, 128, gb200));  // MLA
  wide.explicit_head_dim = 320;                      // wider than any: unfused everywhere
  CHECK(attention_run(stack_preset("megatron-core"), wide, gpu_preset("h100-sxm-80g")) ==
        AttentionKernel::unfused);
  // Other kernels are the stack's own (the flash ones are checked by check_stack_for_model).
  CHECK(attention_run(stack_preset("fsdp"), wide, gb200) == AttentionKernel::flash);

  // The estimate prices the fallback and says so: slower than cuDNN's kernel (unfused scores
  // on HBM) and the same as a stack stating attention: unfused.
  Cluster cluster = test::round_cluster();
  cluster.gpu.compute_capability = 10.0;  // a Blackwell round GPU
  Model small = test::small_model();
  small.explicit_head_dim = 192;  // 4 heads of 192
  ParallelConfig config;
  config.dp = 2;
  config.micro_batch = 1;
  const Placement placement = dp_placement(2);
  EstimateOptions cudnn;
  cudnn.stack = load_stack("name: old\nbase: megatron-core\ncudnn_blackwell_heads: []\n", "o.yaml");
  const Estimate fallback = estimate(cluster, small, config, placement, nullptr, cudnn);
  CHECK(fallback.attention == AttentionKernel::flash);
  EstimateOptions flash = cudnn;
  flash.stack.attention = AttentionKernel::flash;
  const Estimate stated = estimate(cluster, small, config, placement, nullptr, flash);
  CHECK(stated.attention == AttentionKernel::flash);
  CHECK(fallback.time.step_s == stated.time.step_s);
}
TEST_CASE("FlashAttention takes equal heads up to its width: MLA and wider heads are refused",
          "[stack][attention]") {
  const Gpu h100 = gpu_preset("h100-sxm-80g");
  const Model dsv3 = model_preset("deepseek-v3");  // 192/128: FlashAttention takes no MLA
  CHECK_THROWS_WITH(check_stack_for_model(stack_preset("torchtitan"), dsv3, h100),
                    "stack torchtitan: attention: flash takes no 192/128 heads (Q/K and V head "
                    "dims) on h100-sxm-80g: FlashAttention 2 takes equal ones up to 256, "
                    "multiples of 8 (over 192 on compute capability 8.0, 9.0, 10.0 and 12.0 "
                    "only), its Triton kernel up to 128; Transformer Engine falls back to its "
                    "unfused attention there, PyTorch's SDPA to a kernel with no rate here: use a "
                    "stack with attention: unfused or cudnn");  // Hopper's cuDNN takes MLA
  CHECK_NOTHROW(check_stack_for_model(stack_preset("torchtitan"), model_preset("llama3-8b"), h100));
  // 256-dim heads: FlashAttention 2 takes them, the Triton kernel (up to 128) does not; the
  // refusal names what does: FlashAttention 2, and cuDNN on Hopper (up to 256).
  Model wide = model_preset("llama3-8b");
  wide.explicit_head_dim = 256;
  CHECK_NOTHROW(check_stack_for_model(stack_preset("fsdp"), wide, h100));
  Stack triton = stack_preset("fsdp");
  triton.attention = AttentionKernel::flash_triton;
  CHECK_THROWS_WITH(check_stack_for_model(triton, wide, gpu_preset("a100-sxm-80g")),
                    Catch::Contains("flash_triton takes no 256/256 heads") &&
                        Catch::EndsWith("use a stack with attention: unfused or flash"));
  CHECK_THROWS_WITH(check_stack_for_model(triton, wide, h100),
                    Catch::EndsWith("use a stack with attention: unfused, flash or cudnn"));
  // cudnn stacks are not refused for heads: Transformer Engine falls back (attention_run).
  wide.explicit_head_dim = 320;
  CHECK_NOTHROW(check_stack_for_model(stack_preset("megatron-core"), wide, h100));
  CHECK_THROWS(check_stack_for_model(stack_preset("fsdp"), wide, h100));
}

TEST_CASE("FP8 attention takes only the heads cuDNN's FP8 kernels train", "[stack][attention]") {
  // fused_attn.cpp's FP8 branch: Hopper trains heads of exactly 128, Blackwell up to 128.
  Model model = model_preset("llama3-8b");  // 32 heads of 128
  model.training.dtype = Dtype::fp8;
  model.training.fp8.attention = true;
  const Stack core = stack_preset("megatron-core");
  CHECK_NOTHROW(check_stack_for_model(core, model, gpu_preset("h100-sxm-80g")));
  CHECK_NOTHROW(check_stack_for_model(core, model, gpu_preset("b200")));
  model.explicit_head_dim = 64;  // Blackwell takes it, Hopper's FP8 kernel 128 only
  CHECK_NOTHROW(check_stack_for_model(core, model, gpu_preset("b200")));
  CHECK_THROWS_WITH(check_stack_for_model(core, model, gpu_preset("h100-sxm-80g")),
                    "model llama3-8b: training.fp8.attention: cuDNN's FP8 attention, the only one "
                    "Transformer Engine has, trains no 64/64 heads on h100-sxm-80g (compute "
                    "capability 9.0: heads of 128 only); set it false");
  model.explicit_head_dim = 192;  // wider: no FP8 kernel on either
  CHECK_THROWS(check_stack_for_model(core, model, gpu_preset("b200")));
  model.training.fp8.attention = false;  // 16-bit attention: FlashAttention 2 on B200, priced
  CHECK_NOTHROW(check_stack_for_model(core, model, gpu_preset("b200")));
}

TEST_CASE("stack: the output layer's deferred weight gradients", "[stack]") {
  // Megatron-Core's default (False) in every preset; a stack file turns it on with its limit.
  for (const char* name : {"megatron-core", "megatron-core-perf", "megatron-2021"}) {
    CHECK_FALSE(stack_preset(name).defer_output_wgrad);
  }
  const std::string head = "name: x\nattention: flash\ntp_overlap: none\n";
  const Stack s =
      load_stack(head + "defer_output_wgrad: true\noutput_wgrad_deferral_limit: 22\n", "s.yaml");
  CHECK(s.defer_output_wgrad);
  CHECK(s.output_wgrad_deferral_limit == 22);
  CHECK(load_stack(head + "defer_output_wgrad: true\n", "s.yaml").output_wgrad_deferral_limit ==
        0);  // Megatron-Core's 0: every call
  // The limit comes with the switch: setting the switch again on a base that defers 22 starts
  // from Megatron-Core's 0, not the base's 22.
  const StackFileReader reader = [](const std::string& name, const std::string&,
                                    const std::string&) -> std::optional<StackText> {
    if (name != "d22.yaml") return std::nullopt;
    return StackText{
        "base: megatron-core-perf\ndefer_output_wgrad: true\n"
        "output_wgrad_deferral_limit: 22\n",
        "d22.yaml", ""};
  };
  CHECK(load_stack("base: d22.yaml\ndefer_output_wgrad: true\n", "v.yaml", reader)
            .output_wgrad_deferral_limit == 0);
  CHECK(load_stack("base: d22.yaml\n", "v.yaml", reader).output_wgrad_deferral_limit == 22);
  CHECK(load_stack("base: d22.yaml\noutput_wgrad_deferral_limit: 50\n", "v.yaml", reader)
            .output_wgrad_deferral_limit == 50);
  // "this argument is invalid if defer_embedding_wgrad_compute is False"
  CHECK_THROWS_WITH(load_stack(head + "output_wgrad_deferral_limit: 22\n", "s.yaml"),
                    "s.yaml:4: output_wgrad_deferral_limit: needs defer_output_wgrad: true");
  CHECK_THROWS_WITH(
      load_stack(head + "defer_output_wgrad: true\noutput_wgrad_deferral_limit: -1\n", "s.yaml"),
      Catch::Contains("s.yaml:5: output_wgrad_deferral_limit"));
  CHECK_THROWS_WITH(
      load_stack(head + "defer_output_wgrad: true\noutput_wgrad_deferral_limit: 1000001\n",
                 "s.yaml"),
      "s.yaml:5: output_wgrad_deferral_limit: expected at most 1000000 (0 defers every call)");
}
