// Newton-Schulz orthogonalisation (Muon, docs/model.md), written with the backend's own gemm.
//
//   X = G / (||G||_F + 1e-7), working on G^T when rows > cols so that X is [m, n] with m <= n
//   repeat `steps` times:  A = X X^T  [m, m];  B = b A + c A A;  X = a X + B X
//   x_out = X (transposed back when G was transposed)
//
// The iteration pushes every singular value of X towards ~1 (into roughly [0.7, 1.2] with the
// quintic coefficients (3.4445, -4.7750, 2.0315)), which is why the result is "near-orthogonal".
//
// With matmul_precision bf16 and an f32 g, the three products take bf16 operands with f32
// accumulation (oneDNN on AMX, like the model's matmuls; nanochat runs the whole iteration in bf16).
// The iterate X, A and the polynomial's sums stay f32 and are rounded to bf16 only where a product
// reads them, so the only error is the operands' rounding (relative 2^-9 per element). That path
// runs each matrix on one thread, several matrices at once (newton_schulz_many).
#include <algorithm>
#include <cmath>
#include <exception>
#include <vector>

#include "backend/cpu/convert.h"
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/onednn_matmul.h"
#include "backend/cpu/transpose.h"
#include "backend/cpu/work_array.h"

namespace ct {

namespace {

template <typename T>
Tensor host_view(std::vector<T>& storage, int64_t rows, int64_t cols) {
  Tensor t;
  t.data = storage.data();
  t.dtype = sizeof(T) == 8 ? DType::f64 : DType::f32;
  t.shape = Shape{rows, cols};
  return t;
}

template <typename T>
void transpose_into(T* dst, const T* src, int64_t rows, int64_t cols) {  // dst[c, r] = src[r, c]
  if constexpr (sizeof(T) == 4) {
    transpose_32bit(src, cols, rows, cols, dst, rows);
  } else {
    transpose_blocked(rows, cols, dst, rows, [&](int64_t r, int64_t c) { return src[r * cols + c]; });
  }
}

// x[m, n] (normalised) is replaced by `steps` iterations with the backend's gemm in T.
template <typename T>
void newton_schulz_exact(Backend& backend, std::vector<T>& x, int64_t m, int64_t n, int steps, double a, double b,
                         double c) {
  std::vector<T> x_next(x.size()), gram(static_cast<size_t>(m * m)), poly(gram.size());
  Tensor x_view = host_view(x, m, n), x_next_view = host_view(x_next, m, n);
  Tensor gram_view = host_view(gram, m, m), poly_view = host_view(poly, m, m);
  for (int step = 0; step < steps; ++step) {
    backend.gemm(x_view, x_view, gram_view, false, true, 1.0, 0.0);  // A = X X^T
    backend.copy(poly_view, gram_view);
    backend.gemm(gram_view, gram_view, poly_view, false, false, c, b);  // B = c A A + b A
    backend.copy(x_next_view, x_view);
    backend.gemm(poly_view, x_view, x_next_view, false, false, 1.0, a);  // X' = B X + a X
    std::swap(x_view.data, x_next_view.data);
  }
  if (x_view.data != x.data()) x.swap(x_next);  // an odd number of steps left the result in x_next
}

// The bf16 iteration's work arrays, each thread's (work_array.h).
struct Bf16Scratch {
  std::vector<float> gram, poly, product;
  std::vector<uint16_t> x16, gram16, poly16;
};

// x[m, n] (f32, normalised) is replaced by `steps` iterations with bf16 products, on the calling
// thread (newton_schulz_many runs it inside its parallel region, where nested loops run serially).
void newton_schulz_bf16(float* x, int64_t m, int64_t n, int steps, float a, float b, float c) {
  static thread_local Bf16Scratch scratch;
  const int64_t mm = m * m, mn = m * n;
  float* gram = work_array(scratch.gram, mm);
  float* poly = work_array(scratch.poly, mm);
  float* product = work_array(scratch.product, mn);
  uint16_t* x16 = work_array(scratch.x16, mn);
  uint16_t* gram16 = work_array(scratch.gram16, mm);
  uint16_t* poly16 = work_array(scratch.poly16, mm);
  const char* op = "newton_schulz";
  auto round_to_bf16 = [&](uint16_t* dst, const float* src, int64_t count) {
    convert_elements(op, dst, DType::bf16, src, DType::f32, count);
  };
  for (int step = 0; step < steps; ++step) {
    round_to_bf16(x16, x, mn);
    // A = X X^T
    bf16_gemm_row_major(false, true, m, m, n, 1.0f, x16, n, x16, n, 0.0f, gram, false, m);
    round_to_bf16(gram16, gram, mm);
    // B = c A A + b A
    bf16_gemm_row_major(false, false, m, m, m, 1.0f, gram16, m, gram16, m, 0.0f, poly, false, m);
    for (int64_t i = 0; i < mm; ++i) poly[i] = c * poly[i] + b * gram[i];
    round_to_bf16(poly16, poly, mm);
    // X = B X + a X
    bf16_gemm_row_major(false, false, m, n, m, 1.0f, poly16, m, x16, n, 0.0f, product, false, n);
    for (int64_t i = 0; i < mn; ++i) x[i] = product[i] + a * x[i];
  }
}

// x_out = the bf16 iteration of g ([rows, cols], f32) on the calling thread.
void orthogonalise_bf16(float* x_out, const float* g, int64_t rows, int64_t cols, int steps, float a, float b,
                        float c) {
  const bool transposed = rows > cols;
  const int64_t m = transposed ? cols : rows, n = transposed ? rows : cols, count = rows * cols;
  double sum_squares = 0.0;
  for (int64_t i = 0; i < count; ++i) sum_squares += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  const float inverse_norm = static_cast<float>(1.0 / (std::sqrt(sum_squares) + 1e-7));
  static thread_local std::vector<float> storage;
  float* x = work_array(storage, count);
  if (transposed) {
    transpose_into(x, g, rows, cols);
  } else {
    std::copy(g, g + count, x);
  }
  for (int64_t i = 0; i < count; ++i) x[i] *= inverse_norm;
  newton_schulz_bf16(x, m, n, steps, a, b, c);
  if (transposed) {
    transpose_into(x_out, x, m, n);
  } else {
    std::copy(x, x + count, x_out);
  }
}

}  // namespace

void CpuBackend::do_newton_schulz(const Tensor& x_out, const Tensor& g, int steps, double a, double b, double c) {
  const DType dtype = g.dtype;  // f32 or f64 (check_kernel_dtype)
  if (matmul_bf16_ && dtype == DType::f32) {  // the same path, and bits, as a batch of one
    newton_schulz_many({x_out}, {g}, steps, a, b, c);
    return;
  }
  int64_t rows = g.shape[0], cols = g.shape[1];
  bool transposed = rows > cols;
  int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  if (m == 0 || n == 0) return;
  double norm = std::sqrt(sum_squares(g));
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> x(static_cast<size_t>(m * n));
    if (transposed) {
      transpose_into(x.data(), g.as<T>(), rows, cols);
    } else {
      std::copy(g.as<T>(), g.as<T>() + m * n, x.begin());
    }
    scale(host_view(x, m, n), 1.0 / (norm + 1e-7));
    newton_schulz_exact(*this, x, m, n, steps, a, b, c);
    if (transposed) {
      transpose_into(x_out.as<T>(), x.data(), m, n);
    } else {
      std::copy(x.begin(), x.end(), x_out.as<T>());
    }
  });
}

