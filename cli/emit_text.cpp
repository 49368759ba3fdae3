// Why a framework release cannot run a plan, in words (cli/emit_text.h).
#include "cli/emit_text.h"

#include <fmt/format.h>

namespace trident::cli {
namespace {

/// "a, b or c".
[[nodiscard]] std::string one_of(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

[[nodiscard]] std::string uneven_reason(const Obstacle& o) {
  return fmt::format(
      "its ranks sit unevenly: server {} runs {} of them, server {} runs {}, and the launcher "
      "starts the same GPUs on every node",
      o.server, o.ranks, o.other_server, o.other_ranks);
}

[[nodiscard]] std::string dtype_reason(const Release& release, Dtype dtype) {
  switch (release.framework) {
    case Framework::megatron:
      return "Megatron-LM has no TF32 switch (--bf16, --fp16, or FP32 with neither)";
    case Framework::nemo:
      return fmt::format(
          "NeMo 2.0's precision recipes are bf16/fp16 mixed (with or without FP8), not {}",
          to_string(dtype));
    case Framework::nemo_hydra:
      return "NeMo's trainer.precision has no TF32 setting (bf16, 16, 32)";
    case Framework::deepspeed:
      return fmt::format(
          "DeepSpeed's config has no {} training switch (bf16, fp16, or neither for FP32)",
          to_string(dtype));
    case Framework::torchtitan:
      return fmt::format(
          "torchtitan trains in bfloat16 or float32 (training.mixed_precision_param), not {}",
          to_string(dtype));
    case Framework::megatron_deepspeed:
      return dtype == Dtype::fp8
                 ? "Megatron-DeepSpeed runs FP8 only in Transformer Engine layers, which its "
                   "pipeline model (GPTModelPipe) does not build (megatron/model/transformer.py "
                   "L1663-1724), and --emit writes no other FP8 path"
                 : "Megatron-DeepSpeed has no TF32 switch (--bf16, --fp16, or FP32 with "
                   "neither)";
  }
  return "";
}

[[nodiscard]] std::string ffn_reason(const Release& release, FfnKind ffn) {
  if (release.framework == Framework::nemo_hydra) {
    return "NeMo's model.activation has no plain ReLU (gelu, geglu, swiglu, reglu, "
           "squared-relu)";
  }
  return fmt::format("{} has no flag for a {} FFN (GeLU by default, --swiglu, --squared-relu)",
                     release.title, to_string(ffn));
}

[[nodiscard]] std::string shape_reason(const Release& release, const Model& model,
                                       const Obstacle& o) {
  // A model file's head_dim: every flavor's and recipe's heads are hidden / heads wide.
  const std::string heads =
      model.explicit_head_dim > 0 && model.q_hidden() != model.hidden
          ? fmt::format(" (its heads are {} wide, head_dim; theirs hidden / heads)",
                        model.head_dim())
          : std::string();
  if (release.framework == Framework::torchtitan) {
    // A flavor's shape but for what a model file may add: name what differs.
    std::string unlike;
    if (o.flavor_but_keys) {
      if (model.qk_layernorm) unlike += ", no Q/K norm";
      if (model.dropout > 0.0) unlike += ", no dropout";
      if (model.rope_base != kTorchtitanRopeBase) {
        unlike +=
            fmt::format(", RoPE base {} (the model's {})", kTorchtitanRopeBase, model.rope_base);
      }
    }
    return "torchtitan builds models from registered flavors "
           "(torchtitan/models/llama3/__init__.py), and none has " +
           model.name + "'s shape" + heads +
           (unlike.empty() ? std::string() : " (theirs:" + unlike.substr(1) + ")");
  }
  return "NeMo 2.0 pretraining recipes build their model from a config class "
         "(nemo/collections/llm/recipes), and none has " +
         model.name + "'s shape (layers, widths, heads, experts and attention)";
}

[[nodiscard]] std::string sharding_reason(const Release& release) {
  switch (release.framework) {
    case Framework::nemo:
      return "ZeRO-2/3 is Megatron-FSDP, which composes with TP and EP, not pipeline "
             "parallelism (Megatron-LM docs/user-guide/features/megatron_fsdp.md:493)";
    case Framework::nemo_hydra:
      return "ZeRO-3 is NeMo's torch FSDP, documented with TP and not with pipeline "
             "parallelism (docs/source/features/parallelisms.rst:180)";
    case Framework::deepspeed:
    case Framework::megatron_deepspeed:
      return "DeepSpeed's runtime/pipe/engine.py:77 asserts ZeRO-2 and ZeRO-3 are incompatible "
             "with pipeline parallelism";
    default:
      return "ZeRO-2/3 is Megatron-FSDP, which composes with TP and EP, not pipeline "
             "parallelism (docs/user-guide/features/megatron_fsdp.md:493)";
  }
}

/// The rules of one framework only (DeepSpeed's AutoTP and engine, torchtitan's FSDP2).
[[nodiscard]] std::string split_reason(RefusalKind kind, const Release& release) {
  switch (kind) {
    case RefusalKind::interleaved:
      if (release.framework == Framework::nemo_hydra) {
        return "NeMo 1.x's model builder raises 'Virtual pipeline model parallel size is no "
               "longer supported for nemo 1.0' with PP above 1 "
               "(nlp/modules/common/megatron/build_model.py L73-77; --emit nemo or megatron "
               "interleave)";
      }
      return "DeepSpeed's pipeline engine has no interleaved schedule "
             "(runtime/pipe/schedule.py TrainSchedule: one stage per rank)" +
             std::string(release.framework == Framework::megatron_deepspeed
                             ? "; Megatron-DeepSpeed's --num-layers-per-virtual-pipeline-stage "
                               "builds copies of the model it never runs"
                             : "");
    case RefusalKind::tp_with_pp:
      return "AutoTP builds a tensor x data parallel mesh with no pipeline axis "
             "(runtime/engine.py _configure_tensor_parallel_states, "
             "groups._init_tp_mesh_device)";
    case RefusalKind::tp_with_zero3:
      return "v0.19.3 asserts AutoTP with ZeRO-3 'has not been validated' "
             "(runtime/engine.py:634; allowed from v0.19.4)";
    case RefusalKind::sequence_parallel:
      if (release.framework == Framework::megatron_deepspeed) {
        return "DeepSpeed's pipeline engine splits each stage boundary's activation over the "
               "TP ranks as if they held the same tensor (runtime/pipe/engine.py L137-144), "
               "which Megatron's sequence parallelism breaks, and no Megatron-DeepSpeed example "
               "runs --sequence-parallel in its pipeline model";
      }
      return "AutoTP has no Megatron-style sequence parallelism";
    case RefusalKind::no_sequence_parallel:
      return "torchtitan's tensor parallel plan always shards the sequence "
             "(SequenceParallel norms, models/llama3/infra/parallelize.py)";
    case RefusalKind::selective_recompute:
      if (release.framework == Framework::torchtitan) {
        return "torchtitan's selective mode saves matmul outputs per op or checkpoints every Nth "
               "layer; it is not Megatron's attention-only recompute";
      }
      if (release.framework == Framework::deepspeed) {
        return "DeepSpeed recomputes whole deepspeed.checkpointing.checkpoint calls; it has no "
               "attention-only (Megatron selective) recompute";
      }
      if (release.framework == Framework::megatron_deepspeed) {
        return "Megatron-DeepSpeed recomputes core attention inside its unfused CoreAttention "
               "only (megatron/model/transformer.py L625-629), a no-op under the plan's "
               "attention kernel or recompute policy";
      }
      return "Megatron-Core recomputes whole modules (recompute_modules: core attention, MLA's "
             "up-projections, ...); it has no per-op policy like torchtitan's, which the plan "
             "was priced with";
    case RefusalKind::partial_recompute:
      if (release.framework == Framework::megatron_deepspeed) {
        return "DeepSpeed's pipeline checkpoints every --checkpoint-num-layers decoder layers "
               "(megatron/model/gpt_model.py L446-452); it has no recompute of a stage's first "
               "layers only";
      }
      return release.framework == Framework::torchtitan
                 ? "torchtitan recomputes every k-th block (selective_ac_option), which no k "
                   "makes this plan's layers per chunk"
                 : "the DeepSpeed config recomputes what the model code wraps in "
                   "deepspeed.checkpointing.checkpoint; --emit writes full recompute only";
    case RefusalKind::ddp_multi_dim:
      return "torchtitan raises 'DDP has not supported > 1D parallelism' "
             "(models/llama3/infra/parallelize.py:151)";
    case RefusalKind::zero1:
      return "torchtitan shards with FSDP2, which shards gradients with the optimizer "
             "state: no ZeRO-1";
    case RefusalKind::hybrid_shard:
      return "--emit writes hybrid sharding (HSDP, --dp-shard) for torchtitan only "
             "(data_parallel_shard_degree x data_parallel_replicate_degree)";
    case RefusalKind::rank_order:
      return release.framework == Framework::torchtitan
                 ? "the plan places its ranks tp-pp-dp (PP inside DP), and torchtitan's device "
                   "mesh puts PP outermost (distributed/parallel_dims.py: [pp, dp_replicate, "
                   "fsdp, tp])"
                 : "the plan places its ranks tp-pp-dp (PP inside DP), and DeepSpeed's "
                   "PipeModelDataParallelTopology puts PP outermost (runtime/pipe/topology.py "
                   "axes ['pipe', 'data', 'model'])";
    case RefusalKind::bf16_unsharded:
      return "the plan reduces bf16 gradients in fp32, which DeepSpeed keeps only in its "
             "BF16_Optimizer at ZeRO-1: at ZeRO-0 it raises 'unsupported mix' "
             "(runtime/engine.py L1976-1977 @v0.19.5)";
    case RefusalKind::fp16_unsharded:
      return "NeMo raises 'fp16 training is not yet supported with O2' unless the optimizer is "
             "its distributed Adam (megatron_base_model.py L870-881), and without O2 the "
             "weights stay fp32 under autocast, which the plan did not price";
    case RefusalKind::fp8_fsdp:
      return "NeMo 1.x writes ZeRO-3 as torch FSDP and raises 'Torch FSDP does not support "
             "FP8.' when the model is built (megatron_base_model.py L1089-1090)";
    default:
      return "";
  }
}

/// Why an uneven split of the layers cannot be written: interleaved (the first/last-stage
/// counts are written without virtual stages here), middle stages that differ, or a release
/// with no such counts.
[[nodiscard]] std::string uneven_stages_reason(const Obstacle& o, const Release& release,
                                               const Model& model) {
  // Two stages have no middle one.
  const std::string middle =
      o.middle_layers > 0 ? fmt::format("{} per middle stage at most, ", o.middle_layers) : "";
  const std::string split =
      fmt::format("the plan splits {}'s {} layers {} first, {}{} last", model.name, model.layers,
                  o.first_layers, middle, o.last_layers);
  if (o.set_ends) {
    return split +
           ", its end stages set lighter than the default split; the release sets no stage's "
           "layers (PipelineModule's partition_method balances its own way: 'parameters', "
           "'uniform' or 'type:REGEX', runtime/pipe/module.py L396-417)";
  }
  if (o.interleaved_uneven && release.framework == Framework::torchtitan) {
    return split +
           "; interleaved, torchtitan shortens only its first and last virtual stage, each by "
           "at most one chunk (the largest stage's layers / VP), which these ends' gaps exceed";
  }
  if (o.interleaved_uneven && o.layout_refuses_mtp) {
    return split +
           "; interleaved it needs a pipeline layout, which this release's Megatron-Core "
           "refuses with MTP layers (\"MTP layer is not supported for flexible "
           "pipeline layout\"; --emit megatron writes it), so it runs without interleaving only";
  }
  if (o.interleaved_uneven) {
    return split + "; --emit writes such a split without interleaving only";
  }
  if (release.framework == Framework::nemo_hydra) {
    return split +
           ", and its middle stages differ: the Hydra file writes first/last-stage counts, "
           "which leave the middle stages equal, and has no pipeline layout";
  }
  if (release.framework == Framework::megatron_deepspeed) {
    return split +
           "; Megatron-DeepSpeed's GPTModelPipe splits them with partition_method "
           "'type:transformer' (megatron/model/gpt_model.py L459-463), one more layer on each of "
           "the first layers mod PP stages, and has no flag for another split";
  }
  if (release.framework == Framework::nemo && model.mtp_layers > 0) {
    return split +
           ", and its middle stages differ: that needs a pipeline layout, and NeMo v2.4.0's "
           "Megatron-Core (core_r0.13.0) takes no MTP layer in one (pipeline_parallel_layer_"
           "layout.py validate_layer_layout)";
  }
  return split +
         ", and its middle stages differ: the first/last-stage layer counts must leave the "
         "middle stages equal";
}

/// What to change for an obstacle no knob of the split fixes; empty for the others.
[[nodiscard]] std::string obstacle_change(const Obstacle& o, const Release& release,
                                          const Stack& stack) {
  const Framework framework = release.framework;
  switch (o.kind) {
    case RefusalKind::uneven_ranks:
      if (o.dead_server >= 0) {
        return fmt::format("cordon the whole server: --fail-link server:{}", o.dead_server);
      }
      return fmt::format("a split whose GPUs fill whole servers of {}", o.gpus_per_server);
    case RefusalKind::moe_model:
      return "--emit megatron (or nemo for the Mixtral, Qwen3 MoE and DeepSeek-V3 recipes), or "
             "write the MoE and MLA settings by hand";
    case RefusalKind::mtp_layers:
      return "--emit megatron, mtp_layers: 0 in the model file, or write the MTP settings by hand";
    case RefusalKind::ep_overlap:
      return "--emit megatron, or plan with a stack without ep_overlap";
    case RefusalKind::moe_dispatcher:
      return "plan with a stack without moe_dispatcher: hybridep, or set the flex dispatcher "
             "(moe_token_dispatcher_type flex, moe_flex_dispatcher_backend hybridep) by hand";
    case RefusalKind::mtp_positions:
      return "position_embedding: rope or mtp_layers: 0 in the model file";
    case RefusalKind::rank_order:
      return "plan with the stack of that framework (--stack " + std::string(release.stack) +
             "), which places tp-dp-pp only, or --emit megatron or nemo";
    case RefusalKind::fp8_attention:
      return "training.fp8.attention: false in the model file, or set Transformer Engine's FP8 "
             "attention by hand";
    case RefusalKind::fp8_recipe:
      if (framework == Framework::torchtitan) {
        return "training.fp8.recipe current in the model file (torchao's tensorwise float8), "
               "or --emit megatron or nemo";
      }
      // Delayed scaling in the model file helps only where the planning stack runs it.
      if (stack.supports(Fp8Recipe::delayed)) {
        return "training.fp8.recipe delayed in the model file, or --emit nemo";
      }
      return fmt::format(
          "plan it with --stack {} and delayed scaling (stack {} does not run it), or --emit "
          "nemo",
          release.stack, stack.name);
    case RefusalKind::uneven_stages:
      return framework == Framework::megatron_deepspeed
                 ? "--pp dividing the model's layers, or one that leaves only the last stage a "
                   "layer short"
                 : "--pp dividing the model's layers";
    case RefusalKind::context_parallel:
      return "--cp 1";
    case RefusalKind::qk_norm:
      return "qk_layernorm: false in the model file, or --emit megatron";
    case RefusalKind::sgd:
      return "training.optimizer: adam in the model file, or --emit megatron or "
             "megatron-deepspeed";
    case RefusalKind::dtype:
      return framework == Framework::megatron || framework == Framework::nemo_hydra
                 ? "--dtype bf16 or fp32 (training.dtype in the model file)"
                 : "--dtype bf16 (training.dtype in the model file)";
    case RefusalKind::ffn:
      return framework == Framework::nemo_hydra
                 ? "ffn gelu, geglu, swiglu or relu2 in the model file"
                 : "ffn gelu, swiglu or relu2 in the model file";
    case RefusalKind::model_shape: {
      const std::string models = "--model " + one_of(o.models);
      return o.other_release.empty() ? models : models + ", or --emit " + o.other_release;
    }
    default:
      return "";
  }
}

}  // namespace

std::string refusal_reason(const Obstacle& obstacle, const Release& release, const Model& model) {
  switch (obstacle.kind) {
    case RefusalKind::uneven_ranks:
      return uneven_reason(obstacle);
    case RefusalKind::moe_model: {
      // The Hydra file is one of two NeMo v2.4.0 targets: say which one is dense-only.
      const std::string target =
          std::string(release.title) + " " + release.version +
          (release.framework == Framework::nemo_hydra ? "'s Hydra file (--emit nemo-hydra)"
                                                      : std::string());
      if (!model.is_moe()) {
        return target + " is written for multi-head attention only: model " + model.name +
               " has multi-latent attention (--emit megatron writes MLA, --emit nemo its "
               "DeepSeek-V3 recipe)";
      }
      return target + " is written for dense models only: model " + model.name +
             " has experts (--emit megatron writes MoE, --emit nemo its recipes' MoE models)";
    }
    case RefusalKind::mtp_layers:
      if (release.framework == Framework::nemo) {
        return "NeMo 2.0's recipes build multi-token prediction for DeepSeek-V3 only "
               "(deepseek_v3.py use_mtp): model " +
               model.name + " has " + std::to_string(model.mtp_layers) + " MTP layers";
      }
      return std::string(release.title) + " " + release.version +
             " is written without multi-token prediction: model " + model.name + " has " +
             std::to_string(model.mtp_layers) + " MTP layers (only --emit megatron writes them)";
    case RefusalKind::mtp_positions:
      return std::string(release.title) + " " + release.version +
             " runs multi-token prediction with RoPE positions only (arguments.py:856-860): "
             "model " +
             model.name + " has learned positions and " + std::to_string(model.mtp_layers) +
             " MTP layers";
    case RefusalKind::uneven_stages:
      return uneven_stages_reason(obstacle, release, model);
    case RefusalKind::fp8_attention:
      if (release.framework == Framework::megatron) {
        return "--emit does not write FP8 attention yet (Megatron-LM core_v0.19.0 has no flag "
               "for it): model " +
               model.name + " sets training.fp8.attention";
      }
      if (release.framework == Framework::nemo) {
        return std::string("NeMo ") + release.version +
               "'s Megatron-Core (core_r0.13.0) runs FP8 attention under delayed scaling only "
               "(fp8_dot_product_attention reaches TEDelayedScaling alone): model " +
               model.name + " sets training.fp8.attention with recipe " +
               to_string(model.training.fp8.recipe);
      }
      return std::string("--emit does not write FP8 attention yet (") +
             (release.framework == Framework::torchtitan
                  ? "torchtitan's float8 converter quantizes linear layers only"
                  : "the Hydra file's fp8_dot_product_attention is not written") +
             "): model " + model.name + " sets training.fp8.attention";
    case RefusalKind::fp8_recipe:
      if (release.framework == Framework::torchtitan) {
        return fmt::format(
            "torchtitan {}'s float8 converter runs torchao's tensorwise and rowwise recipes; "
            "model {} trains with mxfp8 (torchao's MX converter, not priced under torchtitan)",
            release.version, model.name);
      }
      return fmt::format(
          "NeMo {}'s Hydra config turns FP8 on with delayed scaling only (fp8, fp8_hybrid); model "
          "{} "
          "trains with the {} recipe",
          release.version, model.name, to_string(model.training.fp8.recipe));
    case RefusalKind::context_parallel:
      return fmt::format(
          "--emit writes context parallelism (CP {}) as the plan priced it: Transformer "
          "Engine's ring or Ulysses for megatron and nemo, PyTorch's all-gather rotater for "
          "torchtitan",
          obstacle.cp);
    case RefusalKind::dtype:
      return dtype_reason(release, model.training.dtype);
    case RefusalKind::ffn:
      return ffn_reason(release, model.ffn);
    case RefusalKind::model_shape:
      return shape_reason(release, model, obstacle);
    case RefusalKind::sgd:
      return std::string(release.title) + " " + release.version +
             " is written with its Adam optimizer: model " + model.name +
             " trains with SGD (training.optimizer)";
    case RefusalKind::sgd_sharded:
      return std::string(release.title) + " " + release.version +
             "'s distributed optimizer (ZeRO-1, and Megatron-FSDP's ZeRO-2/3) asserts Adam or an "
             "optimizer with a state initializer (distrib_optimizer.py), which its SGD is not: "
             "model " +
             model.name + " trains with SGD (training.optimizer)";
    case RefusalKind::qk_norm:
      return std::string(release.title) + " " + release.version +
             " has no switch for a per-head Q/K norm: model " + model.name + " sets qk_layernorm";
    case RefusalKind::sharding_with_pp:
      return sharding_reason(release);
    case RefusalKind::ep_overlap:
      return std::string(release.title) + " " + release.version +
             " has no combined 1F1B (its Megatron-Core has no overlap_moe_expert_parallel_comm): "
             "the plan was priced with the expert all-to-alls overlapped (stack ep_overlap)";
    case RefusalKind::moe_dispatcher:
      return std::string(release.title) + " " + release.version +
             " is written with the alltoall token dispatcher, where the plan was priced with "
             "HybridEP's exchange (stack moe_dispatcher: hybridep)";
    default:
      return split_reason(obstacle.kind, release);
  }
}

std::string refusal_change(const Refusal& refusal, const Release& release, const Stack& stack) {
  if (refusal.no_dividing_split) return "no split of the same GPUs it runs divides the batch";
  return obstacle_change(refusal.change, release, stack);
}

}  // namespace trident::cli
