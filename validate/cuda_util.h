#pragma once
/// CUDA helpers of the GPU backend (internal to validate/, built only with the toolkit).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "topology/gpu.h"

namespace trident {

void cuda_check(cudaError_t status, const char* what);
void nccl_check(ncclResult_t status, const char* what);

/// This rank's GPU: its index among the ranks on its node when the node shows that many GPUs,
/// GPU 0 when the launcher gave each rank one GPU (CUDA_VISIBLE_DEVICES). Throws InputError
/// when a node has more ranks than GPUs.
[[nodiscard]] int pick_device();
/// Compares every rank's GPU UUID (MPI_Allgather) and throws InputError naming the two ranks
/// that share one, before NCCL is touched.
void refuse_shared_gpu(const cudaDeviceProp& prop, int world_rank);

/// cudaMalloc out of device memory: an allocation failure (std::bad_alloc) that says so, so a
/// GEMM's caller can name the GEMM (measure.cpp) and anything else still reads "cudaMalloc".
struct DeviceOutOfMemory : std::bad_alloc {
  [[nodiscard]] const char* what() const noexcept override { return "cudaMalloc: out of memory"; }
};

/// Owns one device allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] void* get() const { return data_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }
  void upload(const std::vector<float>& host);
  void upload_bytes(const std::vector<std::uint8_t>& host);
  template <typename T>
  [[nodiscard]] std::vector<T> download(std::size_t count) const {
    std::vector<T> out(count);
    cuda_check(cudaMemcpy(out.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost),
               "cudaMemcpy");
    return out;
  }

 private:
  /// Host to device, the device synchronised after (cuda_util.cpp says why).
  void copy_in(const void* host, std::size_t bytes);
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// cublasGemmEx types for a dtype: bf16 in/out; fp16 in, fp32 out (the check's exact values
/// would overflow fp16); tf32 and fp32 in/out fp32 (tf32 compute for tf32).
struct GemmTypes {
  cudaDataType_t in = CUDA_R_16BF;
  cudaDataType_t out = CUDA_R_16BF;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  std::size_t in_bytes = 2;
  std::size_t out_bytes = 2;
  double tolerance = 1e-2;  ///< relative, for the check
};
[[nodiscard]] GemmTypes gemm_types(Dtype dtype);

/// Column-major A (m x k) and B (k x n) of patterns.h, as floats.
[[nodiscard]] std::vector<float> gemm_matrix_a(long long m, long long k);
[[nodiscard]] std::vector<float> gemm_matrix_b(long long k, long long n);
/// Floats -> bytes of `type` (bf16, fp16 or fp32); the patterns are small integers, exact in all.
[[nodiscard]] std::vector<std::uint8_t> encode(const std::vector<float>& values,
                                               cudaDataType_t type);
/// `count` elements of `type` on the device -> floats.
[[nodiscard]] std::vector<float> decode(const DeviceBuffer& buffer, std::size_t count,
                                        cudaDataType_t type);

}  // namespace trident
