// RMSNorm without weight over the last dimension, x viewed as [R, C].
//   forward:  r = 1 / sqrt(mean_c(x^2) + eps),  y = x r
//   backward: with s = mean_c(dy y):  dx += r (dy - y s)
//     (dy_j/dx_i = r [i == j] - r^3 x_i x_j / C, and r^2 x_i x_j = y_i y_j)
// Rows are independent: parallel over rows.
#include <cmath>

#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

namespace {

template <typename T>
void rmsnorm_forward_kernel(T* y, T* rstd, const T* x, int64_t rows, int64_t width, T eps) {
#pragma omp parallel for schedule(static) if (rows * width > kMinParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * width;
    T* yr = y + r * width;
    T sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
    for (int64_t c = 0; c < width; ++c) sum_squares += xr[c] * xr[c];
    T inv_rms = T(1) / std::sqrt(sum_squares / static_cast<T>(width) + eps);
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) yr[c] = xr[c] * inv_rms;
    rstd[r] = inv_rms;
  }
}

template <typename T>
void rmsnorm_backward_kernel(T* dx, const T* dy, const T* y, const T* rstd, int64_t rows, int64_t width) {
#pragma omp parallel for schedule(static) if (rows * width > kMinParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * width;
    const T* yr = y + r * width;
    T* dxr = dx + r * width;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < width; ++c) dot += dyr[c] * yr[c];
    T mean_dot = dot / static_cast<T>(width), inv_rms = rstd[r];
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) dxr[c] += inv_rms * (dyr[c] - yr[c] * mean_dot);
  }
}

}  // namespace

void CpuBackend::rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, double eps) {
  const char* op = "rmsnorm_forward";
  DType dtype = check_float_dtype(op, "x", x);
  check_same_dtype(op, "y", y, "x", x);
  check_same_rows(op, "y", y, "x", x);
  int64_t width = x.shape[x.shape.ndim - 1], rows = width > 0 ? x.numel() / width : 0;
  check_side_dtype(op, "rstd", rstd, dtype);
  check_numel(op, "rstd", rstd, rows);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    SideValues<T> inv_rms(rstd);
    rmsnorm_forward_kernel(y.as<T>(), inv_rms.data(), x.as<T>(), rows, width, static_cast<T>(eps));
    inv_rms.store();
  });
}

void CpuBackend::rmsnorm_backward(const Tensor& dx_acc, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  const char* op = "rmsnorm_backward";
  DType dtype = check_float_dtype(op, "y", y);
  check_same_dtype(op, "dy", dy, "y", y);
  check_same_dtype(op, "dx_acc", dx_acc, "y", y);
  check_same_rows(op, "dy", dy, "y", y);
  check_same_rows(op, "dx_acc", dx_acc, "y", y);
  int64_t width = y.shape[y.shape.ndim - 1], rows = width > 0 ? y.numel() / width : 0;
  check_side_dtype(op, "rstd", rstd, dtype);
  check_numel(op, "rstd", rstd, rows);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    SideValues<T> inv_rms(rstd);
    inv_rms.load();
    rmsnorm_backward_kernel(dx_acc.as<T>(), dy.as<T>(), y.as<T>(), inv_rms.data(), rows, width);
  });
}

}  // namespace ct
