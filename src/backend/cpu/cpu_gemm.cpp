// gemm: c = alpha op(a) op(b) + beta c, through the GEMM library (gemm_library.h) in f32 or f64, or
// through oneDNN's bf16 matmul (onednn_matmul.h) when a and b are bf16 (c f32, or bf16 with beta 0).
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/onednn_matmul.h"

namespace ct {

// The contract holds (op_contract.h: dtypes, 2-D shapes that agree, no aliasing); the CPU's own
// limits on bf16 operands follow.
void CpuBackend::do_gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
                         double alpha, double beta) {
  const char* op = "gemm";
  const bool bf16_operands = a.dtype == DType::bf16;
  if (bf16_operands) {
    check(c.dtype == DType::f32 || beta == 0.0, op, ": a bf16 c cannot accumulate (beta must be 0, got ", beta,
          ")");
    check(bf16_engine_available(), op,
          ": bf16 operands need a bf16 engine (avx512_bf16 or amx_bf16); the CPU level in use is ",
          cpu_level_description());
  }
  const auto [m, n, k] = gemm_shape(a, b, transpose_a, transpose_b);
  if (m == 0 || n == 0) return;
  int64_t lda = a.shape[1], ldb = b.shape[1], ldc = c.shape[1];
  if (bf16_operands) {
    bf16_gemm_row_major(transpose_a, transpose_b, m, n, k, static_cast<float>(alpha), a.as<uint16_t>(), lda,
                        b.as<uint16_t>(), ldb, static_cast<float>(beta), c.data, c.dtype == DType::bf16, ldc);
  } else if (c.dtype == DType::f64) {
    dgemm_row_major(transpose_a, transpose_b, m, n, k, alpha, a.as<double>(), lda, b.as<double>(), ldb, beta,
                    c.as<double>(), ldc);
  } else {
    sgemm_row_major(gemm_libraries_, transpose_a, transpose_b, m, n, k, static_cast<float>(alpha), a.as<float>(),
                    lda, b.as<float>(), ldb, static_cast<float>(beta), c.as<float>(), ldc);
  }
}

}  // namespace ct
