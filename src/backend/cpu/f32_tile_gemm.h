#pragma once
// C (+)= alpha A B in f32 on AVX2 FMA (or AVX-512), for kernels that multiply many small blocks whose
// operands they pack once and reuse (the f32 attention kernels, cpu_attention_f32.cpp). A GEMM
// library call per block packs both operands every time and cannot skip the zeros a causal mask
// leaves; here each block of rows of C says which columns and which terms of the sum it needs.
//
// Operands:
// - A is read through strides, A(r, p) = a[r * a_row + p * a_col], one element at a time (a broadcast),
//   so a row-major matrix and a transposed one are read alike.
// - B is read 16 columns at a time: element (p, n) at b[(n / 16) * panel_stride + p * term_stride +
//   n % 16]. A row-major B (row stride ld) is term_stride = ld, panel_stride = 16, read in place; a
//   B that is the transpose of a row-major matrix is packed first into panels of 16 columns
//   (pack_columns_into_panels: term_stride = 16, zero past the last column), so that one term of a
//   panel is 64 consecutive bytes and a panel is read front to back.
//
// Register block: 6 rows x 16 columns of C (12 ymm accumulators) kept over all the terms; per term p,
// 2 loads of B and 6 broadcasts of A feed 12 FMAs (the FMA units, not the loads, set the pace). At the
// avx512 level and above (cpu_level.h) 8 rows x 32 columns, two panels side by side with two zmm
// accumulators per row: 2 loads of B and 8 broadcasts feed 16 FMAs of twice the width (an odd last
// panel: 8 rows x 16). The earlier 12 x 16 zmm block fed 12 FMAs with 1 + 12 loads, more loads than
// two load ports issue in the FMAs' time; the attention ops ran 13-15% faster with these blocks
// (docs/performance-journal.md, 2026-12-05).
// Every element of C sums its terms in order of p from zero, then C = alpha sum (+ C): the result
// does not depend on the blocking, the thread or the row block's neighbours.
//
// Built where the compiler targets AVX2 and FMA (-march=native on every CPU clocktrain supports,
// docs/cpu.md); CLOCKTRAIN_F32_TILES says so.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/cpu/cpu_level.h"
#include "backend/cpu/simd_math.h"

#ifdef CLOCKTRAIN_SIMD_AVX2
#define CLOCKTRAIN_F32_TILES 1

namespace ct::f32_tiles {

constexpr int64_t kPanel = 16;  // columns per panel of B and per register block of C

// Rows per register block of C: 8 where the zmm blocks run (wide_blocks()), else 6.
inline bool wide_blocks() {
#ifdef CLOCKTRAIN_SIMD_AVX512
  static const bool wide = cpu_level_at_least(CpuLevel::avx512);
  return wide;
#else
  return false;
#endif
}
constexpr int block_height(bool wide) { return wide ? 8 : 6; }
inline int row_block_height() { return block_height(wide_blocks()); }

// What one block of rows of C needs: columns [n_begin, n_end) (widened to whole panels, clipped to
// the product's n) and terms [p_begin, p_end) of the sum (clipped to >= 0; none: C = alpha 0 (+ C)).
struct BlockRange {
  int64_t n_begin, n_end, p_begin, p_end;
};

namespace detail {

// Rows [0, kRows) of C, columns [0, columns) (columns <= 16), over `terms` terms. kPartial: fewer than
// 16 columns, B read through masked loads (a row-major B ends at its last column).
template <int kRows, bool kPartial>
inline void block(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col, const float* b,
                  int64_t term_stride, int64_t terms, int64_t columns, float alpha, bool accumulate) {
  // (kPartial only)
  [[maybe_unused]] const __m256i mask_lo = simd::first_lanes_of_8(columns);
  [[maybe_unused]] const __m256i mask_hi = simd::first_lanes_of_8(columns - 8);
  // (every loop over r fully unrolled, so that GCC keeps acc in registers: without the pragmas it
  // also stored all 12 accumulators to the stack on every term)
  __m256 acc[kRows][2];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < terms; ++p) {
    const float* b_p = b + p * term_stride;
    __m256 b0, b1;
    if constexpr (kPartial) {
      b0 = _mm256_maskload_ps(b_p, mask_lo);
      b1 = _mm256_maskload_ps(b_p + 8, mask_hi);
    } else {
      b0 = _mm256_loadu_ps(b_p);
      b1 = _mm256_loadu_ps(b_p + 8);
    }
    const float* a_p = a + p * a_col;
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 x = _mm256_broadcast_ss(a_p + r * a_row);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
    }
  }
  const __m256 alpha_v = _mm256_set1_ps(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    __m256 lo = _mm256_mul_ps(acc[r][0], alpha_v), hi = _mm256_mul_ps(acc[r][1], alpha_v);
    if constexpr (!kPartial) {
      if (accumulate) {
        lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
        hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
      }
      _mm256_storeu_ps(row, lo);
      _mm256_storeu_ps(row + 8, hi);
    } else {  // the last panel of a product whose n is not a multiple of 16
      alignas(32) float sums[kPanel];
      _mm256_store_ps(sums, lo);
      _mm256_store_ps(sums + 8, hi);
      for (int64_t n = 0; n < columns; ++n) row[n] = accumulate ? row[n] + sums[n] : sums[n];
    }
  }
}

