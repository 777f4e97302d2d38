// relu^2 on the CUDA backend: the op's kernels and CudaBackend's do_relu2_forward / do_relu2_backward,
// one file per op as on the CPU (cpu/cpu_relu2.cpp, the reference; the math is in ops.def):
//   y = relu(x)^2,  dx = dy * 2 relu(x).  Arithmetic in f32, stored in the tensors' dtype.
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_limits.h"

namespace ct::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void relu2_forward_kernel(T* y, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float r = fmaxf(to_float(x[i]), 0.0f);
    y[i] = from_float<T>(r * r);
  }
}

template <typename T>
__global__ void relu2_backward_kernel(T* dx, const T* dy, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float r = fmaxf(to_float(x[i]), 0.0f);
    dx[i] = from_float<T>(to_float(dy[i]) * 2.0f * r);
  }
}

// 8 elements per thread with 16-byte accesses; the tail (n % 8) by the first threads of block 0.
template <typename T>
__global__ void relu2_forward_vec8_kernel(T* y, const T* x, int64_t n) {
  const int64_t chunks = n / 8;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks; c += int64_t(gridDim.x) * blockDim.x) {
    float v[8];
    load8(x + 8 * c, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float r = fmaxf(v[i], 0.0f);
      v[i] = r * r;
    }
    store8(y + 8 * c, v);
  }
  if (blockIdx.x == 0 && 8 * chunks + threadIdx.x < n) {
    const int64_t i = 8 * chunks + threadIdx.x;
    const float r = fmaxf(to_float(x[i]), 0.0f);
    y[i] = from_float<T>(r * r);
  }
}

template <typename T>
__global__ void relu2_backward_vec8_kernel(T* dx, const T* dy, const T* x, int64_t n) {
  const int64_t chunks = n / 8;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks; c += int64_t(gridDim.x) * blockDim.x) {
    float xv[8], g[8];
    load8(x + 8 * c, xv);
    load8(dy + 8 * c, g);
#pragma unroll
    for (int i = 0; i < 8; ++i) g[i] = g[i] * 2.0f * fmaxf(xv[i], 0.0f);
    store8(dx + 8 * c, g);
  }
  if (blockIdx.x == 0 && 8 * chunks + threadIdx.x < n) {
    const int64_t i = 8 * chunks + threadIdx.x;
    dx[i] = from_float<T>(to_float(dy[i]) * 2.0f * fmaxf(to_float(x[i]), 0.0f));
  }
}

// The launches: 16-byte-aligned tensors take the 8-wide kernels.
void launch_relu2_forward(void* y, const void* x, DType dtype, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const bool vec8 = is_aligned16(y) && is_aligned16(x);
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (vec8) {
      relu2_forward_vec8_kernel<<<grid_for(n / 8 + 1, kThreads), kThreads, 0, stream>>>(
          static_cast<T*>(y), static_cast<const T*>(x), n);
    } else {
      relu2_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(y),
                                                                           static_cast<const T*>(x), n);
    }
  });
  CT_CUDA_CHECK_LAUNCH("relu2_forward");
}

void launch_relu2_backward(void* dx, const void* dy, const void* x, DType dtype, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const bool vec8 = is_aligned16(dx) && is_aligned16(dy) && is_aligned16(x);
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (vec8) {
      relu2_backward_vec8_kernel<<<grid_for(n / 8 + 1, kThreads), kThreads, 0, stream>>>(
          static_cast<T*>(dx), static_cast<const T*>(dy), static_cast<const T*>(x), n);
    } else {
      relu2_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(
          static_cast<T*>(dx), static_cast<const T*>(dy), static_cast<const T*>(x), n);
    }
  });
  CT_CUDA_CHECK_LAUNCH("relu2_backward");
}

}  // namespace

void CudaBackend::do_relu2_forward(const Tensor& y, const Tensor& x) {
  const char* op = "relu2_forward";
  check_one_dtype(op, "y", y, "x", x);
  OpCall call = graph_call(op, Signature().tensor(y).tensor(x), {y, x});
  if (!call.launch) return;
  launch_relu2_forward(y.data, x.data, x.dtype, x.numel(), stream_);
}

void CudaBackend::do_relu2_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& x) {
  const char* op = "relu2_backward";
  check_one_dtype(op, "dy", dy, "x", x);
  check_one_dtype(op, "dx_out", dx_out, "x", x);
  OpCall call = graph_call(op, Signature().tensor(dx_out).tensor(dy).tensor(x), {dx_out, dy, x});
  if (!call.launch) return;
  launch_relu2_backward(dx_out.data, dy.data, x.data, x.dtype, x.numel(), stream_);
}

}  // namespace ct::cuda
