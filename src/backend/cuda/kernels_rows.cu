// Row-wise kernels: RMSNorm, rotary + QK norm, softcapped cross-entropy. One warp per row for the
// norms (rows of width C or head_dim), one block per row for cross-entropy (rows of the vocabulary).
// The math of each op: backend.h and the CPU reference (cpu_rmsnorm.cpp, cpu_rope_qknorm.cpp,
// cpu_cross_entropy.cpp). Arithmetic in f32; reductions in a fixed order (deterministic).
#include <cfloat>

#include "backend/cuda/cuda_common.cuh"

namespace ct::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

// ---- RMSNorm ---------------------------------------------------------------------------------------
//   forward:  r = 1 / sqrt(mean(x^2) + eps),  y = x r
//   backward: dx += r (dy - y mean(dy y))

template <typename TX, typename TY>
__global__ void rmsnorm_forward_kernel(TY* y, float* rstd, const TX* x, int64_t rows, int64_t width, float eps) {
  const int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const TX* xr = x + row * width;
  TY* yr = y + row * width;
  float sum_squares = 0.0f;
  for (int64_t c = lane; c < width; c += 32) {
    const float v = to_float(xr[c]);
    sum_squares += v * v;
  }
  sum_squares = warp_sum(sum_squares);
  const float inv_rms = rsqrtf(sum_squares / static_cast<float>(width) + eps);
  for (int64_t c = lane; c < width; c += 32) yr[c] = from_float<TY>(to_float(xr[c]) * inv_rms);
  if (lane == 0) rstd[row] = inv_rms;
}

template <typename TD, typename TG, typename TY>
__global__ void rmsnorm_backward_kernel(TD* dx, const TG* dy, const TY* y, const float* rstd, int64_t rows,
                                        int64_t width) {
  const int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const TG* dyr = dy + row * width;
  const TY* yr = y + row * width;
  TD* dxr = dx + row * width;
  float dot = 0.0f;
  for (int64_t c = lane; c < width; c += 32) dot += to_float(dyr[c]) * to_float(yr[c]);
  dot = warp_sum(dot);
  const float mean_dot = dot / static_cast<float>(width), inv_rms = rstd[row];
  for (int64_t c = lane; c < width; c += 32)
    dxr[c] = from_float<TD>(to_float(dxr[c]) + inv_rms * (to_float(dyr[c]) - to_float(yr[c]) * mean_dot));
}

// The same with 8 elements per lane and 16-byte accesses (width % 8 == 0, rows 16-byte aligned).
template <typename TX, typename TY>
__global__ void rmsnorm_forward_vec8_kernel(TY* y, float* rstd, const TX* x, int64_t rows, int64_t width, float eps) {
  const int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const TX* xr = x + row * width;
  TY* yr = y + row * width;
  const int64_t chunks = width / 8;
  float sum_squares = 0.0f;
  for (int64_t c = lane; c < chunks; c += 32) {
    float v[8];
    load8(xr + 8 * c, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) sum_squares += v[i] * v[i];
  }
  sum_squares = warp_sum(sum_squares);
  const float inv_rms = rsqrtf(sum_squares / static_cast<float>(width) + eps);
  for (int64_t c = lane; c < chunks; c += 32) {
    float v[8];
    load8(xr + 8 * c, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] *= inv_rms;
    store8(yr + 8 * c, v);
  }
  if (lane == 0) rstd[row] = inv_rms;
}

template <typename TD, typename TG, typename TY>
__global__ void rmsnorm_backward_vec8_kernel(TD* dx, const TG* dy, const TY* y, const float* rstd, int64_t rows,
                                             int64_t width) {
  const int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const TG* dyr = dy + row * width;
  const TY* yr = y + row * width;
  TD* dxr = dx + row * width;
  const int64_t chunks = width / 8;
  float dot = 0.0f;
  for (int64_t c = lane; c < chunks; c += 32) {
    float g[8], v[8];
    load8(dyr + 8 * c, g);
    load8(yr + 8 * c, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) dot += g[i] * v[i];
  }
  dot = warp_sum(dot);
  const float mean_dot = dot / static_cast<float>(width), inv_rms = rstd[row];
  for (int64_t c = lane; c < chunks; c += 32) {
    float g[8], v[8], acc[8];
    load8(dyr + 8 * c, g);
    load8(yr + 8 * c, v);
    load8(dxr + 8 * c, acc);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] += inv_rms * (g[i] - v[i] * mean_dot);
    store8(dxr + 8 * c, acc);
  }
}

