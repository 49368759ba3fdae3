#include "costmodel/estimate.h"
#include "costmodel/memory.h"

// What the runtime holds beside the model's tensors: cuBLAS's workspace, NCCL's buffers, the
// caching allocator's fragmentation, and the fit verdict they decide (docs/cost_model.md#memory).

namespace trident {

double cublas_workspace_bytes(const Gpu& gpu) {
  return gpu.peak_tflops_fp8 > 0.0 ? kCublasWorkspaceHopperBytes : kCublasWorkspaceBytes;
}

double nccl_ring_buffer_bytes(double channels) {
  return channels * (kNcclLlBufferBytes + kNcclLl128BufferBytes + kNcclSimpleBufferBytes);
}

double nccl_p2p_buffer_bytes(int peers, bool over_network) {
  const double chunk = over_network ? kNcclP2pNetChunkBytes : kNcclP2pNvlinkChunkBytes;
  return peers * kNcclP2pChannelsPerPeer * kNcclSteps * chunk;
}

double nccl_buffer_bytes(const NcclGroups& groups) {
  return nccl_ring_buffer_bytes(groups.tp_channels) + nccl_ring_buffer_bytes(groups.dp_channels) +
         nccl_p2p_buffer_bytes(groups.pp_peers, groups.pp_over_network);
}

double allocator_fragmentation_bytes(double churning_bytes) {
  return churning_bytes * kAllocatorFragmentation / (1.0 - kAllocatorFragmentation);
}

double unfragmented_bytes(const MemoryBreakdown& memory) {
  return memory.allocated_bytes + memory.cuda_context_bytes + memory.nccl_buffer_bytes;
}

double fragmentation_room_bytes(const MemoryBreakdown& memory) {
  return memory.capacity_bytes - unfragmented_bytes(memory);
}

void set_memory_verdict(MemoryBreakdown& memory, bool other_stages_fit) {
  memory.fits = other_stages_fit && fragmentation_room_bytes(memory) >= 0.0;
  memory.tight = memory.fits && memory.total_bytes > memory.capacity_bytes;
}

}  // namespace trident
