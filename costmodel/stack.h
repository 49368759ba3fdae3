#pragma once
/// The software stack that runs a split: which kernels it has, which collectives it overlaps
/// with what, how it shards data parallel state, what it can and cannot do. A stack is a
/// preset file (configs/stacks/*.yaml) whose every field cites its source; the cost model
/// prices a split as that stack runs it and the search only tries what the stack supports.
/// Derivations: docs/cost_model.md#stacks.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/kernels.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/unfused_attention.h"
#include "topology/errors.h"
#include "topology/gpu.h"

namespace trident {

/// How the MoE layer exchanges tokens: Megatron-Core's alltoall dispatcher (NCCL all-to-all,
/// one copy per token and expert) or the flex dispatcher with HybridEP (one copy per token and
/// destination rank, one per destination NVLink domain over the network).
enum class MoeDispatcher { alltoall, hybridep };

/// HBM bytes per logit element Megatron's vocab-parallel cross-entropy moves op by op
/// (tensor_parallel/cross_entropy.py), forward: cast r2 w4, max r4, subtract r4 w4, exp r4 w4,
/// sum r4, divide r4 w4 = 38; backward: the one-hot subtracted by index (one element a token,
/// `grad_2d[arange_1d, masked_target_1d] -= ...`), x grad r4 w4, cast r4 w2 = 14.
inline constexpr double kCrossEntropyForwardBytesPerLogit = 38.0;
inline constexpr double kCrossEntropyBackwardBytesPerLogit = 14.0;
/// Largest output_wgrad_deferral_limit a stack file may set: past a step's calls any limit
/// defers them all (as 0 does); the bound keeps the count far from an int's.
inline constexpr int kMaxOutputWgradDeferralLimit = 1000000;

/// Forward HBM bytes per element of the elementwise ops whose kernels differ between fused code
/// (Megatron/Transformer Engine, torch.compile: the defaults) and PyTorch eager (each op its own
/// pass; the stack file cites the code it counts). Backward: twice the forward for the norm and
/// the gated activation, once more for RoPE (on the gradients).
struct ElementwiseBytes {
  double rmsnorm = 4.0;  ///< one RMSNorm, per hidden element (LayerNorm is one kernel: 4)
  double rope = 4.0;     ///< rotary embedding, per element of Q and K
  double glu = 6.0;      ///< gated activation (SwiGLU/GeGLU), per FFN element
  /// GQA's K and V materialised at every query head before the attention call (expand + copy).
  bool gqa_repeat_kv = false;
  /// Multi-latent attention's rotary embedding, per element of Q's and K's RoPE parts: 28,
  /// Megatron-Core's only path (it refuses rope fusion with MLA, transformer_config.py L926
  /// @core_v0.12.0; rope_utils.py _apply_rotary_pos_emb_bshd L106-122: de-interleaving cat
  /// r2 w2, x cos r2 w2, rotate_half's negation r1 w1 and cat r2 w2, x sin r2 w2, add r4 w2, the
  /// closing cat r2 w2).
  double mla_rope = 28.0;
};

/// How TP collectives overlap with compute: none; Megatron's async all-reduce of the input
/// gradient behind the weight-gradient GEMM (backward only); Transformer Engine userbuffers
/// (every TP collective behind its neighbouring GEMM, sequence parallel).
enum class TpOverlap { none, backward, userbuffers };

/// What selective recomputation repeats: Megatron's core attention (`core_attn`, Korthikanti
/// 2022), torchtitan's per-op policy (keeps matmul outputs of every other linear and SDPA,
/// recomputes the rest of the block), or Megatron-Core's `mla_up_proj` (multi-latent
/// attention's up-projections and RoPE, their outputs discarded after the attention forward).
enum class SelectiveKind { attention, per_op, mla_up_proj };

enum class BackwardPrefetch { pre, post, none };
/// ZeRO-3 / FSDP units beside the transformer layers (Stack::edge_unit).
enum class EdgeUnit { none, root, embedding };

/// Partial full recompute: none; Megatron-Core's block method (the first N layers of each
/// model chunk recomputed, --recompute-method block --recompute-num-layers N); torchtitan's
/// layer-wise selective AC (selective_ac_option "k": every k-th block, floor(L / k) of L).
enum class PartialRecompute { none, block, every_kth };

/// How each micro-batch's weight gradients join the accumulated ones: inside the weight-gradient
/// GEMM or only on a reduced shard (none: no pass over the full gradients); one add kernel per
/// tensor, mixed dtypes in one pass (add: read the 16-bit gradient, read and write the buffer);
/// or a cast to the buffer's dtype into a temporary first when they differ (add_cast).
enum class GradAccumulation { none, add, add_cast };
/// What a pipeline stage keeps of its forward outputs once sent: nothing (Megatron frees the
/// data after the send, deallocate_pipeline_outputs); each until its micro-batch's backward
/// (in_flight: torch.distributed.pipelining's fwd_cache); that plus the last stage's output of
/// every micro-batch until the step ends (last: its output_chunks), or every stage's (all).
enum class PpKeptOutputs { none, in_flight, last, all };

/// Context parallel attention: ring exchange of K/V chunks overlapped with attention (TE
/// `p2p`, Megatron's default), Ulysses all-to-all of Q/K/V and the output (TE `a2a`), or
/// PyTorch's context_parallel with the all-gather rotater (`allgather`, torchtitan's default:
/// every K/V chunk all-gathered once, behind the local chunk's attention).
enum class CpKind { p2p, a2a, all_gather };

[[nodiscard]] const char* to_string(AttentionKernel kernel);
[[nodiscard]] const char* to_string(TpOverlap overlap);
[[nodiscard]] const char* to_string(SelectiveKind kind);
[[nodiscard]] const char* to_string(PartialRecompute partial);

/// torchtitan's AC interval k recomputing `recomputed` of `chunk_layers` blocks on every chunk
/// alike: k = chunk_layers / recomputed where that divides (its block counter runs on across a
/// rank's chunks, so only a k dividing the chunk recomputes the same count in each); 0 otherwise.
[[nodiscard]] int every_kth_interval(int chunk_layers, int recomputed);

/// Whether selective recomputation of `kind` has something to repeat on `model`: mla_up_proj
/// only where the model has multi-latent attention (Megatron-Core raises otherwise,
/// transformer_config.py L740-744 @core_r0.12.0); the others on any model.
[[nodiscard]] bool selective_applies(SelectiveKind kind, const Model& model);

struct Stack {
  std::string name = "megatron-core";
  AttentionKernel attention = AttentionKernel::cudnn;
  /// Where `attention` was set ("FILE:LINE: attention", a base file's where the stack inherits
  /// it, "stack NAME: attention" from a built-in preset; empty for a Stack built in code):
  /// refusals of the kernel name it.
  std::string attention_from;
  /// The head shapes wider than 128 that cuDNN's fused attention trains on compute capability
  /// 10.0 and later under this stack's Transformer Engine and cuDNN, as bits of
  /// kCudnnBlackwellHeads (docs/cost_model.md#attention-on-blackwell): TE's
  /// nvte_get_fused_attn_backend allows heads up to 128 there, 192/128 (multi-head latent
  /// attention) from TE v2.5 with cuDNN 9.11, 256/256 from TE v2.18 with cuDNN 9.23.
  unsigned cudnn_blackwell_heads = 1u;
  /// `attention` is Transformer Engine's fallback for the model's heads, put there by the
  /// planner's resolve_attention (the stack as written runs cuDNN's fused attention).
  bool attention_is_fallback = false;
  /// Whose unfused attention runs where `attention` is unfused, the stated kernel or TE's
  /// fallback (costmodel/unfused_attention.h): its softmax's kernels and memory.
  UnfusedSoftmax unfused_softmax = UnfusedSoftmax::transformer_engine;
  TpOverlap tp_overlap = TpOverlap::userbuffers;
  /// PP send/recv overlapped with compute in the interleaved schedule: only what the schedule
  /// cannot hide is exposed (interleaved_p2p_exposed_s).
  bool pp_overlap = true;
  /// Every PP send and receive is its own blocking call (DeepSpeed's pipeline engine), rather
  /// than a stage's send batched with its receive (Megatron): four transfers a micro-batch on a
  /// middle stage, not two (deepspeed_p2p_exposed_transfers).
  bool pp_separate_send_recv = false;
  /// The pipe model passes the causal attention mask from stage to stage with every
  /// activation (Megatron-DeepSpeed / GPT-NeoX ParallelTransformerLayerPipe), and DeepSpeed sends
  /// it as half precision: s*s*2 more bytes on every forward transfer.
  bool pp_sends_attention_mask = false;
  /// Without sequence parallelism each TP rank sends only its 1/t of the activation across a
  /// stage boundary and the receiver all-gathers it over TP (Megatron-LM 2021-2022's
  /// scatter_gather_tensors_in_pipeline, DeepSpeed's pipe partitioning); false: every TP rank
  /// sends the whole b*s*h activation (apex's pipeline since 2022-06, Megatron-Core since
  /// 2023-01). With sequence parallelism the activation is 1/t either way.
  bool pp_scatter_gather = false;
  /// The blocking TP all-gathers of the whole activation that scatter then costs a middle stage
  /// per micro-batch: Megatron-LM 2021 gathers the received activation and the received
  /// gradient (2), DeepSpeed's pipe also re-gathers its own output for the backward (3).
  int pp_tp_gathers_per_micro_batch = 2;
  /// The pipeline allocates a receive buffer per micro-batch for each stage's input and for
  /// its output's gradient, at the first step, and keeps them (torch.distributed.pipelining's
  /// _prepare_forward_infra / _prepare_backward_infra); false: a receive tensor per transfer,
  /// freed with its use (Megatron's p2p_communication, DeepSpeed's pipe buffers per in-flight
  /// micro-batch).
  bool pp_recv_buffers_per_micro_batch = false;
  /// The stage outputs that stay allocated after their send (the last stage's: its logits).
  PpKeptOutputs pp_keeps_outputs = PpKeptOutputs::none;
  /// DP gradient reduction in buckets overlapped with backward (ZeRO 0-2).
  bool dp_overlap_grad_reduce = true;
  /// ... still with PP > 1, and still with sequence parallelism (NeMo 1.x turns its optimizer's
  /// overlap off under either: overlaps_grad_reduce).
  bool dp_overlap_grad_reduce_with_pp = true;
  bool dp_overlap_grad_reduce_with_sp = true;
  /// ZeRO-1/2 parameter all-gather overlapped with the next step's forward.
  bool dp_overlap_param_gather = true;
  /// Under the interleaved schedule each model chunk syncs on its own (Megatron-Core: a DDP
  /// buffer per chunk): its gradient reduction starts when its last micro-batch's backward
  /// ends (schedules.py L1419-1454 @d98e8a64), its parameter all-gather when the chunk before it
  /// starts its first forward (align_param_gather, L1218-1221, L1341-1353), so only the first
  /// chunk's sync meets the step's edge (per_chunk_unhidden_s).
  bool dp_sync_per_chunk = false;
  /// Without interleaving, a stage after the first gathers its parameters (one bucket: only the
  /// first stage is bucketed) at its first forward, once its input has arrived, so each later
  /// stage's all-gather lies in turn on the fill's path (Megatron-Core 0.9+: align_param_gather
  /// off without VP, arguments.py L1010-1017, and finish_param_sync dispatching the first
  /// bucket in the forward pre-hook, param_and_grad_buffer.py L555-573 @d98e8a64; core_r0.8.0's
  /// optimizer dispatched it at the step's end instead, distrib_optimizer.py L1336-1337).
  bool dp_param_gather_in_fill = false;
  /// Parameters per DP bucket (Megatron: max(40M, 1M x dp)); each bucket is one collective.
  double dp_bucket_parameters = 4.0e7;
  /// Bucket grows with DP: bucket = max(dp_bucket_parameters, this x dp); 0 = fixed.
  double dp_bucket_parameters_per_rank = 1.0e6;
  /// Bytes per gradient element in the DP reduction (4 = fp32, 2 = bf16).
  double grad_reduce_bytes = 4.0;
  /// fp16 training reduces (and keeps) gradients in fp16 whatever grad_reduce_bytes says
  /// (Megatron 2021 without --accumulate-allreduce-grads-in-fp32; DeepSpeed fp16).
  bool fp16_grads_in_fp16 = false;
  /// Bytes per gradient element the ZeRO optimizer reduces in where it runs without PP (ZeRO
  /// >= 1, PP 1): DeepSpeed's DeepSpeedZeroOptimizer reduces in communication_data_type, 16-bit,
  /// where its BF16_Optimizer (ZeRO-0, and the bf16 optimizer sharding that runs with PP) keeps
  /// fp32. 0: grad_reduce_bytes everywhere.
  double zero_reduce_bytes = 0.0;
  /// Bytes per gradient element kept between backward and the optimizer (4 = fp32 main grads).
  double grad_buffer_bytes = 4.0;
  /// The gradient accumulation pass per micro-batch (Megatron-Core fuses it into the wgrad GEMM).
  GradAccumulation grad_accumulation = GradAccumulation::none;
  /// The same pass on splits without pipeline parallelism, where a stack fuses it only with PP
  /// (NeMo 2022 turns gradient_accumulation_fusion off at PP 1); a file that leaves it out gets
  /// its grad_accumulation.
  GradAccumulation grad_accumulation_without_pp = GradAccumulation::none;
  /// Megatron's DDP keeps every gradient in one contiguous main-grad buffer: it zeroes the whole
  /// buffer every step, and the gradients its GEMMs do not accumulate themselves (the word
  /// embedding's) reach it through a hook's add after every backward.
  bool zeroes_grad_buffer = true;
  /// Megatron-Core's DDP takes the norm of each bucket's gradients before its reduction and
  /// synchronises on its NaN check (check_for_nan_in_grad): one more read of the main-grad
  /// buffer a step, on the compute stream.
  bool grad_nan_check = false;
  /// ... and scales each bucket by 1 / (DP x CP) before a sum reduction where the stack does
  /// not average in the collective (average_in_collective off): a read and a write of the
  /// buffer a step wherever DP x CP > 1.
  bool grad_prescale = false;
  /// HBM bytes of the model's elementwise ops as this stack's code runs them: fused kernels by
  /// default; PyTorch eager pays each op's own pass (docs/cost_model.md#eager-elementwise).
  ElementwiseBytes elementwise{};
  /// ZeRO stages this stack runs (bit z set = stage z), and those it runs with PP > 1 (none:
  /// the stack has no pipeline parallelism).
  unsigned zero_stages = 0b1011;
  unsigned zero_stages_with_pp = 0b0011;
  /// Sharded data parallel (ZeRO-3 / FSDP): all-gathers issued ahead of the unit computing
  /// (FSDP1 BACKWARD_PRE and FSDP2: 1), whether the gathered weights are freed after forward
  /// (so backward gathers again), whether gradients are reduce-scattered on every micro-batch.
  int prefetch_units = 1;
  /// When a unit's backward all-gather is issued: before the previous unit's gradient
  /// compute (FSDP BACKWARD_PRE, FSDP2), after it (BACKWARD_POST: the gather is exposed and
  /// only the reduce-scatter overlaps), or not ahead at all.
  BackwardPrefetch backward_prefetch = BackwardPrefetch::pre;
  bool reshard_after_forward = true;
  bool reduce_every_micro_batch = true;
  /// FSDP2's foreach_reduce copies each unit's unsharded gradients into the reduce-scatter
  /// input (widening to the reduce dtype) on the compute stream before the reduce-scatter
  /// stream takes over: one HBM pass on the critical path per reduce-scatter
  /// (docs/cost_model.md#data-parallel). FSDP1 casts on its post-backward stream: false.
  bool reduce_scatter_copy_in = false;
  /// FSDP2 copies each unit's all-gather output into its unsharded parameters on the compute
  /// stream (foreach_all_gather_copy_out, after the gather's event): one read and one write
  /// of the gathered bytes per gather (docs/cost_model.md#sharded).
  bool zero3_gather_copy_out = false;
  /// FSDP1's parameters are views split from the unit's flat parameter, so autograd builds the
  /// flat gradient with the split's backward, a cat of the views' gradients, on the compute
  /// stream: one read and one write of the 16-bit gradients per unit and backward.
  bool zero3_gradient_cat = false;
  /// ZeRO-3 with PP > 1 keeps the gathered weights for all micro-batches (torchtitan sets
  /// reshard_after_forward false with PP): one gather per unit per step, not per micro-batch.
  bool pp_keeps_gathered_weights = true;
  /// Where that keeps them, each model chunk's reduce-scatters all run after its last backward,
  /// the compute stream waiting for them (torch.distributed.pipelining perform_reduce_grad:
  /// every FSDP2 group's post_backward, then the root's final callback): exposed, not hidden
  /// unit by unit behind the backward (docs/cost_model.md#data-parallel).
  bool pp_bulk_reduce_scatter = false;
  /// The ZeRO-3 unit beside the layers that nothing hides: `root`, the embedding, final norm
  /// and output layer in the root unit, gathered at each forward's start and reduce-scattered
  /// at each backward's end (FSDP1's auto-wrapped root; torchtitan's fully_shard(model) until
  /// 2025-07); `embedding`, the embedding alone (torchtitan since: the output layer a unit of
  /// its own the layers hide); `none`, not priced (a stack whose wrapping was not read).
  EdgeUnit edge_unit = EdgeUnit::none;
  /// ZeRO-3 runs its collectives' buffers on side streams whose cached blocks the compute
  /// stream cannot reuse (FSDP2: each unit's flat all-gather output on the all-gather copy-in
  /// stream, the reduce-scatter output, the sharded gradients, on the reduce-scatter stream;
  /// PyTorch's caching allocator reuses a freed block only on the stream it was allocated on):
  /// they stay reserved beside the compute stream's peak (side_stream_pool_bytes).
  bool zero3_side_stream_pools = false;
  /// ZeRO-1 all-reduces the gradients (each rank then keeps its partition) rather than
  /// reduce-scattering them: DeepSpeed's stage 1 turns contiguous_gradients off and reduces
  /// every bucket with dist.all_reduce (buffered_reduce_fallback -> allreduce_bucket).
  bool zero1_all_reduces_gradients = false;
  /// Under PP the last unit's reduce-scatter input outlives the step (torch 2.6's pipelining
  /// never runs FSDP2's final backward callback, which drops comm_ctx.reduce_scatter_state).
  bool pp_keeps_last_reduce_scatter_input = false;
  /// ZeRO-3 shards only the fp32 parameter (the master weight) and gathers 16-bit copies per
  /// unit: FSDP mixed precision (FlatParameter / DTensor shard in fp32, param_dtype bf16), so no
  /// persistent 16-bit weights; DeepSpeed ZeRO-3 keeps a 16-bit partition beside the fp32 one.
  bool zero3_fp32_shard_only = false;
  /// ZeRO-2 runs per unit like ZeRO-3 without the backward re-gather (FSDP SHARD_GRAD_OP),
  /// rather than as bucketed reduce-scatter + all-gather (DeepSpeed, Megatron).
  bool zero2_per_unit = false;
  /// Hybrid sharding (HSDP): per-unit sharding inside a group of DP ranks, replicated across
  /// the groups (FSDP1 HYBRID_SHARD / _HYBRID_SHARD_ZERO2, FSDP2 on a 2-D mesh).
  bool hybrid_shard = false;
  /// The framework can lay ranks out tp-pp-dp (PP inside DP: Megatron-Core's
  /// --use-tp-pp-dp-mapping, NeMo's use_tp_pp_dp_mapping); false: tp-dp-pp only (Megatron-LM
  /// 2021, DeepSpeed's PipeModelDataParallelTopology, torchtitan's [pp, dp, cp, tp] mesh), the
  /// one order the search then places.
  bool tp_pp_dp_order = true;
  /// ZeRO-0 (plain DDP) only where data parallelism is the job's one dimension: TP, PP, CP and
  /// EP 1 (torchtitan's apply_ddp: "DDP has not supported > 1D parallelism").
  bool zero0_one_dimensional = false;
  bool sequence_parallel = true;
  /// Tensor parallelism runs only with sequence parallelism (torchtitan's TP plan shards the
  /// norms with SequenceParallel unconditionally): TP > 1 without it is neither searched nor
  /// accepted as a pin.
  bool sequence_parallel_required = false;
  bool interleaved_pipeline = true;
  /// Layers that do not divide by PP are allowed (first/last stages get fewer).
  bool uneven_stages = true;
  /// An uneven split shortens only the first and the last virtual stage (torchtitan's
  /// first/last_stage_less_layers): splits whose middle stages differ, or whose ends' shortfall
  /// exceeds a virtual stage, are neither searched nor accepted as pins (ends_only_split).
  bool uneven_stages_ends_only = false;
  /// The launcher takes each end stage's layer count (Megatron-Core
  /// --decoder-first/last-pipeline-num-layers, NeMo num_layers_in_first/last_pipeline_stage,
  /// torchtitan first/last_stage_less_layers): the search also tries the split with lighter
  /// ends (pipeline.h lighter_ends), and end stages may be pinned to any valid split.
  bool stage_ends_pinned = true;
  /// Middle stages of different layer counts run (a pipeline layout lists each stage's layers:
  /// Megatron-Core --pipeline-model-parallel-layout), as the default split of layers PP does
  /// not divide has them; torchtitan's counts shorten only the ends.
  [[nodiscard]] bool runs_unequal_middles() const {
    return uneven_stages && !uneven_stages_ends_only;
  }
  /// Recompute modes the stack has (bit Recompute set) and what selective means.
  unsigned recompute_modes = 0b111;
  SelectiveKind selective = SelectiveKind::attention;
  PartialRecompute partial_recompute = PartialRecompute::block;
  /// CPU time to launch one kernel (0 when the stack captures CUDA graphs) and kernels one
  /// transformer layer launches forward (backward launches twice as many).
  double kernel_launch_us = 0.0;
  double kernels_per_layer_forward = 0.0;
  /// Context parallel kinds the stack runs (bit CpKind set; 0 = no context parallelism).
  unsigned cp_kinds = 0b11;
  /// Expert parallelism for MoE layers (token dispatch/combine all-to-alls).
  bool expert_parallel = true;
  /// The MoE all-to-alls overlapped with another micro-batch's compute: Megatron-Core's
  /// combined 1F1B (--overlap-moe-expert-parallel-comm, costmodel/ep_overlap.h), on the splits
  /// it runs on (runs_ep_overlap); false: exposed.
  bool ep_overlap = false;
  /// With ep_overlap, the weight gradients run as their own node after the input gradients
  /// (--delay-wgrad-compute), so the backward dispatch goes as soon as the experts' input
  /// gradient is done.
  bool ep_overlap_delay_wgrad = false;
  /// The shared experts run on a side stream beside the dispatch and combine all-to-alls
  /// (Megatron-Core --moe-shared-expert-overlap, default False, transformer_config.py
  /// @core_v0.12.0; shared_experts.py L107-226): their GEMMs hide that much of each MoE
  /// layer's all-to-all time, forward, backward and recomputed.
  bool moe_shared_expert_overlap = false;
  /// The last pipeline stage keeps the output layer's weight-gradient GEMM of its first
  /// `output_wgrad_deferral_limit` calls (0: every call) and runs them after its last backward,
  /// while the other stages drain (Megatron-Core defer_embedding_wgrad_compute /
  /// wgrad_deferral_limit, default False / 0: model_parallel_config.py L277-286 @core_r0.12.0;
  /// each call's input kept, tensor_parallel/layers.py L928-934, and its output gradient,
  /// L451-457; run by utils.py drain_embedding_wgrad_compute from pipeline_parallel/
  /// schedules.py finish_embedding_wgrad_compute). Megatron-Core refuses it without a pipeline
  /// (model_parallel_config.py L367-370): priced at PP > 1 only (pipeline.h
  /// deferred_output_wgrad, memory.h deferred_wgrad_bytes).
  bool defer_output_wgrad = false;
  int output_wgrad_deferral_limit = 0;
  /// Megatron-Core's fused token permutation (--moe-permute-fusion: TE's fused_permute /
  /// fused_unpermute; default False, transformer_config.py L449 @core_r0.12.0). Without it the
  /// unpermutation multiplies the rows by their routing probabilities, zero-fills the output
  /// and scatter-adds the rows into it (moe_utils.py unpermute L330-362), its backward a gather
  /// and the product's two gradients (unpermute_bytes, unpermute_backward_bytes).
  bool moe_permute_fusion = false;
  /// Under FP8, Megatron-Core's grouped experts copy the permuted rows into an input padded to
  /// FP8's alignment (16 rows an expert, MXFP8 32) before the grouped GEMM and copy the output
  /// back without the padding after it (experts.py TEGroupedMLP fp8_padding / fp8_unpadding,
  /// L698-699, L717, L790 @core_v0.12.0; L859-866, L957-958 @core_v0.15.0; TE
  /// pytorch/module/fp8_padding.py: a new tensor unless every split is aligned already), both
  /// again in backward; moe_router_padding_for_fp8 (default False, transformer_config.py L472
  /// @core_v0.15.0) would align the routing instead. Only behind the all-to-all dispatcher:
  /// HybridEP's permute writes the padded layout itself.
  bool moe_fp8_padding_copies = false;
  /// How the MoE layers exchange tokens (stack key moe_dispatcher: alltoall | hybridep).
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  /// FP8 parameters (training.fp8.params: weights cast to FP8 before ZeRO-3's all-gather) only
  /// when the data-parallel shard dimension is above 1: torchtitan enables torchao's
  /// enable_fsdp_float8_all_gather only with dp_shard > 1, so FSDP sharded over CP alone gathers
  /// and keeps 16-bit weights.
  bool fp8_param_gather_needs_dp_shard = false;
  /// FP8 parameters only with a sharded optimizer (ZeRO 1 or more): Megatron-LM asserts
  /// --fp8-param-gather "only supported with distributed optimizer, torch fsdp2, megatron fsdp"
  /// (arguments.py L1060-1062 @core_v0.19.0), whose re-quantisation of the master shards into
  /// the FP8 weights DDP does not have; ZeRO-0 is neither searched nor accepted as a pin.
  bool fp8_params_need_sharded_optimizer = false;
  /// Whether ZeRO `zero` runs `training`'s FP8 parameters here (fp8_params_need_sharded_optimizer).
  [[nodiscard]] bool runs_fp8_params_at(int zero, const Training& training) const {
    return zero > 0 || !fp8_params_need_sharded_optimizer || training.dtype != Dtype::fp8 ||
           !training.fp8.params;
  }
  /// The sharded optimizer is Adam's only: Megatron-Core's DistributedOptimizer asserts Adam,
  /// AdamW or a state initializer, which its SGD builds without (distrib_optimizer.py L688-695,
  /// optimizer/__init__.py L617-624 @core_v0.19.0), and Megatron-FSDP turns it on: SGD runs at
  /// ZeRO-0 only, and ZeRO 1+ is neither searched nor accepted as a pin for it.
  bool sharded_optimizer_adam_only = false;
  /// Whether ZeRO `zero` runs `training`'s optimizer here (sharded_optimizer_adam_only).
  [[nodiscard]] bool runs_optimizer_at(int zero, const Training& training) const {
    return zero == 0 || !sharded_optimizer_adam_only || training.optimizer != Optimizer::sgd;
  }
  /// FP8 recipes the stack runs (bit Fp8Recipe set; 0 = no FP8), and whether it casts the
  /// weights to FP8 once per step and keeps the copy over the micro-batches (Megatron passes
  /// is_first_microbatch to Transformer Engine) rather than on every micro-batch.
  unsigned fp8_recipes = 0b1111;
  /// Training dtypes the stack runs (bit Dtype set): all five unless its file says fewer
  /// (torchtitan has no fp16: no loss scaler, mixed_precision_param bfloat16|float32).
  unsigned dtypes = 0b11111;
  /// ZeRO (stage 1 or more) keeps its own fp32 clone of the rank's partition, also of fp32
  /// weights (DeepSpeed); false: the fp32 weights are the optimizer's master (Megatron).
  bool zero_clones_fp32_partition = false;
  bool fp8_weight_cache = true;
  /// The FP8 linear layers keep the FP8 copy of their input for the weight gradient
  /// (Transformer Engine), rather than the 16-bit input, cast again in backward (torchao).
  bool fp8_saves_fp8_inputs = true;
  /// Transformer Engine 1.x: its FP8 linears cast with a fused cast-transpose and transpose the
  /// weights on every GPU (no Blackwell branch before v2.0), so every column-wise FP8 copy is a
  /// transpose, Hopper's layout, also on B200/GB200 (docs/cost_model.md#fp8-layout).
  bool fp8_tn_only = false;
  /// Under FP8 current scaling with sequence parallelism, the FP8 linear layers all-reduce each
  /// locally quantized tensor's amax over TP before its FP8 all-gather (Transformer Engine
  /// >= 2.2: fp8_current_amax_reductions).
  bool fp8_current_amax_over_tp = true;
  /// Adam state bytes per parameter: fp32 master, momentum, variance (12); NeMo's
  /// distributed_fused_adam with optim dtype bf16 keeps bf16 momentum and variance and no master
  /// copy (4: megatron_base_model.py store_params False when the optim dtype is the model's).
  double adam_state_bytes = 12.0;
  /// HBM bytes one Adam step streams per local parameter, the gradient-norm clip included.
  /// Megatron's and DeepSpeed's fused Adam (apex / Transformer Engine FusedAdam): read the fp32
  /// master, gradient, m and v (16), write master, m and v (12) and the 16-bit weight (2), read
  /// the gradient again for the norm (4) = 34. PyTorch's AdamW (foreach 92, fused 40, with
  /// clip_grad_norm_'s scaling): docs/cost_model.md#optimizer.
  double adam_step_bytes = 34.0;
  /// Bytes per logit element (s*b*V/t) live at the loss's peak, the start of the last stage's
  /// backward: Megatron's vocab-parallel cross-entropy casts the 16-bit logits to fp32 and
  /// computes softmax and its gradient in place (2 + 4 = 6); PyTorch's F.cross_entropy on
  /// logits.float() keeps the fp32 log-softmax output and builds two fp32 gradients (4 + 4 + 4).
  double loss_bytes_per_logit = 6.0;
  /// The same with TP > 1 where the stack runs a different, vocab-parallel loss (torchtitan's
  /// loss_parallel: 16); 0 = loss_bytes_per_logit.
  double loss_parallel_bytes_per_logit = 0.0;
  /// HBM bytes per logit element the loss's kernels move on the last stage, forward and
  /// backward (docs/cost_model.md#compute): Megatron's op-by-op cross-entropy 38 and 22, its
  /// jit-fused kernels (cross_entropy_loss_fusion) 22 and 6, Transformer Engine's Triton kernel
  /// (cross_entropy_fusion_impl te) 6 and 4, flash-attn's 2 and 4, PyTorch's F.cross_entropy on
  /// the fp32 cast 22 and 26.
  double loss_forward_bytes_per_logit = kCrossEntropyForwardBytesPerLogit;
  double loss_backward_bytes_per_logit = kCrossEntropyBackwardBytesPerLogit;
  /// Under sequence parallelism the column-parallel layers keep their all-gathered input for
  /// the weight gradient (DTensor ColwiseParallel: autograd saves what it multiplied) rather
  /// than the 1/t shard gathered again in backward (Megatron, Korthikanti 2022 §4.2.2).
  bool tp_keeps_gathered_inputs = false;
  /// Measured mean |error| of bench/accuracy for this stack, as a fraction: the band shown on
  /// step time. 0 = not measured.
  double measured_error = 0.0;
  /// The same over the stack's mixture-of-experts rows, used for MoE models; 0 = measured_error.
  double measured_error_moe = 0.0;

