// Launch flags / config keys per framework; see export.h for the sources.
#include "planner/export.h"

#include <algorithm>
#include <string>

#include "topology/errors.h"

namespace trident {

namespace {

std::string str(long long value) { return std::to_string(value); }

long long layers_per_virtual_stage(const Model& model, const ParallelConfig& config) {
  return model.layers / (config.pp * config.virtual_stages);
}

long long servers_used(const Cluster& cluster, const ParallelConfig& config) {
  return (config.gpus() + cluster.gpus_per_server - 1) / cluster.gpus_per_server;
}

const char* precision_flag(Dtype dtype) {
  return dtype == Dtype::fp16 ? "--fp16" : "--bf16";
}

Export megatron(const Model& model, const ParallelConfig& c) {
  Export out;
  std::string& t = out.text;
  t += "--tensor-model-parallel-size " + str(c.tp) + " \\\n";
  t += "--pipeline-model-parallel-size " + str(c.pp) + " \\\n";
  if (c.virtual_stages > 1) {
    t += "--num-layers-per-virtual-pipeline-stage " + str(layers_per_virtual_stage(model, c)) +
         " \\\n";
  }
  t += "--micro-batch-size " + str(c.micro_batch) + " \\\n";
  t += "--global-batch-size " + str(model.training.global_batch) + " \\\n";
  if (c.sequence_parallel) t += "--sequence-parallel \\\n";
  if (c.recompute == Recompute::selective) t += "--recompute-granularity selective \\\n";
  if (c.recompute == Recompute::full) {
    t += "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \\\n";
  }
  if (c.zero == 1 || c.zero == 2) t += "--use-distributed-optimizer \\\n";
  if (c.zero == 3) {
    t += "--use-torch-fsdp2 \\\n";
    out.notes.push_back("Megatron-LM: ZeRO-3 maps to --use-torch-fsdp2, which does not work with "
                        "pipeline parallelism (arguments.py help text)");
  }
  if (c.zero == 2) {
    out.notes.push_back("Megatron-LM: --use-distributed-optimizer shards the optimizer state "
                        "(ZeRO-1, 6 + 12/dp bytes per parameter); it has no ZeRO-2 flag");
  }
  t += precision_flag(model.training.dtype);
  t += "\n";
  out.notes.push_back("Megatron-LM: data parallel size is implied: world size " + str(c.gpus()) +
                      " / (tp " + str(c.tp) + " x pp " + str(c.pp) + ") = " + str(c.dp));
  return out;
}

Export nemo(const Cluster& cluster, const Model& model, const ParallelConfig& c) {
  Export out;
  std::string& t = out.text;
  t += "trainer:\n";
  t += "  devices: " + str(std::min(cluster.gpus_per_server, c.gpus())) + "\n";
  t += "  num_nodes: " + str(servers_used(cluster, c)) + "\n";
  t += "  precision: " + std::string(model.training.dtype == Dtype::fp16 ? "16" : "bf16") + "\n";
  t += "model:\n";
  t += "  micro_batch_size: " + str(c.micro_batch) + "\n";
  t += "  global_batch_size: " + str(model.training.global_batch) + "\n";
  t += "  tensor_model_parallel_size: " + str(c.tp) + "\n";
  t += "  pipeline_model_parallel_size: " + str(c.pp) + "\n";
  t += "  virtual_pipeline_model_parallel_size: " +
       (c.virtual_stages > 1 ? str(c.virtual_stages) : std::string("null")) + "\n";
  t += "  sequence_parallel: " + std::string(c.sequence_parallel ? "true" : "false") + "\n";
  if (c.recompute == Recompute::none) {
    t += "  activations_checkpoint_granularity: null\n";
  } else if (c.recompute == Recompute::selective) {
    t += "  activations_checkpoint_granularity: selective\n";
  } else {
    t += "  activations_checkpoint_granularity: full\n";
    t += "  activations_checkpoint_method: uniform\n";
    t += "  activations_checkpoint_num_layers: 1\n";
  }
  t += "  optim:\n";
  t += std::string("    name: ") + (c.zero >= 1 ? "distributed_fused_adam" : "fused_adam") + "\n";
  if (c.zero == 3) {
    out.notes.push_back("NeMo: ZeRO-3 has no key in this config; distributed_fused_adam shards "
                        "optimizer state and gradients only");
  }
  return out;
}

Export deepspeed(const Model& model, const ParallelConfig& c) {
  Export out;
  const long long m = c.num_micro_batches(model.training.global_batch);
  std::string& t = out.text;
  t += "{\n";
  t += "  \"train_batch_size\": " + str(model.training.global_batch) + ",\n";
  t += "  \"train_micro_batch_size_per_gpu\": " + str(c.micro_batch) + ",\n";
  t += "  \"gradient_accumulation_steps\": " + str(m) + ",\n";
  t += "  \"zero_optimization\": {\"stage\": " + str(c.zero) + "},\n";
  if (c.tp > 1) t += "  \"tensor_parallel\": {\"autotp_size\": " + str(c.tp) + "},\n";
  if (c.recompute != Recompute::none) {
    t += "  \"activation_checkpointing\": {\"partition_activations\": " +
         std::string(c.tp > 1 ? "true" : "false") + ", \"contiguous_memory_optimization\": false},\n";
  }
  t += std::string("  \"") + (model.training.dtype == Dtype::fp16 ? "fp16" : "bf16") +
       "\": {\"enabled\": true}\n";
  t += "}\n";
  if (c.pp > 1) {
    out.notes.push_back("DeepSpeed: pipeline parallelism is set in code: "
                        "deepspeed.pipe.PipelineModule(layers, num_stages=" + str(c.pp) + ")");
  }
  if (c.virtual_stages > 1) {
    out.notes.push_back("DeepSpeed: no interleaved schedule; the plan's " +
                        str(c.virtual_stages) + " virtual stages run as plain 1F1B");
  }
  if (c.sequence_parallel) {
    out.notes.push_back("DeepSpeed: Megatron-style sequence parallelism comes from the model "
                        "code (Megatron-DeepSpeed --sequence-parallel), not this config");
  }
  if (c.recompute == Recompute::selective) {
    out.notes.push_back("DeepSpeed: checkpointing is per call of deepspeed.checkpointing."
                        "checkpoint(); wrap only the attention core for selective recompute");
  }
  return out;
}

Export torchtitan(const Model& model, const ParallelConfig& c) {
  Export out;
  const long long local_batch = model.training.global_batch / c.dp;
  std::string& t = out.text;
  t += "[training]\n";
  t += "local_batch_size = " + str(local_batch) + "\n";
  t += "global_batch_size = " + str(model.training.global_batch) + "\n";
  t += "seq_len = " + str(model.seq_len) + "\n";
  t += "\n[parallelism]\n";
  const bool sharded = c.zero >= 1;
  t += "data_parallel_replicate_degree = " + str(sharded ? 1 : c.dp) + "\n";
  t += "data_parallel_shard_degree = " + str(sharded ? c.dp : 1) + "\n";
  if (c.zero == 1 || c.zero == 2) t += "fsdp_reshard_after_forward = \"never\"\n";
  t += "tensor_parallel_degree = " + str(c.tp) + "\n";
  t += "pipeline_parallel_degree = " + str(c.pp) + "\n";
  if (c.pp > 1) {
    t += std::string("pipeline_parallel_schedule = \"") +
         (c.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B") + "\"\n";
    t += "pipeline_parallel_layers_per_stage = " + str(layers_per_virtual_stage(model, c)) + "\n";
    t += "pipeline_parallel_microbatch_size = " + str(c.micro_batch) + "\n";
  }
  t += "\n[activation_checkpoint]\n";
  t += std::string("mode = \"") + to_string(c.recompute) + "\"\n";
  if (c.zero == 1 || c.zero == 2) {
    out.notes.push_back("torchtitan: no ZeRO-1/2; FSDP2 without resharding after forward "
                        "(fsdp_reshard_after_forward = \"never\") is the closest");
  }
  if (c.tp > 1 && !c.sequence_parallel) {
    out.notes.push_back("torchtitan: tensor parallelism always runs with sequence parallelism");
  }
  if (c.pp == 1 && c.micro_batch != local_batch) {
    out.notes.push_back("torchtitan: without pipeline parallelism there is no micro-batching; "
                        "local_batch_size " + str(local_batch) + " runs at once");
  }
  return out;
}

}  // namespace

Framework parse_framework(const std::string& name) {
  if (name == "megatron") return Framework::megatron;
  if (name == "nemo") return Framework::nemo;
  if (name == "deepspeed") return Framework::deepspeed;
  if (name == "torchtitan") return Framework::torchtitan;
  throw InputError("--emit '" + name + "': expected megatron|nemo|deepspeed|torchtitan");
}

const char* to_string(Framework framework) {
  switch (framework) {
    case Framework::megatron: return "megatron";
    case Framework::nemo: return "nemo";
    case Framework::deepspeed: return "deepspeed";
    case Framework::torchtitan: return "torchtitan";
  }
  return "?";
}

Export export_plan(Framework framework, const Cluster& cluster, const Model& model,
                   const ParallelConfig& config) {
  switch (framework) {
    case Framework::megatron: return megatron(model, config);
    case Framework::nemo: return nemo(cluster, model, config);
    case Framework::deepspeed: return deepspeed(model, config);
    case Framework::torchtitan: return torchtitan(model, config);
  }
  return {};
}

}  // namespace trident
