// --emit: the releases, the launch shape, and the search for the nearest plan a release runs.
#include "planner/export.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "planner/export_target.h"
#include "planner/layout.h"
#include "topology/errors.h"

namespace trident {

const std::vector<Release>& releases() {
  // Commits: `git rev-parse TAG^{commit}` in each repository; the same commits head
  // tests/data/emit/*.txt (scripts/emit-argdefs).
  static const std::vector<Release> table = {
      {Framework::megatron, "megatron", "core_v0.19.0", "Megatron-LM", "NVIDIA/Megatron-LM",
       "5be9626709af2722333bf54797c954c09edeada3", "pretrain_gpt.py flags", "megatron-core"},
      {Framework::nemo, "nemo", "v2.4.0", "NeMo", "NVIDIA/NeMo",
       "2381f42f6979449b5b99538f8f80135831009b51",
       "NeMo 2.0 recipe API (nemo.collections.llm pretrain_recipe, run by nemo_run)",
       "megatron-core"},
      {Framework::nemo_hydra, "nemo-hydra", "v2.4.0", "NeMo", "NVIDIA/NeMo",
       "2381f42f6979449b5b99538f8f80135831009b51",
       "examples/nlp/language_modeling/megatron_gpt_pretraining.py Hydra keys over "
       "conf/megatron_gpt_config.yaml (the NeMo 1.x YAML)",
       "megatron-core"},
      {Framework::deepspeed, "deepspeed", "v0.19.5", "DeepSpeed", "deepspeedai/DeepSpeed",
       "cf44300453eb0af79ed84ed8f1cb49d57478bd76",
       "deepspeed.initialize(config=FILE), read with hjson", "deepspeed-megatron"},
      {Framework::deepspeed, "deepspeed", "v0.19.3", "DeepSpeed", "deepspeedai/DeepSpeed",
       "0c36f6d3efb806c07a44e5c2c9b18a81d204b821",
       "deepspeed.initialize(config=FILE), read with hjson", "deepspeed-megatron"},
      {Framework::torchtitan, "torchtitan", "v0.2.2", "torchtitan", "pytorch/torchtitan",
       "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce", "torchtitan.train --job.config_file FILE",
       "torchtitan"},
      // No release: its tags (v0.1-v2.4) are Megatron-LM's from before the fork; main's last
      // commit (2024-12-24) is pinned by its prefix.
      {Framework::megatron_deepspeed, "megatron-deepspeed", "f4157bea", "Megatron-DeepSpeed",
       "microsoft/Megatron-DeepSpeed", "f4157bea69f3df8c6cb66f2ebcda66ba03d1288e",
       "pretrain_gpt.py flags with a DeepSpeed JSON config (DeepSpeed v0.16.1 or later)",
       "deepspeed-megatron"},
  };
  return table;
}

std::string release_id(const Release& release) {
  return std::string(release.name) + "@" + release.version;
}

namespace {

/// "core_v0.19.0" -> "0.19.0", "v2.4.0" -> "2.4.0".
std::string bare_version(std::string version) {
  if (version.rfind("core_", 0) == 0) version.erase(0, 5);
  if (!version.empty() && version[0] == 'v') version.erase(0, 1);
  return version;
}

std::string all_release_ids() {
  std::string out;
  for (const Release& r : releases()) {
    if (!out.empty()) out += '|';
    out += release_id(r);
  }
  return out;
}

}  // namespace

const Release& parse_release(const std::string& spec) {
  const auto at = spec.find('@');
  const std::string name = spec.substr(0, at);
  const std::string version = at == std::string::npos ? "" : bare_version(spec.substr(at + 1));
  for (const Release& r : releases()) {
    if (name == r.name && (at == std::string::npos || version == bare_version(r.version))) {
      return r;
    }
  }
  throw SpecError(
      SpecKind::emit, spec,
      "expected megatron|nemo|nemo-hydra|deepspeed|torchtitan|megatron-deepspeed, optionally "
      "@VERSION: " +
          all_release_ids());
}

namespace emit {

std::string str(long long value) { return std::to_string(value); }

std::string flag(const std::string& name, const std::string& value) {
  return "  " + name + (value.empty() ? "" : " " + value) + " \\\n";
}

std::string json_object(const std::vector<std::string>& entries) {
  std::string t = "{\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    t += "  " + entries[i] + (i + 1 < entries.size() ? ",\n" : "\n");
  }
  return t + "}\n";
}

std::string optimizer_flag(Optimizer optimizer) {
  return optimizer == Optimizer::sgd ? flag("--optimizer", "sgd") : "";
}

std::string pretrain_gpt_command(const Launch& launch, const std::string& env, std::string flags) {
  flags.resize(flags.size() - 3);  // the last line has no continuation
  return "# on every node, NODE_RANK 0.." + str(launch.nodes - 1) +
         " and MASTER_ADDR the first node's address:\n" + env + "torchrun --nnodes " +
         str(launch.nodes) + " --nproc-per-node " + str(launch.gpus_per_node) +
         " --node-rank $NODE_RANK --master-addr $MASTER_ADDR --master-port 6000 \\\n" +
         "  pretrain_gpt.py \\\n" + flags + "\n";
}

int layers_per_chunk(const Model& model, const ParallelConfig& config) {
  return model.layers / (config.pp * config.virtual_stages);
}

namespace {

/// The middle stages of `s` hold the same count: L - first - last = (pp - 2) x middle.
bool middles_equal(const StageLayers& s, int layers, int pp) {
  return middle_stages(layers, pp, s).fewer == 0;
}

}  // namespace

// The middle stages in that order: the cost model prices the slowest stage, wherever it sits.
std::vector<int> stage_runs(int layers, int pp, const StageLayers& s) {
  std::vector<int> runs{s.first};
  if (pp < 2) return runs;
  const MiddleStages middles = middle_stages(layers, pp, s);
  runs.insert(runs.end(), static_cast<std::size_t>(middles.full), s.middle);
  runs.insert(runs.end(), static_cast<std::size_t>(middles.fewer), s.middle - 1);
  runs.push_back(s.last);
  return runs;
}

std::optional<StageLayers> uneven_stages(const Model& model, const ParallelConfig& config) {
  const StageLayers s = stage_layers(model.layers, config);
  if (s.even(config.pp) || !middles_equal(s, model.layers, config.pp)) return std::nullopt;
  return s;
}

namespace {

/// `layers` decoder layers in Megatron-Core's layout notation: "t*N" (its parser unrolls a
/// character followed by *N), "t" for one, "" for none.
std::string decoder_run(int layers) {
  std::string run;
  if (layers <= 0) return run;
  run.push_back('t');
  if (layers > 1) run.append("*").append(str(layers));
  return run;
}

/// Layers of each of the `v` model chunks of a stage holding `layers` decoder layers and, on
/// the last stage, `mtp` MTP layers, which Megatron-Core keeps together in the last chunk
/// (pipeline_parallel_layer_layout.py validate_layer_layout): each decoder layer joins the
/// chunk holding the fewest layers so far (MTP counted), ties going away from the embedding's
/// chunk (chunk 0 of the first stage) and the loss's (the last chunk of the last stage). Every
/// chunk then holds at most ceil(the stage's layers and MTP / v), or the MTP layers alone
/// where they are more: the plan's chunk (model_chunk_layers; 30 layers + 2 MTP over PP 4,
/// VP 2: a last stage of 7 + 2 in chunks of 5 and 4).
/// Returns each chunk's decoder layers.
std::vector<int> chunk_runs(int layers, int mtp, int v, bool first_stage) {
  std::vector<int> held(static_cast<std::size_t>(v), 0);
  held.back() = mtp;
  for (int layer = 0; layer < layers; ++layer) {
    std::size_t pick = first_stage ? held.size() - 1 : 0;
    for (std::size_t i = 0; i < held.size(); ++i) {
      const std::size_t c = first_stage ? held.size() - 1 - i : i;
      if (held[c] < held[pick]) pick = c;
    }
    ++held[pick];
  }
  held.back() -= mtp;
  return held;
}

}  // namespace

std::optional<std::string> pipeline_layout(const Model& model, const ParallelConfig& config) {
  const StageLayers s = stage_layers(model.layers, config);
  const int v = config.virtual_stages;
  if (s.even(config.pp) || (v == 1 && middles_equal(s, model.layers, config.pp))) {
    return std::nullopt;
  }
  const int mtp = std::max(0, model.mtp_layers);
  // Segment c x pp + r is chunk c of stage r (PipelineParallelLayerLayout.__init__): the
  // layout lists the chunks in layer order, stage by stage within each round of chunks.
  const std::vector<int> runs = stage_runs(model.layers, config.pp, s);
  std::vector<std::vector<int>> chunks;
  for (int stage = 0; stage < config.pp; ++stage) {
    const bool last_stage = stage == config.pp - 1;
    chunks.push_back(
        chunk_runs(runs[static_cast<std::size_t>(stage)], last_stage ? mtp : 0, v, stage == 0));
  }
  std::string layout;
  for (int chunk = 0; chunk < v; ++chunk) {
    for (int stage = 0; stage < config.pp; ++stage) {
      const bool first = chunk == 0 && stage == 0;
      const bool last = chunk == v - 1 && stage == config.pp - 1;
      if (!first) layout.push_back('|');
      if (first) layout.push_back('E');
      layout.append(
          decoder_run(chunks[static_cast<std::size_t>(stage)][static_cast<std::size_t>(chunk)]));
      if (last) {  // MTP on the last stage's last chunk, before the loss
        layout.append(static_cast<std::size_t>(mtp), 'm');
        layout.push_back('L');
      }
    }
  }
  return layout;
}

std::optional<Limit> uneven_stage_limit(const Input& in, bool writes_first_last,
                                        bool writes_layout) {
  const ParallelConfig& c = in.config;
  const StageLayers s = stage_layers(in.model.layers, c);
  if (s.even(c.pp)) return std::nullopt;
  if (writes_layout) return std::nullopt;  // any split, interleaved or not
  const bool writable = writes_first_last && middles_equal(s, in.model.layers, c.pp);
  if (writable && c.virtual_stages == 1) return std::nullopt;
  Limit out = limit(RefusalKind::uneven_stages);
  out.obstacle.first_layers = s.first;
  out.obstacle.middle_layers = s.middle;
  out.obstacle.last_layers = s.last;
  if (writable) {  // written without interleaving
    ParallelConfig fixed = c;
    fixed.virtual_stages = 1;
    out.fixed = fixed;
    out.obstacle.interleaved_uneven = true;
  }
  return out;
}

std::optional<Limit> set_ends_limit(const Input& in) {
  const ParallelConfig& c = in.config;
  if (!sets_ends(in.model.layers, c)) return std::nullopt;
  const StageLayers s = stage_layers(in.model.layers, c);
  ParallelConfig fixed = c;
  fixed.first_stage_layers = 0;
  fixed.last_stage_layers = 0;
  Limit out = limit(RefusalKind::uneven_stages, fixed);
  out.obstacle.first_layers = s.first;
  out.obstacle.middle_layers = s.middle;
  out.obstacle.last_layers = s.last;
  out.obstacle.set_ends = true;
  return out;
}

namespace {

/// "full", or "full:N" for partial recompute of N layers per chunk.
std::string recompute_label(const ParallelConfig& c) {
  std::string label = to_string(c.recompute);
  if (c.recompute_layers > 0) label.append(":").append(str(c.recompute_layers));
  return label;
}

}  // namespace

std::string plan_summary(const ParallelConfig& c) {
  return "TP" + str(c.tp) + " PP" + str(c.pp) + " DP" + str(c.dp) + " mb" + str(c.micro_batch) +
         " VP" + str(c.virtual_stages) + " recompute " + recompute_label(c) + " ZeRO-" +
         str(c.zero) +
         (c.hybrid_shard() ? " HSDP " + str(c.dp_shard) + "x" + str(c.dp / c.dp_shard)
                           : std::string()) +
         " SP " + (c.sequence_parallel ? "on" : "off") + (c.cp > 1 ? " CP" + str(c.cp) : "") +
         (c.ep > 1 ? " EP" + str(c.ep) : "") + ", " + str(c.gpus()) + " GPUs";
}

std::string vocab_padding_note(const Model& model, int tp) {
  constexpr long long kDivisibleBy = 128;  // --make-vocab-size-divisible-by's default
  const long long multiple = kDivisibleBy * tp;
  const long long padded = (model.vocab + multiple - 1) / multiple * multiple;
  if (padded == model.vocab) return "";
  return "# vocabulary: pretrain_gpt.py pads " + str(model.vocab) + " to " + str(padded) +
         " (a multiple of " + str(kDivisibleBy) + " x TP " + str(tp) +
         ", --make-vocab-size-divisible-by); trident priced " + str(model.vocab) + "\n";
}

std::string header_line(const Input& in) {
  const Release& r = in.release;
  return std::string("# ") + r.title + " " + r.version + " (github.com/" + r.repo + " commit " +
         r.commit + "), " + r.entry + "; trident plan " + plan_summary(in.config) + " of " +
         in.model.name + " on " + in.cluster.name + "\n";
}

namespace {

/// The first used server with a dead GPU (cordon it whole), or -1: whole servers are the fix.
int server_to_cordon(const Cluster& cluster, const std::map<int, std::vector<int>>& used) {
  for (const int gpu : cluster.health.dead_gpus) {
    if (used.count(cluster.server_of(gpu)) != 0) return cluster.server_of(gpu);
  }
  return -1;
}

}  // namespace

LaunchOrLimit launch_of(const Cluster& cluster, const ParallelConfig& config) {
  const std::vector<int> live = live_gpus(cluster);
  std::map<int, std::vector<int>> by_server;
  for (int rank = 0; rank < config.gpus() && rank < static_cast<int>(live.size()); ++rank) {
    const int gpu = live[static_cast<std::size_t>(rank)];
    by_server[cluster.server_of(gpu)].push_back(gpu % cluster.gpus_per_server);
  }
  LaunchOrLimit out;
  const auto& [first_server, first] = *by_server.begin();
  for (const auto& [server, gpus] : by_server) {
    if (gpus != first) {
      out.limit = limit(RefusalKind::uneven_ranks);
      Obstacle& uneven = out.limit->obstacle;
      uneven.server = first_server;
      uneven.ranks = static_cast<int>(first.size());
      uneven.other_server = server;
      uneven.other_ranks = static_cast<int>(gpus.size());
      uneven.dead_server = server_to_cordon(cluster, by_server);
      uneven.gpus_per_server = cluster.gpus_per_server;
      return out;
    }
    out.launch.servers.push_back(server);
  }
  out.launch.nodes = static_cast<int>(by_server.size());
  out.launch.gpus_per_node = static_cast<int>(first.size());
  out.launch.local_gpus = first;
  out.launch.whole_servers = out.launch.gpus_per_node == cluster.gpus_per_server;
  out.launch.segment_servers = job_segment_servers(cluster, out.launch.nodes);
  return out;
}

const char* attn_backend(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::cudnn:
      return "fused";
    case AttentionKernel::flash:
      return "flash";
    case AttentionKernel::unfused:
      return "unfused";
    case AttentionKernel::flash_triton:
      break;  // no Triton backend: auto, and the launch says so (triton_attention_note)
  }
  return nullptr;
}

