// --emit nemo: a NeMo 2.0 script at v2.4.0 that takes a pretraining recipe
// (nemo/collections/llm/recipes/NAME.py) and sets the plan on it; run by nemo_run. Names:
// tests/data/emit/nemo-v2.4.0.txt (MegatronStrategy and MockDataModule parameters, the
// keywords and attributes NeMo's own recipes set, the recipes' model shapes).
#include <fmt/format.h>

#include <string>

#include "costmodel/ep_overlap.h"
#include "planner/export_nemo_recipes.h"
#include "planner/export_target.h"

namespace trident::emit {

namespace {

std::string set(const std::string& key, const std::string& value) {
  return "recipe." + key + " = " + value + "\n";
}

std::string q(const char* text) { return std::string("\"") + text + "\""; }

/// recipes/precision/mixed_precision.py: bf16_mixed, fp16_mixed, and for FP8 (Transformer
/// Engine's HYBRID format) the plan's recipe: bf16_with_fp8_mixed (delayed scaling),
/// bf16_with_fp8_current_scaling_mixed, bf16_with_fp8_subchannel_scaling_mixed (blockwise),
/// bf16_with_mxfp8_mixed (mixed_precision.py L92-100 @v2.4.0: fp8_recipe "mxfp8").
const char* plugin(const Training& training) {
  if (training.dtype == Dtype::fp16) return "fp16_mixed";
  if (training.dtype != Dtype::fp8) return "bf16_mixed";
  switch (training.fp8.recipe) {
    case Fp8Recipe::current:
      return "bf16_with_fp8_current_scaling_mixed";
    case Fp8Recipe::blockwise:
      return "bf16_with_fp8_subchannel_scaling_mixed";
    case Fp8Recipe::mxfp8:
      return "bf16_with_mxfp8_mixed";
    case Fp8Recipe::delayed:
      break;
  }
  return "bf16_with_fp8_mixed";
}

/// The recipes set context_parallelism 2 (llama3_8b.py:65) or 4 (llama31_405b.py:70): set to
/// the plan's, with its K/V exchange (model.config.cp_comm_type) when above 1. ZeRO-2/3 are
/// Megatron-FSDP (strategy fsdp="megatron", megatron_strategy.py:380) sharding optim_grads /
/// optim_grads_params, which wants average_in_collective off (llama3_8b.py:121).
std::string strategy(const Model& model, const ParallelConfig& c, CpKind cp_kind, RankOrder order) {
  std::string t = set("trainer.strategy.tensor_model_parallel_size", str(c.tp)) +
                  set("trainer.strategy.pipeline_model_parallel_size", str(c.pp)) +
                  set("trainer.strategy.virtual_pipeline_model_parallel_size",
                      c.virtual_stages > 1 ? str(c.virtual_stages) : "None") +
                  set("trainer.strategy.context_parallel_size", str(c.cp)) +
                  (c.cp > 1 ? set("model.config.cp_comm_type", q(to_string(cp_kind))) : "") +
                  set("trainer.strategy.sequence_parallel", c.sequence_parallel ? "True" : "False");
  // The plan's rank order: MegatronStrategy's use_tp_pp_dp_mapping (passed to Megatron-Core's
  // initialize_model_parallel as order 'tp-cp-ep-pp-dp') for a plan placed tp-pp-dp.
  if (order == RankOrder::tp_pp_dp) t += set("trainer.strategy.use_tp_pp_dp_mapping", "True");
  // Layers that do not divide by PP: the first and last stages' counts, as NeMo's DeepSeek-V3
  // recipe sets them (MegatronStrategy num_layers_in_first/last_pipeline_stage; its 3 and 2,
  // deepseek_v3.py L111-112, are unset for an even split).
  // The Llama 3.1 405B and Qwen3 235B recipes count the embedding and the loss as a layer
  // each (account_for_*_in_pipeline_split True: llama31_405b.py L72-73, qwen3_235b_a22b.py
  // L151-152), which Megatron-Core refuses beside the counts (transformer_config.py L855-866 at
  // core_r0.13.0) and which moves an even split: off, so the split is the plan's.
  // Middle stages that differ, or interleaving: the model chunks' layers as Megatron-Core's
  // layout string (MegatronStrategy pipeline_model_parallel_layout, megatron_strategy.py L133
  // @v2.4.0; its virtual stages must be the layout's, transformer_config.py L912-916 at
  // core_r0.13.0, and GPTConfig.configure_model skips its even-chunk assert for a layout,
  // gpt/model/base.py L336-350).
  // The counts are written only where no layout is (it sets the split itself).
  const auto layout = pipeline_layout(model, c);
  const auto uneven = layout ? std::nullopt : uneven_stages(model, c);
  t += set("trainer.strategy.num_layers_in_first_pipeline_stage",
           uneven ? str(uneven->first) : "None") +
       set("trainer.strategy.num_layers_in_last_pipeline_stage",
           uneven ? str(uneven->last) : "None") +
       set("trainer.strategy.account_for_embedding_in_pipeline_split", "False") +
       set("trainer.strategy.account_for_loss_in_pipeline_split", "False");
  if (layout) t += set("trainer.strategy.pipeline_model_parallel_layout", q(layout->c_str()));
  if (c.zero >= 2) {
    t += set("trainer.strategy.fsdp", q("megatron")) +
         set("trainer.strategy.ddp.data_parallel_sharding_strategy",
             q(c.zero == 2 ? "optim_grads" : "optim_grads_params")) +
         set("trainer.strategy.ddp.average_in_collective", "False");
  } else {
    t += set("trainer.strategy.fsdp", "None");
  }
  t += set("optim.config.use_distributed_optimizer", c.zero >= 1 ? "True" : "False");
  return t;
}

std::string batches_and_recompute(const Model& m, const ParallelConfig& c,
                                  SelectiveKind selective) {
  std::string t = set("data.seq_length", str(m.seq_len)) +
                  set("data.global_batch_size", str(m.training.global_batch)) +
                  set("data.micro_batch_size", str(c.micro_batch)) +
                  set("model.config.seq_length", str(m.seq_len)) +
                  set("model.config.attention_dropout", fmt::format("{:g}", m.dropout)) +
                  set("model.config.hidden_dropout", fmt::format("{:g}", m.dropout));
  // The model's RoPE base and per-head Q/K norm, which a recipe's config fixes by model
  // (Llama 3 500000, Mixtral and Qwen3 1e6; Qwen3 qk_layernorm True, qwen3.py L45): a model
  // file of a recipe's shape may differ. GPTConfig's layer spec builds the norms from the
  // field (gpt/model/base.py L146-160 @v2.4.0); MLA's own norms stay the recipe's.
  if (!m.learned_positions) t += set("model.config.rotary_base", str(m.rope_base));
  if (m.attention != AttentionKind::mla) {
    t += set("model.config.qk_layernorm", m.qk_layernorm ? "True" : "False");
  }
  if (c.recompute == Recompute::none) return t + set("model.config.recompute_granularity", "None");
  if (c.recompute == Recompute::selective) {
    // The module Megatron-Core recomputes (TransformerConfig.recompute_modules; the DeepSeek-V3
    // recipe sets ["mla_up_proj", "layernorm"], deepseek_v3.py L126): core attention, or MLA's
    // up-projections where the pricing stack's selective recompute is theirs.
    return t + set("model.config.recompute_granularity", q("selective")) +
           set("model.config.recompute_modules",
               selective == SelectiveKind::mla_up_proj ? "[\"mla_up_proj\"]" : "[\"core_attn\"]");
  }
  const bool block = c.recompute_layers > 0;
  return t + set("model.config.recompute_granularity", q("full")) +
         set("model.config.recompute_method", q(block ? "block" : "uniform")) +
         set("model.config.recompute_num_layers", block ? str(c.recompute_layers) : "1");
}

/// Expert parallelism as priced: EP over the experts, expert TP 1, NCCL's all-to-all
/// dispatcher with grouped GEMMs (MixtralConfig leaves moe_grouped_gemm off), the token
/// permutation fused or not as the stack runs it (DeepSeek's performance script fuses it), and
/// the shared experts beside the exchange as the stack runs them (DeepSeekConfig turns it on).
/// Multi-token prediction beyond the recipe's one layer (use_mtp) as mtp_num_layers.
std::string experts(const Input& in) {
  const Model& m = in.model;
  std::string t;
  if (m.mtp_layers > 1) t += set("model.config.mtp_num_layers", str(m.mtp_layers));
  if (!m.is_moe()) return t;
  t += set("trainer.strategy.expert_model_parallel_size", str(in.config.ep)) +
       set("trainer.strategy.expert_tensor_parallel_size", "1") +
       set("model.config.moe_token_dispatcher_type", q("alltoall")) +
       set("model.config.moe_grouped_gemm", "True") +
       set("model.config.moe_permute_fusion", in.switches.moe_permute_fusion ? "True" : "False");
  if (m.moe.shared_experts > 0) {
    t += set("model.config.moe_shared_expert_overlap",
             in.switches.shared_expert_overlap ? "True" : "False");
  }
  return t;
}

/// The overlaps and gradient dtype the plan was priced with. NeMo 2.0 overlaps TP and PP
/// transfers only through MegatronCommOverlapCallback (nemo/lightning/pytorch/callbacks/
/// megatron_comm_overlap.py L124-166: userbuffers when asked, with TP > 1 and SP; interleaved
/// transfers overlapped, unbatched); the recipes' own DDP config overlaps both DP collectives
/// (llama3_70b.py L114-121), which the callback sets as given. The reduction's dtype is the
/// precision plugin's grad_reduce_in_fp32 (bf16_mixed True, fp16_mixed False:
/// recipes/precision/mixed_precision.py L35, L52), applied to the DDP config
/// (megatron_strategy.py L450).
std::string overlaps(const Input& in) {
  const ParallelConfig& c = in.config;
  const StackSwitches& s = in.switches;
  auto yes = [](bool on) { return on ? "True" : "False"; };
  std::string args = std::string(", tp_comm_overlap=") + yes(writes_userbuffers(c, s));
  if (c.pp > 1 && c.virtual_stages > 1) {
    const bool exposed = runs_p2p_exposed(c, s);
    args += std::string(", overlap_p2p_comm=") + yes(!exposed) + ", batch_p2p_comm=" + yes(exposed);
  }
  // Megatron-Core's defer_embedding_wgrad_compute, as NeMo's performance recipes pass it
  // (recipes/llama3_70b.py L234-235 @d2b21556; callback fields megatron_comm_overlap.py L57-58
  // @v2.4.0).
  if (s.defer_output_wgrad) {
    args += ", defer_embedding_wgrad_compute=True, wgrad_deferral_limit=" +
            std::to_string(s.output_wgrad_deferral_limit);
  }
  // Megatron-FSDP (ZeRO-2/3 here) asserts the gradient reduction overlapped, and at ZeRO-3
  // the parameter gather too (custom_fsdp/fully_sharded_data_parallel.py L201-204
  // @core_v0.13.0), at any DP size: written on, and said where the plan priced them exposed.
  std::string fsdp_note;
  if (c.zero >= 2) {
    const bool gather = c.zero == 3 || overlaps_param_gather(c, s);
    args += std::string(", overlap_grad_reduce=True, overlap_param_gather=") + yes(gather);
    if (c.dp * c.cp > 1 &&
        (!s.dp_overlap_grad_reduce || (c.zero == 3 && !overlaps_param_gather(c, s)))) {
      fsdp_note =
          "# DP: Megatron-FSDP asserts its overlaps (custom_fsdp/fully_sharded_data_parallel.py "
          "L201-204 in NeMo v2.4.0's Megatron-Core), so this launch overlaps the DP collectives "
          "the plan was priced with exposed\n";
    }
  } else if (c.dp * c.cp > 1) {
    args += std::string(", overlap_grad_reduce=") + yes(s.dp_overlap_grad_reduce) +
            ", overlap_param_gather=" + yes(overlaps_param_gather(c, s));
  }
  std::string t =
      "\n# the overlaps the plan was priced with (without this callback NeMo overlaps "
      "no TP or pipeline transfer), in place of the recipe's own and of DeepEP's dispatcher (the "
      "plan's all-to-all is NCCL's)\n" +
      p2p_overlap_note(c, s, "#") + fsdp_note +
      "recipe.trainer.callbacks = [c for c in recipe.trainer.callbacks or [] if "
      "c.__fn_or_cls__.__name__ not in (\"DeepEPCallback\", \"MegatronCommOverlapCallback\")]\n"
      "recipe.trainer.callbacks.append(run.Config(MegatronCommOverlapCallback" +
      args + "))\n";
  // The callback applies its DP settings only with the distributed optimizer
  // (megatron_comm_overlap.py L274-285 @v2.4.0); at ZeRO-0 the recipe's own DDP config
  // (overlap_grad_reduce and overlap_param_gather True, llama3_70b.py L114-121) would stay:
  // set there as priced.
  if (c.dp * c.cp > 1 && c.zero == 0) {
    t += set("trainer.strategy.ddp.overlap_grad_reduce", yes(s.dp_overlap_grad_reduce)) +
         set("trainer.strategy.ddp.overlap_param_gather", "False");
  }
  const Dtype dtype = in.model.training.dtype;
  if (dtype == Dtype::fp16 && s.grad_reduce_bytes == 4) {
    t += set("trainer.plugins.grad_reduce_in_fp32", "True");
  } else if (dtype != Dtype::fp16 && s.grad_reduce_bytes == 2) {
    t += set("trainer.plugins.grad_reduce_in_fp32", "False");
  }
  return t;
}

}  // namespace

std::optional<Limit> nemo_limit(const Input& in) {
  // A layout with MTP layers: NeMo v2.4.0's Megatron-Core (core_r0.13.0) raises "MTP layer is not
  // supported for flexible pipeline layout" (pipeline_parallel_layer_layout.py
  // validate_layer_layout @03f7793); core_v0.14.0 lifted it, which the megatron target runs.
  const bool mtp = in.model.mtp_layers > 0;
  if (auto uneven = uneven_stage_limit(in, true, !mtp)) {
    uneven->obstacle.layout_refuses_mtp = mtp;
    return uneven;
  }
  const NemoRecipe* recipe = nemo_recipe_of(in.model);
  if (recipe == nullptr) {
    Limit shape = limit(RefusalKind::model_shape);
    shape.obstacle.models = {"llama3-8b",    "llama3-70b",    "llama3-405b",     "gpt3-175b",
                             "mixtral-8x7b", "mixtral-8x22b", "qwen3-235b-a22b", "deepseek-v3"};
    // nemo-hydra takes any dense shape; megatron any MoE or MLA one.
    const bool dense = !in.model.is_moe() && in.model.attention != AttentionKind::mla;
    shape.obstacle.other_release = dense ? "nemo-hydra" : "megatron";
    return shape;
  }
  // Multi-token prediction: the DeepSeek-V3 recipe's (use_mtp); no other config builds it.
  if (in.model.mtp_layers > 0 && !recipe->mtp) return limit(RefusalKind::mtp_layers);
  // The combined 1F1B the plan was priced with has no switch in v2.4.0's Megatron-Core
  // (TransformerConfig has no overlap_moe_expert_parallel_comm there).
  if (in.switches.ep_overlap && combined_1f1b_runs(in.model, in.config)) {
    return limit(RefusalKind::ep_overlap);
  }
  // The plan priced HybridEP's exchange; the launch writes the alltoall dispatcher.
  if (in.switches.hybridep && in.model.is_moe() && in.config.ep > 1) {
    return limit(RefusalKind::moe_dispatcher);
  }
  const Dtype dtype = in.model.training.dtype;
  if (dtype == Dtype::fp32 || dtype == Dtype::tf32) {
    return limit(RefusalKind::dtype);
  }
  if (in.config.zero >= 2 && in.config.pp > 1) {
    ParallelConfig fixed = in.config;
    fixed.zero = 1;
    return limit(RefusalKind::sharding_with_pp, fixed);
  }
  return std::nullopt;
}

std::string nemo_text(const Input& in, const Launch& launch) {
  const NemoRecipe& recipe = *nemo_recipe_of(in.model);
  const char* precision = plugin(in.model.training);
  std::string t = header_line(in);
  t += "# still to add: recipe.data = your llm.PreTrainingDataModule (paths, tokenizer) in "
       "place of the recipe's MockDataModule, keeping the three batch and length settings; "
       "recipe.trainer.max_steps; recipe.optim.config.lr; recipe.log\n";
  // As Megatron-LM asserts before Blackwell with TP or CP (arguments.py:1413-1437), which the
  // callback's userbuffers need to overlap; NeMo only warns (megatron_comm_overlap.py L213-256).
  const ParallelConfig& c = in.config;
  // On Blackwell the callback asks for 32 instead (L224-234).
  const std::string env = needs_one_device_connection(c, in.cluster.gpu)
                              ? ", env_vars={\"CUDA_DEVICE_MAX_CONNECTIONS\": \"1\"}"
                              : (wants_more_device_connections(c, in.cluster.gpu)
                                     ? ", env_vars={\"CUDA_DEVICE_MAX_CONNECTIONS\": \"32\"}"
                                     : "");
  t += placement_comment(launch, "#") + triton_attention_note(in.switches.attention, "NeMo");
  t += "# run: python THIS_FILE; on " + str(launch.nodes) +
       " nodes pass run.SlurmExecutor(nodes=" + str(launch.nodes) +
       ", ntasks_per_node=" + str(launch.gpus_per_node) +
       (launch.segment_servers > 0 ? ", segment=" + str(launch.segment_servers) : std::string()) +
       env + ", ...) instead of the LocalExecutor\n";
  t += "import nemo_run as run\nfrom nemo.collections import llm\n";
  t += std::string("from nemo.collections.llm.recipes.precision.mixed_precision import ") +
       precision + "\n";
  t += "from nemo.lightning.pytorch.callbacks.megatron_comm_overlap import "
       "MegatronCommOverlapCallback\n";
  const char* backend = attn_backend(in.switches.attention);
  if (backend != nullptr) t += "from megatron.core.transformer.enums import AttnBackend\n";
  t += "\n";
  t += std::string("recipe = llm.") + recipe.name +
       ".pretrain_recipe(name=\"trident\", num_nodes=" + str(launch.nodes) +
       ", num_gpus_per_node=" + str(launch.gpus_per_node) +
       (recipe.mtp ? std::string(", use_mtp=") + (in.model.mtp_layers > 0 ? "True" : "False")
                   : std::string()) +
       ")\n";
  t += set("trainer.num_nodes", str(launch.nodes)) +
       set("trainer.devices", str(launch.gpus_per_node)) +
       set("trainer.plugins", std::string(precision) + "()");
  // The current-scaling plugin keeps the first and last transformer layers in BF16
  // (mixed_precision.py L118-136: first_last_layers_bf16 True, one layer each); the plan prices
  // every layer in FP8, as NeMo's own performance scripts run it ("disable first/last layer bf16
  // for benchmarking", scripts/performance/utils.py L347-348 @v2.3.0).
  // Every FP8 plugin sets fp8_param_gather itself (True, blockwise's False: mixed_precision.py
  // L92-136 @v2.4.0): the plan's training.fp8.params decides, so it is written either way.
  if (in.model.training.dtype == Dtype::fp8) {
    t += set("trainer.plugins.fp8_param_gather", in.model.training.fp8.params ? "True" : "False");
  }
  // FP8 attention (TE's fused attention in FP8), delayed scaling only (export.cpp cp_moe_limit):
  // the plugin's fp8_dot_product_attention (mixed_precision.py L77, L158 @v2.4.0).
  if (in.model.training.dtype == Dtype::fp8 && in.model.training.fp8.attention) {
    t += set("trainer.plugins.fp8_dot_product_attention", "True");
  }
  if (in.model.training.dtype == Dtype::fp8 && in.model.training.fp8.recipe == Fp8Recipe::current) {
    t += "# every layer in FP8, as priced (the recipe keeps the first and last in BF16)\n" +
         set("trainer.plugins.first_last_layers_bf16", "False");
  }
  t += strategy(in.model, in.config, in.cp_kind, in.order) +
       batches_and_recompute(in.model, in.config, in.selective) + experts(in);
  if (backend != nullptr) {
    t += set("model.config.attention_backend", std::string("AttnBackend.") + backend);
  }
  t += overlaps(in);
  t += "\nif __name__ == \"__main__\":\n    run.run(recipe, executor=run.LocalExecutor("
       "ntasks_per_node=" +
       str(launch.gpus_per_node) + ", launcher=\"torchrun\"" + env + "))\n";
  return t;
}

}  // namespace trident::emit