// With bf16 matmuls, one matrix per thread: each runs the whole iteration on its own core (a bf16
// product called inside a parallel region uses the calling thread only), which on cpu-small's 256-wide
// matrices does 1.4-2.7x more per core than splitting every small product over both threads. The
// largest matrices go first so that the threads finish together; every matrix is computed by one
// thread in a fixed way, so the results do not depend on which thread takes it.
void CpuBackend::do_newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps,
                                       double a, double b, double c) {
  bool all_f32 = true;
  for (const Tensor& g : gs) all_f32 = g.dtype == DType::f32 && all_f32;
  if (!matmul_bf16_ || !all_f32) {
    Backend::do_newton_schulz_many(x_outs, gs, steps, a, b, c);
    return;
  }
  std::vector<size_t> order(gs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto cost = [&](size_t i) {  // m m n of the iteration's products
    const int64_t small = std::min(gs[i].shape[0], gs[i].shape[1]);
    return small * gs[i].numel();
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return cost(x) > cost(y); });
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    if (gs[i].numel() == 0) continue;
    try {
      orthogonalise_bf16(x_outs[i].as<float>(), gs[i].as<float>(), gs[i].shape[0], gs[i].shape[1], steps,
                         static_cast<float>(a), static_cast<float>(b), static_cast<float>(c));
    } catch (...) {  // an exception must not leave the parallel region
#pragma omp critical(newton_schulz_many_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ct
