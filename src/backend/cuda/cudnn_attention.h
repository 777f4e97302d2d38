#pragma once
// Causal attention through cuDNN's fused scaled-dot-product attention (its FlashAttention-style
// engines, with Hopper kernels of their own), the alternative to kernels_flash.cu that
// backend.attention = "cudnn" chooses (docs/cuda.md, "Attention").
//
// Why a library here: cuDNN's attention engines use Hopper's wgmma and TMA, which the hand-written
// mma.sync kernels do not (148 TFLOP/s forward, 118 backward on the H200); cuDNN is NVIDIA's
// maintained implementation. Its graphs are built through the header-only cuDNN frontend, which no
// Debian package ships: it is compiled in only when configuring found its headers
// (cmake/CudnnFrontend.cmake; scripts/install-cudnn-frontend.sh puts a pinned copy in
// build/cudnn-frontend). libcudnn.so.9 is opened at run time, when a backend chooses this path, so
// clocktrain itself never needs cuDNN to start.
//
// Same semantics as the other attention kernels (cuda_kernels.h): q, out [B, T, H, D]; k, v
// [B, T, Hkv, D]; lse [B, H, T] = ln sum_j exp(scale q.k_j), in f32; query i sees keys 0..i. cuDNN's
// "stats" output is that log-sum-exp, so either path's forward feeds the other's backward.
// Served: bf16, as many queries as keys (training and whole-sequence evaluation; the KV cache's
// shorter queries go to kernels_flash.cu), head_dim a multiple of 8 up to 128, 16-byte aligned
// tensors. The backward runs cuDNN's deterministic algorithm: same inputs, same bits, as the
// backend promises (cuda_backend.h).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "backend/cuda/cuda_kernels.h"

namespace ct::cuda {

class CudnnAttention {
 public:
  // A device buffer of at least `bytes` for cuDNN's workspace (the backend's grow-only scratch).
  using Workspace = std::function<void*(size_t bytes)>;

  // Whether this build has the path (the frontend headers were found when configuring).
  static bool built();
  // Whether this build's path serves these operands (see above; false when not built); the caller
  // falls back to its own kernels.
  static bool supports(DType dtype, const AttentionDims& dims);

  // Builds the forward and backward graphs of these operands and checks them against the frontend's
  // rules for a GPU of compute capability `sm_version` (90: Hopper), on the host: no device, no
  // handle, so CI runs it. libcudnn.so.9 must open (the rules depend on its version). A ct::Error
  // names the step and the shape; in a build without the path, the constructor's error.
  static void check_graphs(const AttentionDims& dims, double scale, int sm_version);

  // Opens libcudnn.so.9 and makes a handle that queues on `stream`. A ct::Error naming what is
  // missing when the build lacks the path or the library cannot be opened.
  explicit CudnnAttention(cudaStream_t stream);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  std::string version() const;  // e.g. "cuDNN 9.19.0 (frontend 1.32.0)"

  // Each shape's graph is built, checked and planned on its first call (host work, no device
  // allocation but the workspace) and kept for the process.
  void forward(void* out, float* lse, const void* q, const void* k, const void* v, const AttentionDims& dims,
               double scale, const Workspace& workspace);
  void backward(void* dq, void* dk, void* dv, const void* dout, const void* out, const float* lse, const void* q,
                const void* k, const void* v, const AttentionDims& dims, double scale, const Workspace& workspace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ct::cuda
