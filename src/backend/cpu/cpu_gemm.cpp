// gemm: c = alpha op(a) op(b) + beta c, through the GEMM library (gemm_library.h) in f32 or f64, or
// through oneDNN's bf16 matmul (onednn_matmul.h) when a and b are bf16 (c f32, or bf16 with beta 0).
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/op_timing.h"
#include "backend/cpu/onednn_matmul.h"

namespace ct {

namespace {

// "gemm bf16 [M x N x K] NT": the op_timing key of one product's shape (op(a) is [M, K]).
std::string gemm_timing_key(DType dtype, int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b) {
  return str("gemm ", dtype_name(dtype), " [", m, " x ", n, " x ", k, "] ", transpose_a ? "T" : "N",
             transpose_b ? "T" : "N");
}

}  // namespace

void CpuBackend::gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
                      double alpha, double beta) {
  const char* op = "gemm";
  check_not_empty(op, "a", a);
  check_not_empty(op, "c", c);
  const bool bf16_operands = a.dtype == DType::bf16;
  if (bf16_operands) {
    check_same_dtype(op, "b", b, "a", a);
    check(c.dtype == DType::f32 || c.dtype == DType::bf16, op, ": with bf16 a and b, c must be f32 or bf16, got ",
          dtype_name(c.dtype));
    check(c.dtype == DType::f32 || beta == 0.0, op, ": a bf16 c cannot accumulate (beta must be 0, got ", beta,
          ")");
    check(bf16_engine_available(), op,
          ": bf16 operands need a bf16 engine (avx512_bf16 or amx_bf16); the CPU level in use is ",
          cpu_level_description());
  } else {
    check_float_dtype(op, "c", c);
    check_same_dtype(op, "a", a, "c", c);
    check_same_dtype(op, "b", b, "c", c);
  }
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
  // after the checks, which the key's shape relies on
  const op_timing::Scope timing("gemm", [&] { return gemm_timing_key(a.dtype, m, n, k, transpose_a, transpose_b); });
  if (m == 0 || n == 0) return;
  int64_t lda = a.shape[1], ldb = b.shape[1], ldc = c.shape[1];
  if (bf16_operands) {
    bf16_gemm_row_major(transpose_a, transpose_b, m, n, k, static_cast<float>(alpha), a.as<uint16_t>(), lda,
                        b.as<uint16_t>(), ldb, static_cast<float>(beta), c.data, c.dtype == DType::bf16, ldc);
  } else if (c.dtype == DType::f64) {
    dgemm_row_major(transpose_a, transpose_b, m, n, k, alpha, a.as<double>(), lda, b.as<double>(), ldb, beta,
                    c.as<double>(), ldc);
  } else {
    sgemm_row_major(gemm_library_, transpose_a, transpose_b, m, n, k, static_cast<float>(alpha), a.as<float>(),
                    lda, b.as<float>(), ldb, static_cast<float>(beta), c.as<float>(), ldc);
  }
}

}  // namespace ct
