// Device choice, the one-rank-per-GPU check, buffers and dtype conversions for the GPU backend.
#include "validate/cuda_util.h"

#include <mpi.h>

#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>

#include "topology/errors.h"
#include "validate/patterns.h"

namespace trident {
namespace {

constexpr int kIdBytes = 256;

std::uint16_t to_bf16(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16(std::uint16_t half) {
  const std::uint32_t bits = static_cast<std::uint32_t>(half) << 16;
  float value = 0.0f;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// IEEE binary16 of a finite value in the normal range (the patterns: integers 1..4).
std::uint16_t to_fp16(float value) {
  if (value == 0.0f) return 0;
  int exponent = 0;
  const float mantissa = std::frexp(std::fabs(value), &exponent);  // [0.5, 1)
  const auto fraction = static_cast<std::uint16_t>(std::lround((mantissa * 2.0f - 1.0f) * 1024.0f));
  const auto biased = static_cast<std::uint16_t>(exponent - 1 + 15);
  return static_cast<std::uint16_t>((value < 0 ? 0x8000 : 0) | (biased << 10) | fraction);
}

std::string uuid_text(const cudaDeviceProp& prop) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    const auto byte = static_cast<unsigned char>(prop.uuid.bytes[i]);
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

}  // namespace

void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

void nccl_check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess && status != ncclInProgress) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
  }
}

int pick_device() {
  int devices = 0;
  // No driver or no GPU is the machine the user ran on, not an internal failure: exit 2.
  if (const cudaError_t status = cudaGetDeviceCount(&devices); status != cudaSuccess) {
    throw InputError(std::string("--backend cuda: no usable CUDA device (") +
                     cudaGetErrorString(status) + "); use --backend cpu or a GPU machine");
  }
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_rank = 0;
  int local_size = 1;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  if (devices == 1) return 0;  // one GPU per rank (CUDA_VISIBLE_DEVICES), or a shared one
  if (local_size > devices) {
    throw InputError("validate: " + std::to_string(local_size) + " ranks on one node but " +
                     std::to_string(devices) + " GPUs visible: start one rank per GPU");
  }
  return local_rank;
}

void refuse_shared_gpu(const cudaDeviceProp& prop, int world_rank) {
  (void)world_rank;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  std::string id = std::string(host) + " GPU " + uuid_text(prop);
  id.resize(kIdBytes - 1);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(static_cast<std::size_t>(size) * kIdBytes);
  MPI_Allgather(id.c_str(), kIdBytes, MPI_CHAR, all.data(), kIdBytes, MPI_CHAR, MPI_COMM_WORLD);
  for (int a = 0; a < size; ++a) {
    for (int b = a + 1; b < size; ++b) {
      const char* first = &all[static_cast<std::size_t>(a) * kIdBytes];
      if (std::strncmp(first, &all[static_cast<std::size_t>(b) * kIdBytes], kIdBytes) == 0) {
        throw InputError("validate: ranks " + std::to_string(a) + " and " + std::to_string(b) +
                         " share one GPU (" + std::string(first) +
                         "): start one rank per GPU (mpirun -np <= GPUs per node, or srun "
                         "--gpus-per-task=1); NCCL would refuse with 'Duplicate GPU detected'");
      }
    }
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  const cudaError_t status = cudaMalloc(&data_, bytes == 0 ? 1 : bytes);
  // Out of device memory is an allocation failure like the host's: the GEMM that asked for it
  // names itself (measure.cpp run_gemm_named).
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: cleared so the rank can report and exit
    throw DeviceOutOfMemory();
  }
  cuda_check(status, "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() { cudaFree(data_); }

// A cudaMemcpy from pageable memory may return before the last of the data reaches the device,
// and the backend's stream does not wait for the legacy default stream the copy runs on: every
// upload ends with the device synchronised, so the next launch reads the new data.
void DeviceBuffer::copy_in(const void* host, std::size_t bytes) {
  cuda_check(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void DeviceBuffer::upload(const std::vector<float>& host) {
  copy_in(host.data(), host.size() * sizeof(float));
}

void DeviceBuffer::upload_bytes(const std::vector<std::uint8_t>& host) {
  copy_in(host.data(), host.size());
}

GemmTypes gemm_types(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp16:
      return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 4, 1e-5};
    case Dtype::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 1e-5};
    case Dtype::fp32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 1e-5};
    default:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 1e-2};
  }
}

std::vector<float> gemm_matrix_a(long long m, long long k) {
  std::vector<float> a(static_cast<std::size_t>(m * k));
  for (long long p = 0; p < k; ++p) {
    for (long long i = 0; i < m; ++i) a[static_cast<std::size_t>(i + p * m)] = gemm_a(i);
  }
  return a;
}

std::vector<float> gemm_matrix_b(long long k, long long n) {
  std::vector<float> b(static_cast<std::size_t>(k * n));
  for (long long j = 0; j < n; ++j) {
    for (long long p = 0; p < k; ++p) b[static_cast<std::size_t>(p + j * k)] = gemm_b(j);
  }
  return b;
}

std::vector<std::uint8_t> encode(const std::vector<float>& values, cudaDataType_t type) {
  if (type == CUDA_R_32F) {
    std::vector<std::uint8_t> out(values.size() * 4);
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  std::vector<std::uint16_t> halves(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    halves[i] = type == CUDA_R_16BF ? to_bf16(values[i]) : to_fp16(values[i]);
  }
  std::vector<std::uint8_t> out(halves.size() * 2);
  std::memcpy(out.data(), halves.data(), out.size());
  return out;
}

std::vector<float> decode(const DeviceBuffer& buffer, std::size_t count, cudaDataType_t type) {
  if (type == CUDA_R_32F) return buffer.download<float>(count);
  const std::vector<std::uint16_t> halves = buffer.download<std::uint16_t>(count);
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = from_bf16(halves[i]);  // out is bf16 here
  return out;
}

}  // namespace trident
