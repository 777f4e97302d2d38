// Squared ReLU, the MLP activation.
//   forward:  y = relu(x)^2
//   backward: dx = dy * 2 relu(x)   (overwrites dx)
#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

namespace {

template <typename T>
void relu2_forward_kernel(T* y, const T* x, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    T r = x[i] > T(0) ? x[i] : T(0);
    y[i] = r * r;
  }
}

template <typename T>
void relu2_backward_kernel(T* dx, const T* dy, const T* x, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    T r = x[i] > T(0) ? x[i] : T(0);
    dx[i] = dy[i] * T(2) * r;
  }
}

}  // namespace

void CpuBackend::relu2_forward(const Tensor& y, const Tensor& x) {
  const char* op = "relu2_forward";
  DType dtype = check_float_dtype(op, "x", x);
  check_same_dtype(op, "y", y, "x", x);
  check_same_rows(op, "y", y, "x", x);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    relu2_forward_kernel(y.as<T>(), x.as<T>(), x.numel());
  });
}

void CpuBackend::relu2_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& x) {
  const char* op = "relu2_backward";
  DType dtype = check_float_dtype(op, "x", x);
  check_same_dtype(op, "dy", dy, "x", x);
  check_same_dtype(op, "dx_out", dx_out, "x", x);
  check_same_rows(op, "dy", dy, "x", x);
  check_same_rows(op, "dx_out", dx_out, "x", x);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    relu2_backward_kernel(dx_out.as<T>(), dy.as<T>(), x.as<T>(), x.numel());
  });
}

}  // namespace ct