// The 8 x 8 block at src (row stride src_stride) transposed into dst (row stride dst_stride): 32-bit
// pairs, then 64-bit pairs, then 128-bit halves interleaved.
inline void transpose_8x8(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

#ifdef CLOCKTRAIN_SIMD_AVX512
// Two panels side by side (b0 whole, b1 with columns - 16 of its columns): two zmm accumulators per
// row; masked loads of b1 and of C's second half cover a partial last panel.
template <int kRows>
inline void wide_pair_block(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col, const float* b0,
                            const float* b1, int64_t term_stride, int64_t terms, int64_t columns, float alpha,
                            bool accumulate) {
  const __mmask16 mask = simd::first_lanes_of_16(columns - kPanel);
  __m512 acc[kRows][2];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < terms; ++p) {
    const __m512 lo = _mm512_loadu_ps(b0 + p * term_stride);
    const __m512 hi = _mm512_maskz_loadu_ps(mask, b1 + p * term_stride);
    const float* a_p = a + p * a_col;
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_set1_ps(a_p[r * a_row]);
      acc[r][0] = _mm512_fmadd_ps(x, lo, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, hi, acc[r][1]);
    }
  }
  const __m512 alpha_v = _mm512_set1_ps(alpha);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    __m512 lo = _mm512_mul_ps(acc[r][0], alpha_v), hi = _mm512_mul_ps(acc[r][1], alpha_v);
    if (accumulate) {
      lo = _mm512_add_ps(lo, _mm512_loadu_ps(row));
      hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(mask, row + kPanel));
    }
    _mm512_storeu_ps(row, lo);
    _mm512_mask_storeu_ps(row + kPanel, mask, hi);
  }
}

// One panel: one zmm accumulator per row; masked loads of B and C cover a partial panel.
template <int kRows>
inline void wide_block(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col, const float* b,
                       int64_t term_stride, int64_t terms, int64_t columns, float alpha, bool accumulate) {
  const __mmask16 mask = simd::first_lanes_of_16(columns);
  __m512 acc[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t p = 0; p < terms; ++p) {
    const __m512 b_p = _mm512_maskz_loadu_ps(mask, b + p * term_stride);
    const float* a_p = a + p * a_col;
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a_p[r * a_row]), b_p, acc[r]);
  }
  const __m512 alpha_v = _mm512_set1_ps(alpha);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    __m512 sums = _mm512_mul_ps(acc[r], alpha_v);
    if (accumulate) sums = _mm512_add_ps(sums, _mm512_maskz_loadu_ps(mask, row));
    _mm512_mask_storeu_ps(row, mask, sums);
  }
}
#endif

// Rows [0, kRows) of C, from column `first_column` (a multiple of 16) to n_end, over `terms` terms.
template <int kRows, bool kWide>
inline void row_block(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col, const float* b,
                      int64_t panel_stride, int64_t term_stride, int64_t first_column, int64_t n_end, int64_t n,
                      int64_t terms, float alpha, bool accumulate) {
  for (int64_t j = first_column; j < n_end; j += kPanel) {
    const float* b_block = b + j / kPanel * panel_stride;
    const int64_t columns = std::min(kPanel, n - j);
#ifdef CLOCKTRAIN_SIMD_AVX512
    if constexpr (kWide) {
      if (j + kPanel < n_end) {  // two panels
        wide_pair_block<kRows>(c + j, ldc, a, a_row, a_col, b_block, b_block + panel_stride, term_stride, terms,
                               std::min(2 * kPanel, n - j), alpha, accumulate);
        j += kPanel;
      } else {
        wide_block<kRows>(c + j, ldc, a, a_row, a_col, b_block, term_stride, terms, columns, alpha, accumulate);
      }
      continue;
    }
#endif
    if (columns == kPanel) {
      block<kRows, false>(c + j, ldc, a, a_row, a_col, b_block, term_stride, terms, columns, alpha, accumulate);
    } else {
      block<kRows, true>(c + j, ldc, a, a_row, a_col, b_block, term_stride, terms, columns, alpha, accumulate);
    }
  }
}

}  // namespace detail

