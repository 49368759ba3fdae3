// --emit megatron: Megatron-LM pretrain_gpt.py flags at core_v0.19.0. Flag names and choices:
// tests/data/emit/megatron-core_v0.19.0.txt (megatron/training/arguments.py and the
// dataclasses its ArgumentGroupFactory turns into flags).
#include <fmt/format.h>

#include <string>

#include "planner/export_target.h"

namespace trident::emit {

namespace {

std::string flag(const std::string& name, const std::string& value = "") {
  return "  " + name + (value.empty() ? "" : " " + value) + " \\\n";
}

/// ZeRO-0: DDP; ZeRO-1: the distributed optimizer; ZeRO-2/3: Megatron-FSDP, sharding
/// "optim_grads" / "optim_grads_params" (arguments.py --data-parallel-sharding-strategy;
/// Megatron-FSDP asserts --ckpt-format fsdp_dtensor, arguments.py:1146, and turns the
/// distributed optimizer on itself, arguments.py:1112). Not --use-torch-fsdp2: it asserts
/// untied embeddings, no fp16 and no gradient-accumulation fusion (arguments.py:997-1013).
std::string sharding_flags(int zero) {
  if (zero == 0) return "";
  if (zero == 1) return flag("--use-distributed-optimizer");
  return flag("--use-distributed-optimizer") + flag("--use-megatron-fsdp") +
         flag("--data-parallel-sharding-strategy",
              zero == 2 ? "optim_grads" : "optim_grads_params") +
         flag("--ckpt-format", "fsdp_dtensor");
}

std::string model_flags(const Model& m) {
  std::string t = flag("--num-layers", str(m.layers)) + flag("--hidden-size", str(m.hidden)) +
                  flag("--num-attention-heads", str(m.heads));
  if (m.kv_heads != m.heads) {
    t += flag("--group-query-attention") + flag("--num-query-groups", str(m.kv_heads));
  }
  // Heads wider or narrower than hidden / heads: --kv-channels (TransformerConfig.kv_channels,
  // a flag through ArgumentGroupFactory; hidden / heads when unset, arguments.py L1291-1293
  // @core_v0.19.0).
  if (m.explicit_head_dim > 0) t += flag("--kv-channels", str(m.explicit_head_dim));
  t += flag("--ffn-hidden-size", str(m.ffn_hidden));
  if (m.ffn == FfnKind::swiglu) t += flag("--swiglu");
  if (m.ffn == FfnKind::relu2) t += flag("--squared-relu");
  t += flag("--normalization", m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
  if (!m.bias) t += flag("--disable-bias-linear");
  t += flag("--position-embedding-type", m.learned_positions ? "learned_absolute" : "rope");
  t += flag("--max-position-embeddings", str(m.seq_len)) + flag("--seq-length", str(m.seq_len));
  if (!m.tied_embeddings) t += flag("--untie-embeddings-and-output-weights");
  // The model's dropout, written: pretrain_gpt.py defaults both to 0.1 (arguments.py), which
  // a dropout-free model (Llama) was not priced with (its masks, its kernels).
  const std::string dropout = fmt::format("{:g}", m.dropout);
  t += flag("--attention-dropout", dropout) + flag("--hidden-dropout", dropout);
  t += flag("--mock-data") + flag("--tokenizer-type", "NullTokenizer") +
       flag("--vocab-size", str(m.vocab));
  return t;
}

/// FP8: Transformer Engine's hybrid format (E4M3 forward, E5M2 backward) with the model's
/// recipe (current scaling is Megatron's "tensorwise"), FP8 parameters with
/// --fp8-param-gather; the 16-bit parts in BF16.
std::string precision_flags(const Training& training) {
  const Dtype dtype = training.dtype;
  if (dtype == Dtype::fp16) return flag("--fp16");
  if (dtype == Dtype::fp8) {
    const Fp8Recipe recipe = training.fp8.recipe;
    std::string t =
        flag("--bf16") + flag("--fp8-format", "hybrid") +
        flag("--fp8-recipe", recipe == Fp8Recipe::current ? "tensorwise" : to_string(recipe));
    if (training.fp8.params) t += flag("--fp8-param-gather");
    return t;
  }
  if (dtype == Dtype::bf16) return flag("--bf16");
  return "";  // fp32: neither flag
}

std::string parallel_flags(const Model& model, const ParallelConfig& c, CpKind cp_kind) {
  std::string t = flag("--tensor-model-parallel-size", str(c.tp)) +
                  flag("--pipeline-model-parallel-size", str(c.pp));
  // Context parallel (arguments.py --context-parallel-size, --cp-comm-type p2p|a2a).
  if (c.cp > 1) {
    t += flag("--context-parallel-size", str(c.cp)) + flag("--cp-comm-type", to_string(cp_kind));
  }
  if (c.virtual_stages > 1) {
    t += flag("--num-layers-per-virtual-pipeline-stage", str(layers_per_chunk(model, c)));
  }
  // Layers that do not divide by PP: the first and last stages' counts (TransformerConfig
  // num_layers_in_first/last_pipeline_stage), the middle stages the rest in equal parts.
  if (const auto s = uneven_stages(model, c)) {
    t += flag("--decoder-first-pipeline-num-layers", str(s->first)) +
         flag("--decoder-last-pipeline-num-layers", str(s->last));
  }
  if (c.sequence_parallel) t += flag("--sequence-parallel");
  t += flag("--micro-batch-size", str(c.micro_batch)) +
       flag("--global-batch-size", str(model.training.global_batch));
  if (c.recompute == Recompute::selective) t += flag("--recompute-granularity", "selective");
  if (c.recompute == Recompute::full) {
    // Partial: the first N layers of each model chunk (transformer_block.py, method block).
    t += flag("--recompute-granularity", "full") +
         (c.recompute_layers > 0
              ? flag("--recompute-method", "block") +
                    flag("--recompute-num-layers", str(c.recompute_layers))
              : flag("--recompute-method", "uniform") + flag("--recompute-num-layers", "1"));
  }
  return t + sharding_flags(c.zero);
}

}  // namespace

std::optional<Limit> megatron_limit(const Input& in) {
  if (auto uneven = uneven_stage_limit(in, true)) return uneven;
  const Dtype dtype = in.model.training.dtype;
  if (dtype == Dtype::tf32) {
    return limit(RefusalKind::dtype);
  }
  if (in.model.ffn == FfnKind::relu || in.model.ffn == FfnKind::geglu) {
    return limit(RefusalKind::ffn);
  }
  if (in.config.zero >= 2 && in.config.pp > 1) {
    ParallelConfig fixed = in.config;
    fixed.zero = 1;
    return limit(RefusalKind::sharding_with_pp, fixed);
  }
  return std::nullopt;
}

std::string megatron_text(const Input& in, const Launch& launch) {
  std::string t = header_line(in);
  t += "# still to add: --data-path and --tokenizer-type/--tokenizer-model for your data in "
       "place of --mock-data and the NullTokenizer (vocabulary " +
       str(in.model.vocab) + "); --train-iters; --lr and its schedule; --save/--load\n";
  t += placement_comment(launch, "#");
  t += "# on every node, NODE_RANK 0.." + str(launch.nodes - 1) +
       " and MASTER_ADDR the first node's address:\n";
  // Before Blackwell, TP asserts CUDA_DEVICE_MAX_CONNECTIONS=1 (arguments.py:1437) and
  // Megatron-FSDP asserts it is not 1 (arguments.py:1143).
  if (in.config.tp > 1 && in.config.zero < 2) t += "CUDA_DEVICE_MAX_CONNECTIONS=1 ";
  t += "torchrun --nnodes " + str(launch.nodes) + " --nproc-per-node " + str(launch.gpus_per_node) +
       " --node-rank $NODE_RANK --master-addr $MASTER_ADDR --master-port 6000 \\\n";
  t += "  pretrain_gpt.py \\\n";
  std::string flags = model_flags(in.model) + precision_flags(in.model.training) +
                      parallel_flags(in.model, in.config, in.cp_kind);
  flags.resize(flags.size() - 3);  // the last line has no continuation
  return t + flags + "\n";
}

}  // namespace trident::emit
