#pragma once
// For test_export.cpp: each framework's cross-flag rules, re-stated from its source at the
// pinned commit (file:line beside each), applied to an emitted configuration. Each returns
// the first violation as a sentence, or "" when the text passes.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/pipeline.h"
#include "planner/export.h"
#include "tests/emit_rules.h"

namespace trident::test {

/// pretrain_gpt.py's optimizer is Adam unless --optimizer says otherwise (Megatron-LM and
/// Megatron-DeepSpeed arguments.py): the model's.
inline std::string optimizer_rule(const Settings& s, const Model& m) {
  const std::string written = s.count("--optimizer") != 0 ? s.at("--optimizer") : "adam";
  return written == to_string(m.training.optimizer) ? "" : "the optimizer is not the model's";
}

inline std::string data_file(const Release& r) {
  return std::string(r.name) + "-" + r.version + ".txt";
}

inline std::string world_mismatch(long long nodes, long long per_node, const ParallelConfig& c) {
  if (nodes * per_node == c.gpus()) return "";
  return "launcher starts " + std::to_string(nodes * per_node) + " ranks, the plan has " +
         std::to_string(c.gpus());
}

inline std::string launcher_number(const std::string& line, const std::string& flag) {
  const auto at = line.find(flag + " ");
  if (at == std::string::npos) return "0";
  return split(line.substr(at + flag.size() + 1), ' ')[0];
}

/// The layer count a --moe-layer-freq pattern "'([0]*3+[1]*58)'" evaluates to (its runs
/// summed), or -1 when it is not such a pattern.
inline long long moe_pattern_layers(const std::string& value) {
  if (value.size() < 4 || value.front() != '\'' || value.substr(1, 1) != "(") return -1;
  long long total = 0;
  for (const std::string& run : split(value.substr(2, value.size() - 4), '+')) {
    const auto star = run.find("]*");
    if (star == std::string::npos) return -1;
    total += std::stoll(run.substr(star + 2));
  }
  return total;
}

// Megatron-LM core_v0.19.0: arguments.py L1593-1603 (experts divisible by EP), MoE with
// expert TP 1 as trident prices it; transformer_config.py L2328-2336 (top-1 softmax needs the
// pre-softmax), L2670-2715 (the combined 1F1B: EP > 1, VP when PP > 1, no full recompute, MTP
// <= 1, not with the shared experts' overlap; delay_wgrad_compute needs it), the
// --moe-layer-freq pattern one entry per layer (gpt_layer_specs.py L643-660), MLA not with GQA
// (arguments.py L1892-1893).
inline std::string megatron_moe_rules(const Settings& s, const Model& m, const ParallelConfig& c) {
  const bool moe = s.count("--num-experts") != 0;
  if (moe != m.is_moe()) return "experts written for a dense model or missing";
  if (s.count("--multi-latent-attention") && s.count("--group-query-attention")) {
    return "MLA with GQA (arguments.py:1892)";
  }
  if ((s.count("--multi-latent-attention") != 0) != (m.attention == AttentionKind::mla)) {
    return "MLA written or missing";
  }
  if (num(s, "--mtp-num-layers") != m.mtp_layers) return "MTP layers";
  const bool combined = s.count("--overlap-moe-expert-parallel-comm") != 0;
  if (s.count("--delay-wgrad-compute") && !combined) return "delay_wgrad_compute without overlap";
  if (!moe) return combined ? "the combined 1F1B on a dense model" : "";
  const long long ep = num(s, "--expert-model-parallel-size");
  if (ep != c.ep || num(s, "--num-experts") % ep != 0) return "EP (arguments.py:1602)";
  if (num(s, "--expert-tensor-parallel-size") != 1) return "expert TP is priced at 1";
  if (m.moe.top_k == 1 && !s.count("--moe-router-score-function") &&
      !s.count("--moe-router-pre-softmax")) {
    return "top-1 softmax without pre-softmax (transformer_config.py:2336)";
  }
  if (s.count("--moe-layer-freq")) {
    const std::string freq = s.at("--moe-layer-freq");
    if (freq.front() == '\'' && moe_pattern_layers(freq) != num(s, "--num-layers")) {
      return "--moe-layer-freq pattern length";
    }
  }
  if (combined) {
    const bool full =
        s.count("--recompute-granularity") && s.at("--recompute-granularity") == "full";
    const bool interleaved = s.count("--num-layers-per-virtual-pipeline-stage") ||
                             (s.count("--pipeline-model-parallel-layout") && c.virtual_stages > 1);
    if (ep < 2 || (c.pp > 1 && !interleaved) || full || num(s, "--mtp-num-layers") > 1 ||
        s.count("--moe-shared-expert-overlap")) {
      return "the combined 1F1B's asserts (transformer_config.py:2670-2715)";
    }
  }
  return "";
}

// Megatron-LM core_v0.19.0 megatron/training/arguments.py.
/// Megatron-Core's pipeline layout (pipeline_parallel_layer_layout.py parse_str_to_list:
/// stages split at '|', "x*N" unrolled; E embedding, t decoder, m MTP, L loss) checked against
/// the plan's split (costmodel/pipeline.h, the middle stages in any order): "" when it is the
/// plan's, else what differs.
inline std::string layout_rule(std::string layout, const Model& m, const ParallelConfig& c,
                               bool takes_mtp = true) {
  layout.erase(std::remove(layout.begin(), layout.end(), '"'), layout.end());
  std::string flat;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (i + 1 < layout.size() && layout[i + 1] == '*') {
      std::size_t end = i + 2;
      while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
      flat.append(std::stoul(layout.substr(i + 2, end - i - 2)), layout[i]);
      i = end - 1;
    } else {
      flat.push_back(layout[i]);
    }
  }
  const std::vector<std::string> chunks = split(flat, '|');
  if (static_cast<int>(chunks.size()) != c.pp * c.virtual_stages) return "layout stages";
  if (flat.front() != 'E' || flat.back() != 'L' || std::count(flat.begin(), flat.end(), 'E') != 1 ||
      std::count(flat.begin(), flat.end(), 'L') != 1 ||
      std::count(flat.begin(), flat.end(), 'm') != m.mtp_layers) {
    return "layout ends";
  }
  // validate_layer_layout (L110-135 @core_v0.19.0): MTP layers after every decoder layer, all
  // in one chunk, the last one's.
  if (const auto first_mtp = flat.find('m'); first_mtp != std::string::npos) {
    if (flat.find('t', first_mtp) != std::string::npos) return "a decoder layer after MTP";
    if (flat.find('|', first_mtp) != std::string::npos) return "MTP outside the last chunk";
  }
  // core_r0.13.0 (NeMo v2.4.0's): "MTP layer is not supported for flexible pipeline layout".
  if (!takes_mtp && flat.find('m') != std::string::npos) return "MTP in a layout (core_r0.13.0)";
  // Chunk k is chunk k / pp of stage k % pp (PipelineParallelLayerLayout.__init__); no chunk
  // may hold more layers, MTP ones included, than the plan's chunk (the pace-setting stage's,
  // MTP included, / v rounded up), or than the MTP layers where they alone are.
  const StageLayers plan = stage_layers(m.layers, c);
  const int priced = model_chunk_layers(m, c);
  std::vector<int> counts(static_cast<std::size_t>(c.pp), 0);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const int run = static_cast<int>(std::count(chunks[k].begin(), chunks[k].end(), 't'));
    const int mtp = static_cast<int>(std::count(chunks[k].begin(), chunks[k].end(), 'm'));
    if (run + mtp > std::max(priced, m.mtp_layers)) return "a chunk longer than the plan's";
    counts[k % static_cast<std::size_t>(c.pp)] += run;
  }
  const MiddleStages middles = middle_stages(m.layers, c.pp, plan);
  std::vector<int> inner(counts.begin() + 1, counts.end() - 1);
  std::vector<int> want(static_cast<std::size_t>(middles.full), plan.middle);
  want.insert(want.end(), static_cast<std::size_t>(middles.fewer), plan.middle - 1);
  std::sort(inner.begin(), inner.end());
  std::sort(want.begin(), want.end());
  if (counts.front() != plan.first || counts.back() != plan.last || inner != want) {
    return "not the plan's layer split (layout)";
  }
  return "";
}