// ---- rotary + QK norm -------------------------------------------------------------------------------
// Row r of [B*T*H, D] sits at time t = (r / H) % T; lane l handles the pairs (j, j + D/2) for
// j = l, l + 32, ... (at most kMaxPairsPerLane of them: head_dim <= 256).
//   rot_j = x_j c_j + x_{j+D/2} s_j;  rot_{j+D/2} = -x_j s_j + x_{j+D/2} c_j;  y = rot / rms(rot)
//   backward: drot = r (dy - y mean(dy y));  dx_j = c_j drot_j - s_j drot_{j+D/2};
//             dx_{j+D/2} = s_j drot_j + c_j drot_{j+D/2}

constexpr int kMaxPairsPerLane = 4;

template <typename TX, typename TY>
__global__ void rope_qknorm_forward_kernel(TY* y, float* rstd, const TX* x, const float* cos, const float* sin,
                                           int64_t rows, int64_t heads, int64_t time, int64_t head_dim, float eps) {
  const int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int64_t half = head_dim / 2, t = (row / heads) % time;
  const TX* xr = x + row * head_dim;
  TY* yr = y + row * head_dim;
  float rot1[kMaxPairsPerLane], rot2[kMaxPairsPerLane];
  float sum_squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaxPairsPerLane; ++k) {
    const int64_t j = lane + 32 * k;
    rot1[k] = rot2[k] = 0.0f;
    if (j < half) {
      const float c = cos[t * half + j], s = sin[t * half + j];
      const float x1 = to_float(xr[j]), x2 = to_float(xr[j + half]);
      rot1[k] = x1 * c + x2 * s;
      rot2[k] = -x1 * s + x2 * c;
      sum_squares += rot1[k] * rot1[k] + rot2[k] * rot2[k];
    }
  }
  sum_squares = warp_sum(sum_squares);
  const float inv_rms = rsqrtf(sum_squares / static_cast<float>(head_dim) + eps);
#pragma unroll
  for (int k = 0; k < kMaxPairsPerLane; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < half) {
      yr[j] = from_float<TY>(rot1[k] * inv_rms);
      yr[j + half] = from_float<TY>(rot2[k] * inv_rms);
    }
  }
  if (lane == 0) rstd[row] = inv_rms;
}

template <typename TD, typename TG, typename TY>
__global__ void rope_qknorm_backward_kernel(TD* dx, const TG* dy, const TY* y, const float* rstd, const float* cos,
                                            const float* sin, int64_t rows, int64_t heads, int64_t time,
                                            int64_t head_dim) {
  const int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int64_t half = head_dim / 2, t = (row / heads) % time;
  const TG* dyr = dy + row * head_dim;
  const TY* yr = y + row * head_dim;
  TD* dxr = dx + row * head_dim;
  float dot = 0.0f;
  for (int64_t j = lane; j < head_dim; j += 32) dot += to_float(dyr[j]) * to_float(yr[j]);
  dot = warp_sum(dot);
  const float mean_dot = dot / static_cast<float>(head_dim), inv_rms = rstd[row];
  for (int64_t j = lane; j < half; j += 32) {
    const float c = cos[t * half + j], s = sin[t * half + j];
    const float drot1 = inv_rms * (to_float(dyr[j]) - to_float(yr[j]) * mean_dot);
    const float drot2 = inv_rms * (to_float(dyr[j + half]) - to_float(yr[j + half]) * mean_dot);
    dxr[j] = from_float<TD>(c * drot1 - s * drot2);
    dxr[j + half] = from_float<TD>(s * drot1 + c * drot2);
  }
}