  [[nodiscard]] bool supports_zero(int zero, int pp) const;
  /// supports_zero, and ZeRO-0 only with DP alone where the stack says so
  /// (zero0_one_dimensional).
  [[nodiscard]] bool supports_zero(int zero, const ParallelConfig& config) const {
    if (zero == 0 && zero0_one_dimensional &&
        (config.tp > 1 || config.pp > 1 || config.cp > 1 || config.ep > 1)) {
      return false;
    }
    return supports_zero(zero, config.pp);
  }
  /// Whether the DP gradient reduction of this split overlaps backward.
  [[nodiscard]] bool overlaps_grad_reduce(const ParallelConfig& config) const {
    return dp_overlap_grad_reduce && (config.pp < 2 || dp_overlap_grad_reduce_with_pp) &&
           (!config.sequence_parallel || dp_overlap_grad_reduce_with_sp);
  }
  /// Bytes per logit at the loss's peak for a split of `tp` tensor-parallel ranks.
  [[nodiscard]] double loss_bytes_per_logit_at(int tp) const;
  /// ZeRO stages sharded per unit (ZeRO-3; ZeRO-2 where zero2_per_unit), the ones HSDP splits.
  [[nodiscard]] bool shards_per_unit(int zero) const {
    return zero >= 3 || (zero == 2 && zero2_per_unit);
  }
  /// Hybrid sharding for this ZeRO stage.
  [[nodiscard]] bool supports_hybrid_shard(int zero) const {
    return hybrid_shard && shards_per_unit(zero);
  }
  /// FP8 attention (training.fp8.attention): Transformer Engine's cuDNN fused attention has an
  /// FP8 path (DotProductAttention fp8_dpa, TransformerEngine@v2.4 attention backends);
  /// FlashAttention-2 through PyTorch SDPA, the Triton kernel and unfused attention have none.
  [[nodiscard]] bool runs_fp8_attention() const { return attention == AttentionKernel::cudnn; }
  /// Pipeline parallelism at all (some ZeRO stage runs with PP > 1).
  [[nodiscard]] bool pipelines() const { return zero_stages_with_pp != 0; }
  /// Gradient bytes in the reduction / in the buffer for a training dtype.
  [[nodiscard]] double reduce_bytes(Dtype dtype) const;
  /// The same for one split: zero_reduce_bytes where the ZeRO optimizer reduces (ZeRO >= 1,
  /// PP 1).
  [[nodiscard]] double reduce_bytes(Dtype dtype, const ParallelConfig& config) const;
  [[nodiscard]] double buffer_bytes(Dtype dtype) const;
  /// HBM bytes per accumulated gradient element of one micro-batch's accumulation pass
  /// (docs/cost_model.md#stacks): 0 for none; gradient + 2 x buffer for add; add_cast also
  /// writes and reads the cast temporary when the buffer's dtype is not the gradient's.
  /// The split's pass: grad_accumulation_without_pp's at PP 1, grad_accumulation's with PP.
  [[nodiscard]] double grad_accumulation_bytes(Dtype dtype, const ParallelConfig& config) const;
  /// HBM bytes per element of the word embedding's gradient each micro-batch: PyTorch's dense
  /// embedding backward zero-fills a (V/t) x h gradient (the weight dtype's width), and where
  /// the GEMMs fuse the accumulation the main-grad hook adds it (zeroes_grad_buffer). `tied`:
  /// the output layer shares the weight on this stage, so its fused wgrad returns a zeroed
  /// dummy gradient (zero_out_wgrad) that autograd sums with the embedding's before the hook.
  [[nodiscard]] double embedding_gradient_bytes(Dtype dtype, const ParallelConfig& config,
                                                bool tied = false) const;
  /// HBM bytes per gradient element of the reduce-scatter copy-in: read the gradient in the
  /// training dtype's width, write it in the reduce dtype (0 without `reduce_scatter_copy_in`).
  [[nodiscard]] double reduce_scatter_copy_in_bytes(Dtype dtype) const;
  /// Bytes per parameter FSDP1's flat-gradient cat moves each backward: read the views' 16-bit
  /// (fp32 under fp32 training) gradients, write the flat one (0 without `zero3_gradient_cat`).
  [[nodiscard]] double gradient_cat_bytes(Dtype dtype) const;
  [[nodiscard]] bool supports(Recompute recompute) const;
  /// Whether full recompute of `recomputed` of a chunk's `chunk_layers` layers (fewer than
  /// all) is one the stack can run and trident prices as it runs (PartialRecompute): any count
  /// for the block method; for every k-th block a k dividing the chunk, on a split whose
  /// stages all hold `chunk_layers` x VP layers (`even_stages`: torchtitan counts blocks per
  /// rank from 1, so a shorter stage would recompute fewer).
  [[nodiscard]] bool runs_partial_recompute(int chunk_layers, int recomputed,
                                            bool even_stages) const;
  [[nodiscard]] bool supports(CpKind kind) const {
    return (cp_kinds & (1u << static_cast<unsigned>(kind))) != 0;
  }
  [[nodiscard]] bool context_parallel() const { return cp_kinds != 0; }
  /// Keeps only `kind` of the context-parallel kinds (a pin); false, and nothing changed, when
  /// the stack does not run it.
  [[nodiscard]] bool keep_only(CpKind kind) {
    if (!supports(kind)) return false;
    cp_kinds = 1u << static_cast<unsigned>(kind);
    return true;
  }
  [[nodiscard]] bool supports(Fp8Recipe recipe) const;
  [[nodiscard]] bool runs_dtype(Dtype dtype) const {
    return (dtypes & (1u << static_cast<unsigned>(dtype))) != 0;
  }
  /// The FP8 recipes the stack runs, in kFp8Recipes order; empty without FP8.
  [[nodiscard]] std::vector<Fp8Recipe> fp8_recipes_run() const;
  /// The measured error that applies to `model` (MoE models: measured_error_moe when set).
  [[nodiscard]] double error_for(const Model& model) const;
  /// Whether the FP8 linears take the GPU's own layout rule (fp8_gemm_needs_transpose): Transformer
  /// Engine from v2.0 (fp8_saves_fp8_inputs and not fp8_tn_only); torchao's and TE 1.x's keep
  /// a transposed (column-major) copy on every GPU.
  [[nodiscard]] bool fp8_follows_gpu_layout() const { return fp8_saves_fp8_inputs && !fp8_tn_only; }
  /// Whether this split of `model` runs the combined 1F1B: ep_overlap where Megatron-Core runs
  /// it (combined_1f1b_runs, costmodel/ep_overlap.h).
  [[nodiscard]] bool runs_ep_overlap(const Model& model, const ParallelConfig& config) const;
  /// Whether a model with FP8 parameters has them gathered in 16 bits here instead: the stack
  /// casts before the all-gather only with more than one data-parallel shard
  /// (fp8_param_gather_needs_dp_shard; `shard_ranks`: ParallelConfig::shard_ranks()), and
  /// torchao (fp8_saves_fp8_inputs false) only under tensorwise scaling, not its rowwise
  /// recipe (blockwise).
  [[nodiscard]] bool gathers_fp8_params_in_16_bits(const Training& training, int shard_ranks) const;
};

[[nodiscard]] const char* to_string(CpKind kind);
/// "a2a" is all-to-all, "allgather" the all-gather rotater; anything else ("p2p") the ring:
/// callers pass a checked choice.
[[nodiscard]] inline CpKind cp_kind_of(std::string_view name) {
  if (name == "allgather") return CpKind::all_gather;
  return name == "a2a" ? CpKind::a2a : CpKind::p2p;
}

/// A stack file's text and the name its errors give it.
struct StackText {
  std::string text;
  std::string source;
  /// The file as the file system knows it (its resolved path), so that a cycle spelled two
  /// ways ("r.yaml" naming "../d/r.yaml") is seen as one; empty: `source`.
  std::string identity;
};

/// Reads the stack file a `base:` names (`name` as written in the file `from`, at `where`,
/// "FILE:LINE: base"): its text, or nullopt when `name` is not a file name (then it names a
/// preset). Throws InputError starting with `where` when the file cannot be read. The caller
/// owns the file system; the core only asks.
using StackFileReader = std::function<std::optional<StackText>(
    const std::string& name, const std::string& from, const std::string& where)>;

/// At most this many stack files chained by `base:` (a longer chain is refused as a likely cycle).
inline constexpr int kMaxStackBaseFiles = 8;

/// Parses a stack file (YAML/JSON); errors name SOURCE:LINE: KEY. `base: PRESET` takes every key
/// the file leaves out from a built-in stack; `base: FILE` from another stack file, read through
/// `reader` (none: only presets), chained at most kMaxStackBaseFiles deep, cycles refused.
[[nodiscard]] Stack load_stack(const std::string& text, const std::string& source,
                               const StackFileReader& reader = {},
                               const std::string& identity = "");
/// A built-in stack by name; throws InputError with "did you mean" otherwise.
[[nodiscard]] Stack stack_preset(const std::string& name);

/// Fused attention (cuDNN through Transformer Engine, FlashAttention 2) runs on compute
/// capability 8.0 and later: TE's nvte_get_fused_attn_backend requires sm_arch >= 80
/// (transformer_engine/common/fused_attn/fused_attn.cpp), FlashAttention 2 builds for 8.0+.
inline constexpr double kFusedAttentionMinCapability = 8.0;

/// Throws InputError naming the stack and the GPU when the stack's attention kernel does not
/// run there: a fused kernel on a GPU below kFusedAttentionMinCapability (a V100), or
/// FlashAttention's Triton kernel (`flash_triton`) without its measured curve on the GPU
/// (flash_triton_causal_curve), from which it is priced.
void check_stack_on_gpu(const Stack& stack, const Gpu& gpu);

/// A head shape wider than 128 (Q/K head dim, V head dim) that a stack may list under
/// `cudnn_blackwell_heads`; bit i of Stack::cudnn_blackwell_heads is kCudnnBlackwellHeads[i].
struct HeadShape {
  int qk = 0;
  int v = 0;
};
inline constexpr HeadShape kCudnnBlackwellHeads[] = {{192, 128}, {256, 256}};
/// cuDNN's fused attention trains heads up to this on any GPU it runs on, in multiples of 8
/// (fused_attn.cpp: "head_dim_qk % 8 == 0 && head_dim_v % 8 == 0").
inline constexpr int kCudnnNarrowHeadMax = 128;
inline constexpr int kCudnnHeadMultiple = 8;
/// Hopper (compute capability 9.x) trains heads up to 256 in cuDNN (9.5 and later); Ampere and
/// Ada only up to 128; Blackwell (10.0 and later) up to 128 and the stack's listed wider shapes.
inline constexpr double kCudnnHopperCapability = 9.0;
inline constexpr double kCudnnBlackwellCapability = 10.0;
inline constexpr int kCudnnHopperHeadMax = 256;
/// FlashAttention 2's heads (TE get_attention_backend @v2.2.1 L466-497): equal Q/K and V dims,
/// multiples of 8, up to 256, over 192 only on compute capability 8.0, 9.0, 10.0 and 12.0.
inline constexpr int kFlash2HeadMax = 256;
inline constexpr int kFlash2HeadMultiple = 8;
inline constexpr int kFlash2WideHeadFrom = 192;
inline constexpr double kFlash2WideHeadCapabilities[] = {8.0, 9.0, 10.0, 12.0};
/// cuDNN's FP8 attention: heads of exactly 128 on Hopper, up to 128 in multiples of 16 on
/// Blackwell (fused_attn.cpp's FP8 branch @v2.18 L258-283).
inline constexpr int kCudnnFp8HeadMultiple = 16;
/// FlashAttention's Triton kernel's widest head (mosaicml/llm-foundry@3903b0d8
/// llmfoundry/models/layers/flash_attn_triton.py L593: "assert d <= 128").
inline constexpr int kFlashTritonHeadMax = 128;

/// Whether cuDNN's fused attention trains heads of (qk, v) dims on `gpu` under `stack`: multiples
/// of 8 only; heads up to 128 anywhere; wider ones on Hopper up to 256, on Blackwell only the
/// stack's listed shapes, on Ampere/Ada none; an unknown compute capability (0) refuses nothing
/// (TransformerEngine transformer_engine/common/fused_attn/fused_attn.cpp
/// nvte_get_fused_attn_backend: "sm_arch_
/// >= 100 && (head_dim_qk > 128 || head_dim_v > 128)" refused @v2.2.1; 192/128 @v2.5 with cuDNN
/// 9.11, 256/256 @v2.18 with cuDNN 9.23; "<= 256 + Hopper + bprop" from cuDNN 9.5).
[[nodiscard]] bool cudnn_trains_heads(const Stack& stack, int qk, int v, const Gpu& gpu);

/// Whether FlashAttention 2 takes heads of (qk, v) dims on `gpu` (kFlash2HeadMax and the rest).
[[nodiscard]] bool flash2_takes_heads(int qk, int v, const Gpu& gpu);

/// The attention kernel that runs the model's heads on `gpu` under `stack`, as Transformer
/// Engine's DotProductAttention picks it (dot_product_attention/utils.py get_attention_backend
/// @v2.2.1): the stack's, except that `cudnn` where cuDNN does not train the heads
/// (cudnn_trains_heads) falls back to FlashAttention 2 (flash2_takes_heads: Nemotron-4 340B's
/// 192/192 on Blackwell) or else the unfused attention (MLA's 192/128, which FlashAttention does
/// not take). The estimate prices it and says so (Estimate::attention); the stack's other
/// kernels either run the heads or are refused (check_stack_for_model).
[[nodiscard]] AttentionKernel attention_run(const Stack& stack, const Model& model, const Gpu& gpu);

/// Throws InputError naming the stack's attention key when its FlashAttention kernel (flash,
/// flash_triton) takes none of the model's heads on the GPU (unequal heads such as MLA's
/// 192/128, wider than the kernel's, or not a multiple of 8): Transformer Engine then runs its
/// unfused attention and PyTorch's SDPA a kernel with no rate here; the refusal names the
/// kernels that do take them, as check_stack_on_gpu does for a V100.
void check_stack_for_model(const Stack& stack, const Model& model, const Gpu& gpu);

/// check_stack_on_gpu, check_stack_for_model and check_stack_for_dtype in one: whether the
/// stack as written runs the model on the GPU (before attention_run resolves its kernel).
void check_stack_runs(const Stack& stack, const Model& model, const Gpu& gpu);

/// Throws InputError when the stack's fused attention has no kernel for the run's dtype:
/// cuDNN fused attention and FlashAttention run 16-bit and FP8 only, so a tf32/fp32 run falls
/// back to another attention (Transformer Engine's unfused one) that the stack's rate is not.
void check_stack_for_dtype(const Stack& stack, Dtype dtype);

}  // namespace trident
