// Elementwise ops and reductions: fill, copy, axpby, scale, sum, sum_squares.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "backend/cpu/bf16.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

namespace {

// Reductions sum fixed blocks of this many elements in double, then add the block sums in order,
// so the result is the same for every thread count.
constexpr int64_t kReductionBlock = 4096;

template <typename T>
void fill_kernel(T* x, int64_t n, T value) {
#pragma omp parallel for schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) x[i] = value;
}

// y = alpha x + beta y  (beta == 0 overwrites y, as in BLAS, so stale NaNs in y do not survive)
template <typename T>
void axpby_kernel(T* y, T alpha, const T* x, T beta, int64_t n) {
  if (beta == T(0)) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
    for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
  } else {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
    for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i] + beta * y[i];
  }
}

template <typename T>
void scale_kernel(T* x, T factor, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kMinParallelElements)
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

// sum_i f(x_i) in double, blockwise (see kReductionBlock).
template <bool squares, typename T>
double reduce_kernel(const T* x, int64_t n) {
  int64_t blocks = (n + kReductionBlock - 1) / kReductionBlock;
  std::vector<double> block_sums(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (n > kMinParallelElements)
  for (int64_t block = 0; block < blocks; ++block) {
    int64_t begin = block * kReductionBlock, end = std::min(n, begin + kReductionBlock);
    double acc = 0.0;
    for (int64_t i = begin; i < end; ++i) {
      double value = static_cast<double>(x[i]);
      acc += squares ? value * value : value;
    }
    block_sums[static_cast<size_t>(block)] = acc;
  }
  double total = 0.0;
  for (double s : block_sums) total += s;
  return total;
}

}  // namespace

void CpuBackend::do_fill(const Tensor& x, double value) {
  int64_t n = x.numel();
  switch (x.dtype) {
    case DType::f32: fill_kernel(x.as<float>(), n, static_cast<float>(value)); break;
    case DType::f64: fill_kernel(x.as<double>(), n, value); break;
    case DType::bf16: fill_kernel(x.as<uint16_t>(), n, double_to_bf16(value)); break;
    case DType::i32:  // an i32 integer (the contract)
      fill_kernel(x.as<int32_t>(), n, static_cast<int32_t>(value));
      break;
  }
}

void CpuBackend::do_copy(const Tensor& dst, const Tensor& src) {
  convert_elements("copy", dst.data, dst.dtype, src.data, src.dtype, src.numel());
}

void CpuBackend::do_axpby(const Tensor& y, double alpha, const Tensor& x, double beta) {
  dispatch_float(y.dtype, [&](auto zero) {
    using T = decltype(zero);
    axpby_kernel(y.as<T>(), static_cast<T>(alpha), x.as<T>(), static_cast<T>(beta), y.numel());
  });
}

void CpuBackend::do_scale(const Tensor& x, double factor) {
  dispatch_float(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    scale_kernel(x.as<T>(), static_cast<T>(factor), x.numel());
  });
}

double CpuBackend::do_sum(const Tensor& x) {
  double result = 0.0;
  dispatch_float(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    result = reduce_kernel<false>(x.as<T>(), x.numel());
  });
  return result;
}

double CpuBackend::do_sum_squares(const Tensor& x) {
  double result = 0.0;
  dispatch_float(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    result = reduce_kernel<true>(x.as<T>(), x.numel());
  });
  return result;
}

}  // namespace ct