// Vectorised: LANES = head_dim / 16 lanes per row (several rows per warp), lane l of a row takes
// the 8 pairs (j, j + D/2) for j = 8l .. 8l + 7 with 16-byte accesses.
template <typename TX, typename TY, int LANES>
__global__ void rope_qknorm_forward_vec8_kernel(TY* y, float* rstd, const TX* x, const float* cos, const float* sin,
                                                int64_t rows, int64_t heads, int64_t time, float eps) {
  constexpr int64_t kHalf = 8 * LANES, kDim = 2 * kHalf;
  const int lane = threadIdx.x % 32;
  const int64_t row = (blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32) * (32 / LANES) + lane / LANES;
  const int part = lane % LANES;
  const bool active = row < rows;
  const int64_t t = active ? (row / heads) % time : 0;
  float rot1[8], rot2[8];
  float sum_squares = 0.0f;
  if (active) {
    float x1[8], x2[8], c[8], s[8];
    load8(x + row * kDim + 8 * part, x1);
    load8(x + row * kDim + kHalf + 8 * part, x2);
    load8(cos + t * kHalf + 8 * part, c);
    load8(sin + t * kHalf + 8 * part, s);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      rot1[i] = x1[i] * c[i] + x2[i] * s[i];
      rot2[i] = -x1[i] * s[i] + x2[i] * c[i];
      sum_squares += rot1[i] * rot1[i] + rot2[i] * rot2[i];
    }
  }
#pragma unroll
  for (int offset = LANES / 2; offset > 0; offset >>= 1) sum_squares += __shfl_xor_sync(0xffffffffu, sum_squares, offset);
  if (!active) return;
  const float inv_rms = rsqrtf(sum_squares / static_cast<float>(kDim) + eps);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    rot1[i] *= inv_rms;
    rot2[i] *= inv_rms;
  }
  store8(y + row * kDim + 8 * part, rot1);
  store8(y + row * kDim + kHalf + 8 * part, rot2);
  if (part == 0) rstd[row] = inv_rms;
}

template <typename TD, typename TG, typename TY, int LANES>
__global__ void rope_qknorm_backward_vec8_kernel(TD* dx, const TG* dy, const TY* y, const float* rstd, const float* cos,
                                                 const float* sin, int64_t rows, int64_t heads, int64_t time) {
  constexpr int64_t kHalf = 8 * LANES, kDim = 2 * kHalf;
  const int lane = threadIdx.x % 32;
  const int64_t row = (blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32) * (32 / LANES) + lane / LANES;
  const int part = lane % LANES;
  const bool active = row < rows;
  float g1[8], g2[8], y1[8], y2[8];
  float dot = 0.0f;
  if (active) {
    load8(dy + row * kDim + 8 * part, g1);
    load8(dy + row * kDim + kHalf + 8 * part, g2);
    load8(y + row * kDim + 8 * part, y1);
    load8(y + row * kDim + kHalf + 8 * part, y2);
#pragma unroll
    for (int i = 0; i < 8; ++i) dot += g1[i] * y1[i] + g2[i] * y2[i];
  }
#pragma unroll
  for (int offset = LANES / 2; offset > 0; offset >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
  if (!active) return;
  const int64_t t = (row / heads) % time;
  const float mean_dot = dot / static_cast<float>(kDim), inv_rms = rstd[row];
  float c[8], s[8];
  load8(cos + t * kHalf + 8 * part, c);
  load8(sin + t * kHalf + 8 * part, s);
  float dx1[8], dx2[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float drot1 = inv_rms * (g1[i] - y1[i] * mean_dot), drot2 = inv_rms * (g2[i] - y2[i] * mean_dot);
    dx1[i] = c[i] * drot1 - s[i] * drot2;
    dx2[i] = s[i] * drot1 + c[i] * drot2;
  }
  store8(dx + row * kDim + 8 * part, dx1);
  store8(dx + row * kDim + kHalf + 8 * part, dx2);
}

// Calls fn(std::integral_constant<int, LANES>) for the vectorised rope kernels' head dims (32..512).
template <typename Fn>
bool dispatch_rope_lanes(int64_t head_dim, Fn&& fn) {
  switch (head_dim) {
    case 32: fn(std::integral_constant<int, 2>{}); return true;
    case 64: fn(std::integral_constant<int, 4>{}); return true;
    case 128: fn(std::integral_constant<int, 8>{}); return true;
    case 256: fn(std::integral_constant<int, 16>{}); return true;
    default: return false;
  }
}

// ---- softcapped cross-entropy -----------------------------------------------------------------------
//   z = cap tanh(l / cap) (z = l when cap is 0);  loss = logsumexp(z) - z[target]  (0 when target < 0)
//   dlogits_j = scale (softmax(z)_j - [j == target]) (1 - (z_j / cap)^2)
// One block per row. Each thread keeps an online (max, sum of exp) over its columns, then the block
// merges them in a fixed order. The backward pass reads the whole row (pass 1, then a barrier)
// before any thread writes, so dlogits may alias logits.

constexpr int kCrossEntropyThreads = 512;

__device__ __forceinline__ float softcap_value(float l, float cap, float inv_cap) {
  return cap > 0.0f ? cap * tanhf(l * inv_cap) : l;
}

// Online softmax state: m = running max, s = sum exp(z - m).
struct SoftmaxState {
  float m, s;
};

__device__ __forceinline__ SoftmaxState merge(SoftmaxState a, SoftmaxState b) {
  if (a.m == -INFINITY) return b;
  if (b.m == -INFINITY) return a;
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// Merges every thread's state; every thread gets the row's state.
__device__ SoftmaxState block_merge(SoftmaxState state, float* shared_m, float* shared_s) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    SoftmaxState other{__shfl_xor_sync(0xffffffffu, state.m, offset), __shfl_xor_sync(0xffffffffu, state.s, offset)};
    state = merge(state, other);
  }
  if (lane == 0) {
    shared_m[warp] = state.m;
    shared_s[warp] = state.s;
  }
  __syncthreads();
  SoftmaxState total{-INFINITY, 0.0f};
  for (int w = 0; w < warps; ++w) total = merge(total, SoftmaxState{shared_m[w], shared_s[w]});
  return total;
}