std::string triton_attention_note(AttentionKernel kernel, const char* release) {
  if (kernel != AttentionKernel::flash_triton) return "";
  return std::string(
             "# attention: the plan was priced with FlashAttention's Triton kernel (stack "
             "attention: flash_triton), for which ") +
         release +
         " has no attention backend; none is written (auto: Transformer Engine picks its "
         "kernel), so the launch's attention does not run the priced kernel\n";
}

bool writes_userbuffers(const ParallelConfig& config, const StackSwitches& switches) {
  return switches.tp_userbuffers && config.tp > 1 && config.sequence_parallel;
}

bool overlaps_param_gather(const ParallelConfig& config, const StackSwitches& switches) {
  return config.dp * config.cp > 1 && switches.dp_overlap_grad_reduce &&
         switches.dp_overlap_param_gather && config.zero >= 1;
}

/// Megatron-LM asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP only below this compute
/// capability: "requirement no longer exists since the Blackwell architecture" (arguments.py
/// L1413-1415 @core_v0.19.0, get_device_arch_version() < 10).
constexpr double kNoDeviceConnectionsFromCapability = 10.0;

namespace {

/// Blackwell on (an unknown capability, 0, is taken for an older GPU).
bool blackwell_on(const Gpu& gpu) {
  return gpu.compute_capability >= kNoDeviceConnectionsFromCapability;
}

}  // namespace

