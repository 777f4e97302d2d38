// Elementwise kernels and reductions: fill, convert, axpby, scale, sum / sum of squares, AdamW,
// Muon's momentum, Newton-Schulz's normalisation, fp8 amax and quantisation.
// Math of each op: ops.def and the CPU reference (src/backend/cpu/cpu_elementwise.cpp,
// cpu_optimizer.cpp). Arithmetic in f32 (f64 for reductions' accumulators).
#include <cuda_fp8.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8.h"

namespace ct::cuda {

namespace {

constexpr int kThreads = 256;

// ---- fill / convert --------------------------------------------------------------------------------

template <typename T>
__global__ void fill_kernel(T* x, int64_t n, ScalarArg value) {
  const double v = value.get();
  T stored;
  if constexpr (std::is_same_v<T, bf16>) {
    stored = __double2bfloat16(v);
  } else {
    stored = static_cast<T>(v);
  }
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = stored;
}

template <typename Dst, typename Src>
__device__ __forceinline__ Dst convert_one(Src v) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return v;
  } else if constexpr (std::is_same_v<Dst, bf16>) {
    if constexpr (std::is_same_v<Src, double>) return __double2bfloat16(v);  // rounded once
    else return __float2bfloat16_rn(v);
  } else if constexpr (std::is_same_v<Src, bf16>) {
    return static_cast<Dst>(__bfloat162float(v));
  } else {
    return static_cast<Dst>(v);
  }
}

template <typename Dst, typename Src>
__global__ void convert_kernel(Dst* dst, const Src* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = convert_one<Dst>(src[i]);
}

template <typename Dst>
void convert_from(Dst* dst, const void* src, DType src_dtype, int64_t n, cudaStream_t stream) {
  const unsigned grid = grid_for(n, kThreads);
  switch (src_dtype) {
    case DType::f32: convert_kernel<<<grid, kThreads, 0, stream>>>(dst, static_cast<const float*>(src), n); break;
    case DType::f64: convert_kernel<<<grid, kThreads, 0, stream>>>(dst, static_cast<const double*>(src), n); break;
    case DType::bf16: convert_kernel<<<grid, kThreads, 0, stream>>>(dst, static_cast<const bf16*>(src), n); break;
    case DType::i32: fail("convert: i32 converts only to i32");
  }
}

// ---- axpby / scale ---------------------------------------------------------------------------------

template <typename T>
__global__ void axpby_kernel(T* y, ScalarArg alpha_arg, const T* x, ScalarArg beta_arg, int64_t n) {
  const float alpha = static_cast<float>(alpha_arg.get()), beta = static_cast<float>(beta_arg.get());
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    // beta == 0 overwrites y (stale NaNs do not survive), as BLAS and the CPU backend do
    const float value = beta == 0.0f ? alpha * to_float(x[i]) : alpha * to_float(x[i]) + beta * to_float(y[i]);
    y[i] = from_float<T>(value);
  }
}

template <typename T>
__global__ void scale_kernel(T* x, ScalarArg factor_arg, int64_t n) {
  const float factor = static_cast<float>(factor_arg.get());
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = from_float<T>(to_float(x[i]) * factor);
}

// ---- reductions --------------------------------------------------------------------------------------
// Pass 1: a grid whose size depends only on n; block b adds the elements b*256 + t + k*G*256 in a
// fixed order into partials[b]. Pass 2: one block adds the partials in a fixed order. So the result
// is the same bits on every run.

constexpr int64_t kReduceElementsPerBlock = 1 << 15;
constexpr int64_t kReduceMaxBlocks = 1024;

template <typename T, bool squares>
__global__ void reduce_partials_kernel(double* partials, const T* x, int64_t n) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double v = static_cast<double>(to_float(x[i]));
    acc += squares ? v * v : v;
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void reduce_final_kernel(double* out, bool accumulate, const double* partials, int count) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) *out = accumulate ? *out + acc : acc;
}

// ---- optimizer updates -----------------------------------------------------------------------------