template <typename T>
__global__ void __launch_bounds__(kCrossEntropyThreads)
    cross_entropy_forward_kernel(float* losses, int32_t* argmax, const T* logits, const int32_t* targets,
                                 int64_t vocab, float cap, int* error_word) {
  __shared__ float shared_m[32], shared_s[32];
  __shared__ float shared_best[32];
  __shared__ int shared_index[32];
  const int64_t row = blockIdx.x;
  const T* lr = logits + row * vocab;
  const float inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
  SoftmaxState state{-INFINITY, 0.0f};
  float best = -INFINITY;
  int best_index = INT32_MAX;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float z = softcap_value(to_float(lr[j]), cap, inv_cap);
    if (z > best || best_index == INT32_MAX) {  // columns come in increasing order: keeps the first
      best = z;
      best_index = static_cast<int>(j);
    }
    if (z > state.m) {
      state.s = state.s * expf(state.m - z) + 1.0f;
      state.m = z;
    } else {
      state.s += expf(z - state.m);
    }
  }
  const SoftmaxState total = block_merge(state, shared_m, shared_s);
  if (argmax) {
    // (value, index) max with the smaller index on ties
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, best, offset);
      const int other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
      if (other > best || (other == best && other_index < best_index)) {
        best = other;
        best_index = other_index;
      }
    }
    if (lane == 0) {
      shared_best[warp] = best;
      shared_index[warp] = best_index;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < warps; ++w)
        if (shared_best[w] > best || (shared_best[w] == best && shared_index[w] < best_index)) {
          best = shared_best[w];
          best_index = shared_index[w];
        }
      argmax[row] = best_index;
    }
  }
  if (threadIdx.x == 0) {
    const int32_t target = targets[row];
    if (target < 0) {
      losses[row] = 0.0f;
    } else if (target >= vocab) {
      atomicOr(error_word, kErrorTargetOutOfRange);
      losses[row] = NAN;
    } else {
      const float z_target = softcap_value(to_float(lr[target]), cap, inv_cap);
      losses[row] = total.m + logf(total.s) - z_target;
    }
  }
}

