// The residual scalars' mix on the CUDA backend (frontier.md 1.1; the math is in ops.def, the reference
// is cpu/cpu_residual_mix.cpp): f32 tensors only (the residual stream is f32 on every backend that
// trains in f32), r and a read from device memory (they are parameters, moved by the optimizer
// between replays of a recorded step).
//   forward:  x_saved = x;  x = r x + a x0
//   backward: dx0 += a g;  dr += sum(g x_saved);  da += sum(g x0);  dx = r g
// The two sums: a grid whose size depends only on n writes per-block partial sums (double, a fixed
// order within the block), then one block adds them in a fixed order, so every run gives the same bits.
// Written and compiled; not yet run on a GPU (docs/cuda.md).
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_limits.h"

namespace ct::cuda {

namespace {

constexpr int kThreads = 256;

// The grid of the reductions' first pass (cuda_kernels.h): its size depends only on n.
int mix_blocks(int64_t n) { return static_cast<int>(reduce_partials_count(n)); }

__global__ void residual_mix_forward_kernel(float* x, float* saved, const float* x0, const float* r_ptr,
                                            const float* a_ptr, int64_t n) {
  const float r = *r_ptr, a = *a_ptr;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    if (saved) saved[i] = v;
    x[i] = r * v + a * x0[i];
  }
}

// partials[2 b], partials[2 b + 1]: block b's sums of g x_saved and g x0.
__global__ void residual_mix_backward_kernel(double* partials, float* dx, float* dx0, const float* saved,
                                             const float* x0, const float* r_ptr, const float* a_ptr, int64_t n) {
  __shared__ double shared[32];
  const float r = *r_ptr, a = *a_ptr;
  double r_sum = 0.0, a_sum = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = dx[i];
    r_sum += static_cast<double>(g) * static_cast<double>(saved[i]);
    a_sum += static_cast<double>(g) * static_cast<double>(x0[i]);
    dx0[i] += a * g;
    dx[i] = r * g;
  }
  r_sum = block_sum(r_sum, shared);
  a_sum = block_sum(a_sum, shared);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = r_sum;
    partials[2 * blockIdx.x + 1] = a_sum;
  }
}

__global__ void residual_mix_sums_kernel(float* dr, float* da, const double* partials, int count) {
  __shared__ double shared[32];
  double r_sum = 0.0, a_sum = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    r_sum += partials[2 * i];
    a_sum += partials[2 * i + 1];
  }
  r_sum = block_sum(r_sum, shared);
  a_sum = block_sum(a_sum, shared);
  if (threadIdx.x == 0) {
    *dr = static_cast<float>(static_cast<double>(*dr) + r_sum);
    *da = static_cast<float>(static_cast<double>(*da) + a_sum);
  }
}

}  // namespace

void CudaBackend::do_residual_mix_forward(const Tensor& x, const Tensor& x_saved_out, const Tensor& x0,
                                          const Tensor& r, const Tensor& a) {
  const char* op = "residual_mix_forward";
  OpCall call = graph_call(op, Signature().tensor(x).tensor(x_saved_out).tensor(x0).tensor(r).tensor(a),
                           {x, x_saved_out, x0, r, a});
  const int64_t n = x.numel();
  if (!call.launch || n == 0) return;
  residual_mix_forward_kernel<<<mix_blocks(n), kThreads, 0, stream_>>>(
      x.as<float>(), x_saved_out.empty() ? nullptr : x_saved_out.as<float>(), x0.as<float>(), r.as<float>(),
      a.as<float>(), n);
  CT_CUDA_CHECK_LAUNCH(op);
}

void CudaBackend::do_residual_mix_backward(const Tensor& dx, const Tensor& dx0_acc, const Tensor& dr_acc,
                                           const Tensor& da_acc, const Tensor& x_saved, const Tensor& x0,
                                           const Tensor& r, const Tensor& a) {
  const char* op = "residual_mix_backward";
  OpCall call = graph_call(op,
                           Signature().tensor(dx).tensor(dx0_acc).tensor(dr_acc).tensor(da_acc).tensor(x_saved)
                               .tensor(x0).tensor(r).tensor(a),
                           {dx, dx0_acc, dr_acc, da_acc, x_saved, x0, r, a});
  const int64_t n = x_saved.numel();
  if (!call.launch || n == 0) return;
  const int blocks = mix_blocks(n);
  auto* partials = static_cast<double*>(scratch("residual_mix_partials", sizeof(double) * 2 * blocks));
  residual_mix_backward_kernel<<<blocks, kThreads, 0, stream_>>>(partials, dx.as<float>(), dx0_acc.as<float>(),
                                                                 x_saved.as<float>(), x0.as<float>(), r.as<float>(),
                                                                 a.as<float>(), n);
  CT_CUDA_CHECK_LAUNCH(op);
  residual_mix_sums_kernel<<<1, kThreads, 0, stream_>>>(dr_acc.as<float>(), da_acc.as<float>(), partials, blocks);
  CT_CUDA_CHECK_LAUNCH(op);
}

}  // namespace ct::cuda
