// Rotary embedding + QK norm on the CUDA backend: the kernels and CudaBackend's do_rope_qknorm_forward /
// do_rope_qknorm_backward, one file per op as on the CPU (cpu/cpu_rope_qknorm.cpp, the reference; the
// math is in ops.def). One warp (or a group of lanes) per row; arithmetic in f32, deterministic.
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_limits.h"

namespace ct::cuda {

namespace {

struct RopeShape {
  int64_t batch, time, heads, head_dim;
  int64_t rows() const { return batch * time * heads; }
};

// x [B, T, H, D] (checked by the contract), within the kernels' head_dim limit.
RopeShape rope_shape(const char* op, const Tensor& x) {
  const RopeShape s{x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
  check_head_dim(op, s.head_dim, x);
  return s;
}

// Row r of [B*T*H, D] sits at time t = (r / H) % T; lane l handles the pairs (j, j + D/2) for
// j = l, l + 32, ... (at most kMaxPairsPerLane of them: head_dim <= 256).
//   rot_j = x_j c_j + x_{j+D/2} s_j;  rot_{j+D/2} = -x_j s_j + x_{j+D/2} c_j;  y = rot / rms(rot)
//   backward: drot = r (dy - y mean(dy y));  dx_j = c_j drot_j - s_j drot_{j+D/2};
//             dx_{j+D/2} = s_j drot_j + c_j drot_{j+D/2}

constexpr int kMaxPairsPerLane = 4;

template <typename TX, typename TY>
__global__ void rope_qknorm_forward_kernel(TY* y, float* rstd, const TX* x, const float* cos, const float* sin,
                                           int64_t rows, int64_t heads, int64_t time, int64_t head_dim, float eps) {
  const auto [row, lane] = warp_row();
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
  const auto [row, lane] = warp_row();
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

// x, y: [rows = B*T*H, D]; row r sits at time (r / heads) % time; cos/sin already offset to pos_offset.
// x, y (and dx, dy, y) each f32 or bf16: the model's f32 projection outputs, bf16 q and k.
void launch_rope_qknorm_forward(void* y, DType y_dtype, float* rstd, const void* x, DType x_dtype, const float* cos,
                                const float* sin, int64_t rows, int64_t heads, int64_t time, int64_t head_dim,
                                double eps, cudaStream_t stream) {
  if (rows <= 0) return;
  check(head_dim <= 2 * 32 * kMaxPairsPerLane, "rope_qknorm: head_dim ", head_dim, " is above the CUDA limit of ",
        2 * 32 * kMaxPairsPerLane);
  const bool aligned = is_aligned16(y) && is_aligned16(x) && is_aligned16(cos) && is_aligned16(sin);
  dispatch_compute(x_dtype, y_dtype, [&](auto x_zero, auto y_zero) {
    using TX = decltype(x_zero);
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
  CT_CUDA_CHECK_LAUNCH("rope_qknorm_forward");
}

void launch_rope_qknorm_backward(void* dx, DType dx_dtype, const void* dy, DType dy_dtype, const void* y, DType y_dtype,
                                 const float* rstd, const float* cos, const float* sin, int64_t rows, int64_t heads,
                                 int64_t time, int64_t head_dim, cudaStream_t stream) {
  if (rows <= 0) return;
  const bool aligned = is_aligned16(dx) && is_aligned16(dy) && is_aligned16(y) && is_aligned16(cos) && is_aligned16(sin);
  dispatch_compute(dx_dtype, dy_dtype, y_dtype, [&](auto dx_zero, auto dy_zero, auto y_zero) {
    using TD = decltype(dx_zero);
    using TG = decltype(dy_zero);
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
  CT_CUDA_CHECK_LAUNCH("rope_qknorm_backward");
}

}  // namespace

void CudaBackend::do_rope_qknorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& cos,
                                         const Tensor& sin, int64_t pos_offset, double eps) {
  const RopeShape s = rope_shape("rope_qknorm_forward", x);
  OpCall call = graph_call("rope_qknorm_forward",
                           Signature().tensor(y).tensor(rstd).tensor(x).tensor(cos).tensor(sin).integer(pos_offset).real(eps),
                           {y, rstd, x, cos, sin});
  if (!call.launch) return;
  const int64_t half = s.head_dim / 2;
  launch_rope_qknorm_forward(y.data, y.dtype, rstd.as<float>(), x.data, x.dtype, cos.as<float>() + pos_offset * half,
                             sin.as<float>() + pos_offset * half, s.rows(), s.heads, s.time, s.head_dim, eps, stream_);
}

void CudaBackend::do_rope_qknorm_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& y,
                                          const Tensor& rstd, const Tensor& cos, const Tensor& sin,
                                          int64_t pos_offset) {
  const char* op = "rope_qknorm_backward";
  const RopeShape s = rope_shape(op, y);
  OpCall call = graph_call(op, Signature().tensor(dx_out).tensor(dy).tensor(y).tensor(rstd).tensor(cos).tensor(sin).integer(pos_offset),
                           {dx_out, dy, y, rstd, cos, sin});
  if (!call.launch) return;
  const int64_t half = s.head_dim / 2;
  launch_rope_qknorm_backward(dx_out.data, dx_out.dtype, dy.data, dy.dtype, y.data, y.dtype, rstd.as<float>(),
                              cos.as<float>() + pos_offset * half, sin.as<float>() + pos_offset * half, s.rows(),
                              s.heads, s.time, s.head_dim, stream_);
}

}  // namespace ct::cuda
