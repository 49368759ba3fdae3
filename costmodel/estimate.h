#pragma once
/// The cost model's answer for one configuration: step time with its breakdown, FLOPs, MFU,
/// memory on the peak rank.
#include "costmodel/calibration.h"
#include "costmodel/collective.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/pipeline.h"
#include "costmodel/placement.h"
#include "costmodel/stack.h"
#include "topology/cluster.h"

namespace trident {

/// Seconds per training step, by where they go. step_s = the sum of the critical-path terms.
struct TimeBreakdown {
  double forward_s = 0.0;  ///< forward compute of one GPU over all its micro-batches
  double backward_s = 0.0;
  double recompute_s = 0.0;  ///< extra forward work from activation recomputation
  double tp_comm_s = 0.0;    ///< exposed TP communication (on the critical path)
  double pp_comm_s = 0.0;    ///< exposed PP send/recv
  double dp_comm_s = 0.0;    ///< exposed DP communication (what backward cannot hide)
  double cp_comm_s = 0.0;    ///< exposed context-parallel K/V exchange (ring) or all-to-alls
  double ep_comm_s = 0.0;    ///< exposed MoE dispatch/combine all-to-alls
  double amax_comm_s = 0.0;  ///< FP8 delayed scaling's blocking amax all-reduces
  double bubble_s = 0.0;     ///< pipeline bubble
  double optimizer_s = 0.0;  ///< optimizer step (memory bound)
  /// Compute slowed while overlapped NCCL collectives hold SMs (each channel is a thread block
  /// that owns an SM): hidden communication time x channels / SMs.
  double overlap_contention_s = 0.0;
  double step_s = 0.0;
  [[nodiscard]] double compute_s() const { return forward_s + backward_s + recompute_s; }
  [[nodiscard]] double exposed_comm_s() const {
    return tp_comm_s + pp_comm_s + dp_comm_s + cp_comm_s + ep_comm_s + amax_comm_s;
  }
};

/// Bytes on the peak rank, term by term (docs/cost_model.md#memory).
/// allocated = states + activations + workspace + transient (what max_memory_allocated reads);
/// reserved = allocated + fragmentation (max_memory_reserved); total = reserved + CUDA context +
/// NCCL buffers (what the GPU holds, nvidia-smi).
struct MemoryBreakdown {
  double weights_bytes = 0.0;
  double gradients_bytes = 0.0;
  double optimizer_bytes = 0.0;
  /// Extra weight copies a precision recipe keeps (FP8's cast/transposed weights); 0 in 16-bit.
  double weight_copies_bytes = 0.0;
  double activations_bytes = 0.0;  ///< kept for backward, every micro-batch in flight
  double workspace_bytes = 0.0;    ///< cuBLAS workspace
  /// The pipeline's receive buffers, one per micro-batch, kept across steps (torch pipelining)
  double pp_buffers_bytes = 0.0;
  /// Stage outputs kept after their send (Stack::pp_keeps_outputs: until their backward, or
  /// every micro-batch's until the step ends): boundary activations, the last stage's logits
  double pp_outputs_bytes = 0.0;
  /// The last stage's deferred output-layer weight gradients (Stack::defer_output_wgrad): each
  /// deferred call's input and output gradient, held until the flush (allocated in the step)
  double deferred_wgrad_bytes = 0.0;
  /// Transients at the peak; the larger of the two moments counts (transient_bytes):
  double tp_gather_bytes = 0.0;  ///< the TP/SP-gathered layer input (both moments)
  /// moment 1: the layer's K/V gathered from every CP rank and its fp32 gradient buffers
  double cp_gather_bytes = 0.0;
  double recompute_working_bytes = 0.0;  ///< moment 1: the layer in backward, rebuilt
  /// moment 1: an unfused attention's scores beyond those kept (unfused_scores_working_bytes)
  double scores_working_bytes = 0.0;
  double layer_units_bytes = 0.0;  ///< moment 1: ZeRO-3 layers gathered, grads unsharded
  double loss_bytes = 0.0;         ///< moment 2 (last stage): logits and cross-entropy
  double output_unit_bytes = 0.0;  ///< moment 2: ZeRO-3 output layer gathered
  double transient_bytes = 0.0;
  double allocated_bytes = 0.0;
  /// ZeRO-3's last reduce-scatter input, alive through the next step (allocated)
  double reduce_scatter_kept_bytes = 0.0;
  /// caching allocator: reserved - allocated - stream_pool_bytes
  double fragmentation_bytes = 0.0;
  /// The weights and gradients are allocated and freed within the step (ZeRO-3 keeping them
  /// gathered over PP's micro-batches), so they count in the fragmentation's churn too.
  bool states_churn = false;
  /// ZeRO-3's side-stream pools: blocks cached on the all-gather and reduce-scatter streams,
  /// reserved but not reusable by the compute stream (side_stream_pool_bytes)
  double stream_pool_bytes = 0.0;
  double reserved_bytes = 0.0;
  double cuda_context_bytes = 0.0;
  double nccl_buffer_bytes = 0.0;
  /// Everything but the states and the activations (the summary views' "other").
  double other_bytes = 0.0;
  double total_bytes = 0.0;
  double capacity_bytes = 0.0;  ///< GPU memory minus the user's reserve
  /// What is allocated, the CUDA context and NCCL's buffers fit the capacity: the caching
  /// allocator frees its unsplit cached blocks and retries before it raises out-of-memory, so
  /// fragmentation alone does not stop a run (set_memory_verdict).
  bool fits = false;
  /// Fits, but not with the mean fragmentation: runs only if the allocator fragments less
  /// than kAllocatorFragmentation; ranked after every plan that fits with it.
  bool tight = false;
};

/// One dimension's traffic, for --explain and validate.
/// With sequence parallelism TP's `collective` is reduce_scatter and each call is a
/// reduce-scatter plus an all-gather of the same S; ZeRO-1/2 DP likewise (gradients
/// reduce-scattered, or all-reduced where a dense model's ZeRO-1 does: `collective` says
/// which; weights all-gathered).
struct CommDetail {
  Collective collective = Collective::all_reduce;
  double bytes_per_call = 0.0;  ///< S as nccl-tests counts it
  /// S of the all-gather half when the call is a reduce-scatter + all-gather of different
  /// sizes (ZeRO: fp32 gradients reduce-scattered, 16-bit weights gathered); 0 = same S.
  double gather_bytes_per_call = 0.0;
  double calls_per_step = 0.0;
  GroupLink link;
  double time_per_call_s = 0.0;
  /// ZeRO 1-3: the all-gather half of time_per_call_s (a call is a gradient reduction and a
  /// weight all-gather; ZeRO 1-2 gather once a step even where they reduce every micro-batch,
  /// ZeRO-3 per unit as unit_gathers_per_step says). 0 without ZeRO.
  double gather_s = 0.0;
  double total_s = 0.0;    ///< all calls, before overlap
  double exposed_s = 0.0;  ///< on the critical path
  /// Sharded data parallel (ZeRO-3/FSDP): one unit's weight all-gather and gradient
  /// reduce-scatter, and how many of each run per step (0 otherwise).
  double unit_gather_s = 0.0;
  double unit_scatter_s = 0.0;
  double unit_gathers_per_step = 0.0;
  double unit_scatters_per_step = 0.0;
  /// The stack's edge unit beside the layers (Stack::edge_unit: the embedding, or the root with
  /// the final norm and output layer): its parameters gathered (a TP shard), one gather and one
  /// reduce-scatter (HSDP's all-reduce included) and how many run a step; all exposed, in
  /// total_s and exposed_s. 0 where the stack has none.
  double edge_parameters = 0.0;
  double edge_gather_s = 0.0;
  double edge_scatter_s = 0.0;
  double edge_gathers_per_step = 0.0;
  double edge_scatters_per_step = 0.0;
  /// HSDP: after each unit's reduce-scatter, the all-reduce of its gradient shard across
  /// the replicas (S as nccl-tests counts it, its time, its group); one per reduce-scatter.
  double replicate_bytes_per_call = 0.0;
  double unit_replicate_s = 0.0;
  GroupLink replicate_link;
  /// TP: the all-gathers that undo the pipeline's scatter (Stack::pp_tp_gathers_per_micro_batch):
  /// one full activation's bytes, one call's time, calls per step; in total_s and exposed_s.
  double pipe_gather_bytes = 0.0;
  double pipe_gather_s = 0.0;
  double pipe_gathers_per_step = 0.0;
  /// DP: the later stages' parameter all-gathers on the fill's path (Stack::
  /// dp_param_gather_in_fill): one stage's gather as one call, how many lie on the path (pp - 1);
  /// in total_s and exposed_s.
  double fill_gather_s = 0.0;
  double fill_gathers_per_step = 0.0;
};

/// Which passes over Megatron's main-grad buffer a step runs (grad_buffer_passes): the zeroing,
/// the NaN check's norm, the 1/(DP x CP) scaling (a read and a write).
struct GradBufferPasses {
  bool zeroed = false;
  bool nan_checked = false;
  bool prescaled = false;
  /// Reads and writes of the whole buffer.
  [[nodiscard]] double count() const {
    return (zeroed ? 1.0 : 0.0) + (nan_checked ? 1.0 : 0.0) + (prescaled ? 2.0 : 0.0);
  }
};

/// The optimizer step's parts (TimeBreakdown::optimizer_s is their sum): the optimizer's own
/// update over the rank's shard, FP8's weight casts, and the stack's passes over its main-grad
/// buffer (`grad_passes`, their time grad_buffer_s).
struct OptimizerDetail {
  double update_s = 0.0;
  double fp8_weight_cast_s = 0.0;
  double grad_buffer_s = 0.0;
  GradBufferPasses grad_passes;
};

struct Estimate {
  /// The attention kernel priced: the stack's, or what Transformer Engine falls back to for
  /// heads cuDNN does not train on the GPU (attention_run).
  AttentionKernel attention = AttentionKernel::cudnn;
  TimeBreakdown time;
  /// The output layer's weight gradients deferred to the pipeline's flush (Stack::
  /// defer_output_wgrad): saved_s is off backward_s, exposed_s in it; all 0 when not deferred.
  DeferredOutputWgrad output_wgrad;
  OptimizerDetail optimizer;
  MemoryBreakdown memory;
  double model_flops = 0.0;         ///< per step, whole job, each useful FLOP once
  double hardware_flops = 0.0;      ///< per step, whole job, as executed (flops.h StepFlops)
  double model_flops_causal = 0.0;  ///< same, attention halved for the causal mask
  double model_tflops_per_gpu = 0.0;
  double hardware_tflops_per_gpu = 0.0;
  double mfu = 0.0;          ///< model FLOPs / (GPUs x dense peak x step time)
  double mfu_causal = 0.0;   ///< same with attention's causal half not counted
  double step_s_low = 0.0;   ///< step time minus the stack's measured error
  double step_s_high = 0.0;  ///< step time plus the stack's measured error
  double tokens_per_s = 0.0;
  double bubble_fraction = 0.0;  ///< bubble_s / step_s
  /// The bubble's (p-1)/(v*m) slots at this share of the bottleneck stage's time: the fill and
  /// drain cross the other stages (fill_drain_ratio); 1 when the stages are equal.
  double bubble_fill_ratio = 1.0;
  long long num_micro_batches = 0;
  /// PP's exposed time is the whole step's increase, fill and drain included (Megatron-Core's
  /// overlapped interleaved p2p, DeepSpeed's separate blocking calls), so the bubble does not
  /// scale it; false: Megatron's blocking pairs lengthen each micro-batch.
  bool pp_whole_step = false;
  CommDetail tp;
  CommDetail pp;
  CommDetail dp;  ///< over DP x CP when cp > 1; MoE: the non-expert parameters
  CommDetail cp;  ///< the ring's send-recv (p2p) or Ulysses' all-to-all (a2a), per step
  CommDetail ep;  ///< MoE dispatch + combine all-to-alls
  /// The all-to-alls run under the combined 1F1B (Stack::runs_ep_overlap): `ep` exposes what
  /// the other micro-batch's compute leaves (costmodel/ep_overlap.h).
  bool ep_overlapped = false;
  /// The TP collectives run through Transformer Engine's userbuffers beside the GEMMs (the
  /// stack's `tp_overlap: userbuffers` with sequence parallelism, the group inside one NVLink
  /// domain); false: NCCL's, as the stack's TP overlap leaves them.
  bool tp_userbuffers = false;
  CommDetail edp;   ///< MoE expert gradients over the expert-data-parallel group
  CommDetail amax;  ///< FP8 delayed scaling's amax all-reduces over TP x CP x DP (exposed)
  /// A tied embedding's gradient all-reduce between the first and the last stage (exposed;
  /// counted in time.dp_comm_s, the step's gradient synchronisation).
  CommDetail embedding_grads;
  CpKind cp_kind = CpKind::p2p;
  bool used_calibration = false;
  /// The model's FP8 parameters gathered and kept in 16 bits on this split
  /// (Stack::gathers_fp8_params_in_16_bits): priced so.
  bool fp8_params_gathered_16bit = false;
};

/// NCCL ring channels (one thread block, one SM each) a collective holds: 24 inside one NVLink
/// domain (nccl-tests#100, nccl#578: "Channel 23/24" on 8-GPU NVSwitch servers), 2 per NIC of
/// the server across the network (nccl#689: "DGX with 8 NICs ... would use 16 SMs"; nccl#520:
/// 4 NICs -> "Channel 00/08").
inline constexpr double kNcclChannelsInDomain = 24.0;
inline constexpr double kNcclChannelsPerNic = 2.0;

/// Headroom kept free and the software stack that runs the split (costmodel/stack.h). The
/// default stack is Megatron-Core's, as the `megatron-core` preset describes it.
struct EstimateOptions {
  /// Extra headroom kept free on each GPU; the CUDA context, NCCL buffers and the allocator's
  /// fragmentation are priced in MemoryBreakdown.
  double reserve_gib = 0.0;
  Stack stack;
};

/// Whether a plan is priced on a copy of the cluster whose GPU runs at the pace of the plan's
/// job (gpu_for_job): a job of one GPU at its own clock, a larger one at the slowest of its
/// GPUs where the GPU has a clock spread (search() resolves it once for its GPUs).
[[nodiscard]] bool prices_at_job_pace(const Cluster& cluster, const ParallelConfig& config);

/// Evaluates one configuration. Pure arithmetic; the caller guarantees the config is
/// consistent (tp*pp*dp GPUs, divisibility). `calibration` may be null. Throws InputError
/// when the stack's attention kernel has no rate on the GPU (check_stack_on_gpu).
[[nodiscard]] Estimate estimate(const Cluster& cluster, const Model& model,
                                const ParallelConfig& config, const Placement& placement,
                                const Calibration* calibration = nullptr,
                                const EstimateOptions& options = {});

}  // namespace trident