template <typename TD, typename T>
__global__ void __launch_bounds__(kCrossEntropyThreads)
    cross_entropy_backward_kernel(TD* dlogits, const T* logits, const int32_t* targets, int64_t vocab, float cap,
                                  ScalarArg loss_scale_arg) {
  __shared__ float shared_m[32], shared_s[32];
  const int64_t row = blockIdx.x;
  const T* lr = logits + row * vocab;
  TD* dr = dlogits + row * vocab;
  const int32_t target = targets[row];
  if (target < 0 || target >= vocab) {  // ignored row (an out-of-range target was flagged by forward)
    for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) dr[j] = from_float<TD>(0.0f);
    return;
  }
  const float inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
  SoftmaxState state{-INFINITY, 0.0f};
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float z = softcap_value(to_float(lr[j]), cap, inv_cap);
    if (z > state.m) {
      state.s = state.s * expf(state.m - z) + 1.0f;
      state.m = z;
    } else {
      state.s += expf(z - state.m);
    }
  }
  const SoftmaxState total = block_merge(state, shared_m, shared_s);  // ends with a barrier: row read
  const float loss_scale = static_cast<float>(loss_scale_arg.get()), inv_sum = 1.0f / total.s;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float z = softcap_value(to_float(lr[j]), cap, inv_cap);
    const float dz_dlogit = cap > 0.0f ? 1.0f - (z * inv_cap) * (z * inv_cap) : 1.0f;
    const float p = expf(z - total.m) * inv_sum;
    dr[j] = from_float<TD>(loss_scale * (p - (j == target ? 1.0f : 0.0f)) * dz_dlogit);
  }
}

unsigned warp_rows_grid(int64_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

void launch_rmsnorm_forward(void* y, DType y_dtype, float* rstd, const void* x, DType x_dtype, int64_t rows,
                            int64_t width, double eps, cudaStream_t stream) {
  if (rows <= 0) return;
  const bool vec8 = width % 8 == 0 && is_aligned16(y) && is_aligned16(x);
  dispatch_compute(x_dtype, [&](auto x_zero) {
    using TX = decltype(x_zero);
    dispatch_compute(y_dtype, [&](auto y_zero) {
      using TY = decltype(y_zero);
      if (vec8) {
        rmsnorm_forward_vec8_kernel<<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
            static_cast<TY*>(y), rstd, static_cast<const TX*>(x), rows, width, static_cast<float>(eps));
      } else {
        rmsnorm_forward_kernel<<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
            static_cast<TY*>(y), rstd, static_cast<const TX*>(x), rows, width, static_cast<float>(eps));
      }
    });
  });
  CT_CUDA_CHECK_LAUNCH("rmsnorm_forward");
}

void launch_rmsnorm_backward(void* dx, DType dx_dtype, const void* dy, DType dy_dtype, const void* y, DType y_dtype,
                             const float* rstd, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0) return;
  const bool vec8 = width % 8 == 0 && is_aligned16(dx) && is_aligned16(dy) && is_aligned16(y);
  dispatch_compute(dx_dtype, [&](auto dx_zero) {
    using TD = decltype(dx_zero);
    dispatch_compute(dy_dtype, [&](auto dy_zero) {
      using TG = decltype(dy_zero);
      dispatch_compute(y_dtype, [&](auto y_zero) {
        using TY = decltype(y_zero);
        if (vec8) {
          rmsnorm_backward_vec8_kernel<<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
              static_cast<TD*>(dx), static_cast<const TG*>(dy), static_cast<const TY*>(y), rstd, rows, width);
        } else {
          rmsnorm_backward_kernel<<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
              static_cast<TD*>(dx), static_cast<const TG*>(dy), static_cast<const TY*>(y), rstd, rows, width);
        }
      });
    });
  });
  CT_CUDA_CHECK_LAUNCH("rmsnorm_backward");
}

