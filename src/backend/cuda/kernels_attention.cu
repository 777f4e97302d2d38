// Causal attention, reference kernels: one warp per query row (forward, dq) or per key row (dk, dv),
// head_dim <= 256 spread over the lanes, f32 arithmetic on f32 or bf16 storage. Simple enough to
// check by eye; the tensor-core kernels (kernels_flash.cu) are tested against these and the CPU.
//
// Shapes: q, out [B, Tq, H, D]; k, v [B, Tk, Hkv, D]; lse, delta [B, H, Tq]. Query i sits at
// absolute position Tk - Tq + i and sees keys 0 .. Tk - Tq + i; query head h reads kv head h / (H/Hkv).
//   forward:  s_j = scale q.k_j;  lse = log sum_j exp(s_j);  out = sum_j exp(s_j - lse) v_j
//   backward: p_ij = exp(s_ij - lse_i);  D_i = dout_i . out_i;  ds_ij = p_ij (dout_i . v_j - D_i)
//             dq_i = scale sum_j ds_ij k_j;  dk_j = scale sum_i ds_ij q_i;  dv_j = sum_i p_ij dout_i
#include "backend/cuda/cuda_common.cuh"

namespace ct::cuda {

namespace {

constexpr int kMaxPerLane = 8;  // head_dim <= 256
constexpr int kWarps = 4;

struct Layout {
  int64_t batch, query_len, key_len, heads, kv_heads, head_dim;
  __device__ int64_t group() const { return heads / kv_heads; }
  __device__ int64_t key_offset() const { return key_len - query_len; }
  __device__ int64_t q_row(int64_t b, int64_t t, int64_t h) const { return ((b * query_len + t) * heads + h) * head_dim; }
  __device__ int64_t kv_row(int64_t b, int64_t t, int64_t g) const {
    return ((b * key_len + t) * kv_heads + g) * head_dim;
  }
  __device__ int64_t lse_index(int64_t b, int64_t h, int64_t i) const { return (b * heads + h) * query_len + i; }
};

Layout layout_of(const AttentionDims& d) {
  return {d.batch, d.query_len, d.key_len, d.heads, d.kv_heads, d.head_dim};
}

// Loads row[lane + 32 k] into r[k] (0 past head_dim).
template <typename T>
__device__ __forceinline__ void load_row(float (&r)[kMaxPerLane], const T* row, int64_t head_dim, int lane) {
#pragma unroll
  for (int k = 0; k < kMaxPerLane; ++k) {
    const int64_t d = lane + 32 * k;
    r[k] = d < head_dim ? to_float(row[d]) : 0.0f;
  }
}

template <typename T>
__device__ __forceinline__ float dot_row(const float (&r)[kMaxPerLane], const T* row, int64_t head_dim, int lane) {
  float partial = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaxPerLane; ++k) {
    const int64_t d = lane + 32 * k;
    if (d < head_dim) partial += r[k] * to_float(row[d]);
  }
  return warp_sum(partial);
}

template <typename T>
__global__ void forward_kernel(T* out, float* lse, const T* q, const T* k, const T* v, Layout s, float scale) {
  const int64_t i = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32, h = blockIdx.y, b = blockIdx.z;
  const int lane = threadIdx.x % 32;
  if (i >= s.query_len) return;
  const int64_t g = h / s.group();
  float q_row[kMaxPerLane], acc[kMaxPerLane];
  load_row(q_row, q + s.q_row(b, i, h), s.head_dim, lane);
#pragma unroll
  for (int kk = 0; kk < kMaxPerLane; ++kk) acc[kk] = 0.0f;
  float running_max = -INFINITY, running_sum = 0.0f;
  const int64_t last_key = s.key_offset() + i;
  for (int64_t j = 0; j <= last_key; ++j) {
    const float score = scale * dot_row(q_row, k + s.kv_row(b, j, g), s.head_dim, lane);
    const float new_max = fmaxf(running_max, score);
    const float correction = expf(running_max - new_max), p = expf(score - new_max);
    running_sum = running_sum * correction + p;
    running_max = new_max;
    const T* v_row = v + s.kv_row(b, j, g);
#pragma unroll
    for (int kk = 0; kk < kMaxPerLane; ++kk) {
      const int64_t d = lane + 32 * kk;
      acc[kk] = acc[kk] * correction + (d < s.head_dim ? p * to_float(v_row[d]) : 0.0f);
    }
  }
  T* out_row = out + s.q_row(b, i, h);
  const float inv_sum = 1.0f / running_sum;
#pragma unroll
  for (int kk = 0; kk < kMaxPerLane; ++kk) {
    const int64_t d = lane + 32 * kk;
    if (d < s.head_dim) out_row[d] = from_float<T>(acc[kk] * inv_sum);
  }
  if (lane == 0) lse[s.lse_index(b, h, i)] = running_max + logf(running_sum);
}

// delta[b, h, i] = dout_i . out_i (the softmax backward's row sums)
template <typename T>
__global__ void delta_kernel(float* delta, const T* dout, const T* out, Layout s) {
  const int64_t i = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32, h = blockIdx.y, b = blockIdx.z;
  const int lane = threadIdx.x % 32;
  if (i >= s.query_len) return;
  float row[kMaxPerLane];
  load_row(row, dout + s.q_row(b, i, h), s.head_dim, lane);
  const float value = dot_row(row, out + s.q_row(b, i, h), s.head_dim, lane);
  if (lane == 0) delta[s.lse_index(b, h, i)] = value;
}

template <typename T>
__global__ void dq_kernel(T* dq, const T* dout, const float* lse, const float* delta, const T* q, const T* k,
                          const T* v, Layout s, float scale) {
  const int64_t i = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32, h = blockIdx.y, b = blockIdx.z;
  const int lane = threadIdx.x % 32;
  if (i >= s.query_len) return;
  const int64_t g = h / s.group();
  float q_row[kMaxPerLane], dout_row[kMaxPerLane], acc[kMaxPerLane];
  load_row(q_row, q + s.q_row(b, i, h), s.head_dim, lane);
  load_row(dout_row, dout + s.q_row(b, i, h), s.head_dim, lane);
#pragma unroll
  for (int kk = 0; kk < kMaxPerLane; ++kk) acc[kk] = 0.0f;
  const float lse_i = lse[s.lse_index(b, h, i)], delta_i = delta[s.lse_index(b, h, i)];
  const int64_t last_key = s.key_offset() + i;
  for (int64_t j = 0; j <= last_key; ++j) {
    const T* k_row = k + s.kv_row(b, j, g);
    const float p = expf(scale * dot_row(q_row, k_row, s.head_dim, lane) - lse_i);
    const float ds = p * (dot_row(dout_row, v + s.kv_row(b, j, g), s.head_dim, lane) - delta_i);
#pragma unroll
    for (int kk = 0; kk < kMaxPerLane; ++kk) {
      const int64_t d = lane + 32 * kk;
      if (d < s.head_dim) acc[kk] += ds * to_float(k_row[d]);
    }
  }
  T* dq_row = dq + s.q_row(b, i, h);
#pragma unroll
  for (int kk = 0; kk < kMaxPerLane; ++kk) {
    const int64_t d = lane + 32 * kk;
    if (d < s.head_dim) dq_row[d] = from_float<T>(scale * acc[kk]);
  }
}

template <typename T>
__global__ void dkdv_kernel(T* dk, T* dv, const T* dout, const float* lse, const float* delta, const T* q, const T* k,
                            const T* v, Layout s, float scale) {
  const int64_t j = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32, g = blockIdx.y, b = blockIdx.z;
  const int lane = threadIdx.x % 32;
  if (j >= s.key_len) return;
  float k_row[kMaxPerLane], v_row[kMaxPerLane], dk_acc[kMaxPerLane], dv_acc[kMaxPerLane];
  load_row(k_row, k + s.kv_row(b, j, g), s.head_dim, lane);
  load_row(v_row, v + s.kv_row(b, j, g), s.head_dim, lane);
#pragma unroll
  for (int kk = 0; kk < kMaxPerLane; ++kk) dk_acc[kk] = dv_acc[kk] = 0.0f;
  // queries that see key j: key_offset + i >= j
  const int64_t first_query = j - s.key_offset() > 0 ? j - s.key_offset() : 0;
  for (int64_t h = g * s.group(); h < (g + 1) * s.group(); ++h) {
    for (int64_t i = first_query; i < s.query_len; ++i) {
      const T* q_row = q + s.q_row(b, i, h);
      const T* dout_row = dout + s.q_row(b, i, h);
      const float p = expf(scale * dot_row(k_row, q_row, s.head_dim, lane) - lse[s.lse_index(b, h, i)]);
      const float ds = p * (dot_row(v_row, dout_row, s.head_dim, lane) - delta[s.lse_index(b, h, i)]);
#pragma unroll
      for (int kk = 0; kk < kMaxPerLane; ++kk) {
        const int64_t d = lane + 32 * kk;
        if (d < s.head_dim) {
          dv_acc[kk] += p * to_float(dout_row[d]);
          dk_acc[kk] += ds * to_float(q_row[d]);
        }
      }
    }
  }
  T* dk_out = dk + s.kv_row(b, j, g);
  T* dv_out = dv + s.kv_row(b, j, g);
#pragma unroll
  for (int kk = 0; kk < kMaxPerLane; ++kk) {
    const int64_t d = lane + 32 * kk;
    if (d < s.head_dim) {
      dk_out[d] = from_float<T>(scale * dk_acc[kk]);
      dv_out[d] = from_float<T>(dv_acc[kk]);
    }
  }
}

dim3 query_grid(const AttentionDims& d) {
  return dim3(static_cast<unsigned>((d.query_len + kWarps - 1) / kWarps), static_cast<unsigned>(d.heads),
              static_cast<unsigned>(d.batch));
}

}  // namespace

