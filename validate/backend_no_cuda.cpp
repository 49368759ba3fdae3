// Builds without the CUDA toolkit: the GPU backend is absent and says so.
#include "topology/errors.h"
#include "validate/backend.h"

namespace trident {

bool cuda_available() { return false; }

std::unique_ptr<Backend> make_cuda_backend() {
  throw InputError("--backend cuda: this trident was built without the CUDA toolkit and NCCL");
}

}  // namespace trident
