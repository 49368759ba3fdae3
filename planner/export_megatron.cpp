// --emit megatron: Megatron-LM pretrain_gpt.py flags at core_v0.19.0. Flag names and choices:
// tests/data/emit/megatron-core_v0.19.0.txt (megatron/training/arguments.py and the
// dataclasses its ArgumentGroupFactory turns into flags).
#include <fmt/format.h>

#include <string>

#include "costmodel/ep_overlap.h"
#include "planner/export_target.h"

namespace trident::emit {

namespace {

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

/// Transformer Engine's userbuffers for TP as the plan was priced: they need sequence
/// parallelism (arguments.py L1401-1402 @core_v0.19.0).
std::string tp_overlap_flags(const ParallelConfig& c, const StackSwitches& s) {
  return writes_userbuffers(c, s) ? flag("--tp-comm-overlap") : "";
}

/// The output layer's weight gradients deferred to the pipeline's flush as priced: the
/// TransformerConfig fields' own flags (ArgumentGroupFactory over TransformerConfig and its
/// ModelParallelConfig, arguments.py L2196-2290 @core_v0.19.0; Megatron-LM's functional test
/// gpt3_mcore_te_tp2_pp2_defer_embedding_wgrad_compute). They need PP > 1 and gradient
/// accumulation fused (model_parallel_config.py L545-553), Megatron-LM's default.
std::string deferred_wgrad_flags(const StackSwitches& s) {
  if (!s.defer_output_wgrad) return "";
  return flag("--defer-embedding-wgrad-compute") +
         flag("--wgrad-deferral-limit", str(s.output_wgrad_deferral_limit));
}

/// The data-parallel overlaps the pricing stack ran (Megatron-LM's defaults are off,
/// distributed_data_parallel_config.py L18, L21 @core_v0.19.0): the gradient reduction behind
/// backward, and the parameter all-gather behind forward, which needs the distributed
/// optimizer (or Megatron-FSDP) and the reduction overlapped (arguments.py L990-995).
std::string dp_overlap_flags(const ParallelConfig& c, const StackSwitches& s) {
  if (c.dp * c.cp < 2 || !s.dp_overlap_grad_reduce) return "";
  return flag("--overlap-grad-reduce") +
         (overlaps_param_gather(c, s) ? flag("--overlap-param-gather") : "");
}

/// The attention kernel as priced rather than Transformer Engine's choice (--attention-backend,
/// default auto; attn_backend).
std::string attention_flags(AttentionKernel kernel) {
  const char* backend = attn_backend(kernel);
  return backend != nullptr ? flag("--attention-backend", backend) : "";
}

/// The gradients' reduction (and buffer) dtype as priced: Megatron-LM reduces bf16 training's
/// in fp32 unless --grad-reduce-in-bf16, and fp16 training's in fp16 unless
/// --accumulate-allreduce-grads-in-fp32 (arguments.py L1181-1194 @core_v0.19.0).
std::string grad_reduce_flags(Dtype dtype, const StackSwitches& s) {
  if (dtype == Dtype::fp16) {
    return s.grad_reduce_bytes == 4 ? flag("--accumulate-allreduce-grads-in-fp32") : "";
  }
  const bool bf16_params = dtype == Dtype::bf16 || dtype == Dtype::fp8;
  return bf16_params && s.grad_reduce_bytes == 2 ? flag("--grad-reduce-in-bf16") : "";
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
  if (m.ffn == FfnKind::relu2) {
    t += flag("--squared-relu");
    // The non-SwiGLU fusion follows --bias-gelu-fusion (default on; argument_utils.py L315-322
    // @core_v0.19.0), which TransformerConfig refuses for any activation but GELU, SiLU and
    // quick-GELU (transformer_config.py L2114-2119); --disable-bias-linear already turns it off.
    if (m.bias) t += flag("--no-bias-gelu-fusion");
  }
  t += flag("--normalization", m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
  if (!m.bias) t += flag("--disable-bias-linear");
  t += flag("--position-embedding-type", m.learned_positions ? "learned_absolute" : "rope");
  // RoPE's base (arguments.py L2335 @core_v0.19.0: --rotary-base, int, default 10000; Llama 3
  // trains with 500000) and Qwen3's per-head Q/K norm (--qk-layernorm; MLA writes it below).
  if (!m.learned_positions) t += flag("--rotary-base", str(m.rope_base));
  if (m.qk_layernorm && m.attention != AttentionKind::mla) t += flag("--qk-layernorm");
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

/// Whether the launch runs the combined 1F1B: the pricing stack's, where Megatron-Core runs it.
bool writes_combined(const Model& m, const ParallelConfig& c, const StackSwitches& s) {
  return s.ep_overlap && combined_1f1b_runs(m, c);
}

/// Which layers are MoE layers as --moe-layer-freq takes it (arguments.py moe_freq_type
/// @core_v0.19.0): nothing when every layer is, N when every N-th from layer 0 is
/// (gpt_layer_specs.py L647-650: i % N == 0), else the pattern as runs, "([0]*3+[1]*58)",
/// which Megatron evaluates to one 0/1 per layer. Quoted for the shell.
std::string moe_layer_freq(const Model& m) {
  if (m.moe.layer_list.empty() && m.moe.first_dense == 0) {
    return m.moe.layer_freq > 1 ? flag("--moe-layer-freq", str(m.moe.layer_freq)) : "";
  }
  std::string pattern;
  for (int i = 0; i < m.layers;) {
    const bool moe = m.is_moe_layer(i);
    int run = 0;
    while (i < m.layers && m.is_moe_layer(i) == moe) {
      ++run;
      ++i;
    }
    pattern += std::string(pattern.empty() ? "" : "+") + (moe ? "[1]*" : "[0]*") + str(run);
  }
  return flag("--moe-layer-freq", "'(" + pattern + ")'");
}

/// Experts as trident prices them (docs/cost_model.md#moe): Megatron-Core's alltoall
/// dispatcher, one grouped GEMM, expert TP 1 (Megatron's default is expert TP = TP), the
/// model's router score function (top-1 softmax needs the softmax before the top-k,
/// transformer_config.py L2328-2336), tokens dropped beyond the capacity factor where the
/// model sets one; and the stack's overlaps where they run.
std::string moe_flags(const Model& m, const ParallelConfig& c, const StackSwitches& moe) {
  if (!m.is_moe()) return "";
  const MoeSpec& e = m.moe;
  std::string t = flag("--num-experts", str(e.experts)) + flag("--moe-router-topk", str(e.top_k)) +
                  flag("--moe-ffn-hidden-size", str(e.expert_ffn_hidden));
  if (e.shared_experts > 0) {
    t += flag("--moe-shared-expert-intermediate-size",
              str(static_cast<long long>(e.shared_experts) * e.expert_ffn_hidden));
  }
  t += moe_layer_freq(m);
  if (e.router == MoeRouter::sigmoid) t += flag("--moe-router-score-function", "sigmoid");
  if (e.top_k == 1 && e.router == MoeRouter::softmax) t += flag("--moe-router-pre-softmax");
  if (e.capacity_factor > 0.0) {
    t += flag("--moe-expert-capacity-factor", fmt::format("{:g}", e.capacity_factor));
  }
  t += flag("--moe-grouped-gemm") + flag("--moe-token-dispatcher-type", "alltoall") +
       flag("--expert-model-parallel-size", str(c.ep)) + flag("--expert-tensor-parallel-size", "1");
  if (moe.moe_permute_fusion) t += flag("--moe-permute-fusion");
  const bool combined = writes_combined(m, c, moe);
  if (moe.shared_expert_overlap && e.shared_experts > 0 && !combined) {
    t += flag("--moe-shared-expert-overlap");
  }
  if (combined) {
    t += flag("--overlap-moe-expert-parallel-comm");
    if (moe.delay_wgrad) t += flag("--delay-wgrad-compute");
  }
  return t;
}

/// Multi-latent attention's ranks and head dims (MLATransformerConfig: qk_head_dim is the
/// part without RoPE, qk_pos_emb_head_dim the RoPE part) and multi-token prediction.
std::string mla_mtp_flags(const Model& m) {
  std::string t;
  if (m.attention == AttentionKind::mla) {
    // DeepSeek's MLA normalises its Q and KV latents (q_a_layernorm, kv_a_layernorm); Megatron
    // builds those norms only with --qk-layernorm (gpt_layer_specs.py L428-429 @core_v0.19.0).
    t += flag("--multi-latent-attention") + flag("--qk-layernorm");
    if (m.mla.q_lora_rank > 0) t += flag("--q-lora-rank", str(m.mla.q_lora_rank));
    t += flag("--kv-lora-rank", str(m.mla.kv_lora_rank)) +
         flag("--qk-head-dim", str(m.mla.qk_nope_head_dim)) +
         flag("--qk-pos-emb-head-dim", str(m.mla.qk_rope_head_dim)) +
         flag("--v-head-dim", str(m.mla.v_head_dim));
  }
  if (m.mtp_layers > 0) t += flag("--mtp-num-layers", str(m.mtp_layers));
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

std::string parallel_flags(const Model& model, const ParallelConfig& c, CpKind cp_kind,
                           SelectiveKind selective, RankOrder order) {
  std::string t = flag("--tensor-model-parallel-size", str(c.tp)) +
                  flag("--pipeline-model-parallel-size", str(c.pp));
  // The plan's rank order: tp-pp-dp (PP inside DP) is Megatron-Core's 'tp-pp-dp' order
  // (parallel_state.py L280-298 @core_v0.19.0), switched on by --use-tp-pp-dp-mapping.
  if (order == RankOrder::tp_pp_dp) t += flag("--use-tp-pp-dp-mapping");
  // Context parallel (arguments.py --context-parallel-size, --cp-comm-type p2p|a2a).
  if (c.cp > 1) {
    t += flag("--context-parallel-size", str(c.cp)) + flag("--cp-comm-type", to_string(cp_kind));
  }
  // An uneven split's layout sets the virtual stages itself (arguments.py L907-918), and the
  // virtual-stage flags must then be left unset (L893-905).
  const auto layout = pipeline_layout(model, c);
  if (c.virtual_stages > 1 && !layout) {
    t += flag("--num-layers-per-virtual-pipeline-stage", str(layers_per_chunk(model, c)));
  }
  // Layers that do not divide by PP: the first and last stages' counts (TransformerConfig
  // num_layers_in_first/last_pipeline_stage), the middle stages the rest in equal parts.
  if (const auto s = uneven_stages(model, c); s && !layout) {
    t += flag("--decoder-first-pipeline-num-layers", str(s->first)) +
         flag("--decoder-last-pipeline-num-layers", str(s->last));
  }
  // Middle stages that differ, or interleaving: each model chunk's layers as a layout (which
  // the first/last counts and account_for_* must then leave unset: transformer_config.py
  // L1936-1953).
  if (layout) {
    t += flag("--pipeline-model-parallel-layout", "\"" + *layout + "\"");
  }
  if (c.sequence_parallel) t += flag("--sequence-parallel");
  t += flag("--micro-batch-size", str(c.micro_batch)) +
       flag("--global-batch-size", str(model.training.global_batch));
  if (c.recompute == Recompute::selective) {
    // Megatron's selective default is core attention ("core_attn"); the MLA up-projections
    // are their own module (--recompute-modules, TransformerConfig.recompute_modules).
    t += flag("--recompute-granularity", "selective");
    if (selective == SelectiveKind::mla_up_proj) t += flag("--recompute-modules", "mla_up_proj");
  }
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
  // Multi-token prediction runs with RoPE (or no) positions only (arguments.py L856-860).
  if (in.model.mtp_layers > 0 && in.model.learned_positions) {
    return limit(RefusalKind::mtp_positions);
  }
  if (auto uneven = uneven_stage_limit(in, true, true)) return uneven;
  // The plan priced HybridEP's exchange; the launch writes the alltoall dispatcher.
  if (in.switches.hybridep && in.model.is_moe() && in.config.ep > 1) {
    return limit(RefusalKind::moe_dispatcher);
  }
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
  // SGD sharded: ZeRO-1 is the DistributedOptimizer, and Megatron-FSDP turns it on
  // (arguments.py L1100-1112), whose constructor asserts Adam, AdamW, HybridDeviceOptimizer or
  // an init_state_fn (distrib_optimizer.py L688-695 @core_v0.19.0), which its SGD builds
  // without (optimizer/__init__.py L617-624): nearest, ZeRO-0.
  if (in.model.training.optimizer == Optimizer::sgd && in.config.zero >= 1) {
    ParallelConfig fixed = in.config;
    fixed.zero = 0;
    return limit(RefusalKind::sgd_sharded, fixed);
  }
  return std::nullopt;
}

std::string megatron_text(const Input& in, const Launch& launch) {
  std::string t = header_line(in);
  t += "# still to add: --data-path and --tokenizer-type/--tokenizer-model for your data in "
       "place of --mock-data and the NullTokenizer (vocabulary " +
       str(in.model.vocab) + "); --train-iters; --lr and its schedule; --save/--load" +
       (in.model.is_moe()
            ? "; the router's load balancing (--moe-router-load-balancing-type, "
              "--moe-aux-loss-coeff: Megatron's defaults are aux_loss at 0), grouping and score "
              "scaling (--moe-router-num-groups, --moe-router-group-topk, "
              "--moe-router-topk-scaling-factor)"
            : "") +
       "\n";
  t += vocab_padding_note(in.model, in.config.tp);
  t += placement_comment(launch, "#") + p2p_overlap_note(in.config, in.switches, "#") +
       triton_attention_note(in.switches.attention, "Megatron-Core");
  // Before Blackwell, TP or CP asserts CUDA_DEVICE_MAX_CONNECTIONS=1 (arguments.py:1413-1437)
  // but with Megatron-FSDP, which asserts it is not 1 (arguments.py:1143), and with the
  // combined 1F1B, which wants more connections: "you can set CUDA_DEVICE_MAX_CONNECTIONS to 1
  // or 32" (arguments.py:1426-1434), 32 for the overlap the plan was priced with.
  const ParallelConfig& c = in.config;
  std::string env;
  if (needs_one_device_connection(c, in.cluster.gpu)) {
    env = writes_combined(in.model, c, in.switches) ? "CUDA_DEVICE_MAX_CONNECTIONS=32 "
                                                    : "CUDA_DEVICE_MAX_CONNECTIONS=1 ";
  }
  const std::string flags =
      model_flags(in.model) + mla_mtp_flags(in.model) +
      moe_flags(in.model, in.config, in.switches) + precision_flags(in.model.training) +
      parallel_flags(in.model, in.config, in.cp_kind, in.selective, in.order) +
      tp_overlap_flags(in.config, in.switches) + deferred_wgrad_flags(in.switches) +
      dp_overlap_flags(in.config, in.switches) +
      // Interleaved 1F1B overlaps its transfers unless told (arguments.py L2965-2967).
      (runs_p2p_exposed(in.config, in.switches) ? flag("--no-overlap-p2p-communication") : "") +
      grad_reduce_flags(in.model.training.dtype, in.switches) +
      attention_flags(in.switches.attention) + optimizer_flag(in.model.training.optimizer);
  return t + pretrain_gpt_command(launch, env, flags);
}

}  // namespace trident::emit