// The B operand: where (p, n) is (above).
struct Operand {
  const float* data;
  int64_t panel_stride, term_stride;
};

// A row-major B (row stride ld), read in place.
inline Operand rows_of(const float* b, int64_t ld) { return {b, kPanel, ld}; }
// B packed by pack_columns_into_panels with panels panel_stride floats apart.
inline Operand panels_of(const float* b, int64_t panel_stride) { return {b, panel_stride, kPanel}; }

namespace detail {

// fn(std::integral_constant<int, rows>{}) for 1 <= rows <= kMax.
template <int kMax, typename Fn>
inline void with_rows(int rows, Fn&& fn) {
  if constexpr (kMax > 1) {
    if (rows < kMax) return with_rows<kMax - 1>(rows, fn);
  }
  fn(std::integral_constant<int, kMax>{});
}

template <bool kWide, typename Ranges>
void product_blocks(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col, const Operand& b, int64_t m,
                    int64_t n, float alpha, bool accumulate, Ranges& ranges) {
  constexpr int kHeight = block_height(kWide);
  for (int64_t i = 0; i < m; i += kHeight) {
    const int rows = static_cast<int>(std::min<int64_t>(kHeight, m - i));
    const BlockRange range = ranges(i, i + rows - 1);
    const int64_t p_begin = std::max<int64_t>(range.p_begin, 0), terms = std::max<int64_t>(range.p_end - p_begin, 0);
    const int64_t first_column = range.n_begin / kPanel * kPanel, n_end = std::min(n, range.n_end);
    float* c_rows = c + i * ldc;
    const float* a_rows = a + i * a_row + p_begin * a_col;
    const float* b_terms = b.data + p_begin * b.term_stride;
    with_rows<kHeight>(rows, [&](auto rows_constant) {
      row_block<decltype(rows_constant)::value, kWide>(c_rows, ldc, a_rows, a_row, a_col, b_terms, b.panel_stride,
                                                       b.term_stride, first_column, n_end, n, terms, alpha, accumulate);
    });
  }
}

}  // namespace detail

// C[m x n] (row stride ldc) = alpha A B (+ C when accumulate). ranges(first_row, last_row) gives each
// block of rows (row_block_height() rows, fewer at the end) its BlockRange; C outside the columns it
// names (widened to whole panels) is not written.
template <typename Ranges>
void product(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col, const Operand& b, int64_t m,
             int64_t n, float alpha, bool accumulate, Ranges ranges) {
  if (wide_blocks()) {
    detail::product_blocks<true>(c, ldc, a, a_row, a_col, b, m, n, alpha, accumulate, ranges);
  } else {
    detail::product_blocks<false>(c, ldc, a, a_row, a_col, b, m, n, alpha, accumulate, ranges);
  }
}

// Floats one panel needs for `terms` terms.
inline int64_t panel_floats(int64_t terms) { return terms * kPanel; }

// B = X^T, X `columns` rows of `terms` floats (row stride x_stride): panels of B (n = row of X,
// p = column of X), by 8 x 8 transposes where whole, element by element at the edges.
inline void pack_columns_into_panels(const float* x, int64_t x_stride, int64_t columns, int64_t terms, float* panels,
                                     int64_t panel_stride) {
  for (int64_t j = 0; j < columns; j += kPanel) {
    float* panel = panels + j / kPanel * panel_stride;
    for (int64_t half = 0; half < kPanel; half += 8) {
      const int64_t n0 = j + half, rows = std::clamp<int64_t>(columns - n0, 0, 8);
      int64_t p = 0;
      if (rows == 8)
        for (; p + 8 <= terms; p += 8)
          detail::transpose_8x8(x + n0 * x_stride + p, x_stride, panel + p * kPanel + half, kPanel);
      for (; p < terms; ++p)
        for (int64_t r = 0; r < 8; ++r) panel[p * kPanel + half + r] = r < rows ? x[(n0 + r) * x_stride + p] : 0.0f;
    }
  }
}

}  // namespace ct::f32_tiles

#endif
