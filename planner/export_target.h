#pragma once
#include "costmodel/pipeline.h"
#include "costmodel/stack.h"
/// Internal to planner/export*.cpp: what every --emit target shares (the launch shape, the
/// header lines) and each target's two functions (its limits, its text).
#include <optional>
#include <string>
#include <vector>

#include "planner/export.h"

namespace trident::emit {

/// What torchrun / the deepspeed launcher start: the same number of ranks on every node.
struct Launch {
  int nodes = 1;
  int gpus_per_node = 1;
  std::vector<int> servers;     ///< cluster servers the ranks run on, ascending
  std::vector<int> local_gpus;  ///< GPU indexes used on each of those servers
  bool whole_servers = true;    ///< local_gpus is 0..gpus_per_server-1
  /// SLURM --segment for the job's nodes where the cluster's jobs run in segments of a
  /// rack-scale NVLink domain (job_segment_servers); 0 otherwise.
  int segment_servers = 0;
};

struct Input {
  const Release& release;
  const Cluster& cluster;
  const Model& model;
  const ParallelConfig& config;
  /// What selective recompute means in the stack the plan was priced under (torchtitan's
  /// per-op policy is torchtitan's own "selective"/"op" mode).
  SelectiveKind selective = SelectiveKind::attention;
  /// How the plan's context parallel attention exchanges K/V (the cost model's choice).
  CpKind cp_kind = CpKind::p2p;
  /// What the pricing stack overlaps (written where the release has a switch and it runs).
  StackSwitches switches;
  /// The rank order the plan was placed in (Megatron-LM and NeMo write tp-pp-dp as their
  /// mapping switch; DeepSpeed and torchtitan lay ranks out tp-dp-pp only).
  RankOrder order = RankOrder::tp_dp_pp;
};

/// The first thing `release` cannot run in this plan. `fixed` is the same plan with that
/// one knob changed to what the release can run (nullopt when no knob of the split helps).
struct Limit {
  Obstacle obstacle;
  std::optional<ParallelConfig> fixed;
};

/// A Limit of `kind` with no facts beyond the model and plan, fixed by `fixed`.
[[nodiscard]] inline Limit limit(RefusalKind kind,
                                 const std::optional<ParallelConfig>& fixed = std::nullopt) {
  Limit out;
  out.obstacle.kind = kind;
  out.fixed = fixed;
  return out;
}

/// Where the plan's ranks sit (planner/layout.h: rank r on the r-th live GPU); a Limit when
/// servers hold different numbers of them or different GPU indexes.
struct LaunchOrLimit {
  Launch launch;
  std::optional<Limit> limit;
};
[[nodiscard]] LaunchOrLimit launch_of(const Cluster& cluster, const ParallelConfig& config);

/// "TP4 PP8 DP16 mb1 VP4 recompute selective ZeRO-1 SP on, 512 GPUs".
[[nodiscard]] std::string plan_summary(const ParallelConfig& config);

/// The first line: "# TITLE VERSION (github.com/REPO commit C), ENTRY; trident plan ...".
[[nodiscard]] std::string header_line(const Input& in);

/// "# vocabulary: Megatron pads 128256 to 129024 ..." where pretrain_gpt.py pads the vocabulary
/// to a multiple of 128 x TP (its --make-vocab-size-divisible-by default, Megatron-LM
/// vocab_size_with_padding; Megatron-DeepSpeed _vocab_size_with_padding) past the model's;
/// empty where the model's vocabulary is such a multiple.
[[nodiscard]] std::string vocab_padding_note(const Model& model, int tp);

/// "# nodes: servers 0-16,18-54" and "CUDA_VISIBLE_DEVICES=..." comment lines when the ranks
/// do not sit on servers 0..n-1 whole, and "# SLURM: submit with --segment=N" where the job
/// runs in segments of a rack-scale domain; empty otherwise.
[[nodiscard]] std::string placement_comment(const Launch& launch, const char* comment);

[[nodiscard]] std::string str(long long value);
/// "  NAME VALUE \\\n": one flag of a pretrain_gpt.py command line (Megatron-LM's and
/// Megatron-DeepSpeed's), a switch without VALUE.
[[nodiscard]] std::string flag(const std::string& name, const std::string& value = "");
/// {"key": value, ...} with one entry (`"key": value`) a line, as DeepSpeed's configs are written.
[[nodiscard]] std::string json_object(const std::vector<std::string>& entries);
/// `--optimizer sgd` for a model trained with SGD (pretrain_gpt.py's default is Adam: Megatron-LM
/// arguments.py, Megatron-DeepSpeed megatron/arguments.py, choices adam|sgd in both); "" for Adam.
[[nodiscard]] std::string optimizer_flag(Optimizer optimizer);
/// The command every node runs: a comment naming NODE_RANK and MASTER_ADDR, then `env` (empty,
/// or "VAR=VALUE "), torchrun over the launch's nodes and GPUs, pretrain_gpt.py and `flags`
/// (flag() lines; the last one's continuation dropped).
[[nodiscard]] std::string pretrain_gpt_command(const Launch& launch, const std::string& env,
                                               std::string flags);
/// Decoder layers of each of the `pp` stages of `s` (stage_layers of `layers`), first to last:
/// the middle stages holding the most first, then those one short.
[[nodiscard]] std::vector<int> stage_runs(int layers, int pp, const StageLayers& s);
/// layers / (pp * v): layers per virtual pipeline stage.
[[nodiscard]] int layers_per_chunk(const Model& model, const ParallelConfig& config);

/// The plan's decoder layers per pipeline stage (costmodel/pipeline.h stage_layers) when the
/// split is uneven and its middle stages all hold the same count, the one shape a release's
/// first/last-stage layer counts write; nullopt for an even split (or middles that differ).
[[nodiscard]] std::optional<StageLayers> uneven_stages(const Model& model,
                                                       const ParallelConfig& config);
/// An uneven split whose middle stages differ, or any uneven split interleaved, in
/// Megatron-Core's pipeline layout notation ("Et*3|t*4|t*4|t*3|t*2L": the embedding, each
/// model chunk's decoder layers, MTP layers and the loss; p x v segments, chunk c of stage r
/// the (c x p + r)-th; PipelineParallelLayerLayout, megatron/core/transformer/
/// pipeline_parallel_layer_layout.py @core_v0.19.0, also in core_r0.13.0 under NeMo v2.4.0);
/// nullopt for the splits the first/last-stage counts write (and even ones).
[[nodiscard]] std::optional<std::string> pipeline_layout(const Model& model,
                                                         const ParallelConfig& config);
/// What a release with first/last-stage layer counts (`writes_first_last`) and, where
/// `writes_layout`, a per-chunk layout (pipeline_layout) cannot write of an uneven split:
/// with the layout, nothing; without it, interleaving (fixed: VP 1) and middle stages that
/// differ (no fix); a release with neither cannot write any uneven split.
[[nodiscard]] std::optional<Limit> uneven_stage_limit(const Input& in, bool writes_first_last,
                                                      bool writes_layout = false);
/// A plan whose end stages are set away from the default split (ParallelConfig::
/// first_stage_layers) under a release that sets no stage's layers (DeepSpeed's
/// partition_method): refused, fixed to the default split.
[[nodiscard]] std::optional<Limit> set_ends_limit(const Input& in);

/// Megatron-Core's interleaved 1F1B as the plan was priced: true where the stack priced its
/// transfers exposed and the release can run them so, which Megatron-LM allows only above
/// PP 2 (arguments.py L967-975 @core_v0.19.0: two ranks would batch several sends and
/// receives between them); at PP 2 a launch keeps the overlap and says so (p2p_overlap_note).
[[nodiscard]] bool runs_p2p_exposed(const ParallelConfig& config, const StackSwitches& switches);
/// Transformer Engine's userbuffers as priced (StackSwitches::tp_userbuffers), where a release
/// runs them: TP above 1 with sequence parallelism (Megatron-LM asserts SP, arguments.py
/// L1401-1402 @core_v0.19.0; NeMo's callback turns them off without it).
[[nodiscard]] bool writes_userbuffers(const ParallelConfig& config, const StackSwitches& switches);
/// The parameter all-gather behind forward as priced: with data parallelism, the gradient
/// reduction overlapped and a sharded optimizer (Megatron-LM arguments.py L990-995; NeMo 1.x
/// megatron_gpt_model.py L383-384).
[[nodiscard]] bool overlaps_param_gather(const ParallelConfig& config,
                                         const StackSwitches& switches);
/// One device connection (CUDA_DEVICE_MAX_CONNECTIONS=1) with TP or CP outside
/// Megatron-FSDP, as Megatron-LM asserts before Blackwell (arguments.py L1413-1437) and
/// userbuffers need to overlap there; none on Blackwell (compute capability 10 on), where
/// Megatron-LM drops the requirement and NeMo recommends more connections
/// (megatron_comm_overlap.py L224-236 @v2.4.0).
[[nodiscard]] bool needs_one_device_connection(const ParallelConfig& config, const Gpu& gpu);
/// TP or CP on Blackwell, where NeMo's callback asks for 32 device connections "to avoid
/// serialization of streams" and warns at every start otherwise (megatron_comm_overlap.py
/// L224-234 @v2.4.0).
[[nodiscard]] bool wants_more_device_connections(const ParallelConfig& config, const Gpu& gpu);
/// A comment line where the stack priced the transfers exposed but a PP 2 launch overlaps
/// them; empty otherwise.
[[nodiscard]] std::string p2p_overlap_note(const ParallelConfig& config,
                                           const StackSwitches& switches, const char* comment);

/// The attention kernel the plan was priced with as Megatron-Core's AttnBackend name
/// (transformer/enums.py; language_module.py L120-138 @core_v0.19.0 sets Transformer Engine's
/// NVTE_FLASH_ATTN / NVTE_FUSED_ATTN / NVTE_UNFUSED_ATTN from it): cuDNN's fused kernel
/// "fused", FlashAttention "flash", "unfused"; nullptr for llm-foundry's Triton kernel, which
/// has no backend (left to Transformer Engine: auto; the launch says so, triton_attention_note).
[[nodiscard]] const char* attn_backend(AttentionKernel kernel);
/// A comment line for a plan priced with FlashAttention's Triton kernel, which `release`
/// (Megatron-Core, NeMo) has no backend for (auto is left: attn_backend); "" for the other
/// kernels.
[[nodiscard]] std::string triton_attention_note(AttentionKernel kernel, const char* release);

[[nodiscard]] std::optional<Limit> megatron_limit(const Input& in);
[[nodiscard]] std::string megatron_text(const Input& in, const Launch& launch);
[[nodiscard]] std::optional<Limit> nemo_limit(const Input& in);
[[nodiscard]] std::string nemo_text(const Input& in, const Launch& launch);
[[nodiscard]] std::optional<Limit> nemo_hydra_limit(const Input& in);
[[nodiscard]] std::string nemo_hydra_text(const Input& in, const Launch& launch);
[[nodiscard]] std::optional<Limit> deepspeed_limit(const Input& in);
[[nodiscard]] std::string deepspeed_text(const Input& in, const Launch& launch);
[[nodiscard]] std::optional<Limit> torchtitan_limit(const Input& in);
[[nodiscard]] std::string torchtitan_text(const Input& in, const Launch& launch);
[[nodiscard]] std::optional<Limit> megatron_deepspeed_limit(const Input& in);
[[nodiscard]] std::string megatron_deepspeed_text(const Input& in, const Launch& launch);

}  // namespace trident::emit
