#pragma once
// CUDA, cuBLASLt and launch errors as ct::Error, naming the call, the file and the line.
#include <cuda_runtime_api.h>

#include "util/error.h"

namespace ct::cuda {

[[noreturn]] inline void fail_cuda(cudaError_t status, const char* call, const char* file, int line) {
  fail("CUDA error ", static_cast<int>(status), " (", cudaGetErrorName(status), ": ", cudaGetErrorString(status),
       ") in ", call, " at ", file, ":", line);
}

}  // namespace ct::cuda

#define CT_CUDA_CHECK(call)                                                         \
  do {                                                                              \
    cudaError_t ct_cuda_status_ = (call);                                           \
    if (ct_cuda_status_ != cudaSuccess)                                             \
      ::ct::cuda::fail_cuda(ct_cuda_status_, #call, __FILE__, __LINE__);            \
  } while (0)

// After a kernel launch: a bad configuration shows up here, named for the kernel, a fault at the next
// synchronisation. cudaGetLastError (not cudaPeekAtLastError) clears a launch error once reported, so
// it is never blamed on a later launch.
#define CT_CUDA_CHECK_LAUNCH(name) CT_CUDA_CHECK_NAMED(cudaGetLastError(), name)
#define CT_CUDA_CHECK_NAMED(call, name)                                             \
  do {                                                                              \
    cudaError_t ct_cuda_status_ = (call);                                           \
    if (ct_cuda_status_ != cudaSuccess)                                             \
      ::ct::cuda::fail_cuda(ct_cuda_status_, name, __FILE__, __LINE__);             \
  } while (0)
