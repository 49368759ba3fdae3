// --emit nemo-hydra: NeMo v2.4.0's megatron_gpt_pretraining.py, whose Hydra config is
// examples/nlp/language_modeling/conf/megatron_gpt_config.yaml (the NeMo 1.x keys; the file
// is tests/data/emit/nemo-hydra-v2.4.0.txt's source). The emitted YAML overrides that file's keys.
#include <fmt/format.h>

#include <string>

#include "planner/export_target.h"

namespace trident::emit {

namespace {

std::string line(int indent, const std::string& key, const std::string& value) {
  return std::string(static_cast<std::size_t>(indent), ' ') + key + ": " + value + "\n";
}

std::string yes(bool value) { return value ? "true" : "false"; }

/// megatron_gpt_config.yaml: activation 'gelu', 'geglu', 'swiglu', 'reglu', 'squared-relu'.
std::string activation(FfnKind kind) {
  switch (kind) {
    case FfnKind::gelu:
      return "gelu";
    case FfnKind::geglu:
      return "geglu";
    case FfnKind::swiglu:
      return "swiglu";
    case FfnKind::relu2:
      return "squared-relu";
    case FfnKind::relu:
      return "";
  }
  return "";
}

std::string trainer(const Model& model, const Launch& launch) {
  const Dtype dtype = model.training.dtype;
  const std::string precision = dtype == Dtype::fp16 ? "16" : dtype == Dtype::fp32 ? "32" : "bf16";
  return "trainer:\n" + line(2, "devices", str(launch.gpus_per_node)) +
         line(2, "num_nodes", str(launch.nodes)) + line(2, "precision", precision);
}

std::string shape(const Model& m) {
  std::string t =
      line(2, "mcore_gpt", "true") + line(2, "num_layers", str(m.layers)) +
      line(2, "hidden_size", str(m.hidden)) + line(2, "ffn_hidden_size", str(m.ffn_hidden)) +
      line(2, "num_attention_heads", str(m.heads)) +
      line(2, "num_query_groups", m.kv_heads == m.heads ? "null" : str(m.kv_heads)) +
      (m.explicit_head_dim > 0 ? line(2, "kv_channels", str(m.explicit_head_dim)) : "") +
      line(2, "activation", activation(m.ffn)) +
      line(2, "normalization", m.norm == NormKind::rmsnorm ? "rmsnorm" : "layernorm") +
      line(2, "bias", yes(m.bias)) +
      // The conf fuses the bias into the activation (bias_activation_fusion: True,
      // megatron_gpt_config.yaml L158 @v2.4.0), which TransformerConfig refuses for squared ReLU
      // and for a GELU without linear biases (transformer_config.py L1043-1057 @core_v0.13.0).
      (m.ffn == FfnKind::relu2 || (m.ffn == FfnKind::gelu && !m.bias)
           ? line(2, "bias_activation_fusion", "false")
           : "") +
      line(2, "position_embedding_type", m.learned_positions ? "learned_absolute" : "rope") +
      // RoPE's base: cfg.get('rotary_base', 10000) (megatron_gpt_model.py L510 @v2.4.0).
      (m.learned_positions ? "" : line(2, "rotary_base", str(m.rope_base))) +
      // Per-head Q/K norms: the file's default layer spec (te_gpt) builds none whatever
      // qk_layernorm says; the decoder-block spec builds them from the config
      // (megatron_gpt_model.py get_specs L145-169 @v2.4.0, the spec named by model.name;
      // gpt_layer_specs.py get_gpt_decoder_block_spec L395-430 @core_r0.13.0).
      (m.qk_layernorm ? line(2, "name", "decoder_block_gpt") + line(2, "qk_layernorm", "true")
                      : "") +
      line(2, "share_embeddings_and_output_weights", yes(m.tied_embeddings)) +
      line(2, "attention_dropout", fmt::format("{:g}", m.dropout)) +
      line(2, "hidden_dropout", fmt::format("{:g}", m.dropout)) +
      line(2, "encoder_seq_length", str(m.seq_len)) +
      line(2, "max_position_embeddings", str(m.seq_len));
  return t;
}

/// Transformer Engine's layers: for FP8, for userbuffers, for the fused attention kernels the
/// plan was priced with, and for TE's own unfused attention, stated or as the fallback (the
/// file's default, false, builds Megatron-Core's local layers, whose attention is Megatron's
/// unfused one: megatron_gpt_model.py get_specs L144-167 @v2.2.0).
bool uses_te(const Model& m, const ParallelConfig& c, const StackSwitches& s) {
  return m.training.dtype == Dtype::fp8 || writes_userbuffers(c, s) ||
         s.attention != AttentionKernel::unfused || s.te_unfused_attention;
}

/// FP8 through Transformer Engine: HYBRID format (fp8_hybrid), delayed scaling (fp8_interval,
/// fp8_amax_history_len keep the file's defaults).
std::string precision(const Model& m, const ParallelConfig& c, const StackSwitches& s) {
  const Dtype dtype = m.training.dtype;
  // O2 keeps fp32 main weights beside 16-bit ones; torch FSDP switches it off itself
  // (megatron_trainer_builder.py:73), FP32 has nothing to keep.
  const bool o2 = c.zero != 3 && dtype != Dtype::fp32;
  std::string t = line(2, "megatron_amp_O2", yes(o2));
  if (uses_te(m, c, s)) t += line(2, "transformer_engine", "true");
  if (dtype == Dtype::fp8) {
    // FP8 parameters as priced (training.fp8.params: the weights kept and gathered in FP8).
    t += line(2, "fp8", "true") + line(2, "fp8_hybrid", "true") +
         line(2, "fp8_params", yes(m.training.fp8.params));
  }
  return t;
}

/// The attention kernel as priced (model.attention_backend, read by megatron_base_model.py
/// L566-567 into Megatron-Core's AttnBackend, which sets Transformer Engine's NVTE_*_ATTN; its
/// default, auto, asserts those variables unset): with TE's layers only (the local layers'
/// attention is unfused), and nothing for a kernel with no backend.
std::string attention_backend(const Model& m, const ParallelConfig& c, const StackSwitches& s) {
  const char* backend = attn_backend(s.attention);
  if (!uses_te(m, c, s) || backend == nullptr) return "";
  return line(2, "attention_backend", backend);
}

/// The TP overlap as priced: userbuffers (ub_tp_comm_overlap, with TP > 1 and SP). No
/// interleaved schedule runs here (nemo_hydra_limit), so no pipeline transfer overlap either.
std::string comm_overlaps(const ParallelConfig& c, const StackSwitches& s) {
  if (!writes_userbuffers(c, s)) return "";
  // Under torch FSDP (ZeRO-3) the model switches them off: "Userbuffer tensor-parallel
  // communication overlap is not available with FSDP" (megatron_base_model.py L1081-1087
  // @v2.4.0): not written, and said (fsdp_userbuffers_note).
  return c.zero == 3 ? std::string() : line(2, "ub_tp_comm_overlap", "true");
}

/// The output layer's deferred weight gradients the plan was priced with: ModelParallelConfig
/// takes model.defer_embedding_wgrad_compute (megatron_base_model.py L1253-1256 @v2.4.0) but
/// refuses it without gradient_accumulation_fusion, which this file leaves at the conf's False
/// (model_parallel_config.py L375-378 @core_v0.13.0): not written, and said.
std::string deferred_wgrad_note(const StackSwitches& s) {
  if (!s.defer_output_wgrad) return "";
  const std::string which = s.output_wgrad_deferral_limit > 0
                                ? "of its first " + str(s.output_wgrad_deferral_limit) + " calls"
                                : "of every call";
  return "# the plan was priced with the output layer's weight gradients " + which +
         " deferred to the pipeline's flush (the stack's defer_output_wgrad); this file leaves it "
         "off (NeMo's ModelParallelConfig refuses it without gradient_accumulation_fusion, which "
         "stays false here), so this launch runs them in each backward\n";
}

/// The TP userbuffers the plan was priced with, which NeMo 1.x turns off under torch FSDP.
std::string fsdp_userbuffers_note(const ParallelConfig& c, const StackSwitches& s) {
  if (c.zero != 3 || !writes_userbuffers(c, s)) return "";
  return "# TP: the plan was priced with Transformer Engine's userbuffers beside the GEMMs; "
         "NeMo 1.x turns them off under torch FSDP (ZeRO-3: megatron_base_model.py L1081-1087), "
         "so this launch runs its TP collectives without them\n";
}

std::string parallel(const Model& model, const ParallelConfig& c, RankOrder order) {
  std::string t = line(2, "micro_batch_size", str(c.micro_batch)) +
                  line(2, "global_batch_size", str(model.training.global_batch)) +
                  line(2, "tensor_model_parallel_size", str(c.tp)) +
                  line(2, "pipeline_model_parallel_size", str(c.pp)) +
                  line(2, "virtual_pipeline_model_parallel_size", "null") +
                  line(2, "sequence_parallel", yes(c.sequence_parallel));
  // The plan's rank order: tp-pp-dp as the model's use_tp_pp_dp_mapping
  // (megatron_base_model.py L205 @v2.4.0; order 'tp-cp-ep-pp-dp', nlp_overrides.py L171).
  if (order == RankOrder::tp_pp_dp) t += line(2, "use_tp_pp_dp_mapping", "true");
  if (const auto uneven = uneven_stages(model, c)) {
    t += line(2, "num_layers_in_first_pipeline_stage", str(uneven->first)) +
         line(2, "num_layers_in_last_pipeline_stage", str(uneven->last));
  }
  if (c.recompute == Recompute::none) {
    t += line(2, "activations_checkpoint_granularity", "null");
  } else if (c.recompute == Recompute::selective) {
    t += line(2, "activations_checkpoint_granularity", "selective");
  } else {
    const bool block = c.recompute_layers > 0;
    t += line(2, "activations_checkpoint_granularity", "full") +
         line(2, "activations_checkpoint_method", block ? "block" : "uniform") +
         line(2, "activations_checkpoint_num_layers", block ? str(c.recompute_layers) : "1");
  }
  return t;
}

/// ZeRO-0: fused_adam; ZeRO-1: Megatron's distributed optimizer (mcore_distributed_optim,
/// megatron_base_model.py:151); ZeRO-2: apex distributed_fused_adam (optimizer state and
/// gradients); ZeRO-3: torch FSDP full sharding (nlp_overrides.py:810-816), which refuses a
/// distributed optimizer (megatron_trainer_builder.py:66-69). The two distributed optimizers
/// take the DP overlaps and the reduction dtype from model.optim (overlap_grad_sync,
/// overlap_param_sync, grad_sync_dtype: megatron_gpt_model.py L600-611 for Megatron-Core's,
/// default off and fp32; apex's DistributedFusedAdam through nemo/core/optim/distributed_adam.py,
/// which converts the dtype name); the parameter sync only with the gradient sync (L383-384).
std::string sharding(const Model& m, const ParallelConfig& c, const StackSwitches& s) {
  const char* names[] = {"fused_adam", "mcore_distributed_optim", "distributed_fused_adam",
                         "fused_adam"};
  std::string t;
  if (c.zero == 3) t += line(2, "fsdp", "true") + line(2, "fsdp_sharding_strategy", "full");
  t += "  optim:\n" + line(4, "name", names[c.zero]);
  if (c.zero == 1 || c.zero == 2) {
    if (c.dp * c.cp > 1) {
      const bool param_sync = overlaps_param_gather(c, s);
      t += line(4, "overlap_grad_sync", yes(s.dp_overlap_grad_reduce)) +
           line(4, "overlap_param_sync", yes(param_sync));
    }
    if (s.grad_reduce_bytes == 2) {
      t += line(4, "grad_sync_dtype", m.training.dtype == Dtype::fp16 ? "fp16" : "bf16");
    }
  }
  return t;
}

}  // namespace

std::optional<Limit> nemo_hydra_limit(const Input& in) {
  // The first/last-stage layer counts are TransformerConfig fields, which the model takes from
  // its config (megatron_base_model.py L602-609; checked at megatron_gpt_model.py L2198-2220).
  // NeMo 1.x builds no virtual pipeline stages any more: build_model raises "Virtual pipeline
  // model parallel size is no longer supported for nemo 1.0" with PP > 1 (nemo/collections/nlp/
  // modules/common/megatron/build_model.py L73-77 @v2.4.0).
  if (in.config.virtual_stages > 1 && in.config.pp > 1) {
    ParallelConfig fixed = in.config;
    fixed.virtual_stages = 1;
    return limit(RefusalKind::interleaved, fixed);
  }
  if (auto uneven = uneven_stage_limit(in, true)) return uneven;
  if (in.model.training.dtype == Dtype::tf32) {
    return limit(RefusalKind::dtype);
  }
  // fp8 / fp8_hybrid turn on Transformer Engine's delayed scaling; the file has no other recipe.
  if (in.model.training.dtype == Dtype::fp8 && in.model.training.fp8.recipe != Fp8Recipe::delayed) {
    return limit(RefusalKind::fp8_recipe);
  }
  if (in.model.ffn == FfnKind::relu) {
    return limit(RefusalKind::ffn);
  }
  if (in.config.zero == 3 && in.config.pp > 1) {
    ParallelConfig fixed = in.config;
    fixed.zero = 2;
    return limit(RefusalKind::sharding_with_pp, fixed);
  }
  // ZeRO-3 is torch FSDP here, which the model refuses with FP8: "Torch FSDP does not support
  // FP8." (megatron_base_model.py L1089-1090 @v2.4.0); ZeRO-2's distributed Adam runs it.
  if (in.config.zero == 3 && in.model.training.dtype == Dtype::fp8) {
    ParallelConfig fixed = in.config;
    fixed.zero = 2;
    return limit(RefusalKind::fp8_fsdp, fixed);
  }
  // O2 in fp16 needs the distributed Adam (ZeRO-1/2 here): fused_adam raises "fp16 training is
  // not yet supported with O2" (megatron_base_model.py L870-881 @v2.4.0).
  if (in.model.training.dtype == Dtype::fp16 && in.config.zero == 0) {
    ParallelConfig fixed = in.config;
    fixed.zero = 1;
    return limit(RefusalKind::fp16_unsharded, fixed);
  }
  return std::nullopt;
}

std::string nemo_hydra_text(const Input& in, const Launch& launch) {
  std::string t = header_line(in);
  t += "# still to add: model.data.data_prefix; model.tokenizer (library, type, model) for "
       "the vocabulary of " +
       str(in.model.vocab) +
       "; trainer.max_steps; model.optim.lr and "
       "sched; exp_manager\n";
  t += placement_comment(launch, "#") + triton_attention_note(in.switches.attention, "NeMo") +
       fsdp_userbuffers_note(in.config, in.switches) + deferred_wgrad_note(in.switches);
  // One device connection with TP or CP, as Megatron-LM asserts before Blackwell (arguments.py
  // L1413-1437) and userbuffers need.
  const ParallelConfig& c = in.config;
  const std::string connections =
      needs_one_device_connection(c, in.cluster.gpu) ? "CUDA_DEVICE_MAX_CONNECTIONS=1 " : "";
  t += "# run: " + connections +
       "python megatron_gpt_pretraining.py --config-path DIR --config-name THIS_FILE "
       "(DIR holding this file beside NeMo's examples/nlp/language_modeling/conf/"
       "megatron_gpt_config.yaml) on each of the " +
       str(launch.nodes) + " nodes (" + str(launch.gpus_per_node) +
       " tasks each, e.g. srun --ntasks-per-node " + str(launch.gpus_per_node) + ")\n";
  t += "defaults:\n  - megatron_gpt_config\n  - _self_\n";
  t += trainer(in.model, launch);
  t += "model:\n" + shape(in.model) + precision(in.model, in.config, in.switches) +
       attention_backend(in.model, in.config, in.switches) +
       parallel(in.model, in.config, in.order) + comm_overlaps(in.config, in.switches) +
       sharding(in.model, in.config, in.switches);
  return t;
}

}  // namespace trident::emit