__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, int64_t n, ScalarArg lr_arg,
                             ScalarArg beta1_arg, ScalarArg beta2_arg, ScalarArg eps_arg, ScalarArg wd_arg,
                             ScalarArg bc1_arg, ScalarArg bc2_arg) {
  const float lr = static_cast<float>(lr_arg.get()), beta1 = static_cast<float>(beta1_arg.get());
  const float beta2 = static_cast<float>(beta2_arg.get()), eps = static_cast<float>(eps_arg.get());
  const float weight_decay = static_cast<float>(wd_arg.get());
  const float bias_correction1 = static_cast<float>(bc1_arg.get()), bias_correction2 = static_cast<float>(bc2_arg.get());
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = grad[i];
    const float m_new = beta1 * m[i] + (1.0f - beta1) * g;
    const float v_new = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = m_new;
    v[i] = v_new;
    const float update = (m_new / bias_correction1) / (sqrtf(v_new / bias_correction2) + eps);
    param[i] -= lr * (weight_decay * param[i] + update);
  }
}

__global__ void muon_momentum_kernel(float* u, float* buf, const float* grad, int64_t n, ScalarArg mu_arg) {
  const float mu = static_cast<float>(mu_arg.get());
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = grad[i];
    const float b = mu * buf[i] + (1.0f - mu) * g;
    buf[i] = b;
    u[i] = (1.0f - mu) * g + mu * b;
  }
}

// lr_decay = lr decay, rounded once to f32 (as the CPU kernel and PyTorch's reference round it).
__global__ void muon_update_kernel(float* param, const float* u, int64_t n, ScalarArg lr_arg, ScalarArg lr_decay_arg) {
  const float lr = static_cast<float>(lr_arg.get()), lr_decay = static_cast<float>(lr_decay_arg.get());
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float p = param[i], x = u[i];
    param[i] = p - (lr * x + (x * p >= 0.0f ? lr_decay * p : 0.0f));
  }
}

template <typename Dst, typename Src>
__global__ void scale_by_inverse_norm_kernel(Dst* dst, const Src* src, int64_t n, const double* sum_squares,
                                             double eps) {
  const float factor = static_cast<float>(1.0 / (sqrt(*sum_squares) + eps));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<Dst>(to_float(src[i]) * factor);
}

// ---- fp8 -------------------------------------------------------------------------------------------

template <typename T>
__global__ void amax_kernel(unsigned int* amax_bits, const T* x, int64_t n) {
  float local = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    local = amax_combine(local, fabsf(to_float(x[i])));  // NaN wins (fmaxf would drop it)
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) local = amax_combine(local, __shfl_xor_sync(0xffffffffu, local, offset));
  // Non-negative floats order like their bits (NaN's bits are above Inf's): max is order-free.
  if (threadIdx.x % 32 == 0) atomicMax(amax_bits, __float_as_uint(local));
}

__global__ void fp8_scales_kernel(float* scales, const unsigned int* amax_bits) {
  const float s = fp8_e4m3_scale(__uint_as_float(*amax_bits));
  scales[0] = s;
  scales[kFp8ScaleStride] = 1.0f / s;
}

template <typename T>
__global__ void fp8_quantize_kernel(__nv_fp8_storage_t* q, const T* x, int64_t n, const float* scales) {
  const float s = scales[0];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    q[i] = __nv_cvt_float_to_fp8(to_float(x[i]) * s, __NV_SATFINITE, __NV_E4M3);
}

}  // namespace

void launch_fill(void* x, DType dtype, int64_t n, ScalarArg value, cudaStream_t stream) {
  if (n <= 0) return;
  const unsigned grid = grid_for(n, kThreads);
  switch (dtype) {
    case DType::f32: fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(x), n, value); break;
    case DType::f64: fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<double*>(x), n, value); break;
    case DType::bf16: fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<bf16*>(x), n, value); break;
    case DType::i32: fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<int32_t*>(x), n, value); break;
  }
  CT_CUDA_CHECK_LAUNCH("fill");
}

void launch_convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  switch (dst_dtype) {
    case DType::f32: convert_from(static_cast<float*>(dst), src, src_dtype, n, stream); break;
    case DType::f64: convert_from(static_cast<double*>(dst), src, src_dtype, n, stream); break;
    case DType::bf16: convert_from(static_cast<bf16*>(dst), src, src_dtype, n, stream); break;
    case DType::i32: fail("convert: i32 converts only to i32");
  }
  CT_CUDA_CHECK_LAUNCH("convert");
}

