// The softcapped cross-entropy on the CUDA backend: the kernels and CudaBackend's
// do_softcap_cross_entropy_forward / _backward, one file per op as on the CPU (cpu/cpu_cross_entropy.cpp,
// the reference; the math is in ops.def). One block per row of the vocabulary; arithmetic in f32,
// reductions in a fixed order (deterministic).
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_limits.h"

namespace ct::cuda {

namespace {

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

// losses[n] (f32), argmax[n] (i32, may be null); logits of dtype `dtype`, [rows, vocab].
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

// dlogits (dtype d_dtype) may alias logits when the dtypes match.
void launch_cross_entropy_backward(void* dlogits, DType d_dtype, const void* logits, DType dtype,
                                   const int32_t* targets, int64_t rows, int64_t vocab, double softcap,
                                   ScalarArg loss_scale, cudaStream_t stream) {
  if (rows <= 0) return;
  dispatch_compute(d_dtype, dtype, [&](auto d_zero, auto zero) {
    using TD = decltype(d_zero);
    using T = decltype(zero);
    cross_entropy_backward_kernel<<<static_cast<unsigned>(rows), kCrossEntropyThreads, 0, stream>>>(
        static_cast<TD*>(dlogits), static_cast<const T*>(logits), targets, vocab, static_cast<float>(softcap),
        loss_scale);
  });
  CT_CUDA_CHECK_LAUNCH("cross_entropy_backward");
}

}  // namespace

void CudaBackend::do_softcap_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                                   const Tensor& targets, double softcap) {
  const RowShape s = rows_of(logits);
  OpCall call = graph_call("softcap_cross_entropy_forward",
                           Signature().tensor(losses).tensor(argmax).tensor(logits).tensor(targets).real(softcap),
                           {losses, argmax, logits, targets});
  if (!call.launch) return;
  launch_cross_entropy_forward(losses.as<float>(), argmax.empty() ? nullptr : argmax.as<int32_t>(), logits.data,
                               logits.dtype, targets.as<int32_t>(), s.rows, s.width, softcap, error_word_, stream_);
}

void CudaBackend::do_softcap_cross_entropy_backward(const Tensor& dlogits_out, const Tensor& logits,
                                                    const Tensor& targets, double softcap, double loss_scale) {
  const RowShape s = rows_of(logits);
  OpCall call = graph_call("softcap_cross_entropy_backward",
                           Signature().tensor(dlogits_out).tensor(logits).tensor(targets).real(softcap),
                           {dlogits_out, logits, targets}, {loss_scale});
  if (!call.launch) return;
  launch_cross_entropy_backward(dlogits_out.data, dlogits_out.dtype, logits.data, logits.dtype, targets.as<int32_t>(),
                                s.rows, s.width, softcap, call.scalar(0), stream_);
}

}  // namespace ct::cuda
