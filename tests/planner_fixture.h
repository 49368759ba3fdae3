#pragma once
// Shared cluster, GPU and model for the planner tests (test_planner.cpp, test_layout.cpp).
#include "costmodel/model.h"
#include "planner/search.h"
#include "topology/cluster.h"
#include "topology/gpu.h"

namespace trident::test {

inline Gpu h100() {
  Gpu gpu;
  gpu.name = "h100-sxm-80g";
  gpu.peak_tflops_bf16 = 989.0;
  gpu.peak_tflops_fp16 = 989.0;
  gpu.peak_tflops_tf32 = 494.0;
  gpu.memory_gib = 80.0;
  gpu.memory_gbps = 3350.0;
  gpu.pcie_gbps = 64.0;
  return gpu;
}

/// `servers` DGX H100-like servers: 8 GPUs, one NVSwitch domain each, 8 x 400 Gb/s NICs.
inline Cluster dgx(int servers, int gpus_per_server = 8) {
  Cluster cluster;
  cluster.name = "test-dgx";
  cluster.gpu = h100();
  cluster.servers = servers;
  cluster.gpus_per_server = gpus_per_server;
  cluster.nvlink.domain_gpus = gpus_per_server;
  cluster.network.nics_per_server = gpus_per_server;
  return cluster;
}

/// A tiny transformer: 4 layers, 4 heads, 2 KV heads, global batch 8 sequences.
inline Model tiny() {
  Model model;
  model.name = "tiny";
  model.layers = 4;
  model.hidden = 64;
  model.heads = 4;
  model.kv_heads = 2;
  model.ffn_hidden = 256;
  model.vocab = 128;
  model.seq_len = 32;
  model.training.global_batch = 8;
  return model;
}

inline SearchOptions keep_all() {
  SearchOptions options;
  options.keep = 100000;
  return options;
}

}  // namespace trident::test
