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

// Eight consecutive elements as floats, through 16-byte accesses (one for bf16, two for f32); the
// address must be 16-byte aligned (is_aligned16).
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&v)[8]);
template <>
__device__ __forceinline__ void load8<bf16>(const bf16* p, float (&v)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(pairs[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
template <>
__device__ __forceinline__ void load8<float>(const float* p, float (&v)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
template <typename T>
__device__ __forceinline__ void store8(T* p, const float (&v)[8]);
template <>
__device__ __forceinline__ void store8<bf16>(bf16* p, const float (&v)[8]) {
  uint4 raw;
  __nv_bfloat162* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) pairs[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = raw;
}
template <>
__device__ __forceinline__ void store8<float>(float* p, const float (&v)[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// V consecutive elements as floats: V == 8 through load8/store8 (16-byte aligned), else one element
// at a time. Kernels templated on V serve both the vectorised and the plain case with one body.
template <int V, typename T>
__device__ __forceinline__ void load_n(const T* p, float (&v)[V]) {
  if constexpr (V == 8) {
    load8(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = to_float(p[i]);
  }
}
template <int V, typename T>
__device__ __forceinline__ void store_n(T* p, const float (&v)[V]) {
  if constexpr (V == 8) {
    store8(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = from_float<T>(v[i]);
  }
}

inline bool is_aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Calls fn(T{}) for a float storage dtype: float or bf16 (f64 is not a compute dtype here).
template <typename Fn>
void dispatch_compute(DType dtype, Fn&& fn) {
  if (dtype == DType::bf16) {
    fn(bf16{});
  } else {
    fn(float{});
  }
}
// The same for two and three dtypes: fn(A{}, B{}) and fn(A{}, B{}, C{}), one instantiation per combination.
template <typename Fn>
void dispatch_compute(DType a, DType b, Fn&& fn) {
  dispatch_compute(a, [&](auto a_zero) { dispatch_compute(b, [&](auto b_zero) { fn(a_zero, b_zero); }); });
}
template <typename Fn>
void dispatch_compute(DType a, DType b, DType c, Fn&& fn) {
  dispatch_compute(a, [&](auto a_zero) {
    dispatch_compute(b, c, [&](auto b_zero, auto c_zero) { fn(a_zero, b_zero, c_zero); });
  });
}

// Grid-stride loops: enough blocks to fill the GPU several times over, never more than needed.
inline unsigned grid_for(int64_t n, int threads, int64_t max_blocks = 132 * 32) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > max_blocks) blocks = max_blocks;
  return static_cast<unsigned>(blocks);
}

// Kernels of one warp per row (the norms): warps per block, the blocks that cover `rows` rows, and in
// the kernel the row of this thread's warp and its lane there.
constexpr int kWarpsPerBlock = 8;
inline unsigned warp_rows_grid(int64_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }
struct WarpRow {
  int64_t row;
  int lane;
};
__device__ __forceinline__ WarpRow warp_row() {
  return {blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32, static_cast<int>(threadIdx.x % 32)};
}

}  // namespace ct::cuda
