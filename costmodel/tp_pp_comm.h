#pragma once
/// Tensor- and pipeline-parallel traffic of one micro-batch through a stage: the collectives
/// each layer issues, the send/recv at each stage boundary, and how much of TP's time the
/// stack's overlap hides behind the layer's GEMMs (docs/cost_model.md#communication).
#include "costmodel/calibration.h"
#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/precision.h"

namespace trident {

/// Transformer Engine userbuffers (TE module/base.py initialize_ub defaults): SMs of the
/// pipelined and bulk communication kernels, splits of the pipelined reduce-scatter; SM count
/// assumed when the GPU's is not known (H100's).
inline constexpr double kTpOverlapCommSms = 16.0;
inline constexpr double kTpOverlapPipelineSplits = 4.0;
inline constexpr double kTpOverlapDefaultSms = 132.0;

/// Bytes of one TP all-gather of a `message_bytes` activation message: in the gather's dtype
/// (FP8 where the run casts before it gathers, costmodel/precision.h).
[[nodiscard]] double tp_gather_bytes(double message_bytes, const Precision& precision);

/// TP: per layer 2 all-reduces forward and 2 backward of b*s*h activations (with sequence
/// parallelism each becomes a reduce-scatter + all-gather); full recompute repeats the
/// forward ones on the layers it recomputes. Counts are for one micro-batch through the stage.
[[nodiscard]] CommDetail tp_comm(const Model& model, const ParallelConfig& config,
                                 const GroupLink& link, double layers, bool keeps_gathered_inputs,
                                 const Calibration* calibration);

/// PP: one send/recv of the b*s*h activation per micro-batch per boundary forward and one
/// backward, v times with interleaving; each TP rank sends 1/t of it with sequence parallelism
/// or where the stack scatters and gathers it (`scatter_gather`), the whole of it otherwise.
/// A stack whose pipe model passes the causal mask along (DeepSpeed) adds its s*s half-precision
/// copy to every forward transfer: bytes and time are then the mean of a forward's and a
/// backward's.
[[nodiscard]] CommDetail pp_comm(const Model& model, const ParallelConfig& config,
                                 const GroupLink& link, bool sends_mask, bool scatter_gather,
                                 const Calibration* calibration);

/// Undoing the pipeline's scatter: where each TP rank sends 1/t of the activation (no sequence
/// parallelism), a middle stage all-gathers the whole b*s*h tensor over TP, blocking,
/// `gathers_per_micro_batch` times a micro-batch (Megatron-LM 2021 gather_split_1d_tensor: 2;
/// DeepSpeed PartitionedTensor.full(): 3), `micro_batches` times a step: set in `tp`'s
/// pipe_gather_* and added to its total and exposed time.
void add_pipe_gathers(CommDetail& tp, const Model& local, const Training& training,
                      const ParallelConfig& config, int gathers_per_micro_batch,
                      double micro_batches, const GroupLink& link, const Calibration* calibration);

/// Exposed TP time of one layer and one micro-batch with --tp-comm-overlap (sequence
/// parallel), Transformer Engine's default methods (module/base.py initialize_ub):
/// ring exchange over the copy engines (1 SM) for qkv/fc1 forward and proj/fc2 input
/// gradient; pipeline (16 SMs, 4 splits) for the proj/fc2 forward reduce-scatter; bulk
/// (16 SMs) for the qkv/fc1 input re-gather (behind dgrad; none where the stack keeps the
/// gathered input) and gradient reduce-scatter (behind wgrad). Full recompute repeats the
/// forward overlaps.
[[nodiscard]] double tp_overlap_layer_s(const LayerTime& layer, double gather_s, double scatter_s,
                                        int sm_count, bool full_recompute,
                                        bool keeps_gathered_inputs);

/// Exposed TP time of one layer and one micro-batch with Megatron's backward overlap (no
/// userbuffers): forward collectives exposed; in backward the input-gradient all-reduce of
/// the column-parallel layers (QKV, FFN up) runs behind their weight-gradient GEMM
/// (LinearWithGradAccumulationAndAsyncCommunication); with sequence parallelism the input
/// re-gather runs behind the input-gradient GEMM (none where the stack keeps the gathered
/// input) and the reduce-scatter behind wgrad.
[[nodiscard]] double tp_backward_overlap_layer_s(const LayerTime& layer, const CommDetail& tp,
                                                 double gather_s, double scatter_s,
                                                 bool sequence_parallel, bool full_recompute,
                                                 bool keeps_gathered_inputs);

}  // namespace trident