void launch_axpby(void* y, DType dtype, ScalarArg alpha, const void* x, ScalarArg beta, int64_t n,
                  cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    axpby_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(y), alpha, static_cast<const T*>(x),
                                                                 beta, n);
  });
  CT_CUDA_CHECK_LAUNCH("axpby");
}

void launch_scale(void* x, DType dtype, ScalarArg factor, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    scale_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(x), factor, n);
  });
  CT_CUDA_CHECK_LAUNCH("scale");
}

int64_t reduce_partials_count(int64_t n) {
  int64_t blocks = (n + kReduceElementsPerBlock - 1) / kReduceElementsPerBlock;
  return blocks < 1 ? 1 : (blocks > kReduceMaxBlocks ? kReduceMaxBlocks : blocks);
}

void launch_reduce(double* out, bool accumulate, bool squares, const void* x, DType dtype, int64_t n, double* partials,
                   cudaStream_t stream) {
  const int blocks = static_cast<int>(reduce_partials_count(n));
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (squares) {
      reduce_partials_kernel<T, true><<<blocks, kThreads, 0, stream>>>(partials, static_cast<const T*>(x), n);
    } else {
      reduce_partials_kernel<T, false><<<blocks, kThreads, 0, stream>>>(partials, static_cast<const T*>(x), n);
    }
  });
  CT_CUDA_CHECK_LAUNCH("reduce_partials");
  reduce_final_kernel<<<1, kThreads, 0, stream>>>(out, accumulate, partials, blocks);
  CT_CUDA_CHECK_LAUNCH("reduce_final");
}

void launch_adamw(float* param, const float* grad, float* m, float* v, int64_t n, ScalarArg lr, ScalarArg beta1,
                  ScalarArg beta2, ScalarArg eps, ScalarArg weight_decay, ScalarArg bias_correction1,
                  ScalarArg bias_correction2, cudaStream_t stream) {
  if (n <= 0) return;
  adamw_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, grad, m, v, n, lr, beta1, beta2, eps,
                                                               weight_decay, bias_correction1, bias_correction2);
  CT_CUDA_CHECK_LAUNCH("adamw");
}

void launch_muon_momentum(float* u, float* buf, const float* grad, int64_t n, ScalarArg mu, cudaStream_t stream) {
  if (n <= 0) return;
  muon_momentum_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(u, buf, grad, n, mu);
  CT_CUDA_CHECK_LAUNCH("muon_momentum");
}

void launch_muon_update(float* param, const float* u, int64_t n, ScalarArg lr, ScalarArg lr_decay, cudaStream_t stream) {
  if (n <= 0) return;
  muon_update_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, u, n, lr, lr_decay);
  CT_CUDA_CHECK_LAUNCH("muon_update");
}

void launch_scale_by_inverse_norm(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n,
                                  const double* sum_squares, double eps, cudaStream_t stream) {
  if (n <= 0) return;
  const unsigned grid = grid_for(n, kThreads);
  dispatch_compute(dst_dtype, src_dtype, [&](auto dst_zero, auto src_zero) {
    using D = decltype(dst_zero);
    using S = decltype(src_zero);
    scale_by_inverse_norm_kernel<<<grid, kThreads, 0, stream>>>(static_cast<D*>(dst), static_cast<const S*>(src), n,
                                                                sum_squares, eps);
  });
  CT_CUDA_CHECK_LAUNCH("scale_by_inverse_norm");
}

void launch_amax(unsigned int* amax_bits, const void* x, DType dtype, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    amax_kernel<<<grid_for(n, kThreads, 132 * 8), kThreads, 0, stream>>>(amax_bits, static_cast<const T*>(x), n);
  });
  CT_CUDA_CHECK_LAUNCH("amax");
}

void launch_fp8_scales(float* scales, const unsigned int* amax_bits, cudaStream_t stream) {
  fp8_scales_kernel<<<1, 1, 0, stream>>>(scales, amax_bits);
  CT_CUDA_CHECK_LAUNCH("fp8_scales");
}

void launch_fp8_quantize(void* q, const void* x, DType dtype, int64_t n, const float* scales, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    fp8_quantize_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<__nv_fp8_storage_t*>(q),
                                                                        static_cast<const T*>(x), n, scales);
  });
  CT_CUDA_CHECK_LAUNCH("fp8_quantize");
}

}  // namespace ct::cuda
