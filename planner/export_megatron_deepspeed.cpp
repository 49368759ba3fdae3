// --emit megatron-deepspeed: microsoft/Megatron-DeepSpeed's pretrain_gpt.py flags at f4157bea
// (main's last commit) with the DeepSpeed JSON config it passes to deepspeed.initialize, as a
// shell script that writes the JSON and starts torchrun. Flags:
// tests/data/emit/megatron-deepspeed-f4157bea.txt (megatron/arguments.py, and DeepSpeed's own
// --deepspeed/--deepspeed_config from deepspeed/__init__.py); JSON keys: DeepSpeed v0.19.5's.
// Megatron-DeepSpeed reads the config with json.load (megatron/training.py L73-87), so it is
// strict JSON, the comments outside it.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "planner/export_target.h"

namespace trident::emit {

namespace {

/// GPTModelPipe's stages: PipelineModule(partition_method='type:transformer') weighs each
/// decoder layer 1 and the embedding, final norm and output layer 0 (megatron/model/
/// gpt_model.py L459-463; DeepSpeed runtime/pipe/module.py L412-417), and partition_balanced
/// (runtime/utils.py L627-665) then gives the first L mod PP stages one layer more (a replay of
/// it over PP 2-16 and every L up to 128, 2026-12-06).
std::vector<int> pipe_stages(int layers, int pp) {
  std::vector<int> out(static_cast<std::size_t>(pp), layers / pp);
  for (int i = 0; i < layers % pp; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

/// Whether GPTModelPipe's split is the plan's: the same ends and the same middle stages (the
/// cost model prices the slowest stage, not where a middle one sits).
bool pipe_split_is_plans(int layers, int pp) {
  const StageLayers s = stage_layers(layers, pp);
  if (s.even(pp)) return true;
  std::vector<int> plan = stage_runs(layers, pp, s);
  std::vector<int> pipe = pipe_stages(layers, pp);
  if (plan.front() != pipe.front() || plan.back() != pipe.back()) return false;
  std::sort(plan.begin() + 1, plan.end() - 1);
  std::sort(pipe.begin() + 1, pipe.end() - 1);
  return plan == pipe;
}

/// The shapes GPTModelPipe takes: GeLU by default, --swiglu, --squared-relu
/// (megatron/model/transformer.py L137-141); --normalization layernorm|rmsnorm (lowercase);
/// RoPE by --use-rotary-position-embeddings, its base an integer
/// (--rotary-position-embeddings-theta, type=int); GQA by --num-key-value-heads.
std::string model_flags(const Model& m) {
  std::string t = flag("--num-layers", str(m.layers)) + flag("--hidden-size", str(m.hidden)) +
                  flag("--num-attention-heads", str(m.heads));
  if (m.kv_heads != m.heads) t += flag("--num-key-value-heads", str(m.kv_heads));
  if (m.explicit_head_dim > 0) t += flag("--kv-channels", str(m.explicit_head_dim));
  // Always written: unset it is 4h, or int(8h/3/64)*64 with --swiglu (arguments.py L286-296).
  t += flag("--ffn-hidden-size", str(m.ffn_hidden));
  if (m.ffn == FfnKind::swiglu) t += flag("--swiglu");
  if (m.ffn == FfnKind::relu2) t += flag("--squared-relu");
  t += flag("--normalization", m.norm == NormKind::rmsnorm ? "rmsnorm" : "layernorm");
  if (!m.bias) t += flag("--disable-bias-linear");
  if (!m.learned_positions) {
    t += flag("--use-rotary-position-embeddings") +
         flag("--rotary-position-embeddings-theta", str(m.rope_base));
  }
  t += flag("--max-position-embeddings", str(m.seq_len)) + flag("--seq-length", str(m.seq_len));
  if (!m.tied_embeddings) t += flag("--untie-embeddings-and-output-weights");
  // Both default to 0.1 (arguments.py L768, L770): the model's own, written.
  const std::string dropout = fmt::format("{:g}", m.dropout);
  t += flag("--attention-dropout", dropout) + flag("--hidden-dropout", dropout);
  // Its NullTokenizer adds an end-of-document token to --vocab-size ("Size of vocab before EOD
  // or padding", arguments.py L1269-1270; tokenizer.py L510-514 @f4157bea): V - 1 builds V.
  return t + flag("--tokenizer-type", "NullTokenizer") + flag("--vocab-size", str(m.vocab - 1));
}

/// The attention kernel as priced: CoreAttention (unfused) by default, FlashAttention 2 or
/// its Triton kernel by switch (arguments.py L927-936). No cuDNN fused attention: FlashAttention
/// 2 written for it, and the script's comment says so (attention_note).
std::string attention_flags(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::unfused:
      return "";
    case AttentionKernel::flash_triton:
      return flag("--use-flash-attn-triton");
    case AttentionKernel::flash:
    case AttentionKernel::cudnn:
      break;
  }
  return flag("--use-flash-attn-v2");
}

std::string attention_note(AttentionKernel kernel) {
  if (kernel != AttentionKernel::cudnn) return "";
  return "# attention: the plan was priced with cuDNN's fused attention, which "
         "Megatron-DeepSpeed does not have; FlashAttention 2 is written (needs the flash_attn "
         "package)\n";
}

/// Full recompute of every layer: the pipeline checkpoints every --checkpoint-num-layers
/// decoder layers (gpt_model.py L446-452), as the non-pipeline path does with DeepSpeed's
/// checkpointing (transformer.py L1910-1921); --deepspeed-activation-checkpointing hands
/// Megatron's RNG tracker to DeepSpeed's checkpoint (initialize.py L169-193). Selective: core
/// attention inside the layer (transformer.py L625-629), unfused attention only.
std::string recompute_flags(const ParallelConfig& c) {
  if (c.recompute == Recompute::selective) return flag("--recompute-granularity", "selective");
  if (c.recompute != Recompute::full) return "";
  return flag("--checkpoint-activations") + flag("--checkpoint-num-layers", "1") +
         flag("--deepspeed-activation-checkpointing");
}

/// Off DeepSpeed's pipeline engine (--no-pipeline-parallel, arguments.py L94-96: PP 1): ZeRO-2/3,
/// which the engine asserts against for any PipelineModule, PP 1 included (runtime/pipe/
/// engine.py L76-77), and sequence parallelism, which the repository runs only so
/// (deepspeed4science/megatron_long_seq_support/pretrain_gpt_30B_seq_parallel.sh L299, L332).
bool off_pipeline_engine(const ParallelConfig& c) { return c.zero >= 2 || c.sequence_parallel; }

/// --zero-stage is Megatron's copy of the stage (zero.Init at 3, pretrain_gpt.py L46-50; its
/// default 1.0): written equal to the config's.
std::string parallel_flags(const Model& model, const ParallelConfig& c) {
  std::string t = flag("--tensor-model-parallel-size", str(c.tp)) +
                  flag("--pipeline-model-parallel-size", str(c.pp));
  if (off_pipeline_engine(c)) t += flag("--no-pipeline-parallel");
  if (c.sequence_parallel) t += flag("--sequence-parallel");
  t += flag("--micro-batch-size", str(c.micro_batch)) +
       flag("--global-batch-size", str(model.training.global_batch));
  return t + recompute_flags(c);
}

std::string precision_flags(Dtype dtype) {
  if (dtype == Dtype::bf16) return flag("--bf16");
  if (dtype == Dtype::fp16) return flag("--fp16");
  return "";
}

/// The gradient reduction as priced. 16-bit training reduces in the model's dtype unless
/// communication_data_type says fp32 (DeepSpeed engine.py L1364-1375); bf16 at ZeRO-1 keeps
/// fp32 gradients with grad_accum_dtype fp32, DeepSpeed's BF16_Optimizer (engine.py
/// L1950-1952), as Megatron-DeepSpeed's own bf16 recipe (examples_deepspeed/
/// universal_checkpointing/megatron_gpt/run_bf16.sh L128-148).
void reduction_entries(Dtype dtype, const ParallelConfig& c, const StackSwitches& s,
                       std::vector<std::string>& entries) {
  const bool bits16 = dtype == Dtype::bf16 || dtype == Dtype::fp16;
  if (!bits16 || s.grad_reduce_bytes != 4) return;
  if (dtype == Dtype::bf16 && c.zero == 1) {
    entries.emplace_back(R"("data_types": {"grad_accum_dtype": "fp32"})");
  }
  entries.emplace_back(R"("communication_data_type": "fp32")");
}

/// The DeepSpeed config: the batch identity train_batch_size = micro x accumulation x DP
/// (runtime/config.py L912-978; the pipeline engine asserts it again, pipe/engine.py
/// L109-111), the ZeRO stage, the dtype, gradient clipping explicit (DeepSpeed's default
/// became 1.0 in v0.19.3). Overlap of the reduction with backward only off the pipeline
/// engine, which reduces after the last micro-batch (pipe/engine.py L79-80).
std::string ds_config(const Model& model, const ParallelConfig& c, const StackSwitches& s) {
  std::vector<std::string> entries = {
      "\"train_batch_size\": " + str(model.training.global_batch),
      "\"train_micro_batch_size_per_gpu\": " + str(c.micro_batch),
      "\"gradient_accumulation_steps\": " + str(c.num_micro_batches(model.training.global_batch)),
      "\"gradient_clipping\": 1.0"};
  const bool overlap =
      c.zero >= 1 && c.zero <= 2 && off_pipeline_engine(c) && c.dp > 1 && s.dp_overlap_grad_reduce;
  entries.push_back("\"zero_optimization\": {\"stage\": " + str(c.zero) +
                    (overlap ? ", \"overlap_comm\": true" : "") + "}");
  const Dtype dtype = model.training.dtype;
  if (dtype == Dtype::bf16) entries.emplace_back(R"("bf16": {"enabled": true})");
  if (dtype == Dtype::fp16) entries.emplace_back(R"("fp16": {"enabled": true})");
  reduction_entries(dtype, c, s, entries);
  entries.emplace_back("\"steps_per_print\": 10");
  entries.emplace_back("\"wall_clock_breakdown\": false");
  return json_object(entries);
}

/// "stage 3" or "stages 0-2".
std::string stage_range(int first, int last) {
  return first == last ? "stage " + str(first) : "stages " + str(first) + "-" + str(last);
}

std::string pipeline_note(const Model& model, const ParallelConfig& c, const StackSwitches& s) {
  std::string t;
  if (c.pp > 1) {
    const std::vector<int> stages = pipe_stages(model.layers, c.pp);
    // The first `longer` stages hold one layer more than the rest.
    const auto longer = static_cast<int>(std::count(stages.begin(), stages.end(), stages.front()));
    t += "# pipeline: DeepSpeed's engine runs 1F1B over " + str(c.pp) +
         " stages of GPTModelPipe, which splits the decoder layers itself ('type:transformer'): " +
         (longer == c.pp ? str(stages.front()) + " a stage"
                         : str(stages.front()) + " on " + stage_range(0, longer - 1) + ", " +
                               str(stages.back()) + " on " + stage_range(longer, c.pp - 1)) +
         "\n";
  }
  if (!off_pipeline_engine(c) && c.dp > 1 && s.dp_overlap_grad_reduce) {
    t += "# data parallel: the plan was priced with the gradient reduction behind backward; "
         "DeepSpeed's pipeline engine reduces after the last micro-batch (runtime/pipe/engine.py "
         "L79-80), slower than priced (--stack deepspeed-megatron prices it so)\n";
  }
  return t;
}

}  // namespace

std::optional<Limit> megatron_deepspeed_limit(const Input& in) {
  const Model& m = in.model;
  const ParallelConfig& c = in.config;
  // FP8 needs Transformer Engine's layers, which GPTModelPipe does not build (transformer.py
  // L1663, L1715-1724: the non-pipeline ParallelTransformer only).
  if (m.training.dtype == Dtype::fp8 || m.training.dtype == Dtype::tf32) {
    return limit(RefusalKind::dtype);
  }
  if (m.ffn == FfnKind::relu || m.ffn == FfnKind::geglu) return limit(RefusalKind::ffn);
  if (m.qk_layernorm) return limit(RefusalKind::qk_norm);
  ParallelConfig fixed = c;
  if (c.virtual_stages > 1) {  // TrainSchedule is plain 1F1B (DeepSpeed pipe/schedule.py)
    fixed.virtual_stages = 1;
    return limit(RefusalKind::interleaved, fixed);
  }
  if (auto ends = set_ends_limit(in)) return ends;
  if (!pipe_split_is_plans(m.layers, c.pp)) {
    Limit out = limit(RefusalKind::uneven_stages);
    const StageLayers s = stage_layers(m.layers, c);
    out.obstacle.first_layers = s.first;
    out.obstacle.middle_layers = s.middle;
    out.obstacle.last_layers = s.last;
    return out;
  }
  if (c.pp > 1 && c.zero >= 2) {
    fixed.zero = 1;
    return limit(RefusalKind::sharding_with_pp, fixed);
  }
  // DeepSpeed's stage boundaries split each activation over the TP group (pipe_partitioned),
  // which assumes the TP ranks hold the same tensor; Megatron's sequence parallelism gives each
  // a slice (pipe/engine.py L137-144, L731-770), and no Megatron-DeepSpeed example runs it
  // with PP: written off there, off the pipeline engine at PP 1.
  if (c.sequence_parallel && c.pp > 1) {
    fixed.sequence_parallel = false;
    return limit(RefusalKind::sequence_parallel, fixed);
  }
  // Core attention is recomputed inside CoreAttention only; with FlashAttention it is a
  // no-op (transformer.py L625-629).
  if (c.recompute == Recompute::selective && (in.switches.attention != AttentionKernel::unfused ||
                                              in.selective != SelectiveKind::attention)) {
    fixed.recompute = Recompute::full;
    return limit(RefusalKind::selective_recompute, fixed);
  }
  if (c.recompute == Recompute::full && c.recompute_layers > 0) {
    fixed.recompute_layers = 0;
    return limit(RefusalKind::partial_recompute, fixed);
  }
  // bf16 at ZeRO-0 with fp32 gradients: DeepSpeed raises "unsupported mix" (engine.py
  // L1976-1977); BF16_Optimizer keeps them at ZeRO-1.
  if (m.training.dtype == Dtype::bf16 && c.zero == 0 && in.switches.grad_reduce_bytes == 4) {
    fixed.zero = 1;
    return limit(RefusalKind::bf16_unsharded, fixed);
  }
  return std::nullopt;
}

std::string megatron_deepspeed_text(const Input& in, const Launch& launch) {
  std::string t = header_line(in);
  t += "# still to add: --data-path (Megatron-DeepSpeed has no mock data) and your tokenizer in "
       "place of the NullTokenizer (vocabulary " +
       str(in.model.vocab) + ", written as --vocab-size " + str(in.model.vocab - 1) +
       ": the NullTokenizer adds its end-of-document token); --train-iters; --lr and its "
       "schedule; --save/--load\n";
  t += vocab_padding_note(in.model, in.config.tp);
  t += placement_comment(launch, "#") + pipeline_note(in.model, in.config, in.switches) +
       attention_note(in.switches.attention);
  t += "cat > ds_config.json <<'EOF'\n" + ds_config(in.model, in.config, in.switches) + "EOF\n";
  const std::string flags =
      model_flags(in.model) + precision_flags(in.model.training.dtype) +
      parallel_flags(in.model, in.config) + attention_flags(in.switches.attention) +
      flag("--deepspeed") + flag("--deepspeed_config", "ds_config.json") +
      flag("--zero-stage", str(in.config.zero)) + optimizer_flag(in.model.training.optimizer);
  // Sequence parallelism raises without one device connection (arguments.py L400-407).
  return t +
         pretrain_gpt_command(
             launch, in.config.sequence_parallel ? "CUDA_DEVICE_MAX_CONNECTIONS=1 " : "", flags);
}

}  // namespace trident::emit
