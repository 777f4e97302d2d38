// gemm: c = alpha op(a) op(b) + beta c, through the GEMM library (gemm_library.h).
#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

void CpuBackend::gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
                      double alpha, double beta) {
  const char* op = "gemm";
  DType dtype = check_float_dtype(op, "c", c);
  check_same_dtype(op, "a", a, "c", c);
  check_same_dtype(op, "b", b, "c", c);
  check_ndim(op, "a", a, 2);
  check_ndim(op, "b", b, 2);
  check_ndim(op, "c", c, 2);
  int64_t m = transpose_a ? a.shape[1] : a.shape[0];
  int64_t k = transpose_a ? a.shape[0] : a.shape[1];
  int64_t b_rows = transpose_b ? b.shape[1] : b.shape[0];
  int64_t n = transpose_b ? b.shape[0] : b.shape[1];
  check(b_rows == k, op, ": inner dimensions differ: op(a) is [", m, ", ", k, "] (a ", a.shape.to_string(),
        transpose_a ? " transposed" : "", ") but op(b) is [", b_rows, ", ", n, "] (b ", b.shape.to_string(),
        transpose_b ? " transposed" : "", ")");
  check_shape(op, "c", c, Shape{m, n});
  check(c.data != a.data && c.data != b.data, op, ": c must not alias a or b");
  if (m == 0 || n == 0) return;
  int64_t lda = a.shape[1], ldb = b.shape[1], ldc = c.shape[1];
  if (dtype == DType::f64) {
    dgemm_row_major(transpose_a, transpose_b, m, n, k, alpha, a.as<double>(), lda, b.as<double>(), ldb, beta,
                    c.as<double>(), ldc);
  } else {
    sgemm_row_major(gemm_library_, transpose_a, transpose_b, m, n, k, static_cast<float>(alpha), a.as<float>(),
                    lda, b.as<float>(), ldb, static_cast<float>(beta), c.as<float>(), ldc);
  }
}

}  // namespace ct
