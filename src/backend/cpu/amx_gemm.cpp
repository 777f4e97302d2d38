#include "backend/cpu/amx_gemm.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/amx.h"
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/kernel_switch.h"
#include "backend/cpu/thread_rows.h"
#include "backend/cpu/vnni_pack.h"
#include "backend/cpu/work_array.h"
#include "util/error.h"

namespace ct {

bool amx_gemm_handles(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
#ifdef CLOCKTRAIN_AMX_TILES
  (void)transpose_b;
  static const bool off = switched_off("CLOCKTRAIN_CPU_AMX_GEMM");
  auto fits = [](int64_t d) { return d > 0 && d % 32 == 0; };
  return !off && !transpose_a && fits(m) && fits(n) && fits(k) && k <= kAmxGemmMaxK && amx_usable();
#else
  (void)transpose_a, (void)transpose_b, (void)m, (void)n, (void)k;
  return false;
#endif
}

#ifdef CLOCKTRAIN_AMX_TILES

namespace {

constexpr int64_t kBlock = 32;           // rows and columns of C per block: 2 x 2 tiles of 16 x 16
constexpr int64_t kPassBytes = 1 << 20;  // B's panels per pass over C's rows: ~1 MB, in L2

// The calling thread's work array (work_array.h), shared with its team during one call: op(B) in
// VNNI panels (vnni::pack_panels).
thread_local std::vector<uint32_t> b_panels_storage;

// C's block at (i, j) = alpha * (the four C tiles) + beta * C, written as f32 or bf16 (rounded to
// nearest even, as oneDNN does).
void finish_block(float* block, int64_t i, int64_t j, float alpha, float beta, void* c, bool c_bf16, int64_t ldc) {
  amx::store_block(block, kBlock);
  const __m512 scale = _mm512_set1_ps(alpha), keep = _mm512_set1_ps(beta);
  for (int64_t r = 0; r < kBlock; ++r)
    for (int64_t h = 0; h < kBlock; h += 16) {
      __m512 v = _mm512_mul_ps(scale, _mm512_load_ps(block + r * kBlock + h));
      const int64_t at = (i + r) * ldc + j + h;
      if (c_bf16) {
        uint16_t* out = static_cast<uint16_t*>(c) + at;
        if (beta != 0.0f) v = _mm512_fmadd_ps(keep, simd::load_bf16(out), v);
        simd::store_bf16(out, v);
      } else {
        float* out = static_cast<float*>(c) + at;
        if (beta != 0.0f) v = _mm512_fmadd_ps(keep, _mm512_loadu_ps(out), v);
        _mm512_storeu_ps(out, v);
      }
    }
}

}  // namespace

void amx_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                   int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c, bool c_bf16, int64_t ldc) {
  check(amx_gemm_handles(transpose_a, transpose_b, m, n, k), "amx_gemm_bf16: cannot run M=", m, " N=", n, " K=", k,
        transpose_a ? " A^T" : "", transpose_b ? " B^T" : "", " (", amx_status(), ")");
  uint32_t* panels = work_array(b_panels_storage, n * k / 2);
  const int64_t panel_words = k / 2 * 16;
  // An f32 C that takes the plain sum (alpha 1, beta 0 or 1) is the tiles' own start and destination;
  // any other C goes through finish_block.
  const bool c_is_sum = !c_bf16 && alpha == 1.0f && (beta == 0.0f || beta == 1.0f);

#pragma omp parallel if (!omp_in_parallel())
  {
    vnni::pack_panels(transpose_b, b, ldb, n, k, panels);
    amx::configure_tiles();
    alignas(64) float block[kBlock * kBlock];
    const RowRange rows = this_threads_rows(m, kBlock);
    // Loop order: B's panels by passes of ~1 MB (in L2), then blocks of 32 rows (A's 32 x K, at most
    // 64 KB, in L1-L2 while every column block of the pass uses it), then blocks of 32 columns. C's
    // block stays in its four tiles over all of K.
    const int64_t pass_cols = std::max(kBlock, kPassBytes / (k * 2) / kBlock * kBlock);
    for (int64_t j0 = 0; j0 < n; j0 += pass_cols) {
      const int64_t j1 = std::min(n, j0 + pass_cols);
      for (int64_t i = rows.begin; i < rows.end; i += kBlock) {
        const uint16_t* a0 = a + i * lda;
        for (int64_t j = j0; j < j1; j += kBlock) {
          const uint32_t* b0 = panels + (j / 16) * panel_words;
          const uint32_t* b1 = b0 + panel_words;
          float* c_sum = c_is_sum ? static_cast<float*>(c) + i * ldc + j : nullptr;
          if (c_is_sum && beta == 1.0f)
            amx::load_block(c_sum, ldc);
          else
            amx::zero_block();
          amx::accumulate_block(a0, lda, b0, b1, 16, k);
          if (c_is_sum)
            amx::store_block(c_sum, ldc);
          else
            finish_block(block, i, j, alpha, beta, c, c_bf16, ldc);
        }
      }
    }
    _tile_release();
  }
}

#else

void amx_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float, const uint16_t*, int64_t,
                   const uint16_t*, int64_t, float, void*, bool, int64_t) {
  fail("amx_gemm_bf16: this build has no AMX (M=", m, " N=", n, " K=", k, transpose_a ? " A^T" : "",
       transpose_b ? " B^T" : "", ")");
}

#endif

}  // namespace ct