inline std::string megatron_rules(const std::string& text, const Model& m, const ParallelConfig& c,
                                  const ArgDefs& defs) {
  std::string launcher;
  const Settings s = parse_megatron(text, &launcher);
  if (auto bad = check_names(s, defs); !bad.empty()) return bad;
  const bool fsdp2 = s.count("--use-torch-fsdp2") != 0;
  const bool mfsdp = s.count("--use-megatron-fsdp") != 0;
  // 997-1013: torch FSDP2 needs PP 1, no distributed optimizer, no gradient-accumulation
  // fusion, ckpt torch_dist|torch_dcp, untied embeddings, no fp16.
  if (fsdp2 &&
      (num(s, "--pipeline-model-parallel-size") != 1 || s.count("--use-distributed-optimizer") ||
       !s.count("--no-gradient-accumulation-fusion") ||
       !s.count("--untie-embeddings-and-output-weights") || s.count("--fp16"))) {
    return "--use-torch-fsdp2 fails its asserts (arguments.py:997-1013)";
  }
  // 1146: Megatron-FSDP needs --ckpt-format fsdp_dtensor; 1143: CUDA_DEVICE_MAX_CONNECTIONS != 1.
  if (mfsdp && (s.at("--ckpt-format") != "fsdp_dtensor" ||
                launcher.find("CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos)) {
    return "Megatron-FSDP asserts (arguments.py:1143, 1146)";
  }
  // 1413-1437: TP or CP without FSDP or the combined 1F1B asserts CUDA_DEVICE_MAX_CONNECTIONS=1
  // (before Blackwell).
  const bool combined = s.count("--overlap-moe-expert-parallel-comm") != 0;
  if ((c.tp > 1 || c.cp > 1) && !mfsdp && !combined &&
      launcher.rfind("CUDA_DEVICE_MAX_CONNECTIONS=1 ", 0) != 0) {
    return "TP/CP needs CUDA_DEVICE_MAX_CONNECTIONS=1 (arguments.py:1437)";
  }
  if (auto bad = megatron_moe_rules(s, m, c); !bad.empty()) return bad;
  // argument_utils.py L315-322: the non-SwiGLU bias fusion follows --bias-gelu-fusion (on unless
  // --no-bias-gelu-fusion or --disable-bias-linear, arguments.py L1550-1551);
  // transformer_config.py L2114-2119 refuses it with squared ReLU.
  if (s.count("--squared-relu") && !s.count("--no-bias-gelu-fusion") &&
      !s.count("--disable-bias-linear")) {
    return "bias_activation_fusion with squared ReLU (transformer_config.py:2114-2119)";
  }
  // 1401-1402: TP communication overlap (userbuffers) only with sequence parallelism.
  if (s.count("--tp-comm-overlap") && !s.count("--sequence-parallel")) {
    return "--tp-comm-overlap without sequence parallelism (arguments.py:1401)";
  }
  // 990-995: the parameter gather overlaps only with the distributed optimizer (or
  // Megatron-FSDP) and with the gradient reduction overlapped.
  if (s.count("--overlap-param-gather") &&
      (!s.count("--overlap-grad-reduce") || !s.count("--use-distributed-optimizer"))) {
    return "--overlap-param-gather asserts (arguments.py:990-995)";
  }
  // 967-975: the interleaved schedule without p2p overlap needs PP > 2. 1186-1193: bf16
  // reduces in bf16 only when told, fp16 in fp32 only when told.
  if (s.count("--no-overlap-p2p-communication") &&
      (num(s, "--pipeline-model-parallel-size") < 3 || c.virtual_stages < 2)) {
    return "--no-overlap-p2p-communication asserts (arguments.py:967-975)";
  }
  if ((s.count("--grad-reduce-in-bf16") && !s.count("--bf16")) ||
      (s.count("--accumulate-allreduce-grads-in-fp32") && !s.count("--fp16"))) {
    return "gradient reduction dtype";
  }
  // ZeRO-2 shards gradients, ZeRO-3 weights too: optim_grads / optim_grads_params (3023).
  const std::string strategy =
      s.count("--data-parallel-sharding-strategy") ? s.at("--data-parallel-sharding-strategy") : "";
  if ((c.zero == 2) != (strategy == "optim_grads") ||
      (c.zero == 3) != (strategy == "optim_grads_params") ||
      (c.zero == 1) != (s.count("--use-distributed-optimizer") && !mfsdp)) {
    return "ZeRO-" + std::to_string(c.zero) + " emitted as another stage";
  }
  // 933-936: layers divide by PP, and layers per stage by layers per virtual stage, unless the
  // first/last stages' counts are given (921: then not with --num-layers-per-virtual-pipeline-
  // stage); transformer_config.py:1988-2045: the middle stages split the rest evenly, none left
  // without middle stages. The split written must be the plan's (costmodel/pipeline.h).
  const long long layers = num(s, "--num-layers"), pp = num(s, "--pipeline-model-parallel-size");
  const long long per_vp = num(s, "--num-layers-per-virtual-pipeline-stage");
  const long long first = num(s, "--decoder-first-pipeline-num-layers");
  const long long last = num(s, "--decoder-last-pipeline-num-layers");
  // transformer_config.py L1936-1953: a layout leaves the first/last counts unset; arguments.py
  // L893-905: and the virtual-stage flags.
  if (s.count("--pipeline-model-parallel-layout") != 0) {
    if (first != 0 || last != 0 || per_vp != 0) return "layout with other pipeline layout flags";
    if (auto bad = layout_rule(s.at("--pipeline-model-parallel-layout"), m, c); !bad.empty()) {
      return bad;
    }
  } else if (first != 0 || last != 0) {
    const long long middle = layers - first - last;
    if (per_vp != 0 || first <= 0 || last <= 0 || pp < 2) return "uneven split flags";
    if ((pp == 2) != (middle == 0) || (pp > 2 && middle % (pp - 2) != 0)) return "layer split";
    const StageLayers plan = stage_layers(m.layers, c);
    if (plan.first != first || plan.last != last || (pp > 2 && plan.middle != middle / (pp - 2))) {
      return "not the plan's layer split";
    }
  } else if (layers % pp != 0 || (per_vp != 0 && (layers / pp) % per_vp != 0)) {
    return "layer split";
  }
  if (per_vp != 0 && layers / pp / per_vp != c.virtual_stages) return "virtual stages";
  if (num(s, "--global-batch-size") % (num(s, "--micro-batch-size") * c.dp) != 0) return "batch";
  if (num(s, "--hidden-size") != m.hidden || num(s, "--seq-length") != m.seq_len) return "shape";
  if (auto bad = optimizer_rule(s, m); !bad.empty()) return bad;
  return world_mismatch(std::stoll(launcher_number(launcher, "--nnodes")),
                        std::stoll(launcher_number(launcher, "--nproc-per-node")), c);
}

// NeMo v2.4.0, NeMo 2.0: nemo/collections/llm/recipes and nemo/lightning.
inline std::string nemo_rules(const std::string& text, const Model& m, const ParallelConfig& c,
                              const ArgDefs& defs) {
  Settings s = parse_nemo2(text);
  const std::string name = s.at("recipe");
  std::string plugin = s.at("recipe.trainer.plugins");
  plugin = plugin.substr(0, plugin.size() - 2);  // "bf16_mixed()"
  s.erase("recipe");
  if (auto bad = check_names(s, defs); !bad.empty()) return bad;
  if (std::find(defs.precisions.begin(), defs.precisions.end(), plugin) == defs.precisions.end()) {
    return plugin + ": no such precision recipe";
  }
  if ((m.training.dtype == Dtype::fp8) != (plugin.find("fp8") != std::string::npos)) return "fp8";
  // The recipe's model is the plan's: its config class's fields.
  const auto r = defs.recipes.at(name);
  const bool llama = m.ffn == FfnKind::swiglu;
  if (std::stoll(r.at("layers")) != m.layers || std::stoll(r.at("hidden")) != m.hidden ||
      std::stoll(r.at("heads")) != m.heads || std::stoll(r.at("kv_heads")) != m.kv_heads ||
      std::stoll(r.at("ffn_hidden")) != m.ffn_hidden || (r.at("gated") == "1") != llama ||
      (r.at("tied") == "1") != m.tied_embeddings || (r.at("rope") == "1") == m.learned_positions) {
    return "recipe " + name + " is not the model";
  }
  // MoE and MLA recipes (the config's experts, their widths, leading dense layers, router, MLA
  // ranks, kv_channels) are the model's; EP is written, expert TP 1 (as priced).
  auto field = [&](const char* key) {
    const auto it = r.find(key);
    return it == r.end() ? 0LL : std::stoll(it->second);
  };
  const MoeSpec& e = m.moe;
  const bool mla = m.attention == AttentionKind::mla;
  if (field("experts") != e.experts || (field("kv_lora_rank") != 0) != mla ||
      (field("head_dim") != 0 && field("head_dim") != m.head_dim())) {
    return "recipe " + name + " is not the model's layers";
  }
  if (m.is_moe()) {
    const bool sigmoid = r.count("router") != 0 && r.at("router") == "sigmoid";
    if (field("topk") != e.top_k || field("moe_ffn") != e.expert_ffn_hidden ||
        field("shared_ffn") != static_cast<long long>(e.shared_experts) * e.expert_ffn_hidden ||
        field("dense_first") != e.first_dense || sigmoid != (e.router == MoeRouter::sigmoid)) {
      return "recipe " + name + " is not the model's experts";
    }
    if (num(s, "recipe.trainer.strategy.expert_model_parallel_size") != c.ep ||
        s.at("recipe.trainer.strategy.expert_tensor_parallel_size") != "1") {
      return "expert parallel sizes";
    }
  }
  // llama3_8b.py:65 (and the other recipes) default context parallelism to 2 or 4: it must be
  // set to the plan's.
  if (s.at("recipe.trainer.strategy.context_parallel_size") != std::to_string(c.cp)) {
    return "context parallel";
  }
  const bool fsdp = s.at("recipe.trainer.strategy.fsdp") == "megatron";
  const std::string strategy =
      fsdp ? s.at("recipe.trainer.strategy.ddp.data_parallel_sharding_strategy") : "";
  // Megatron-FSDP: no PP; average_in_collective off (llama3_8b.py:121); ZeRO-2/3 sharding.
  if (fsdp && (c.pp > 1 || s.at("recipe.trainer.strategy.ddp.average_in_collective") != "False")) {
    return "Megatron-FSDP settings";
  }
  if ((c.zero == 2) != (strategy == "optim_grads") ||
      (c.zero == 3) != (strategy == "optim_grads_params") ||
      (c.zero >= 1) != (s.at("recipe.optim.config.use_distributed_optimizer") == "True")) {
    return "ZeRO";
  }
  if (num(s, "recipe.data.global_batch_size") % (num(s, "recipe.data.micro_batch_size") * c.dp)) {
    return "batch";
  }
  if (num(s, "recipe.trainer.strategy.tensor_model_parallel_size") != c.tp ||
      num(s, "recipe.trainer.strategy.pipeline_model_parallel_size") != c.pp) {
    return "parallel sizes";
  }
  // A layout with the first/last counts set is refused (transformer_config.py L1936-1953).
  if (s.count("recipe.trainer.strategy.pipeline_model_parallel_layout") != 0) {
    if (s.at("recipe.trainer.strategy.num_layers_in_first_pipeline_stage") != "None" ||
        s.at("recipe.trainer.strategy.num_layers_in_last_pipeline_stage") != "None") {
      return "layout with first/last-stage counts";
    }
    const std::string layout = s.at("recipe.trainer.strategy.pipeline_model_parallel_layout");
    if (auto bad = layout_rule(layout, m, c, false); !bad.empty()) return bad;
    // transformer_config.py L911-917 @core_r0.13.0: the strategy's virtual stages are the
    // layout's (chunks / PP; None for one).
    const std::string vp = s.at("recipe.trainer.strategy.virtual_pipeline_model_parallel_size");
    const long long chunks = std::count(layout.begin(), layout.end(), '|') + 1;
    if ((vp == "None" ? 1 : std::stoll(vp)) != chunks / c.pp) return "VP beside the layout";
  }
  // MegatronCommOverlapCallback (megatron_comm_overlap.py): userbuffers with TP > 1 and SP;
  // interleaved transfers either overlapped or batched, never both (Megatron-Core's
  // schedules), and exposed only above PP 2 (Megatron-LM arguments.py L967-975); the
  // parameter gather behind forward only with the distributed optimizer.
  const std::string cb = "recipe.trainer.callbacks.MegatronCommOverlapCallback.";
  auto on = [&](const std::string& key) {
    const auto it = s.find(cb + key);
    return it != s.end() && it->second == "True";
  };
  if (on("tp_comm_overlap") && (c.tp < 2 || !c.sequence_parallel)) return "TP overlap";
  if (on("overlap_p2p_comm") && on("batch_p2p_comm")) return "p2p overlapped and batched";
  if (s.count(cb + "overlap_p2p_comm") != 0 && !on("overlap_p2p_comm") && c.pp < 3) {
    return "interleaved p2p exposed at PP 2";
  }
  if (on("overlap_param_gather") && (!on("overlap_grad_reduce") || c.zero < 1)) {
    return "parameter gather overlap";
  }
  // Megatron-FSDP asserts the gradient reduction overlapped (optim_grads, optim_grads_params)
  // and the parameter gather too (optim_grads_params): custom_fsdp/fully_sharded_data_parallel.py
  // L201-204 @core_v0.13.0. The callback writes them into the DDP config before the wrap.
  if (fsdp && (!on("overlap_grad_reduce") || (c.zero == 3 && !on("overlap_param_gather")))) {
    return "Megatron-FSDP without its overlaps (fully_sharded_data_parallel.py:201-204)";
  }
  return world_mismatch(num(s, "recipe.trainer.num_nodes"), num(s, "recipe.trainer.devices"), c);
}

// NeMo v2.4.0 nemo/collections/nlp/parts/megatron_trainer_builder.py and nlp_overrides.py.
inline std::string nemo_hydra_rules(const std::string& text, const Model& m,
                                    const ParallelConfig& c, const ArgDefs& defs) {
  Settings s;
  flatten_yaml(YAML::Load(text), "", s);
  s.erase("defaults");  // Hydra's own composition list
  if (auto bad = check_names(s, defs); !bad.empty()) return bad;
  // build_model.py L73-77 @v2.4.0: "Virtual pipeline model parallel size is no longer
  // supported for nemo 1.0" with PP > 1.
  const std::string vp = s.at("model.virtual_pipeline_model_parallel_size");  // null: "[]"
  const bool interleaved =
      !vp.empty() && std::isdigit(static_cast<unsigned char>(vp[0])) != 0 && std::stoll(vp) > 1;
  if (interleaved && num(s, "model.pipeline_model_parallel_size") > 1) {
    return "virtual stages (build_model.py:73-77)";
  }
  const std::string optim = s.at("model.optim.name");
  // megatron_trainer_builder.py:66-69: FSDP refuses a distributed optimizer.
  if (s.count("model.fsdp") && s.at("model.fsdp") == "true" &&
      (optim == "distributed_fused_adam" || optim == "mcore_distributed_optim")) {
    return "FSDP with a distributed optimizer (megatron_trainer_builder.py:66)";
  }
  // nlp_overrides.py:815-816: full | grad (hybrid asserted off).
  if (s.count("model.fsdp_sharding_strategy") && s.at("model.fsdp_sharding_strategy") != "full" &&
      s.at("model.fsdp_sharding_strategy") != "grad") {
    return "fsdp_sharding_strategy";
  }
  const char* expected[] = {"fused_adam", "mcore_distributed_optim", "distributed_fused_adam",
                            "fused_adam"};
  if (optim != expected[c.zero] || (c.zero == 3) != (s.count("model.fsdp") != 0)) return "ZeRO";
  // megatron_gpt_model.py: userbuffers need TE's layers, TP > 1 and SP; the interleaved
  // transfers are overlapped or batched, not both; L383-384: the parameter sync only with the
  // gradient sync.
  auto on = [&](const std::string& key) { return s.count(key) != 0 && s.at(key) == "true"; };
  if (on("model.ub_tp_comm_overlap") &&
      (!on("model.transformer_engine") || c.tp < 2 || !c.sequence_parallel)) {
    return "ub_tp_comm_overlap";
  }
  if (on("model.fp8") && !on("model.transformer_engine")) return "fp8 without TE";
  // megatron_base_model.py L1089-1090: "Torch FSDP does not support FP8."; L1081-1087: FSDP
  // switches the TP userbuffers off (the launch would not run what was priced).
  if (on("model.fsdp") && on("model.fp8")) return "FSDP with FP8 (megatron_base_model.py:1089)";
  if (on("model.fsdp") && on("model.ub_tp_comm_overlap")) {
    return "userbuffers under FSDP, switched off (megatron_base_model.py:1081-1087)";
  }
  // The conf fuses the bias into the activation (megatron_gpt_config.yaml L158), which
  // transformer_config.py L1043-1057 @core_v0.13.0 refuses for squared ReLU and for a GELU
  // without linear biases.
  const bool bias_fused =
      s.count("model.bias_activation_fusion") == 0 || on("model.bias_activation_fusion");
  const std::string act = s.at("model.activation");
  if (bias_fused && (act == "squared-relu" || (act == "gelu" && !on("model.bias")))) {
    return "bias_activation_fusion with " + act + " (transformer_config.py:1043-1057)";
  }
  if (on("model.overlap_p2p_comm") && on("model.batch_p2p_comm")) return "p2p overlap";
  if (s.count("model.overlap_p2p_comm") != 0 && !on("model.overlap_p2p_comm") && c.pp < 3) {
    return "interleaved p2p exposed at PP 2";
  }
  if (on("model.optim.overlap_param_sync") && !on("model.optim.overlap_grad_sync")) {
    return "overlap_param_sync without overlap_grad_sync (megatron_gpt_model.py:383)";
  }
  // megatron_gpt_model.py:2198-2220: the layers left after the first/last-stage counts divide
  // by the remaining stages; the split written is the plan's (costmodel/pipeline.h).
  const long long first = num(s, "model.num_layers_in_first_pipeline_stage");
  const long long last = num(s, "model.num_layers_in_last_pipeline_stage");
  if (first != 0 || last != 0) {
    const StageLayers plan = stage_layers(m.layers, c);
    if (c.pp < 2 || plan.first != first || plan.last != last ||
        (c.pp > 2 && (m.layers - first - last) % (c.pp - 2) != 0)) {
      return "not the plan's layer split";
    }
  } else if (m.layers % c.pp != 0) {
    return "layers do not divide by PP";
  }
  if (num(s, "model.global_batch_size") % (num(s, "model.micro_batch_size") * c.dp) != 0) {
    return "batch";
  }
  return world_mismatch(num(s, "trainer.num_nodes"), num(s, "trainer.devices"), c);
}

// DeepSpeed runtime/config.py, runtime/pipe/engine.py, runtime/engine.py.
inline std::string deepspeed_rules(const std::string& text, const ParallelConfig& c,
                                   const Release& r, const ArgDefs& defs) {
  const Settings s = parse_deepspeed(text);
  if (auto bad = check_names(s, defs); !bad.empty()) return bad;
  // config.py:924: train_batch_size == micro * gradient_accumulation_steps * world size, which
  // is DP where an mpu says so (a PipelineModule's) and every rank without one (config.py
  // L697-712): under AutoTP, whose groups come after the check, TP ranks count too, so there
  // the key must be left out (DeepSpeed derives it).
  if (c.tp > 1) {
    if (s.count("train_batch_size") != 0) return "train_batch_size under AutoTP (config.py:697)";
  } else if (num(s, "train_batch_size") != num(s, "train_micro_batch_size_per_gpu") *
                                               num(s, "gradient_accumulation_steps") * c.dp) {
    return "batch identity (runtime/config.py:924)";
  }
  const long long stage = num(s, "zero_optimization.stage");
  const long long autotp = num(s, "tensor_parallel.autotp_size");
  if (stage != c.zero || (c.tp > 1) != (autotp == c.tp)) return "ZeRO or AutoTP size";
  if (c.pp > 1 && stage >= 2) return "pipe/engine.py:77: ZeRO-2/3 with pipeline";
  if (c.pp > 1 && autotp > 1) return "AutoTP has no pipeline axis";
  if (std::string(r.version) == "v0.19.3" && autotp > 1 && stage == 3) {
    return "engine.py:634 (v0.19.3): AutoTP with ZeRO-3";
  }
  if (c.recompute == Recompute::full && !s.count("activation_checkpointing")) return "recompute";
  // runtime/config.py get_communication_data_type: fp32, fp16 or bf16; overlap_comm is a ZeRO
  // stage's (zero/config.py).
  if (s.count("communication_data_type") != 0) {
    std::string dtype = s.at("communication_data_type");
    dtype.erase(std::remove(dtype.begin(), dtype.end(), '"'), dtype.end());
    if (dtype != "fp32" && dtype != "fp16" && dtype != "bf16") return "communication_data_type";
  }
  if (s.count("zero_optimization.overlap_comm") != 0 && stage == 0) return "overlap_comm at ZeRO-0";
  // module.py L396-417: the default partition ('parameters') moves layers off the end stages;
  // 'type:' balances the transformer layers as the plan splits them.
  if (c.pp > 1 &&
      text.find("num_stages=" + std::to_string(c.pp) + ", partition_method=\"type:") ==
          std::string::npos &&
      text.find("no partition_method writes that split") == std::string::npos) {
    return "pipeline stages not stated";
  }
  const auto launch = text.substr(text.find("# launch: "));
  return world_mismatch(std::stoll(launcher_number(launch, "--num_nodes")),
                        std::stoll(launcher_number(launch, "--num_gpus")), c);
}

// torchtitan v0.2.2.
inline std::string torchtitan_rules(const std::string& text, const Model& m,
                                    const ParallelConfig& c, const ArgDefs& defs) {
  Settings s = parse_toml(text);
  const std::string flavor = s.at("model.flavor");
  for (const auto& key : {"model.flavor", "model.name", "model.converters"}) s.erase(key);
  if (auto bad = check_names(s, defs); !bad.empty()) return bad;
  // The flavor is the model: llama3_args in torchtitan/models/llama3/__init__.py.
  const auto f = defs.flavors.at(flavor);
  if (f.at("dim") != m.hidden || f.at("layers") != m.layers || f.at("kv_heads") != m.kv_heads ||
      f.at("ffn_hidden") != m.ffn_hidden || f.at("vocab") != m.vocab) {
    return "flavor " + flavor + " is not the model";
  }
  const long long replicate = num(s, "parallelism.data_parallel_replicate_degree");
  const long long shard = num(s, "parallelism.data_parallel_shard_degree");
  const long long tp = num(s, "parallelism.tensor_parallel_degree");
  const long long pp = num(s, "parallelism.pipeline_parallel_degree");
  // models/llama3/infra/parallelize.py:151: DDP only without TP/PP.
  if (replicate > 1 && shard == 1 && (tp > 1 || pp > 1)) return "DDP with > 1D parallelism";
  // components/quantization/float8.py L65-69: recipe_name and the FP8 all-gather not together;
  // the output layer left 16-bit as priced (filter_fqns).
  if (s.count("quantize.linear.float8.recipe_name") != 0 &&
      s.count("quantize.linear.float8.enable_fsdp_float8_all_gather") != 0) {
    return "recipe_name with enable_fsdp_float8_all_gather (float8.py:65)";
  }
  if (text.find("[quantize.linear.float8]") != std::string::npos &&
      text.find("filter_fqns = [\"output\"]") == std::string::npos) {
    return "the output layer converted to FP8";
  }
  // train.py:200-215: global % (local * DP) == 0; the quotient is gradient accumulation.
  const long long local = num(s, "training.local_batch_size");
  const long long global = num(s, "training.global_batch_size");
  if (global % (local * replicate * shard) != 0) return "batch (train.py:203)";
  if (pp > 1) {
    // pipeline_parallel.py:187-192: local % microbatch == 0; microbatches = trident's m.
    const long long mb = num(s, "parallelism.pipeline_parallel_microbatch_size");
    if (local % mb != 0 || local / mb != c.num_micro_batches(global)) return "pipeline batch";
    // pipeline_parallel.py:71-108: stages = ceil((layers + first_less + last_less) / per
    // stage) divide by PP; 1F1B one stage per rank, Interleaved1F1B at least two.
    const long long per = num(s, "parallelism.pipeline_parallel_layers_per_stage");
    const long long first = s.count("parallelism.pipeline_parallel_first_stage_less_layers")
                                ? num(s, "parallelism.pipeline_parallel_first_stage_less_layers")
                                : 1;
    const long long last = s.count("parallelism.pipeline_parallel_last_stage_less_layers")
                               ? num(s, "parallelism.pipeline_parallel_last_stage_less_layers")
                               : 1;
    const long long stages = (f.at("layers") + first + last + per - 1) / per;
    const bool single = s.at("parallelism.pipeline_parallel_schedule") == "1F1B";
    if (stages % pp != 0 || (single && stages / pp != 1) || (!single && stages / pp < 2)) {
      return "stage count " + std::to_string(stages) + " for PP " + std::to_string(pp);
    }
    if (stages != pp * c.virtual_stages) return "virtual stages";
    // generate_llm_fqn_per_model_part: effective = layers + first + last, per = effective //
    // stages, the first effective % stages stages one more; the ends lose their weights.
    // Stage s runs on rank s % PP (pipeline_module_split, "loop" style): each rank's layers
    // are the plan's first | middle | last, and no stage holds more than the plan's chunk.
    const long long effective = f.at("layers") + first + last;
    const long long even = effective / stages, extra = effective % stages;
    const StageLayers plan = stage_layers(static_cast<int>(f.at("layers")), c.pp);
    std::vector<long long> rank_layers(static_cast<std::size_t>(pp), 0);
    for (long long i = 0; i < stages; ++i) {
      const long long held =
          even + (i < extra ? 1 : 0) - (i == 0 ? first : 0) - (i == stages - 1 ? last : 0);
      if (held > plan.most() / c.virtual_stages) return "a stage longer than the plan's chunk";
      rank_layers[static_cast<std::size_t>(i % pp)] += held;
    }
    for (long long r = 0; r < pp; ++r) {
      const long long want = r == 0 ? plan.first : r == pp - 1 ? plan.last : plan.middle;
      if (rank_layers[static_cast<std::size_t>(r)] != want) return "not the plan's layer split";
    }
  } else if (local * replicate * shard * c.num_micro_batches(global) != global) {
    return "gradient accumulation is not trident's micro-batching";
  }
  // distributed/parallel_dims.py L52 (@29624e37): dp_replicate * dp_shard * cp * tp * pp ==
  // WORLD_SIZE; CP load balancing needs 2 cp to divide the sequence.
  const long long cp = s.count("parallelism.context_parallel_degree")
                           ? num(s, "parallelism.context_parallel_degree")
                           : 1;
  if (m.seq_len % (2 * cp) != 0) return "sequence for CP";
  return world_mismatch(1, replicate * shard * cp * tp * pp, c);
}

// microsoft/Megatron-DeepSpeed f4157bea with DeepSpeed v0.19.5: megatron/arguments.py,
// megatron/model/gpt_model.py, DeepSpeed runtime/config.py, runtime/engine.py and
// runtime/pipe/engine.py.
inline std::string megatron_deepspeed_json_rules(const Settings& j, const Settings& s,
                                                 const ParallelConfig& c) {
  // Keys DeepSpeed v0.19.5 reads; data_types.grad_accum_dtype is read nested (runtime/config.py
  // get_data_types: param_dict[DATA_TYPES][GRAD_ACCUM_DTYPE], both in constants.py).
  const ArgDefs ds = load_argdefs("deepspeed-v0.19.5.txt");
  Settings keys = j;
  if (keys.erase("data_types.grad_accum_dtype") != 0 && ds.kind.count("grad_accum_dtype") == 0) {
    return "grad_accum_dtype: not a DeepSpeed key";
  }
  if (auto bad = check_names(keys, ds); !bad.empty()) return bad;
  // config.py L912-978 and pipe/engine.py L109-111: batch = micro x accumulation x DP, the
  // flags' batch and micro-batch the config's.
  if (num(j, "train_batch_size") !=
          num(j, "train_micro_batch_size_per_gpu") * num(j, "gradient_accumulation_steps") * c.dp ||
      num(j, "train_batch_size") != num(s, "--global-batch-size") ||
      num(j, "train_micro_batch_size_per_gpu") != num(s, "--micro-batch-size")) {
    return "batch identity (runtime/config.py:924)";
  }
  // The ZeRO stage DeepSpeed runs is the config's; --zero-stage Megatron's copy (zero.Init).
  const long long stage = num(j, "zero_optimization.stage");
  if (stage != c.zero || num(s, "--zero-stage") != stage) return "ZeRO stage";
  // pipe/engine.py:77: a PipelineModule (any PP without --no-pipeline-parallel) asserts < 2.
  if (stage >= 2 && !s.count("--no-pipeline-parallel")) return "pipe/engine.py:77 ZeRO-2/3";
  // arguments.py:94-96: --no-pipeline-parallel asserts PP 1.
  if (s.count("--no-pipeline-parallel") && c.pp != 1) return "--no-pipeline-parallel with PP";
  // bf16 and fp16 on both sides (the model's params dtype and DeepSpeed's engine).
  if ((j.count("bf16.enabled") != 0) != (s.count("--bf16") != 0) ||
      (j.count("fp16.enabled") != 0) != (s.count("--fp16") != 0)) {
    return "dtype switches disagree";
  }
  // engine.py L1976-1977: bf16 with fp32 gradient accumulation at ZeRO-0 raises.
  if (j.count("data_types.grad_accum_dtype") != 0 && stage == 0) return "engine.py:1976";
  return "";
}

inline std::string megatron_deepspeed_rules(const std::string& text, const Model& m,
                                            const ParallelConfig& c, const ArgDefs& defs) {
  std::string launcher;
  const Settings s = parse_megatron(text, &launcher);
  if (auto bad = check_names(s, defs); !bad.empty()) return bad;
  if (!s.count("--deepspeed") || s.count("--deepspeed_config") == 0 ||
      s.at("--deepspeed_config") != "ds_config.json") {
    return "--deepspeed with the config written";
  }
  if (auto bad = megatron_deepspeed_json_rules(parse_heredoc_json(text, "ds_config.json"), s, c);
      !bad.empty()) {
    return bad;
  }
  // TrainSchedule is plain 1F1B. Sequence parallelism only off the pipeline engine (the
  // stage boundaries' TP split assumes equal tensors, pipe/engine.py L137-144), and with one
  // device connection (arguments.py L400-407).
  if (s.count("--num-layers-per-virtual-pipeline-stage")) return "interleaving written";
  if (s.count("--sequence-parallel") &&
      (!s.count("--no-pipeline-parallel") ||
       launcher.rfind("CUDA_DEVICE_MAX_CONNECTIONS=1 ", 0) != 0)) {
    return "sequence parallelism on the pipeline engine or without one device connection";
  }
  // gpt_model.py L446-452: the pipeline checkpoints with --checkpoint-activations (full);
  // transformer.py L625-629: selective recomputes CoreAttention, not FlashAttention.
  const bool flash = s.count("--use-flash-attn-v2") || s.count("--use-flash-attn-triton");
  if ((c.recompute == Recompute::full) != (s.count("--checkpoint-activations") &&
                                           s.count("--deepspeed-activation-checkpointing")) ||
      (c.recompute == Recompute::selective) != (s.count("--recompute-granularity") != 0) ||
      (c.recompute == Recompute::selective && flash)) {
    return "recompute";
  }
  // gpt_model.py L459-463 partition_method 'type:transformer': the first L mod PP stages one
  // layer more; the plan's stages must be those (ends, and middles in any order).
  const long long layers = num(s, "--num-layers"), pp = num(s, "--pipeline-model-parallel-size");
  if (pp != c.pp || layers != m.layers) return "layers or PP";
  std::vector<int> pipe(static_cast<std::size_t>(pp), static_cast<int>(layers / pp));
  for (long long i = 0; i < layers % pp; ++i) ++pipe[static_cast<std::size_t>(i)];
  const StageLayers plan = stage_layers(m.layers, c);
  if (pipe.front() != plan.first || pipe.back() != plan.last ||
      (pp > 2 && *std::max_element(pipe.begin() + 1, pipe.end() - 1) != plan.middle)) {
    return "not the plan's layer split";
  }
  if (num(s, "--hidden-size") != m.hidden || num(s, "--seq-length") != m.seq_len) return "shape";
  if (auto bad = optimizer_rule(s, m); !bad.empty()) return bad;
  return world_mismatch(std::stoll(launcher_number(launcher, "--nnodes")),
                        std::stoll(launcher_number(launcher, "--nproc-per-node")), c);
}

inline std::string rules(const Release& r, const std::string& text, const Model& m,
                         const ParallelConfig& c) {
  const ArgDefs defs = load_argdefs(data_file(r));
  // The data file was generated at the commit the output names.
  const std::string commit = split(defs.header, ' ').back();
  if (text.find(commit) == std::string::npos ||
      text.rfind(std::string("# ") + r.title + " " + r.version, 0) != 0) {
    return "first line does not name " + release_id(r) + " at " + commit;
  }
  switch (r.framework) {
    case Framework::megatron:
      return megatron_rules(text, m, c, defs);
    case Framework::nemo:
      return nemo_rules(text, m, c, defs);
    case Framework::nemo_hydra:
      return nemo_hydra_rules(text, m, c, defs);
    case Framework::deepspeed:
      return deepspeed_rules(text, c, r, defs);
    case Framework::torchtitan:
      return torchtitan_rules(text, m, c, defs);
    case Framework::megatron_deepspeed:
      return megatron_deepspeed_rules(text, m, c, defs);
  }
  return "unknown framework";
}

}  // namespace trident::test