void launch_attention_forward_reference(void* out, float* lse, const void* q, const void* k, const void* v,
                                        DType dtype, const AttentionDims& dims, double scale, cudaStream_t stream) {
  if (dims.batch * dims.query_len * dims.heads == 0) return;
  check(dims.head_dim <= 32 * kMaxPerLane, "attention: head_dim ", dims.head_dim, " is above the CUDA limit of ",
        32 * kMaxPerLane);
  const Layout s = layout_of(dims);
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<<<query_grid(dims), kWarps * 32, 0, stream>>>(static_cast<T*>(out), lse, static_cast<const T*>(q),
                                                                 static_cast<const T*>(k), static_cast<const T*>(v),
                                                                 s, static_cast<float>(scale));
  });
  CT_CUDA_CHECK_LAUNCH("attention_forward_reference");
}

void launch_attention_backward_reference(void* dq, void* dk, void* dv, const void* dout, const void* out,
                                         const float* lse, const void* q, const void* k, const void* v, DType dtype,
                                         const AttentionDims& dims, double scale, float* delta, cudaStream_t stream) {
  if (dims.batch * dims.heads == 0) return;
  check(dims.head_dim <= 32 * kMaxPerLane, "attention: head_dim ", dims.head_dim, " is above the CUDA limit of ",
        32 * kMaxPerLane);
  const Layout s = layout_of(dims);
  const dim3 key_grid(static_cast<unsigned>((dims.key_len + kWarps - 1) / kWarps), static_cast<unsigned>(dims.kv_heads),
                      static_cast<unsigned>(dims.batch));
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* dout_t = static_cast<const T*>(dout);
    const T* q_t = static_cast<const T*>(q);
    const T* k_t = static_cast<const T*>(k);
    const T* v_t = static_cast<const T*>(v);
    if (dims.query_len > 0) {
      launch_attention_delta(delta, dout, out, dtype, dims, stream);
      dq_kernel<<<query_grid(dims), kWarps * 32, 0, stream>>>(static_cast<T*>(dq), dout_t, lse, delta, q_t, k_t, v_t,
                                                              s, static_cast<float>(scale));
    }
    if (dims.key_len > 0)
      dkdv_kernel<<<key_grid, kWarps * 32, 0, stream>>>(static_cast<T*>(dk), static_cast<T*>(dv), dout_t, lse, delta,
                                                        q_t, k_t, v_t, s, static_cast<float>(scale));
  });
  CT_CUDA_CHECK_LAUNCH("attention_backward_reference");
}

void launch_attention_delta(float* delta, const void* dout, const void* out, DType dtype, const AttentionDims& dims,
                            cudaStream_t stream) {
  if (dims.batch * dims.heads * dims.query_len == 0) return;
  const Layout s = layout_of(dims);
  dispatch_compute(dtype, [&](auto zero) {
    using T = decltype(zero);
    delta_kernel<<<query_grid(dims), kWarps * 32, 0, stream>>>(delta, static_cast<const T*>(dout),
                                                               static_cast<const T*>(out), s);
  });
  CT_CUDA_CHECK_LAUNCH("attention_delta");
}

}  // namespace ct::cuda
