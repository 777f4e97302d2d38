// RMSNorm without weight over the last dimension, x viewed as [R, C].
//   forward:  r = 1 / sqrt(mean_c(x^2) + eps),  y = x r
//   backward: with s = mean_c(dy y):  dx += r (dy - y s)
//     (dy_j/dx_i = r [i == j] - r^3 x_i x_j / C, and r^2 x_i x_j = y_i y_j)
// Rows are independent: parallel over rows. On the f32 path x, y and dy may each be stored in bf16
// (the model's mixed precision: y feeds matmuls); the arithmetic is f32 throughout.
#include <cmath>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/storage.h"

namespace ct {

namespace {

// T: compute type; SX, SY, SD: storage of x, y, dy (float or bf16 on the f32 path, double on f64).
template <typename T, typename SY, typename SX>
void rmsnorm_forward_kernel(SY* y, T* rstd, const SX* x, int64_t rows, int64_t width, T eps) {
#pragma omp parallel for schedule(static) if (rows * width > kMinParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const SX* xr = x + r * width;
    SY* yr = y + r * width;
    T sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
    for (int64_t c = 0; c < width; ++c) {
      const T v = load_as<T>(xr, c);
      sum_squares += v * v;
    }
    T inv_rms = T(1) / std::sqrt(sum_squares / static_cast<T>(width) + eps);
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) store_as(yr, c, load_as<T>(xr, c) * inv_rms);
    rstd[r] = inv_rms;
  }
}

template <typename T, typename SD, typename SY>
void rmsnorm_backward_kernel(T* dx, const SD* dy, const SY* y, const T* rstd, int64_t rows, int64_t width) {
#pragma omp parallel for schedule(static) if (rows * width > kMinParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const SD* dyr = dy + r * width;
    const SY* yr = y + r * width;
    T* dxr = dx + r * width;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < width; ++c) dot += load_as<T>(dyr, c) * load_as<T>(yr, c);
    T mean_dot = dot / static_cast<T>(width), inv_rms = rstd[r];
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) dxr[c] += inv_rms * (load_as<T>(dyr, c) - load_as<T>(yr, c) * mean_dot);
  }
}

}  // namespace

void CpuBackend::do_rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, double eps) {
  const DType dtype = x.dtype == DType::f64 ? DType::f64 : DType::f32;
  int64_t width = x.shape[x.shape.ndim - 1], rows = width > 0 ? x.numel() / width : 0;
  if (dtype == DType::f64) {
    SideValues<double> inv_rms(rstd);
    rmsnorm_forward_kernel(y.as<double>(), inv_rms.data(), x.as<double>(), rows, width, eps);
    inv_rms.store();
    return;
  }
  SideValues<float> inv_rms(rstd);
  with_f32_storage(x.dtype, [&](auto sx) {
    with_f32_storage(y.dtype, [&](auto sy) {
      rmsnorm_forward_kernel(y.as<decltype(sy)>(), inv_rms.data(), x.as<decltype(sx)>(), rows, width,
                             static_cast<float>(eps));
    });
  });
  inv_rms.store();
}

void CpuBackend::do_rmsnorm_backward(const Tensor& dx_acc, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  const DType dtype = y.dtype == DType::f64 ? DType::f64 : DType::f32;
  // the CPU accumulates into f32 (or f64) only: no bf16 dx_acc kernel
  check_dtype("rmsnorm_backward", "dx_acc", dx_acc, dtype);
  int64_t width = y.shape[y.shape.ndim - 1], rows = width > 0 ? y.numel() / width : 0;
  if (dtype == DType::f64) {
    SideValues<double> inv_rms(rstd);
    inv_rms.load();
    rmsnorm_backward_kernel(dx_acc.as<double>(), dy.as<double>(), y.as<double>(), inv_rms.data(), rows, width);
    return;
  }
  SideValues<float> inv_rms(rstd);
  inv_rms.load();
  with_f32_storage(dy.dtype, [&](auto sd) {
    with_f32_storage(y.dtype, [&](auto sy) {
      rmsnorm_backward_kernel(dx_acc.as<float>(), dy.as<decltype(sd)>(), y.as<decltype(sy)>(), inv_rms.data(), rows,
                              width);
    });
  });
}

}  // namespace ct
