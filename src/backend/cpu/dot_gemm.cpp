#include "backend/cpu/dot_gemm.h"

#include <omp.h>

#include <vector>

#include "backend/cpu/bf16_dot_gemm.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/kernel_switch.h"
#include "backend/cpu/thread_rows.h"
#include "backend/cpu/vnni_pack.h"
#include "backend/cpu/work_array.h"
#include "util/error.h"

namespace ct {

bool dot_gemm_handles(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
#ifdef CLOCKTRAIN_BF16_DOT
  (void)transpose_b;
  static const bool off = switched_off("CLOCKTRAIN_CPU_DOT_GEMM");
  auto fits = [](int64_t d) { return d > 0 && d % 32 == 0; };
  return !off && fits(m) && fits(n) && fits(k) && k <= kDotGemmMaxK && !transpose_a &&
         cpu_level_at_least(CpuLevel::avx512_bf16);
#else
  (void)transpose_a, (void)transpose_b, (void)m, (void)n, (void)k;
  return false;
#endif
}

#ifdef CLOCKTRAIN_BF16_DOT

namespace {

constexpr int64_t kRowBlock = 32;  // rows of C a thread takes at a time

thread_local std::vector<uint32_t> b_panels_storage;  // op(B) in VNNI panels (vnni::pack_panels)

}  // namespace

void dot_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                   int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c, bool c_bf16, int64_t ldc) {
  check(dot_gemm_handles(transpose_a, transpose_b, m, n, k), "dot_gemm_bf16: cannot run M=", m, " N=", n, " K=", k,
        transpose_a ? " A^T" : "", transpose_b ? " B^T" : "", " (CPU level ", cpu_level_description(), ")");
  uint32_t* panels = work_array(b_panels_storage, n * k / 2);
  const int64_t panel_words = k / 2 * 16;
  const size_t c_bytes = c_bf16 ? 2 : 4;

#pragma omp parallel if (!omp_in_parallel())
  {
    vnni::pack_panels(transpose_b, b, ldb, n, k, panels);
    const RowRange rows = this_threads_rows(m, kRowBlock);
    // A's rows from i, B's panels from column j, C's block at (i, j). Each row of A is read once per
    // 64 columns, whose 4 panels (128 bytes per pair of K: 32-512 KB) stay in L1-L2 while the rows go by.
    auto at = [&](int64_t i, int64_t j) {
      return bf16_dot_detail::Operands{a + i * lda, lda, panels + (j / 16) * panel_words, panel_words, 16,
                                       static_cast<char*>(c) + (i * ldc + j) * c_bytes, c_bf16, ldc};
    };
    bf16_dot_detail::blocks(at, rows.begin, rows.end, n, k / 2, alpha, beta);
  }
}

#else

void dot_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float, const uint16_t*, int64_t,
                   const uint16_t*, int64_t, float, void*, bool, int64_t) {
  fail("dot_gemm_bf16: this build has no AVX512-BF16 (M=", m, " N=", n, " K=", k, transpose_a ? " A^T" : "",
       transpose_b ? " B^T" : "", ")");
}

#endif

}  // namespace ct
