// Squared ReLU, the MLP activation.
//   forward:  y = relu(x)^2
//   backward: dx = dy * 2 relu(x)   (overwrites dx)
// On the f32 path each of x, y, dy, dx may be stored in f32 or bf16 (the model keeps the MLP's
// pre-activation, activation and its gradient in bf16 when its matmuls run in bf16).
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/storage.h"

namespace ct {

namespace {

template <typename T, typename SY, typename SX>
void relu2_forward_kernel(SY* y, const SX* x, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    const T v = load_as<T>(x, i);
    const T r = v > T(0) ? v : T(0);
    store_as(y, i, r * r);
  }
}

template <typename T, typename SDX, typename SDY, typename SX>
void relu2_backward_kernel(SDX* dx, const SDY* dy, const SX* x, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    const T v = load_as<T>(x, i);
    const T r = v > T(0) ? v : T(0);
    store_as(dx, i, load_as<T>(dy, i) * T(2) * r);
  }
}

}  // namespace

void CpuBackend::do_relu2_forward(const Tensor& y, const Tensor& x) {
  if (x.dtype == DType::f64) {
    relu2_forward_kernel<double>(y.as<double>(), x.as<double>(), x.numel());
    return;
  }
  with_f32_storage(y.dtype, [&](auto sy) {
    with_f32_storage(x.dtype, [&](auto sx) {
      relu2_forward_kernel<float>(y.as<decltype(sy)>(), x.as<decltype(sx)>(), x.numel());
    });
  });
}

void CpuBackend::do_relu2_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& x) {
  if (x.dtype == DType::f64) {
    relu2_backward_kernel<double>(dx_out.as<double>(), dy.as<double>(), x.as<double>(), x.numel());
    return;
  }
  with_f32_storage(dx_out.dtype, [&](auto sdx) {
    with_f32_storage(dy.dtype, [&](auto sdy) {
      with_f32_storage(x.dtype, [&](auto sx) {
        relu2_backward_kernel<float>(dx_out.as<decltype(sdx)>(), dy.as<decltype(sdy)>(), x.as<decltype(sx)>(),
                                     x.numel());
      });
    });
  });
}

}  // namespace ct
