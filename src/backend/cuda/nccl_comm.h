#pragma once
// NCCL for data parallelism, loaded at run time (dlopen of libnccl.so.2): the backend builds and
// runs on one GPU without NCCL installed, and only a job of several processes needs it. The few
// declarations used here follow NCCL's public C API (nccl.h, 2.x ABI).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/parallel/launch.h"
#include "backend/tensor.h"

namespace ct::cuda {

class NcclComm {
 public:
  // Loads NCCL, shares rank 0's unique id (backend/parallel/rendezvous.h) and joins the job.
  explicit NcclComm(const LaunchEnvironment& env);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // In-place sum over every rank of each tensor (f32 or bf16), as one NCCL group on `stream`.
  void all_reduce_sum(const std::vector<Tensor>& tensors, cudaStream_t stream);
  // tensors[i] from rank roots[i] to every rank, as one group.
  void broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots, cudaStream_t stream);
  std::string version() const;

 private:
  struct Api;
  Api* api_ = nullptr;
  void* library_ = nullptr;
  void* comm_ = nullptr;
  int world_size_ = 1;
};

}  // namespace ct::cuda