void launch_rope_qknorm_forward(void* y, DType y_dtype, float* rstd, const void* x, DType x_dtype, const float* cos,
                                const float* sin, int64_t rows, int64_t heads, int64_t time, int64_t head_dim,
                                double eps, cudaStream_t stream) {
  if (rows <= 0) return;
  check(head_dim <= 2 * 32 * kMaxPairsPerLane, "rope_qknorm: head_dim ", head_dim, " is above the CUDA limit of ",
        2 * 32 * kMaxPairsPerLane);
  const bool aligned = is_aligned16(y) && is_aligned16(x) && is_aligned16(cos) && is_aligned16(sin);
  dispatch_compute(x_dtype, [&](auto x_zero) {
    using TX = decltype(x_zero);
    dispatch_compute(y_dtype, [&](auto y_zero) {
      using TY = decltype(y_zero);
      const bool vectorised = aligned && dispatch_rope_lanes(head_dim, [&](auto lanes) {
        constexpr int kLanes = decltype(lanes)::value;
        const int64_t rows_per_block = kWarpsPerBlock * (32 / kLanes);
        rope_qknorm_forward_vec8_kernel<TX, TY, kLanes>
            <<<static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), kWarpsPerBlock * 32, 0, stream>>>(
                static_cast<TY*>(y), rstd, static_cast<const TX*>(x), cos, sin, rows, heads, time,
                static_cast<float>(eps));
      });
      if (!vectorised)
        rope_qknorm_forward_kernel<<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
            static_cast<TY*>(y), rstd, static_cast<const TX*>(x), cos, sin, rows, heads, time, head_dim,
            static_cast<float>(eps));
    });
  });
  CT_CUDA_CHECK_LAUNCH("rope_qknorm_forward");
}

void launch_rope_qknorm_backward(void* dx, DType dx_dtype, const void* dy, DType dy_dtype, const void* y, DType y_dtype,
                                 const float* rstd, const float* cos, const float* sin, int64_t rows, int64_t heads,
                                 int64_t time, int64_t head_dim, cudaStream_t stream) {
  if (rows <= 0) return;
  const bool aligned = is_aligned16(dx) && is_aligned16(dy) && is_aligned16(y) && is_aligned16(cos) && is_aligned16(sin);
  dispatch_compute(dx_dtype, [&](auto dx_zero) {
    using TD = decltype(dx_zero);
    dispatch_compute(dy_dtype, [&](auto dy_zero) {
      using TG = decltype(dy_zero);
      dispatch_compute(y_dtype, [&](auto y_zero) {
        using TY = decltype(y_zero);
        const bool vectorised = aligned && dispatch_rope_lanes(head_dim, [&](auto lanes) {
          constexpr int kLanes = decltype(lanes)::value;
          const int64_t rows_per_block = kWarpsPerBlock * (32 / kLanes);
          rope_qknorm_backward_vec8_kernel<TD, TG, TY, kLanes>
              <<<static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), kWarpsPerBlock * 32, 0,
                 stream>>>(static_cast<TD*>(dx), static_cast<const TG*>(dy), static_cast<const TY*>(y), rstd, cos,
                           sin, rows, heads, time);
        });
        if (!vectorised)
          rope_qknorm_backward_kernel<<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
              static_cast<TD*>(dx), static_cast<const TG*>(dy), static_cast<const TY*>(y), rstd, cos, sin, rows, heads,
              time, head_dim);
      });
    });
  });
  CT_CUDA_CHECK_LAUNCH("rope_qknorm_backward");
}

void launch_cross_entropy_forward(float* losses, int32_t* argmax, const void* logits, DType dtype,
                                  const int32_t* targets, int64_t rows, int64_t vocab, double softcap,
                                  int* error_word, cudaStream_t stream) {
  if (rows <= 0) return;
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_forward_kernel<<<static_cast<unsigned>(rows), kCrossEntropyThreads, 0, stream>>>(
        losses, argmax, static_cast<const T*>(logits), targets, vocab, static_cast<float>(softcap), error_word);
  });
  CT_CUDA_CHECK_LAUNCH("cross_entropy_forward");
}

void launch_cross_entropy_backward(void* dlogits, DType d_dtype, const void* logits, DType dtype,
                                   const int32_t* targets, int64_t rows, int64_t vocab, double softcap,
                                   ScalarArg loss_scale, cudaStream_t stream) {
  if (rows <= 0) return;
  dispatch_compute(d_dtype, [&](auto d_zero) {
    using TD = decltype(d_zero);
    dispatch_compute(dtype, [&](auto zero) {
      using T = decltype(zero);
      cross_entropy_backward_kernel<<<static_cast<unsigned>(rows), kCrossEntropyThreads, 0, stream>>>(
          static_cast<TD*>(dlogits), static_cast<const T*>(logits), targets, vocab, static_cast<float>(softcap),
          loss_scale);
    });
  });
  CT_CUDA_CHECK_LAUNCH("cross_entropy_backward");
}

}  // namespace ct::cuda
