#pragma once
// Device helpers shared by the kernels_*.cu files: typed loads and stores (f32 / bf16 / f64
// storage, f32 arithmetic), warp and block reductions, the dtype switch, grid sizing.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"

namespace ct::cuda {

using bf16 = __nv_bfloat16;

// Storage type -> f32 and back (bf16 rounds to nearest even, as __float2bfloat16_rn does).
template <typename T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float to_float<bf16>(bf16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024); every thread gets the
// result. The order of additions is fixed, so the result is the same on every run.
template <typename T>
__device__ T block_sum(T v, T* shared /* >= 32 elements */) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = lane < warps ? shared[lane] : T(0);
  return warp_sum(total);
}

// Calls fn(T{}) for a float storage dtype: float or bf16 (f64 is not a compute dtype here).
template <typename Fn>
void dispatch_compute(DType dtype, Fn&& fn) {
  if (dtype == DType::bf16) {
    fn(bf16{});
  } else {
    fn(float{});
  }
}

// Grid-stride loops: enough blocks to fill the GPU several times over, never more than needed.
inline unsigned grid_for(int64_t n, int threads, int64_t max_blocks = 132 * 32) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > max_blocks) blocks = max_blocks;
  return static_cast<unsigned>(blocks);
}

}  // namespace ct::cuda