bool needs_one_device_connection(const ParallelConfig& config, const Gpu& gpu) {
  return (config.tp > 1 || config.cp > 1) && config.zero < 2 && !blackwell_on(gpu);
}

bool wants_more_device_connections(const ParallelConfig& config, const Gpu& gpu) {
  return (config.tp > 1 || config.cp > 1) && blackwell_on(gpu);
}

bool runs_p2p_exposed(const ParallelConfig& config, const StackSwitches& switches) {
  return config.virtual_stages > 1 && !switches.pp_overlap && config.pp > 2;
}

std::string p2p_overlap_note(const ParallelConfig& config, const StackSwitches& switches,
                             const char* comment) {
  if (config.virtual_stages < 2 || switches.pp_overlap || config.pp != 2) return "";
  return std::string(comment) +
         " the pipeline's transfers overlap compute in this launch, as Megatron-Core runs the "
         "interleaved schedule at PP 2; the plan was priced with them exposed\n";
}

std::string placement_comment(const Launch& launch, const char* comment) {
  std::string out;
  const bool first_servers = launch.servers.back() == launch.nodes - 1;
  if (!first_servers) {
    std::string ranges;
    for (std::size_t i = 0; i < launch.servers.size(); ++i) {
      const std::size_t start = i;
      while (i + 1 < launch.servers.size() && launch.servers[i + 1] == launch.servers[i] + 1) ++i;
      if (!ranges.empty()) ranges += ',';
      ranges += str(launch.servers[start]);
      if (i > start) ranges += '-' + str(launch.servers[i]);
    }
    out += std::string(comment) + " nodes: servers " + ranges +
           " of the cluster (the others hold no rank)\n";
  }
  if (launch.segment_servers > 0) {
    out += std::string(comment) + " SLURM: submit with --segment=" + str(launch.segment_servers) +
           ": the plan was priced with its " + str(launch.nodes) + " nodes in segments of " +
           str(launch.segment_servers) +
           ", each inside one NVLink domain (nvlink.job_segments); without it the scheduler may "
           "split groups across racks\n";
  }
  if (!launch.whole_servers) {
    std::string list;
    for (const int g : launch.local_gpus) {
      if (!list.empty()) list += ',';
      list += str(g);
    }
    out += std::string(comment) + " on every node: export CUDA_VISIBLE_DEVICES=" + list + "\n";
  }
  return out;
}

}  // namespace emit

