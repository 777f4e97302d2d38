// Optimizer updates, elementwise over f32 (or f64) parameters and state.
//   AdamW at step t (1-based), bias-corrected, weight decay decoupled from the gradient:
//     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//     p -= lr (wd p + (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps))
//   Muon momentum, Nesterov form:
//     buf = mu buf + (1 - mu) g;  u = (1 - mu) g + mu buf
//   Muon's update with cautious weight decay (frontier.md 2.4):
//     p -= lr u + (lr decay) p [u p >= 0]
#include <cmath>

#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

namespace {

template <typename T>
void adamw_kernel(T* param, const T* grad, T* m, T* v, int64_t n, T lr, T beta1, T beta2, T eps, T weight_decay,
                  T bias_correction1, T bias_correction2) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    T g = grad[i];
    T m_new = beta1 * m[i] + (T(1) - beta1) * g;
    T v_new = beta2 * v[i] + (T(1) - beta2) * g * g;
    m[i] = m_new;
    v[i] = v_new;
    T update = (m_new / bias_correction1) / (std::sqrt(v_new / bias_correction2) + eps);
    param[i] -= lr * (weight_decay * param[i] + update);
  }
}

template <typename T>
void muon_momentum_kernel(T* u, T* buf, const T* grad, int64_t n, T mu) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    T g = grad[i];
    T b = mu * buf[i] + (T(1) - mu) * g;
    buf[i] = b;
    u[i] = (T(1) - mu) * g + mu * b;
  }
}

// lr_decay = lr decay, rounded once to T (as PyTorch's `lr * wd * p * mask` rounds the Python product).
template <typename T>
void muon_update_kernel(T* param, const T* u, int64_t n, T lr, T lr_decay) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    const T p = param[i], x = u[i];
    param[i] = p - (lr * x + (x * p >= T(0) ? lr_decay * p : T(0)));
  }
}

}  // namespace

void CpuBackend::do_adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                                 double lr, double beta1, double beta2, double eps, double weight_decay,
                                 int64_t step) {
  const DType dtype = param.dtype;
  double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    adamw_kernel(param.as<T>(), grad.as<T>(), m.as<T>(), v.as<T>(), param.numel(), static_cast<T>(lr),
                 static_cast<T>(beta1), static_cast<T>(beta2), static_cast<T>(eps), static_cast<T>(weight_decay),
                 static_cast<T>(bias_correction1), static_cast<T>(bias_correction2));
  });
}

void CpuBackend::do_muon_momentum(const Tensor& u_out, const Tensor& buf, const Tensor& grad, double mu) {
  const DType dtype = grad.dtype;
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    muon_momentum_kernel(u_out.as<T>(), buf.as<T>(), grad.as<T>(), grad.numel(), static_cast<T>(mu));
  });
}

void CpuBackend::do_muon_update(const Tensor& param, const Tensor& u, double lr, double decay) {
  dispatch_float(param.dtype, [&](auto zero) {
    using T = decltype(zero);
    muon_update_kernel(param.as<T>(), u.as<T>(), param.numel(), static_cast<T>(lr), static_cast<T>(lr * decay));
  });
}

}  // namespace ct
