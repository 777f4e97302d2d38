// Elementwise ops and reductions: fill, copy, axpby, scale, sum, sum_squares.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "backend/cpu/bf16.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/op_timing.h"

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

void CpuBackend::fill(const Tensor& x, double value) {
  const op_timing::Scope timing("fill");
  check_not_empty("fill", "x", x);
  int64_t n = x.numel();
  switch (x.dtype) {
    case DType::f32: fill_kernel(x.as<float>(), n, static_cast<float>(value)); break;
    case DType::f64: fill_kernel(x.as<double>(), n, value); break;
    case DType::bf16: fill_kernel(x.as<uint16_t>(), n, double_to_bf16(value)); break;
    case DType::i32:
      check(value >= INT32_MIN && value <= INT32_MAX && value == std::floor(value), "fill: value ", value,
            " is not an i32 integer");
      fill_kernel(x.as<int32_t>(), n, static_cast<int32_t>(value));
      break;
  }
}

void CpuBackend::copy(const Tensor& dst, const Tensor& src) {
  const op_timing::Scope timing("copy");
  check_not_empty("copy", "dst", dst);
  check_not_empty("copy", "src", src);
  check_numel("copy", "dst", dst, src.numel());
  convert_elements("copy", dst.data, dst.dtype, src.data, src.dtype, src.numel());
}

void CpuBackend::axpby(const Tensor& y, double alpha, const Tensor& x, double beta) {
  const op_timing::Scope timing("axpby");
  DType dtype = check_float_dtype("axpby", "y", y);
  check_same_dtype("axpby", "x", x, "y", y);
  check_numel("axpby", "x", x, y.numel());
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    axpby_kernel(y.as<T>(), static_cast<T>(alpha), x.as<T>(), static_cast<T>(beta), y.numel());
  });
}

void CpuBackend::scale(const Tensor& x, double factor) {
  const op_timing::Scope timing("scale");
  DType dtype = check_float_dtype("scale", "x", x);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    scale_kernel(x.as<T>(), static_cast<T>(factor), x.numel());
  });
}

double CpuBackend::sum(const Tensor& x) {
  const op_timing::Scope timing("sum");
  DType dtype = check_float_dtype("sum", "x", x);
  double result = 0.0;
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    result = reduce_kernel<false>(x.as<T>(), x.numel());
  });
  return result;
}

double CpuBackend::sum_squares(const Tensor& x) {
  const op_timing::Scope timing("sum_squares");
  DType dtype = check_float_dtype("sum_squares", "x", x);
  double result = 0.0;
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    result = reduce_kernel<true>(x.as<T>(), x.numel());
  });
  return result;
}

}  // namespace ct