namespace {

/// What a target does not write: MoE models (expert flags), multi-latent attention (its ranks
/// and head dims) and multi-token prediction outside Megatron-LM and NeMo, context parallelism
/// other than Transformer Engine's ring or Ulysses for Megatron-LM and NeMo and PyTorch's
/// all-gather rotater for torchtitan (v0.2.2 train.py never sets another rotate method), hybrid
/// sharding outside torchtitan. A CP plan's nearest is the same GPUs with CP folded into DP; an
/// HSDP plan's the same split sharded over all of DP.
std::optional<emit::Limit> cp_moe_limit(const emit::Input& in) {
  const Framework framework = in.release.framework;
  const bool te_cp = in.cp_kind == CpKind::p2p || in.cp_kind == CpKind::a2a;
  const bool writes_cp =
      ((framework == Framework::megatron || framework == Framework::nemo) && te_cp) ||
      (framework == Framework::torchtitan && in.cp_kind == CpKind::all_gather);
  // NeMo writes them for the recipes that have them (nemo_limit).
  const bool writes_moe = framework == Framework::megatron || framework == Framework::nemo;
  if ((in.model.is_moe() || in.model.attention == AttentionKind::mla) && !writes_moe) {
    return emit::limit(RefusalKind::moe_model);
  }
  if (in.model.mtp_layers > 0 && !writes_moe) return emit::limit(RefusalKind::mtp_layers);
  // SGD (training.optimizer): pretrain_gpt.py's --optimizer sgd; DeepSpeed's config leaves the
  // optimizer to the script (its comment names SGD); NeMo's and torchtitan's configs are Adam's.
  const bool writes_sgd = framework == Framework::megatron ||
                          framework == Framework::megatron_deepspeed ||
                          framework == Framework::deepspeed;
  if (in.model.training.optimizer == Optimizer::sgd && !writes_sgd) {
    return emit::limit(RefusalKind::sgd);
  }
  // Megatron-LM core_v0.19.0 has no flag for it (arguments.py L2250 keeps
  // fp8_dot_product_attention out of the flags it generates from TransformerConfig). NeMo's
  // plugin has one, which its Megatron-Core (core_r0.13.0) hands to delayed scaling only
  // (transformer_engine.py L1497 TEDelayedScaling fp8_dpa; fp8_utils.py L436-453 builds the
  // other recipes without it).
  const Fp8Options& fp8 = in.model.training.fp8;
  if (in.model.training.dtype == Dtype::fp8 && fp8.attention &&
      !(framework == Framework::nemo && fp8.recipe == Fp8Recipe::delayed)) {
    return emit::limit(RefusalKind::fp8_attention);
  }
  // torchtitan's per-op selective checkpointing (matmul outputs saved, the rest recomputed)
  // has no Megatron-Core recompute module (TransformerConfig.recompute_modules): nearest full.
  const bool megatron_core = framework == Framework::megatron || framework == Framework::nemo ||
                             framework == Framework::nemo_hydra;
  if (megatron_core && in.config.recompute == Recompute::selective &&
      in.selective == SelectiveKind::per_op) {
    ParallelConfig fixed = in.config;
    fixed.recompute = Recompute::full;
    return emit::limit(RefusalKind::selective_recompute, fixed);
  }
  if (in.config.hybrid_shard() && framework != Framework::torchtitan) {
    ParallelConfig fixed = in.config;
    fixed.dp_shard = 0;
    return emit::limit(RefusalKind::hybrid_shard, fixed);
  }
  // Megatron-LM's --use-tp-pp-dp-mapping and NeMo's use_tp_pp_dp_mapping (both written);
  // DeepSpeed's PipeModelDataParallelTopology and torchtitan's device mesh put PP outermost.
  const bool writes_order = megatron_core;
  if (in.order == RankOrder::tp_pp_dp && !writes_order) return emit::limit(RefusalKind::rank_order);
  if (in.config.cp > 1 && !writes_cp) {
    ParallelConfig fixed = in.config;
    fixed.dp *= fixed.cp;
    fixed.cp = 1;
    emit::Limit cp = emit::limit(RefusalKind::context_parallel, fixed);
    cp.obstacle.cp = in.config.cp;
    return cp;
  }
  return std::nullopt;
}

std::optional<emit::Limit> first_limit(const emit::Input& in) {
  if (auto limit = cp_moe_limit(in)) return limit;
  switch (in.release.framework) {
    case Framework::megatron:
      return emit::megatron_limit(in);
    case Framework::nemo:
      return emit::nemo_limit(in);
    case Framework::nemo_hydra:
      return emit::nemo_hydra_limit(in);
    case Framework::deepspeed:
      return emit::deepspeed_limit(in);
    case Framework::torchtitan:
      return emit::torchtitan_limit(in);
    case Framework::megatron_deepspeed:
      return emit::megatron_deepspeed_limit(in);
  }
  return std::nullopt;
}

std::string text_of(const emit::Input& in, const emit::Launch& launch) {
  switch (in.release.framework) {
    case Framework::megatron:
      return emit::megatron_text(in, launch);
    case Framework::nemo:
      return emit::nemo_text(in, launch);
    case Framework::nemo_hydra:
      return emit::nemo_hydra_text(in, launch);
    case Framework::deepspeed:
      return emit::deepspeed_text(in, launch);
    case Framework::torchtitan:
      return emit::torchtitan_text(in, launch);
    case Framework::megatron_deepspeed:
      return emit::megatron_deepspeed_text(in, launch);
  }
  return {};
}

/// `c`, or `c` with micro-batch 1, when DP x micro-batch divides the global batch (a fix
/// that moves TP into DP can break that); nullopt otherwise.
std::optional<ParallelConfig> dividing(ParallelConfig c, long long global_batch) {
  if (global_batch % (static_cast<long long>(c.dp) * c.micro_batch) == 0) return c;
  c.micro_batch = 1;
  if (global_batch % c.dp == 0) return c;
  return std::nullopt;
}

/// Applies each limit's fix until the release can run the plan (at most one fix per knob).
Refusal refusal_from(const emit::Input& in, const emit::Limit& limit) {
  Refusal refusal{limit.obstacle, std::nullopt, limit.obstacle, false};
  std::optional<ParallelConfig> next = limit.fixed;
  for (int step = 0; next && step < 8; ++step) {
    const ParallelConfig candidate = *next;
    const auto again = first_limit({in.release, in.cluster, in.model, candidate, in.selective,
                                    in.cp_kind, in.switches, in.order});
    if (!again) {
      refusal.nearest = dividing(candidate, in.model.training.global_batch);
      refusal.no_dividing_split = !refusal.nearest;
      break;
    }
    next = again->fixed;
    if (!next) refusal.change = again->obstacle;
  }
  return refusal;
}

}  // namespace

Export export_plan(const Release& release, const Cluster& cluster, const Model& model,
                   const ParallelConfig& config, SelectiveKind selective, CpKind cp_kind,
                   const StackSwitches& switches, RankOrder order) {
  const emit::Input in{release, cluster, model, config, selective, cp_kind, switches, order};
  const emit::LaunchOrLimit placed = emit::launch_of(cluster, config);
  if (placed.limit) {
    return {"", Refusal{placed.limit->obstacle, std::nullopt, placed.limit->obstacle, false}};
  }
  if (const auto limit = first_limit(in)) return {"", refusal_from(in, *limit)};
  return {text_of(in, placed.launch), std::nullopt};
}

}  // namespace trident
