// --emit torchtitan: a torchtitan v0.2.2 TOML job config. Keys and choices:
// tests/data/emit/torchtitan-v0.2.2.txt (torchtitan/config/job_config.py), model flavors from
// torchtitan/models/llama3/__init__.py (the same file's `flavor` lines).
#include <string>

#include "costmodel/pipeline.h"
#include "costmodel/stack.h"
#include "planner/export_target.h"

namespace trident::emit {

namespace {

/// torchtitan builds a model from a registered flavor, not from sizes in the config:
/// llama3_args in torchtitan/models/llama3/__init__.py (v0.2.2), FFN hidden as
/// model/model.py FeedForward computes it (2/3 of 4 x dim, times ffn_dim_multiplier, rounded
/// up to multiple_of); vocabulary 128256 (model/args.py); RMSNorm, RoPE, SwiGLU, no biases,
/// untied output layer.
struct Flavor {
  const char* name;
  int dim, layers, heads, kv_heads, ffn_hidden, vocab;
};
constexpr Flavor kLlama3[] = {
    {"8B", 4096, 32, 32, 8, 14336, 128256},
    {"70B", 8192, 80, 64, 8, 28672, 128256},
    {"405B", 16384, 126, 128, 8, 53248, 128256},
};

const Flavor* flavor_of(const Model& m) {
  // torchtitan's Llama 3 heads are dim / n_heads wide (no head_dim argument), without Q/K
  // norms or dropout (model/model.py Attention, FeedForward), RoPE base 500000 in every flavor
  // (__init__.py rope_theta).
  const bool llama_kind = m.ffn == FfnKind::swiglu && m.norm == NormKind::rmsnorm && !m.bias &&
                          !m.learned_positions && !m.tied_embeddings && !m.qk_layernorm &&
                          m.dropout == 0.0 && m.rope_base == kTorchtitanRopeBase &&
                          (m.explicit_head_dim == 0 || m.q_hidden() == m.hidden);
  for (const Flavor& f : kLlama3) {
    if (llama_kind && f.dim == m.hidden && f.layers == m.layers && f.heads == m.heads &&
        f.kv_heads == m.kv_heads && f.ffn_hidden == m.ffn_hidden && f.vocab == m.vocab) {
      return &f;
    }
  }
  return nullptr;
}

std::string q(const std::string& text) { return "\"" + text + "\""; }

/// torchtitan's selective_ac_option k for the plan's partial recompute: every k-th block
/// (ptd_checkpoint_wrapper._count % k) on a split of equal stages; 0 when the plan recomputes
/// every layer (none partial: N at least the chunk) or when no k runs it.
int ac_interval(const Model& model, const ParallelConfig& c) {
  if (c.recompute != Recompute::full || c.recompute_layers <= 0) return 0;
  return model_stage_layers(model, c).even(c.pp)
             ? every_kth_interval(model_chunk_layers(model, c), c.recompute_layers)
             : 0;
}

/// Partial recompute of fewer layers than a chunk holds that no k runs.
bool partial_not_runnable(const Model& model, const ParallelConfig& c) {
  return c.recompute == Recompute::full && c.recompute_layers > 0 &&
         c.recompute_layers < model_chunk_layers(model, c) && ac_interval(model, c) == 0;
}

/// Without PP, torchtitan accumulates gradients: global = local x DP x steps (train.py:200-
/// 215), so local_batch_size is the micro-batch. With PP, local_batch_size is the whole
/// per-replica batch, split into pipeline_parallel_microbatch_size micro-batches
/// (distributed/pipeline_parallel.py:187-192).
std::string training(const Model& model, const ParallelConfig& c) {
  const long long per_replica = model.training.global_batch / c.dp;
  const long long local = c.pp > 1 ? per_replica : c.micro_batch;
  const bool fp32 = model.training.dtype == Dtype::fp32;
  return "[training]\nlocal_batch_size = " + str(local) +
         "\nglobal_batch_size = " + str(model.training.global_batch) +
         "\nseq_len = " + str(model.seq_len) +
         "\nmixed_precision_param = " + q(fp32 ? "float32" : "bfloat16") + "\n";
}

/// ZeRO-0: DDP (replicate); ZeRO-2: FSDP2 that keeps the gathered weights from forward to
/// backward (reshard "never"); ZeRO-3: torchtitan's "default" policy, which reshards after
/// forward without PP and keeps the weights gathered with PP (fsdp.py
/// get_fsdp_reshard_after_forward_policy), as the torchtitan stack prices it.
/// Pipeline stages: layers / (PP x v) each, first/last stage not lightened, so
/// ceil(layers / per_stage) = PP x v stages (pipeline_parallel.py:71-108).
std::string parallelism(const Model& model, const ParallelConfig& c) {
  const bool shard = c.zero >= 2;
  // HSDP: shard over dp_shard ranks, replicate across the rest (job_config.py Parallelism).
  const int shard_degree = shard ? c.shard_ranks() : 1;
  std::string t = "[parallelism]\ndata_parallel_replicate_degree = " + str(c.dp / shard_degree) +
                  "\ndata_parallel_shard_degree = " + str(shard_degree) + "\n";
  if (shard) t += "fsdp_reshard_after_forward = " + q(c.zero == 2 ? "never" : "default") + "\n";
  t += "tensor_parallel_degree = " + str(c.tp) + "\npipeline_parallel_degree = " + str(c.pp) + "\n";
  // Context parallelism (job_config.py Parallelism): the all-gather rotater, the only one its
  // train.py runs (the rotate method is set for validation only); FSDP shards over dp_shard x cp.
  if (c.cp > 1) {
    t += "context_parallel_degree = " + str(c.cp) +
         "\ncontext_parallel_rotate_method = \"allgather\"\n";
  }
  if (c.pp > 1) {
    // torchtitan splits L + first_less + last_less "effective" layers evenly over the stages
    // (distributed/pipeline_parallel.py generate_llm_fqn_per_model_part): an uneven split of
    // first | middle | last is layers_per_stage = the largest, each end short by its gap.
    // Interleaved, the same counts make every virtual stage the plan's chunk, the largest
    // stage's layers / v, the first and the last short by the ends' gaps (torchtitan_limit
    // lets through only gaps within a chunk).
    int per_stage = layers_per_chunk(model, c);
    int first_less = 0;
    int last_less = 0;
    if (const auto s = uneven_stages(model, c)) {
      per_stage = s->most() / c.virtual_stages;
      first_less = s->most() - s->first;
      last_less = s->most() - s->last;
    }
    t += "pipeline_parallel_schedule = " + q(c.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B") +
         "\npipeline_parallel_layers_per_stage = " + str(per_stage) +
         "\npipeline_parallel_first_stage_less_layers = " + str(first_less) +
         "\npipeline_parallel_last_stage_less_layers = " + str(last_less) +
         "\npipeline_parallel_microbatch_size = " + str(c.micro_batch) + "\n";
  }
  return t;
}

ParallelConfig with_zero(ParallelConfig c, int zero) {
  c.zero = zero;
  return c;
}

/// torchao Float8: current scaling is "tensorwise", blockwise the per-row "rowwise"; TE's
/// delayed scaling has no torchao recipe (tensorwise written, said in a comment). FP8 weights:
/// the FSDP all-gather in FP8, tensorwise only and then without recipe_name, which torchtitan
/// asserts against beside the all-gather (its tensorwise default is the recipe_name = None
/// branch: components/quantization/float8.py L65-93 @v0.2.2). The output layer stays 16-bit as
/// priced: filter_fqns = ["output"], as torchtitan's own Llama 3 configs (the key's default is
/// empty: job_config.py L741).
std::string float8_section(const Fp8Options& fp8) {
  const bool rowwise = fp8.recipe == Fp8Recipe::blockwise;
  std::string t = "\n[quantize.linear.float8]\n";
  if (fp8.recipe == Fp8Recipe::delayed) {
    t += "# delayed scaling has no torchao recipe: tensorwise (current scaling) instead\n";
  }
  if (fp8.params && rowwise) {
    // The model asks for FP8 weights, which a stack that gathers them under the rowwise recipe
    // (megatron-core's blockwise) priced as 8-bit gathers: torchao gathers 16-bit weights here.
    t += "# FP8 weights (training.fp8.params) gather in 16 bits under rowwise scaling: torchao's "
         "float8 all-gather is tensorwise's (--stack torchtitan prices them so)\n";
  }
  if (fp8.params && !rowwise) {
    t += "# tensorwise: torchtitan's default when recipe_name is unset, the one way with the FP8 "
         "all-gather\n";
    t += "enable_fsdp_float8_all_gather = true\nprecompute_float8_dynamic_scale_for_fsdp = true\n";
  } else {
    t += "recipe_name = " + q(rowwise ? "rowwise" : "tensorwise") + "\n";
  }
  return t + "filter_fqns = [\"output\"]\n";
}

}  // namespace

std::optional<Limit> torchtitan_limit(const Input& in) {
  // An uneven split interleaved: torchtitan's counts (pipeline_parallel.py L59-120,
  // generate_llm_fqn_per_model_part L236-345 @v0.2.2) shorten the first and the last virtual
  // stage only, which writes the plan's split when each end's gap fits in one chunk (its
  // weight at most the layers per stage, L288-296).
  if (auto uneven = uneven_stage_limit(in, true)) {
    const StageLayers split = stage_layers(in.model.layers, in.config);
    const auto fits = [&in, &split](int v) {
      return ends_only_split(in.model.layers, in.config.pp, v, split);
    };
    if (!fits(in.config.virtual_stages)) {
      // Nearest: the most virtual stages below the plan's that the ends fit (VP 1 at least).
      for (int v = in.config.virtual_stages - 1; uneven->fixed && v > 1; --v) {
        if (fits(v)) {
          uneven->fixed->virtual_stages = v;
          break;
        }
      }
      return uneven;
    }
  }
  const ParallelConfig& c = in.config;
  if (flavor_of(in.model) == nullptr) {
    Limit shape = limit(RefusalKind::model_shape);
    shape.obstacle.models = {"llama3-8b", "llama3-70b", "llama3-405b"};
    // A flavor's shape but for what a model file may add: the message lists those.
    Model plain = in.model;
    plain.qk_layernorm = false;
    plain.dropout = 0.0;
    plain.rope_base = kTorchtitanRopeBase;
    shape.obstacle.flavor_but_keys = flavor_of(plain) != nullptr;
    return shape;
  }
  const Dtype dtype = in.model.training.dtype;
  if (dtype == Dtype::fp16 || dtype == Dtype::tf32) {
    return limit(RefusalKind::dtype);
  }
  // MXFP8 is torchao's MX converter (quantize.linear.mx), not float8's: a recipe trident does
  // not price under torchtitan (its stack runs current and rowwise), so not written as float8.
  if (dtype == Dtype::fp8 && in.model.training.fp8.recipe == Fp8Recipe::mxfp8) {
    return limit(RefusalKind::fp8_recipe);
  }
  // The nearest sharding: ZeRO-2, FSDP2 without resharding after forward; with PP, ZeRO-3,
  // which torchtitan runs the same way there ("default" reshards after forward only without
  // PP, parallelize.py L319-327 @v0.2.2) and --stack torchtitan prices.
  const int nearest_zero = c.pp > 1 ? 3 : 2;
  // With CP torchtitan shards over the CP ranks (fsdp_enabled = dp_shard or cp): no DDP.
  if (c.zero == 0 && (c.tp > 1 || c.pp > 1 || c.cp > 1)) {
    return limit(RefusalKind::ddp_multi_dim, with_zero(c, nearest_zero));
  }
  if (c.zero == 1) {
    return limit(RefusalKind::zero1, with_zero(c, nearest_zero));
  }
  if (c.tp > 1 && !c.sequence_parallel) {
    ParallelConfig fixed = c;
    fixed.sequence_parallel = true;
    return limit(RefusalKind::no_sequence_parallel, fixed);
  }
  if (c.recompute == Recompute::selective && in.selective != SelectiveKind::per_op) {
    ParallelConfig fixed = c;
    fixed.recompute = Recompute::full;
    return limit(RefusalKind::selective_recompute, fixed);
  }
  if (partial_not_runnable(in.model, c)) {
    ParallelConfig fixed = c;
    fixed.recompute_layers = 0;
    return limit(RefusalKind::partial_recompute, fixed);
  }
  return std::nullopt;
}

std::string torchtitan_text(const Input& in, const Launch& launch) {
  const ParallelConfig& c = in.config;
  const bool fp8 = in.model.training.dtype == Dtype::fp8;
  std::string t = header_line(in);
  t += "# still to add: [model] hf_assets_path (the tokenizer); [training] dataset or "
       "dataset_path, steps; [optimizer] lr; [checkpoint]\n";
  t += placement_comment(launch, "#");
  if (in.switches.attention != AttentionKernel::cudnn) {
    // torchtitan calls SDPA with cuDNN attention first since v0.2.0 (models/attention.py
    // L170-178 @v0.2.2, sdpa_kernel(..., set_priority=True)); no config key changes it.
    t += std::string(
             "# attention: this release runs PyTorch SDPA with cuDNN attention first, "
             "FlashAttention-2 next (torchtitan/models/attention.py L170-178, "
             "set_priority=True); the plan was priced with ") +
         to_string(in.switches.attention) +
         ": a stack with attention: cudnn prices what this launch runs\n";
  }
  t += "# launch on every node: torchrun --nnodes " + str(launch.nodes) + " --nproc_per_node " +
       str(launch.gpus_per_node) +
       " --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500 -m torchtitan.train "
       "--job.config_file THIS_FILE\n";
  t += "[model]\nname = \"llama3\"\nflavor = " + q(flavor_of(in.model)->name) + "\n";
  if (fp8) t += "converters = [\"quantize.linear.float8\"]\n";
  t += '\n';
  t += training(in.model, c);
  t += '\n';
  t += parallelism(in.model, c);
  // Selective under the torchtitan stack is its per-op policy: mode "selective", option "op";
  // partial full recompute is its layer option: every k-th block (parallelize_llama.py).
  const bool per_op = c.recompute == Recompute::selective;
  const int every = c.recompute == Recompute::full ? ac_interval(in.model, c) : 0;
  t += "\n[activation_checkpoint]\nmode = " +
       q(every > 0                        ? "selective"
         : c.recompute == Recompute::full ? "full"
         : per_op                         ? "selective"
                                          : "none") +
       "\n";
  if (per_op) t += "selective_ac_option = \"op\"\n";
  if (every > 0) t += "selective_ac_option = " + q(str(every)) + "\n";
  if (fp8) t += float8_section(in.model.training.fp8);
  return t;
}

}  // namespace trident::emit
