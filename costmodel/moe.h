#pragma once
/// Mixture of experts with expert parallelism (Megatron-Core's alltoall token dispatcher,
/// expert TP 1): per MoE layer each GPU routes its tokens (b x s / (cp x tp) with sequence
/// parallelism) to top_k of the experts, dispatches them by all-to-all over the EP group,
/// runs its experts / ep local experts as one grouped GEMM, and combines the outputs back by
/// a second all-to-all; backward the same two. Derivation and sources:
/// docs/cost_model.md#moe.
#include "costmodel/calibration.h"
#include "costmodel/compute.h"
#include "costmodel/estimate.h"
#include "costmodel/memory.h"
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"

namespace trident {

/// Share of the layers that are MoE layers (0 for a dense model).
[[nodiscard]] double moe_fraction(const Model& model);

/// Share of MoE layers on the pipeline stage that sets the pace: of the stages holding the
/// most layers (stage_layers: first, middle stages in order, longer ones first, last), the
/// one with the most MoE layers. Dense-first models (DeepSeek's first_k_dense_replace) put
/// their dense layers on the first stage, so a middle stage runs MoE layers only: DeepSeek-V3
/// over 16 stages is 3 | 4 x 14 | 2 layers, the 3 dense ones on the first (NeMo's
/// pretrain_deepseek_v3.py layout), and its slowest stage is 4 MoE layers, not 4 x 58/61.
/// moe_fraction(model) with one stage.
[[nodiscard]] double stage_moe_fraction(const Model& model, const ParallelConfig& config);

/// The model with each layer's FFN replaced by what stays dense (replicated over EP, split by
/// TP) on a stage whose MoE share is `moe_share`: the average per layer of the dense layers'
/// FFN and the MoE layers' shared experts. A dense model (no `moe`): the cost model's dense
/// machinery prices it; routed experts (and the routers, h x experts per MoE layer, left out
/// of it) come on top.
[[nodiscard]] Model moe_dense_view(const Model& model, double moe_share);

/// The model with each layer's FFN the average active FFN (dense FFN, or top_k + shared
/// experts): its FLOPs are the MoE model's FLOPs counted on active parameters.
[[nodiscard]] Model moe_active_view(const Model& model);

/// Tokens one GPU routes per micro-batch: b x seq_len / tp (`model` is the context-parallel
/// view, so seq_len is already the local chunk; MoE with TP runs sequence parallel).
[[nodiscard]] double moe_tokens_per_gpu(const Model& model, const ParallelConfig& config);

/// Share of the layers of the stage with the most layers that full recompute repeats: the
/// MoE layers' all-to-alls, expert activations and shared-expert overlap follow it.
[[nodiscard]] double stage_recomputed_share(const Model& model, const ParallelConfig& config);

/// Busiest rank's expert tokens over the mean: the model's imbalance, capped by its capacity
/// factor when tokens are dropped.
[[nodiscard]] double moe_load_factor(const MoeSpec& moe);

/// The grouped GEMMs of one GPU's local experts for one micro-batch: experts / ep GEMMs of
/// m = tokens x top_k x ep / experts (x load factor) rows each.
struct ExpertGemms {
  GemmShape up;      ///< [m x (1|2) f_e x h], batch experts / ep
  GemmShape down;    ///< [m x h x f_e], batch experts / ep
  GemmShape router;  ///< [tokens x experts x h]
};
[[nodiscard]] ExpertGemms expert_gemms(const Model& model, const ParallelConfig& config);

/// HBM bytes of sorting one micro-batch's `rows` received rows by local expert and back, one
/// MoE layer, forward (the same again backward: each copy's gradient is a copy). Megatron-Core's
/// alltoall dispatcher receives them grouped by source rank and, when a GPU holds more than
/// one expert, copies them into expert order before the grouped GEMM ("Permutation 2") and back
/// after it ("Unpermutation 2"): a transposed .contiguous() when padded to capacity, else
/// sort_chunks_by_idxs (token_dispatcher.py L546-569, L597-616 @core_v0.12.0). Each reads and
/// writes every routed row of h once: 2 x 4 bytes per element; 0 with one expert per GPU.
[[nodiscard]] double local_expert_sort_bytes(const Model& model, const ParallelConfig& config,
                                             double rows);

/// HBM bytes of one MoE layer's token permutation (the rows into expert order before the
/// dispatch), one micro-batch, forward: read and write every row of h in 16 bits (4 bytes per
/// element), fused or not (index_select reads and writes the same rows).
[[nodiscard]] double permute_bytes(const Model& model, double rows);
/// Its backward: fused (TE's fused permute) twice the forward's bytes; unfused, index_select's
/// gradient is a zero-filled token tensor (2 per token's element: rows / top_k) that
/// index_add_ sums the rows' gradients into (read the row 2, read and write the output 2 + 2):
/// 6 + 2/top_k per row element (PyTorch index_select_backward: zeros().index_add_()).
[[nodiscard]] double permute_backward_bytes(const Model& model, double rows, bool fused);

/// HBM bytes of one MoE layer's unpermutation of its `rows` routed rows back to token order,
/// one micro-batch: `fused` (Megatron-Core --moe-permute-fusion: TE's fused_unpermute) reads
/// and writes each row once, 4 bytes per element forward, twice that backward. Unfused
/// (moe_utils.py unpermute L330-362 @core_r0.12.0): the rows times their probabilities (read 2,
/// write 2), a zero-filled output (2 per token's element: rows / top_k), scatter_add_ (read the
/// row 2, read and write the output 2 + 2): 10 + 2/top_k per row element forward; backward the
/// scatter's gather (read 2, write 2) and the product's gradients for the rows (read 2, write 2)
/// and for the probabilities (read the gradient and the rows, 2 + 2): 12.
[[nodiscard]] double unpermute_bytes(const Model& model, double rows, bool fused);
[[nodiscard]] double unpermute_backward_bytes(const Model& model, double rows, bool fused);

/// Routed experts of one MoE layer, one micro-batch, one GPU: grouped GEMMs, router, the
/// expert activation, the token permutation, the sort by local expert and, under FP8, the
/// expert GEMMs' input and gradient casts (memory bound). `saves_fp8_inputs`: the stack's
/// (Stack::fp8_saves_fp8_inputs); `permute_fused`: Stack::moe_permute_fusion; `fp8_gpu_layout`:
/// the FP8 copies follow the GPU's layout rule (Stack::fp8_follows_gpu_layout);
/// `fp8_padding_copies`: under FP8 the routed rows are copied into and out of FP8's padded
/// layout (Stack::moe_fp8_padding_copies behind the all-to-all dispatcher; fp8_padding_bytes).
[[nodiscard]] LayerTime routed_expert_time(const Gpu& gpu, const Model& model,
                                           const ParallelConfig& config,
                                           const Calibration* calibration, bool saves_fp8_inputs,
                                           bool permute_fused, bool fp8_gpu_layout,
                                           bool fp8_padding_copies);

/// HBM bytes of Megatron-Core's FP8 padding copies a pass (forward; backward the same): the
/// permuted rows padded before the experts (read 2, write 2 per element of h) and the experts'
/// output unpadded after them (read 2, write 2): 8 per routed row element.
[[nodiscard]] double fp8_padding_bytes(const Model& model, double rows);

/// EP all-to-alls of one micro-batch through `moe_layers` MoE layers: dispatch and combine
/// forward and backward (forward again under full recompute), S = tokens x top_k x h x dtype
/// bytes each (nccl-tests' per-rank buffer; (ep - 1)/ep of it leaves the GPU).
/// Under MoeDispatcher::hybridep each call is hybrid_ep_exchange_s's instead.
[[nodiscard]] CommDetail ep_comm(const Model& model, const ParallelConfig& config,
                                 const GroupLink& link, double moe_layers,
                                 const Calibration* calibration,
                                 MoeDispatcher dispatcher = MoeDispatcher::alltoall);

/// Probability that one token's top_k experts (uniform, distinct) include one of the
/// `experts_in_group` experts a group of ranks holds: 1 - C(E - g, k) / C(E, k).
[[nodiscard]] double token_reaches_share(double experts, double top_k, double experts_in_group);

/// HybridEP's dispatch or combine (DeepEP's hybrid-ep branch, Megatron-Core's flex dispatcher):
/// a token goes once to each NVLink domain holding one of its experts, over RDMA to the peer GPU
/// of that domain, which forwards it over NVLink once to each rank of its domain that needs it;
/// inside a domain once per destination rank. Per GPU: off-domain T·h·b·(D - 1)·p_domain at the
/// measured RDMA fraction of the NIC (hybrid_ep_network_fraction), in-domain T·h·b·D·(r - 1)·p_rank
/// over NVLink, the slower of the two.
[[nodiscard]] double hybrid_ep_exchange_s(const Model& model, const ParallelConfig& config,
                                          const GroupLink& link);
/// What one HybridEP dispatch or combine moves per GPU (the terms of hybrid_ep_exchange_s).
struct HybridEpTraffic {
  double nvlink_bytes = 0.0;   ///< in-domain copies, T·h·b·D·(r - 1)·p_rank
  double network_bytes = 0.0;  ///< RDMA copies to remote domains, T·h·b·(D - 1)·p_domain
};
[[nodiscard]] HybridEpTraffic hybrid_ep_traffic(const Model& model, const ParallelConfig& config,
                                                const GroupLink& link);
/// HybridEP's measured RDMA throughput as a share of a 400 Gb/s NIC on H100, by the NVLink
/// domains the EP group spans (DeepEP hybrid-ep docs/README_Hybrid-EP.md).
[[nodiscard]] double hybrid_ep_network_fraction(int domains);

/// The shared experts' GEMMs of one MoE layer and micro-batch on one GPU, forward and backward
/// (their up [b·s/cp x (1|2)·f_e·shared/tp x h] and down [b·s/cp x h x f_e·shared/tp] on the
/// sequence-parallel-gathered tokens): what --moe-shared-expert-overlap runs beside the
/// all-to-alls, the up-projection beside the dispatch, the down-projection beside the combine.
/// Zero without shared experts.
struct SharedExpertTime {
  double up_forward_s = 0.0;
  double down_forward_s = 0.0;
  double up_backward_s = 0.0;
  double down_backward_s = 0.0;
};
[[nodiscard]] SharedExpertTime shared_expert_time(const Gpu& gpu, const Model& model,
                                                  const ParallelConfig& config,
                                                  const Calibration* calibration);

/// All-to-all time of one layer (`ep_layer`, ep_comm's per-layer detail at the stage's MoE
/// share `moe_share`) hidden behind the shared experts on their side stream: per MoE layer
/// min(dispatch, up-projection) + min(combine, down-projection) forward (shared_experts.py
/// linear_fc1_forward_and_act after the dispatch, linear_fc2_forward after the combine), the
/// same pairs with their backward GEMMs backward, and the forward pairs again for each layer
/// full recompute repeats.
[[nodiscard]] double shared_expert_overlap_s(const SharedExpertTime& shared,
                                             const CommDetail& ep_layer, double moe_share,
                                             double recomputed_share);

/// Routed-expert parameters one GPU holds for `moe_layers` MoE layers (experts / ep of each).
[[nodiscard]] double expert_parameters_per_gpu(const Model& model, const ParallelConfig& config,
                                               double moe_layers);
/// The same on the pace-setting stage (its MoE layers, stage_moe_fraction).
[[nodiscard]] double expert_parameters_per_gpu(const Model& model, const ParallelConfig& config);

/// Expert-data-parallel size: tp x cp x dp / ep (expert TP 1).
[[nodiscard]] int expert_dp(const ParallelConfig& config);

/// MoE layers a pipeline stage holds: the first's, the last's (its multi-token prediction
/// layers built as its last layer), the busiest middle stage's with the middle stages' most
/// layers (the one peak_memory weighs), or, with `first` and `last`, the whole model's.
[[nodiscard]] double stage_moe_layers_on(const Model& model, const ParallelConfig& config,
                                         bool first, bool last);

/// A stage's expert weights, gradients and optimizer states (sharded over the expert data
/// parallel group as ZeRO shards the rest) and routed-expert activations for its `moe_layers`,
/// added to `memory` (its totals and fits updated).
void add_expert_memory(MemoryBreakdown& memory, const Model& model, const ParallelConfig& config,
                       const MemoryOptions& options, double moe_layers);

}  // namespace trident
