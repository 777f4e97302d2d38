// Newton-Schulz orthogonalisation (Muon, model.md), written with the backend's own gemm.
//
//   X = G / (||G||_F + 1e-7), working on G^T when rows > cols so that X is [m, n] with m <= n
//   repeat `steps` times:  A = X X^T  [m, m];  B = b A + c A A;  X = a X + B X
//   x_out = X (transposed back when G was transposed)
//
// The iteration pushes every singular value of X towards ~1 (into roughly [0.7, 1.2] with the
// quintic coefficients (3.4445, -4.7750, 2.0315)), which is why the result is "near-orthogonal".
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"

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
#pragma omp parallel for schedule(static) if (rows * cols > kMinParallelElements)
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) dst[c * rows + r] = src[r * cols + c];
}

}  // namespace

void CpuBackend::newton_schulz(const Tensor& x_out, const Tensor& g, int steps, double a, double b, double c) {
  const char* op = "newton_schulz";
  DType dtype = check_float_dtype(op, "g", g);
  check_same_dtype(op, "x_out", x_out, "g", g);
  check_ndim(op, "g", g, 2);
  check_shape(op, "x_out", x_out, g.shape);
  check(steps >= 0, op, ": steps must be >= 0, got ", steps);
  int64_t rows = g.shape[0], cols = g.shape[1];
  bool transposed = rows > cols;
  int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  if (m == 0 || n == 0) return;
  double norm = std::sqrt(sum_squares(g));
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> x(static_cast<size_t>(m * n)), x_next(x.size()), gram(static_cast<size_t>(m * m)),
        poly(gram.size());
    if (transposed) {
      transpose_into(x.data(), g.as<T>(), rows, cols);
    } else {
      std::copy(g.as<T>(), g.as<T>() + m * n, x.begin());
    }
    Tensor x_view = host_view(x, m, n), x_next_view = host_view(x_next, m, n);
    scale(x_view, 1.0 / (norm + 1e-7));
    Tensor gram_view = host_view(gram, m, m), poly_view = host_view(poly, m, m);
    for (int step = 0; step < steps; ++step) {
      gemm(x_view, x_view, gram_view, false, true, 1.0, 0.0);  // A = X X^T
      copy(poly_view, gram_view);
      gemm(gram_view, gram_view, poly_view, false, false, c, b);  // B = c A A + b A
      copy(x_next_view, x_view);
      gemm(poly_view, x_view, x_next_view, false, false, 1.0, a);  // X' = B X + a X
      std::swap(x_view.data, x_next_view.data);
    }
    const T* result = static_cast<const T*>(x_view.data);
    if (transposed) {
      transpose_into(x_out.as<T>(), result, m, n);
    } else {
      std::copy(result, result + m * n, x_out.as<T>());
    }
  });
}

}  // namespace ct
