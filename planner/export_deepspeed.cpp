// --emit deepspeed: a DeepSpeed config for v0.19.5 (or v0.19.3). Keys:
// tests/data/emit/deepspeed-*.txt (deepspeed/runtime/constants.py and the pydantic models of
// each section). DeepSpeed reads the file with hjson (runtime/config.py:687), so the leading
// # comments load. The model, its layers' checkpointing and pipeline stages live in the
// training script; the comments say what it must do.
#include <cstring>
#include <string>
#include <vector>

#include "planner/export_target.h"

namespace trident::emit {

namespace {

std::string model_comment(const Model& m) {
  return "# the training script builds the model: " + str(m.layers) + " layers, hidden " +
         str(m.hidden) + ", " + str(m.heads) + " heads (" + str(m.kv_heads) + " key/value" +
         (m.explicit_head_dim > 0 ? ", " + str(m.explicit_head_dim) + " wide" : std::string()) +
         "), FFN " + str(m.ffn_hidden) + " " + to_string(m.ffn) + ", " + to_string(m.norm) + ", " +
         (m.learned_positions ? "learned positions" : "RoPE (base " + str(m.rope_base) + ")") +
         (m.qk_layernorm ? ", Q/K norm" : "") + ", vocabulary " + str(m.vocab) + ", " +
         (m.tied_embeddings ? "tied" : "untied") + " output layer, sequences of " + str(m.seq_len) +
         "\n";
}

/// How PipelineModule's partition_method gives the plan's layers per stage. Its default,
/// 'parameters', balances parameter counts (the embedding and output layer weigh in: fewer
/// transformer layers at the ends); 'type:REGEX' balances the layers whose class matches
/// (runtime/pipe/module.py L396-417 _partition_layers, runtime/utils.py partition_balanced
/// @v0.19.5): the transformer class alone when PP divides the layers, and with the embedding
/// class (BLOOM's 'type:transformer|embedding') when the plan's ends hold one layer fewer
/// (stage_layers: pp x ceil(layers / pp) - layers = 2).
std::string partition_comment(const Model& model, const ParallelConfig& c) {
  const StageLayers s = stage_layers(model.layers, c);
  if (s.even(c.pp)) {
    return "partition_method=\"type:TRANSFORMER_LAYER_CLASS\": " + str(s.first) +
           " layers a stage (the default, 'parameters', would weigh the embedding and output "
           "layer in and move layers off the end stages)";
  }
  // Two stages of an odd count: the balanced split is the plan's, the larger first (a replay of
  // partition_balanced over the layers' 0/1 weights, a review of 2026-12-06).
  if (c.pp == 2) {
    return "partition_method=\"type:TRANSFORMER_LAYER_CLASS\": " + str(s.first) + " | " +
           str(s.last) + " layers";
  }
  if (static_cast<long long>(model.layers) + 2 == static_cast<long long>(c.pp) * (s.first + 1) &&
      s.last == s.first) {
    return "partition_method=\"type:TRANSFORMER_LAYER_CLASS|EMBEDDING_CLASS\" (the embedding "
           "and output layer count as layers, as BLOOM's): " +
           str(s.first) + " | " + str(s.first + 1) + " x " + str(c.pp - 2) + " | " + str(s.last) +
           " transformer layers";
  }
  return "the plan was priced with " + str(s.first) + " layers on the first stage, " + str(s.last) +
         " on the last and at most " + str(s.middle) +
         " on the others; no partition_method writes that split exactly (type:REGEX balances "
         "its own way): the launched stages differ from the priced ones";
}

std::string code_comments(const Model& model, const ParallelConfig& c) {
  std::string t;
  if (c.pp > 1) {
    t += "# pipeline: wrap the layers in deepspeed.pipe.PipelineModule(layers, num_stages=" +
         str(c.pp) + ", " + partition_comment(model, c) +
         ") and train with engine.train_batch(); it runs gradient_accumulation_steps "
         "micro-batches per step\n";
  }
  if (c.recompute == Recompute::full) {
    t += "# recompute: the block below only configures checkpointing; wrap each transformer "
         "layer's forward in deepspeed.checkpointing.checkpoint (Hugging Face models: "
         "model.gradient_checkpointing_enable())\n";
  }
  if (c.tp > 1) {
    t += "# tensor parallel: AutoTP shards the Hugging Face model's linear layers over " +
         str(c.tp) + " GPUs; every rank of a TP group must read the same batch\n";
    // runtime/config.py L697-712 @v0.19.5: without an mpu the batch check counts every rank
    // as data parallel; AutoTP's groups come later (engine.py _configure_tensor_parallel_states).
    // It then derives train_batch_size as micro x accumulation x world size (L962-965) and
    // counts that many samples a step (engine.py L3358): TP times the batch the plan trains.
    const long long batch = model.training.global_batch;
    t += "# train_batch_size left out: without an mpu DeepSpeed checks it against every rank, "
         "TP ranks included (runtime/config.py L697-712, L924); the global batch is micro x "
         "accumulation x DP " +
         str(c.dp) + " = " + str(batch) + "; DeepSpeed will report train_batch_size " +
         str(batch * c.tp) + " (x TP " + str(c.tp) +
         ") and count samples at that rate: set a sample- or token-based schedule from " +
         str(batch) + "\n";
  }
  return t;
}

/// The ZeRO stage, and the gradient reduction behind backward where the pricing stack overlaps
/// it: DeepSpeed overlaps it by default only at stage 3 (zero/config.py L383-386
/// overlap_comm_valid @v0.19.5).
std::string zero_section(const ParallelConfig& c, const StackSwitches& s) {
  const bool overlap = (c.zero == 1 || c.zero == 2) && c.dp * c.cp > 1 && s.dp_overlap_grad_reduce;
  return "\"zero_optimization\": {\"stage\": " + str(c.zero) +
         (overlap ? ", \"overlap_comm\": true" : "") + "}";
}

std::string body(const Model& model, const ParallelConfig& c, const StackSwitches& s) {
  const long long m = c.num_micro_batches(model.training.global_batch);
  // runtime/config.py:924: train_batch_size == micro * gradient_accumulation * world size, the
  // world size DP where an mpu says so (a PipelineModule's); under AutoTP (no mpu at
  // initialize) every rank, so the key is left out there and DeepSpeed derives it.
  std::vector<std::string> entries;
  if (c.tp == 1) entries.push_back("\"train_batch_size\": " + str(model.training.global_batch));
  entries.push_back("\"train_micro_batch_size_per_gpu\": " + str(c.micro_batch));
  entries.push_back("\"gradient_accumulation_steps\": " + str(m));
  entries.push_back(zero_section(c, s));
  if (c.tp > 1) entries.push_back("\"tensor_parallel\": {\"autotp_size\": " + str(c.tp) + "}");
  if (c.recompute == Recompute::full) {
    entries.push_back(
        "\"activation_checkpointing\": {\"partition_activations\": false, "
        "\"contiguous_memory_optimization\": false, \"cpu_checkpointing\": false}");
  }
  const Dtype dtype = model.training.dtype;
  if (dtype == Dtype::bf16) entries.push_back("\"bf16\": {\"enabled\": true}");
  if (dtype == Dtype::fp16) entries.push_back("\"fp16\": {\"enabled\": true}");
  // DeepSpeed reduces gradients in the model's 16-bit dtype unless told (engine.py L1364-1375
  // communication_data_type @v0.19.5); the deepspeed-megatron stack prices fp32, as BLOOM's
  // and MT-NLG's ran.
  if (s.grad_reduce_bytes == 4 && (dtype == Dtype::bf16 || dtype == Dtype::fp16)) {
    entries.push_back("\"communication_data_type\": \"fp32\"");
  }
  return json_object(entries);
}

ParallelConfig with(ParallelConfig c, void (*change)(ParallelConfig&)) {
  change(c);
  return c;
}

}  // namespace

std::optional<Limit> deepspeed_limit(const Input& in) {
  const ParallelConfig& c = in.config;
  const Dtype dtype = in.model.training.dtype;
  if (dtype == Dtype::fp8 || dtype == Dtype::tf32) {
    return limit(RefusalKind::dtype);
  }
  if (c.virtual_stages > 1) {
    return limit(RefusalKind::interleaved,
                 with(c, [](ParallelConfig& x) { x.virtual_stages = 1; }));
  }
  if (auto ends = set_ends_limit(in)) return ends;
  if (c.tp > 1 && c.pp > 1) {
    ParallelConfig fixed = c;
    fixed.dp *= fixed.tp;
    fixed.tp = 1;
    fixed.sequence_parallel = false;
    return limit(RefusalKind::tp_with_pp, fixed);
  }
  if (c.pp > 1 && c.zero >= 2) {
    return limit(RefusalKind::sharding_with_pp, with(c, [](ParallelConfig& x) { x.zero = 1; }));
  }
  if (std::strcmp(in.release.version, "v0.19.3") == 0 && c.tp > 1 && c.zero == 3) {
    return limit(RefusalKind::tp_with_zero3, with(c, [](ParallelConfig& x) { x.zero = 2; }));
  }
  if (c.sequence_parallel) {
    return limit(RefusalKind::sequence_parallel,
                 with(c, [](ParallelConfig& x) { x.sequence_parallel = false; }));
  }
  if (c.recompute == Recompute::selective) {
    return limit(RefusalKind::selective_recompute,
                 with(c, [](ParallelConfig& x) { x.recompute = Recompute::full; }));
  }
  if (c.recompute == Recompute::full && c.recompute_layers > 0) {
    return limit(RefusalKind::partial_recompute,
                 with(c, [](ParallelConfig& x) { x.recompute_layers = 0; }));
  }
  return std::nullopt;
}

std::string deepspeed_text(const Input& in, const Launch& launch) {
  std::string t = header_line(in);
  t += std::string("# still to add: the optimizer") +
       (in.model.training.optimizer == Optimizer::sgd ? " (SGD, as the plan was priced)" : "") +
       " and scheduler (\"optimizer\"/\"scheduler\" here or in code), the data loader, "
       "checkpoint paths\n";
  t += model_comment(in.model) + code_comments(in.model, in.config);
  t += placement_comment(launch, "#");
  t += "# launch: deepspeed --hostfile HOSTFILE --num_nodes " + str(launch.nodes) + " --num_gpus " +
       str(launch.gpus_per_node) + " train.py --deepspeed --deepspeed_config THIS_FILE\n";
  return t + body(in.model, in.config, in.switches);
}

}  // namespace trident::emit
