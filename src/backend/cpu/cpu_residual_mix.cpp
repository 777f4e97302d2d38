// The residual scalars' mix (frontier.md 1.1; the math is in ops.def):
//   forward:  x_saved = x;  x = r x + a x0
//   backward: dx0 += a g;  dr += sum(g x_saved);  da += sum(g x0);  dx = r g   (g = dx on entry)
// in f32 or f64 (the residual stream is kept in the model's compute dtype). The two sums are taken
// over fixed blocks of rows in double and the block sums added in order: the same result for every
// thread count.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

namespace {

constexpr int64_t kMixReductionBlock = 4096;

template <typename T>
void residual_mix_forward_kernel(T* x, T* saved, const T* x0, T r, T a, int64_t n) {
  if (saved) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
    for (int64_t i = 0; i < n; ++i) {
      saved[i] = x[i];
      x[i] = r * x[i] + a * x0[i];
    }
  } else {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
    for (int64_t i = 0; i < n; ++i) x[i] = r * x[i] + a * x0[i];
  }
}

template <typename T>
void residual_mix_backward_kernel(T* dx, T* dx0, T* dr, T* da, const T* saved, const T* x0, T r, T a, int64_t n) {
  const int64_t blocks = (n + kMixReductionBlock - 1) / kMixReductionBlock;
  std::vector<double> r_sums(static_cast<size_t>(blocks)), a_sums(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static) if (n > kMinParallelElements)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t begin = block * kMixReductionBlock, end = std::min(n, begin + kMixReductionBlock);
    double r_sum = 0.0, a_sum = 0.0;
    for (int64_t i = begin; i < end; ++i) {
      const T g = dx[i];
      r_sum += static_cast<double>(g) * static_cast<double>(saved[i]);
      a_sum += static_cast<double>(g) * static_cast<double>(x0[i]);
      dx0[i] += a * g;
      dx[i] = r * g;
    }
    r_sums[static_cast<size_t>(block)] = r_sum;
    a_sums[static_cast<size_t>(block)] = a_sum;
  }
  double r_total = 0.0, a_total = 0.0;
  for (int64_t block = 0; block < blocks; ++block) {
    r_total += r_sums[static_cast<size_t>(block)];
    a_total += a_sums[static_cast<size_t>(block)];
  }
  *dr = static_cast<T>(static_cast<double>(*dr) + r_total);
  *da = static_cast<T>(static_cast<double>(*da) + a_total);
}

}  // namespace

void CpuBackend::do_residual_mix_forward(const Tensor& x, const Tensor& x_saved_out, const Tensor& x0, const Tensor& r,
                                         const Tensor& a) {
  dispatch_float(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    residual_mix_forward_kernel<T>(x.as<T>(), x_saved_out.empty() ? nullptr : x_saved_out.as<T>(), x0.as<T>(),
                                   *r.as<T>(), *a.as<T>(), x.numel());
  });
}

void CpuBackend::do_residual_mix_backward(const Tensor& dx, const Tensor& dx0_acc, const Tensor& dr_acc,
                                          const Tensor& da_acc, const Tensor& x_saved, const Tensor& x0,
                                          const Tensor& r, const Tensor& a) {
  dispatch_float(x_saved.dtype, [&](auto zero) {
    using T = decltype(zero);
    residual_mix_backward_kernel<T>(dx.as<T>(), dx0_acc.as<T>(), dr_acc.as<T>(), da_acc.as<T>(), x_saved.as<T>(),
                                    x0.as<T>(), *r.as<T>(), *a.as<T>(), x_saved.numel());
  });
}

}  // namespace ct
