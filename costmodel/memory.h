#pragma once
/// Memory on the peak rank as the allocator sees it: model states (weights, gradients,
/// optimizer states under ZeRO 0-3), activations with the micro-batches in flight of 1F1B /
/// interleaved 1F1B (Korthikanti et al. 2022), the transients at the peak (the layer being
/// recomputed, the loss over the vocabulary, ZeRO-3's gathered units), the caching allocator's
/// fragmentation, and what lives outside it (CUDA context, NCCL buffers).
/// Derivation and sources: docs/cost_model.md#memory.
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/stack.h"
#include "topology/gpu.h"

namespace trident {

struct MemoryBreakdown;

/// Mixed-precision training with Megatron-LM's fp32 gradient buffer: 16-bit weights (2),
/// fp32 main gradients (4); Adam keeps fp32 master weights, momentum and variance (12), SGD
/// fp32 master weights and momentum (8).
inline constexpr double kGradientBytesPerParameter = 4.0;
inline constexpr double kAdamStateBytesPerParameter = 12.0;
inline constexpr double kSgdStateBytesPerParameter = 8.0;

/// CUDA context of one process with lazy module loading (PyTorch's default since 1.13):
/// 287,047,680 bytes measured in pytorch/pytorch#86509 (666,632,192 loading eagerly).
inline constexpr double kCudaContextBytes = 287047680.0;
/// cuBLAS workspace per process: 32 MiB on Hopper and later, 4 MiB before (Transformer
/// Engine pytorch/cpp_extensions/gemm.py get_cublas_workspace_size_bytes @d0067d0).
inline constexpr double kCublasWorkspaceHopperBytes = 33554432.0;
inline constexpr double kCublasWorkspaceBytes = 4194304.0;

/// NCCL buffers per channel and connection, one per protocol (NVIDIA/nccl@5067397
/// src/init.cc DEFAULT_*BUFFSIZE, src/include/device.h): LL 8 lines x 512 threads x 8 steps x
/// 16 bytes, LL128 120 elements x 640 threads x 8 steps x 8 bytes, Simple NCCL_BUFFSIZE 4 MiB.
inline constexpr double kNcclLlBufferBytes = 8.0 * 512.0 * 8.0 * 16.0;      // 524,288
inline constexpr double kNcclLl128BufferBytes = 120.0 * 640.0 * 8.0 * 8.0;  // 4,915,200
inline constexpr double kNcclSimpleBufferBytes = 4194304.0;                 // 4 MiB
/// Point-to-point (PP send/recv): NCCL_STEPS 8 chunks of NCCL_P2P_NVL_CHUNKSIZE 512 KiB over
/// NVLink, NCCL_P2P_NET_CHUNKSIZE 128 KiB over the network (src/init.cc), on 2 channels per
/// peer (NCCL_NCHANNELS_PER_NET_PEER's documented default).
inline constexpr double kNcclSteps = 8.0;
inline constexpr double kNcclP2pNvlinkChunkBytes = 524288.0;
inline constexpr double kNcclP2pNetChunkBytes = 131072.0;
inline constexpr double kNcclP2pChannelsPerPeer = 2.0;

/// PyTorch caching allocator fragmentation, (reserved - allocated) / reserved: 15% on average
/// over eight LLMs on A100-80GB (Guo et al., GMLake, ASPLOS 2024, arXiv 2401.08156: what
/// virtual-memory stitching removes, "15% (up to 33%)").
inline constexpr double kAllocatorFragmentation = 0.15;

/// Activation bytes one layer keeps for one micro-batch on one GPU (16-bit activations,
/// 1-byte dropout masks where the model has dropout). Reduces to Korthikanti's
/// s*b*h*(10 + 24/t + 5*a*s/(h*t)) for f = 4h, k = a, dropout, no sequence parallelism,
/// unfused attention, no recompute. `fp8_inputs`: the linear layers keep their inputs as the
/// FP8 copy cast for the GEMM (Transformer Engine), 1 byte instead of 2. `gathered_inputs`:
/// under sequence parallelism the QKV and FFN inputs are kept as the all-gathered tensor
/// (DTensor's ColwiseParallel saves what it multiplied) rather than the 1/t shard.
/// `element_bytes`: the width of a saved activation element, 2 (16-bit training; FP8 keeps
/// them 16-bit) or 4 (tf32/fp32: Precision::activation_bytes); dropout masks stay 1 byte and
/// fused attention's log-sum-exp 4.
/// `softmax`: whose unfused attention keeps the scores (unfused_score_bytes: 2 bytes an element
/// without dropout, 5 with, under the fused softmax).
[[nodiscard]] double layer_activation_bytes(
    const Model& model, const ParallelConfig& config, bool fused_attention,
    SelectiveKind selective = SelectiveKind::attention, bool fp8_inputs = false,
    bool gathered_inputs = false, double element_bytes = 2.0,
    UnfusedSoftmax softmax = UnfusedSoftmax::transformer_engine);

/// The working set of the layer whose backward runs under recomputation: everything the layer
/// would keep without recompute that it did not keep (its activations are rebuilt and live
/// together for its backward). 0 without recompute.
[[nodiscard]] double recompute_working_bytes(
    const Model& model, const ParallelConfig& config, bool fused_attention, SelectiveKind selective,
    bool fp8_inputs = false, bool gathered_inputs = false, double element_bytes = 2.0,
    UnfusedSoftmax softmax = UnfusedSoftmax::transformer_engine);

/// An unfused attention's scores alive at once beyond what the layer keeps, at its forward's
/// or its backward's peak (unfused_score_bytes: peak - kept, one layer, one micro-batch, on one
/// GPU): the raw scores beside the softmax output, fp32 copies where PyTorch's softmax runs in
/// fp32. 0 under fused attention.
[[nodiscard]] double unfused_scores_working_bytes(const Model& model, const ParallelConfig& config,
                                                  bool fused_attention, double element_bytes,
                                                  UnfusedSoftmax softmax);

/// The loss at the start of the last stage's backward: `bytes_per_logit` (the stack's) over
/// the micro-batch's s*b*V/t logits.
[[nodiscard]] double loss_transient_bytes(const Model& model, const ParallelConfig& config,
                                          double bytes_per_logit);

/// cuBLAS workspace of one process on `gpu` (allocated through the caching allocator); Hopper
/// and later, the GPUs with FP8 tensor cores, take the 32 MiB one.
[[nodiscard]] double cublas_workspace_bytes(const Gpu& gpu);

/// NCCL buffers of one ring communicator: per channel one connection's LL, LL128 and Simple
/// buffers.
[[nodiscard]] double nccl_ring_buffer_bytes(double channels);
/// NCCL buffers of PP send/recv with `peers` neighbouring stages.
[[nodiscard]] double nccl_p2p_buffer_bytes(int peers, bool over_network);

/// Communicators a plan creates on one GPU: the ring channels of its TP and DP groups
/// (0 = no group), its PP neighbours and whether they are across the network.
struct NcclGroups {
  double tp_channels = 0.0;
  double dp_channels = 0.0;
  int pp_peers = 0;
  bool pp_over_network = true;
};
[[nodiscard]] double nccl_buffer_bytes(const NcclGroups& groups);

/// Bytes the caching allocator reserves beyond `churning_bytes` (what is allocated and freed
/// within a step: activations, transients, stage outputs kept) at kAllocatorFragmentation.
[[nodiscard]] double allocator_fragmentation_bytes(double churning_bytes);

/// Adds the FP8 weight copies (parameters x MemoryOptions::weight_copy_bytes_per_parameter)
/// to `memory`. FP8 parameters on a GPU that keeps one FP8 copy (Blackwell) make that amount
/// negative: the copy replaces the 16-bit weights, so it comes off the weights and the copy
/// term never goes below 0.
void add_weight_copies(MemoryBreakdown& memory, double copies_bytes);

/// What must fit before any fragmentation: allocated + CUDA context + NCCL buffers.
[[nodiscard]] double unfragmented_bytes(const MemoryBreakdown& memory);

/// Fragmentation a fitting plan can absorb: capacity - unfragmented_bytes.
[[nodiscard]] double fragmentation_room_bytes(const MemoryBreakdown& memory);

/// Sets `fits` and `tight` from the breakdown's sums: fits when unfragmented_bytes <= capacity
/// (the allocator frees its cached blocks and retries before it raises out-of-memory:
/// pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, its header comment) and the stages this
/// breakdown does not hold fit too (`other_stages_fit`); tight when it fits but total (with the
/// mean fragmentation) does not.
void set_memory_verdict(MemoryBreakdown& memory, bool other_stages_fit = true);

/// Micro-batches whose activations pipeline rank `rank` holds at its peak, in units of one
/// micro-batch through its layers: min(p - r, m) for 1F1B; interleaved, the warm-up's
/// 2(p - r - 1) + (v - 1)p + 1 model-chunk passes / v (rank 0: v*p + p - 1 passes,
/// Korthikanti's p * (1 + (p-1)/(p*v)) micro-batches), never more than the m*v the step has.
[[nodiscard]] double in_flight_micro_batches(int pp, int virtual_stages, long long micro_batches,
                                             int rank = 0);

/// Layers' activations the combined 1F1B (MemoryOptions::combined_1f1b) holds beyond the
/// micro-batches in flight, on a stage of `stage_layers`: the paired layer (its forward saves
/// before the other micro-batch's backward frees), and with interleaving the warm-up's one more
/// forward, a chunk of stage_layers / v (schedules.py L939-943 @core_v0.19.0).
[[nodiscard]] double combined_1f1b_extra_layers(const ParallelConfig& config, double stage_layers);

/// Parameters of the stage's linear layers on one GPU (attention and FFN weights after the TP
/// split; no embedding, output layer or norms): those FP8 keeps cast copies of.
[[nodiscard]] double stage_linear_parameters(const Model& model, const ParallelConfig& config,
                                             bool first_stage, bool last_stage);

/// The first stage's embedding on one GPU: the token embedding ÷ t (vocab-parallel) and the
/// learned positions (replicated).
[[nodiscard]] double embedding_parameters(const Model& model, const ParallelConfig& config);

/// Parameters one GPU of a stage holds (after the TP split): its layers, plus the embedding
/// on the first stage and the output layer (or the tied copy) and final norm on the last.
[[nodiscard]] double stage_parameters(const Model& model, const ParallelConfig& config,
                                      bool first_stage, bool last_stage);

struct MemoryOptions {
  double reserve_gib = 0.0;  ///< extra headroom the user keeps free on each GPU
  /// Output-layer calls whose weight gradient the last stage defers to the flush, each holding
  /// its input and its output gradient until then (deferred_output_wgrad_calls; 0: none).
  double deferred_output_wgrad_calls = 0.0;
  bool fused_attention = true;
  UnfusedSoftmax unfused_softmax = UnfusedSoftmax::transformer_engine;  ///< Stack::unfused_softmax
  double grad_buffer_bytes = kGradientBytesPerParameter;  ///< the stack's gradient dtype
  /// Bytes per parameter of the 16-bit (fp32: 4) weights held for compute; FP8's cached copies
  /// are weight_copy_bytes_per_parameter (costmodel/precision.h says which).
  double weight_bytes = 2.0;
  /// Bytes of a saved activation element (Precision::activation_bytes): 2, or 4 under
  /// tf32/fp32 training, for activations, stage boundaries and the TP-gathered input.
  double activation_bytes = 2.0;
  /// The weights held for compute are fp32 (tf32/fp32 training): they are the optimizer's
  /// master copy, which `adam_state_bytes` then does not hold again (state_bytes_per_parameter).
  bool weights_are_master = false;
  /// ZeRO 1 or more keeps its own fp32 copy of the rank's partition even of fp32 weights
  /// (DeepSpeed: Stack::zero_clones_fp32_partition).
  bool zero_clones_fp32_partition = false;
  int prefetch_units = 1;              ///< ZeRO-3 units gathered ahead of the one computing
  bool zero3_keeps_gathered = false;   ///< ZeRO-3 with PP keeps weights and gradients whole
  bool zero3_fp32_shard_only = false;  ///< ZeRO-3 keeps no 16-bit weights, only the fp32 shard
  /// Bytes per linear-layer parameter of the weights ZeRO-3 gathers when they are gathered in
  /// FP8 and kept so (torchao's float8 all-gather under FSDP2: the unsharded parameter is the
  /// gathered Float8Tensor, no 16-bit copy); 0: gathered as `weight_bytes`.
  double fp8_gathered_linear_weight_bytes = 0.0;
  SelectiveKind selective = SelectiveKind::attention;
  double loss_bytes_per_logit = 6.0;  ///< the stack's cross-entropy (Stack::loss_bytes_per_logit)
  double adam_state_bytes = kAdamStateBytesPerParameter;  ///< the stack's Adam state dtypes
  /// Extra weight bytes per parameter a precision recipe keeps beside the 16-bit weights (the
  /// FP8 recipe's transposed/cast copies); 0 for BF16/FP16. Filled by the precision recipe.
  double weight_copy_bytes_per_parameter = 0.0;
  /// The linear layers keep FP8 copies of their inputs for backward (TE under an FP8 recipe).
  bool fp8_saved_inputs = false;
  /// Column-parallel layers keep their all-gathered input under sequence parallelism
  /// (Stack::tp_keeps_gathered_inputs): the QKV and FFN inputs and the output layer's.
  bool gathered_inputs = false;
  /// Context parallelism by the all-gather rotater: what one layer's attention backward holds
  /// (cp_allgather_working_bytes; 0 otherwise).
  double cp_gathered_kv_bytes = 0.0;
  /// ZeRO-3's collective buffers on side streams (Stack::zero3_side_stream_pools).
  bool zero3_side_stream_pools = false;
  /// Under PP, the last unit's reduce-scatter input outlives the step
  /// (Stack::pp_keeps_last_reduce_scatter_input).
  bool pp_keeps_last_reduce_scatter_input = false;
  /// The pipeline's receive buffers per micro-batch (Stack::pp_recv_buffers_per_micro_batch).
  bool pp_recv_buffers_per_micro_batch = false;
  /// Megatron-Core's combined 1F1B (Stack::runs_ep_overlap): a stage holds
  /// combined_1f1b_extra_layers more than its micro-batches in flight.
  bool combined_1f1b = false;
  /// Stage outputs kept after their send (Stack::pp_keeps_outputs: none|in_flight|last|all).
  PpKeptOutputs pp_keeps_outputs = PpKeptOutputs::none;
  NcclGroups nccl;
};

/// torch.distributed.pipelining's receive buffers on one GPU of a pipeline rank holding
/// `chunks` model chunks (v): one per micro-batch for each chunk's input (not the pipeline's
/// first chunk) and for each chunk's output gradient (not the pipeline's last chunk), allocated at
/// the first step and kept. The input buffers of the micro-batches in flight are the first layer's
/// kept input already (counted with the activations): `in_flight` of them per chunk are not extra.
/// `boundary_bytes`: one micro-batch's stage-boundary activation on one GPU.
[[nodiscard]] double pp_recv_buffer_bytes(double boundary_bytes, int chunks,
                                          long long micro_batches, double in_flight,
                                          bool first_rank, bool last_rank);

/// The last stage's output of one micro-batch on one GPU: its 16-bit logits, b*s*V/t (the
/// output layer is column-parallel over the vocabulary).
[[nodiscard]] double micro_batch_logit_bytes(const Model& model, const ParallelConfig& config,
                                             double element_bytes = 2.0);
/// Optimizer-state bytes per parameter before ZeRO sharding: the stack's Adam state (or SGD's
/// 8), less the fp32 master copy where the fp32 weights are that master (the layers' states,
/// state_bytes_per_parameter, and the routed experts', moe.cpp, alike).
[[nodiscard]] double optimizer_state_bytes(const Model& model, const ParallelConfig& config,
                                           const MemoryOptions& options);

/// Stage outputs kept after their send, on one GPU of a pipeline rank of `chunks` chunks: the
/// boundary activation of each chunk but the pipeline's last, for the `in_flight` micro-batches
/// (in_flight, last) or for all of them (all), and on the last rank the logits (`logit_bytes` a
/// micro-batch) of the micro-batch in its backward (in_flight) or of every one (last, all).
/// The stacks that keep outputs run PyTorch's losses, whose transient (loss_bytes_per_logit)
/// leaves out the 16-bit logits: no micro-batch's logits are counted twice.
[[nodiscard]] double pp_kept_output_bytes(PpKeptOutputs kept, double boundary_bytes,
                                          double logit_bytes, int chunks, long long micro_batches,
                                          double in_flight, bool last_rank);

/// The share of a stage's unsharded gradients alive at its peak when ZeRO-3 with PP keeps them
/// until each model chunk's last backward (MemoryOptions::zero3_keeps_gathered): interleaved
/// with a single round of micro-batches (m < 2p) runs every backward of a chunk before any of
/// the next, last chunk first (PyTorch ScheduleInterleaved1F1B backward_stage_index: groups of
/// microbatches_per_round per chunk, torch/distributed/pipelining/schedules.py), and a chunk's
/// last backward reduce-scatters and frees them (stage.py backward_maybe_with_nosync): one
/// chunk's, 1/v. Otherwise 1.
[[nodiscard]] double kept_gradient_share(const ParallelConfig& config, const MemoryOptions& options,
                                         long long micro_batches);

/// What ZeRO-3's side streams keep reserved beside the compute stream's peak
/// (MemoryOptions::zero3_side_stream_pools; FSDP2): the flat all-gather outputs of the units
/// gathered at once (1 + prefetch_units: the one computing and those prefetched, in the gather
/// dtype) cached on the all-gather copy-in stream, and, where ZeRO-3 with PP keeps the
/// unsharded gradients until the step's end, the sharded gradients (`stage_params` x the
/// gradient dtype / shard ranks) the last step's reduce-scatters left cached on the
/// reduce-scatter stream. The caching allocator reuses a freed block only on its own stream
/// (c10/cuda/CUDACachingAllocator.cpp); the blocks are free, so an out-of-memory retry releases
/// them (not counted against the fit). 0 without ZeRO-3 sharding or without side-stream pools.
[[nodiscard]] double side_stream_pool_bytes(const Model& model, const ParallelConfig& config,
                                            const MemoryOptions& options, double stage_params);

/// The last unit's fp32 reduce-scatter input that ZeRO-3 with PP holds through the next step
/// (MemoryOptions::pp_keeps_last_reduce_scatter_input): one layer's unsharded gradients.
[[nodiscard]] double kept_reduce_scatter_input_bytes(const Model& model,
                                                     const ParallelConfig& config,
                                                     const MemoryOptions& options);

/// What a stage holds that the dense view leaves out (a MoE stage's experts), added to each
/// stage before the stages are compared: `first` / `last` say which (both: one stage).
class StageAddition {
 public:
  virtual void add(MemoryBreakdown& stage, bool first, bool last) const = 0;
  /// The stage's own per-GPU dense view where it differs from peak_memory's `model` (a
  /// dense-first MoE model's first stage, whose dense FFNs the pace-setting stage's view
  /// prices at the shared experts' width); nullptr: `model`.
  [[nodiscard]] virtual const Model* stage_view(bool /*first*/, bool /*last*/) const {
    return nullptr;
  }

 protected:
  StageAddition() = default;
  ~StageAddition() = default;
  StageAddition(const StageAddition&) = default;
  StageAddition& operator=(const StageAddition&) = default;
};

/// Memory of the peak rank (the largest of the first, a middle and the last pipeline stage),
/// each stage with `addition`'s bytes where given.
[[nodiscard]] MemoryBreakdown peak_memory(const Gpu& gpu, const Model& model,
                                          const ParallelConfig& config,
                                          const MemoryOptions& options,
                                          const StageAddition* addition = nullptr);

}  // namespace trident
