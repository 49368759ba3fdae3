#pragma once
// Shared small model and GPU for the cost-model tests: numbers chosen so every term can be
// derived by hand in the test comments.
#include "costmodel/model.h"
#include "costmodel/parallel_config.h"
#include "costmodel/placement.h"
#include "topology/cluster.h"
#include "topology/gpu.h"
#include "topology/link_tier.h"

namespace trident::test {

/// A plan of `pp` stages of `vp` chunks each, the default split.
inline ParallelConfig pipelined(int pp, int vp = 1) {
  ParallelConfig c;
  c.pp = pp;
  c.virtual_stages = vp;
  return c;
}

/// 2 layers, h = 64, 4 heads (head_dim 16), f = 256, V = 1000, s = 32, B = 8; no biases, no
/// learned positions, RMSNorm (h parameters per norm), untied output layer.
inline Model small_model() {
  Model model;
  model.name = "small";
  model.layers = 2;
  model.hidden = 64;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 256;
  model.vocab = 1000;
  model.seq_len = 32;
  model.bias = false;
  model.learned_positions = false;
  model.norm = NormKind::rmsnorm;
  model.tied_embeddings = false;
  model.training.global_batch = 8;
  return model;
}

/// tp = 2, pp = 2, dp = 2, micro-batch 1: m = 8 / (2 * 1) = 4.
inline ParallelConfig small_config() {
  ParallelConfig config;
  config.tp = 2;
  config.pp = 2;
  config.dp = 2;
  config.micro_batch = 1;
  return config;
}

/// 100 TFLOP/s bf16, matmul efficiency 1, 1000 GB/s HBM, 80 GiB.
inline Gpu round_gpu() {
  Gpu gpu;
  gpu.name = "round";
  gpu.peak_tflops_bf16 = 100.0;
  gpu.peak_tflops_fp16 = 100.0;
  gpu.matmul_efficiency = 1.0;
  gpu.memory_gbps = 1000.0;
  gpu.memory_gib = 80.0;
  return gpu;
}

/// One server of 8 round GPUs (its links are the placement's business: tests pass GroupLinks).
inline Cluster round_cluster() {
  Cluster cluster;
  cluster.name = "round";
  cluster.gpu = round_gpu();
  cluster.servers = 1;
  cluster.gpus_per_server = 8;
  return cluster;
}

/// A group inside one NVLink domain: `ranks` GPUs at 100 GB/s, 1 us per step.
inline GroupLink nvlink_group(int ranks) {
  GroupLink link;
  link.tier = Tier::nvlink;
  link.ranks = ranks;
  link.ranks_per_domain = ranks;
  link.intra_gbps = 100.0;
  link.intra_latency_s = 1e-6;
  return link;
}

/// TP, PP and DP groups of `tp`, `pp` and `dp` ranks, each inside one NVLink domain.
inline Placement nvlink_placement(int tp, int pp, int dp) {
  Placement placement;
  placement.tp = nvlink_group(tp);
  placement.pp = nvlink_group(pp);
  placement.dp = nvlink_group(dp);
  return placement;
}

/// `ranks` spread evenly over `domains` NVLink domains (100 GB/s, `intra_latency_s` a hop),
/// crossing the network at `inter_gbps` per GPU and `inter_latency_s` a hop.
inline GroupLink network_group(int ranks, int domains, double inter_gbps, double inter_latency_s,
                               double intra_latency_s = 1e-6) {
  GroupLink link = nvlink_group(ranks);
  link.tier = Tier::network;
  link.domains = domains;
  link.ranks_per_domain = ranks / domains;
  link.min_ranks_per_domain = ranks / domains;
  link.intra_latency_s = intra_latency_s;
  link.inter_gbps = inter_gbps;
  link.inter_latency_s = inter_latency_s;
  return link;
}

}  // namespace trident::test
