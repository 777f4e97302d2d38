// RMSNorm without weight on the CUDA backend: the kernels and CudaBackend's do_rmsnorm_forward /
// do_rmsnorm_backward, one file per op as on the CPU (cpu/cpu_rmsnorm.cpp, the reference; the math is
// in ops.def). One warp per row; arithmetic in f32; the reductions in a fixed order (deterministic).
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_limits.h"

namespace ct::cuda {

namespace {

//   forward:  r = 1 / sqrt(mean(x^2) + eps),  y = x r
//   backward: dx += r (dy - y mean(dy y))
// Each lane takes V consecutive elements at a time: V == 8 with 16-byte accesses (width % 8 == 0, rows
// 16-byte aligned), else V == 1. Lane l sums its elements in order, then the warp sums the lanes.

template <int V, typename TX, typename TY>
__global__ void rmsnorm_forward_kernel(TY* y, float* rstd, const TX* x, int64_t rows, int64_t width, float eps) {
  const WarpRow w = warp_row();
  if (w.row >= rows) return;
  const TX* xr = x + w.row * width;
  TY* yr = y + w.row * width;
  const int64_t chunks = width / V;
  float sum_squares = 0.0f;
  for (int64_t c = w.lane; c < chunks; c += 32) {
    float v[V];
    load_n(xr + V * c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) sum_squares += v[i] * v[i];
  }
  sum_squares = warp_sum(sum_squares);
  const float inv_rms = rsqrtf(sum_squares / static_cast<float>(width) + eps);
  for (int64_t c = w.lane; c < chunks; c += 32) {
    float v[V];
    load_n(xr + V * c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] *= inv_rms;
    store_n(yr + V * c, v);
  }
  if (w.lane == 0) rstd[w.row] = inv_rms;
}

template <int V, typename TD, typename TG, typename TY>
__global__ void rmsnorm_backward_kernel(TD* dx, const TG* dy, const TY* y, const float* rstd, int64_t rows,
                                        int64_t width) {
  const WarpRow w = warp_row();
  if (w.row >= rows) return;
  const TG* dyr = dy + w.row * width;
  const TY* yr = y + w.row * width;
  TD* dxr = dx + w.row * width;
  const int64_t chunks = width / V;
  float dot = 0.0f;
  for (int64_t c = w.lane; c < chunks; c += 32) {
    float g[V], v[V];
    load_n(dyr + V * c, g);
    load_n(yr + V * c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) dot += g[i] * v[i];
  }
  dot = warp_sum(dot);
  const float mean_dot = dot / static_cast<float>(width), inv_rms = rstd[w.row];
  for (int64_t c = w.lane; c < chunks; c += 32) {
    float g[V], v[V], acc[V];
    load_n(dyr + V * c, g);
    load_n(yr + V * c, v);
    load_n(dxr + V * c, acc);
#pragma unroll
    for (int i = 0; i < V; ++i) acc[i] += inv_rms * (g[i] - v[i] * mean_dot);
    store_n(dxr + V * c, acc);
  }
}

// Calls fn(std::integral_constant<int, V>) with V = 8 when `vec8`, else 1.
template <typename Fn>
void dispatch_per_lane(bool vec8, Fn&& fn) {
  if (vec8) fn(std::integral_constant<int, 8>{});
  else fn(std::integral_constant<int, 1>{});
}

void launch_rmsnorm_forward(void* y, DType y_dtype, float* rstd, const void* x, DType x_dtype, int64_t rows,
                            int64_t width, double eps, cudaStream_t stream) {
  if (rows <= 0) return;
  const bool vec8 = width % 8 == 0 && is_aligned16(y) && is_aligned16(x);
  dispatch_compute(x_dtype, y_dtype, [&](auto x_zero, auto y_zero) {
    using TX = decltype(x_zero);
    using TY = decltype(y_zero);
    dispatch_per_lane(vec8, [&](auto per_lane) {
      rmsnorm_forward_kernel<decltype(per_lane)::value><<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
          static_cast<TY*>(y), rstd, static_cast<const TX*>(x), rows, width, static_cast<float>(eps));
    });
  });
  CT_CUDA_CHECK_LAUNCH("rmsnorm_forward");
}

// dx += r (dy - y mean(dy y)); dx, dy and y each f32 or bf16 (the model's mixed precision: f32
// gradients, a bf16 norm output).
void launch_rmsnorm_backward(void* dx, DType dx_dtype, const void* dy, DType dy_dtype, const void* y, DType y_dtype,
                             const float* rstd, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0) return;
  const bool vec8 = width % 8 == 0 && is_aligned16(dx) && is_aligned16(dy) && is_aligned16(y);
  dispatch_compute(dx_dtype, dy_dtype, y_dtype, [&](auto dx_zero, auto dy_zero, auto y_zero) {
    using TD = decltype(dx_zero);
    using TG = decltype(dy_zero);
    using TY = decltype(y_zero);
    dispatch_per_lane(vec8, [&](auto per_lane) {
      rmsnorm_backward_kernel<decltype(per_lane)::value>
          <<<warp_rows_grid(rows), kWarpsPerBlock * 32, 0, stream>>>(
              static_cast<TD*>(dx), static_cast<const TG*>(dy), static_cast<const TY*>(y), rstd, rows, width);
    });
  });
  CT_CUDA_CHECK_LAUNCH("rmsnorm_backward");
}

}  // namespace

void CudaBackend::do_rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, double eps) {
  const RowShape s = rows_of(x);
  OpCall call = graph_call("rmsnorm_forward", Signature().tensor(y).tensor(rstd).tensor(x).real(eps), {y, rstd, x});
  if (!call.launch) return;
  launch_rmsnorm_forward(y.data, y.dtype, rstd.as<float>(), x.data, x.dtype, s.rows, s.width, eps, stream_);
}

void CudaBackend::do_rmsnorm_backward(const Tensor& dx_acc, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  const RowShape s = rows_of(y);
  OpCall call = graph_call("rmsnorm_backward", Signature().tensor(dx_acc).tensor(dy).tensor(y).tensor(rstd),
                           {dx_acc, dy, y, rstd});
  if (!call.launch) return;
  launch_rmsnorm_backward(dx_acc.data, dx_acc.dtype, dy.data, dy.dtype, y.data, y.dtype, rstd.as<float>(), s.rows,
                          s.width, stream_);
}

}  // namespace ct::cuda
