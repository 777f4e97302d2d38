#pragma once
// Packings of bf16 operands into "VNNI" layout, the B operand of both bf16 product instructions:
// AMX's tile product and AVX512-BF16's vdpbf16ps. A VNNI matrix holds, in row p and column n, the
// pair (B[2p][n], B[2p+1][n]) as one 32-bit word (low half first), so that one 32-bit lane carries
// the two terms of a product that the instruction sums.
#include "backend/cpu/simd_math.h"

#ifdef CLOCKTRAIN_SIMD_AVX512
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/transpose.h"

namespace ct::vnni {

// VNNI of X as the B operand of a product over X's rows: out[p][c] = (x[2p][c], x[2p+1][c]),
// p < rows_pad / 2 (cols a multiple of 16).
inline void pack_pairs_over_rows(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint32_t* out,
                                 int64_t rows_pad) {
  for (int64_t p = 0; p < rows_pad / 2; ++p) {
    const int64_t r0 = 2 * p, r1 = 2 * p + 1;
    const uint16_t* x0 = r0 < rows ? x + r0 * x_stride : nullptr;
    const uint16_t* x1 = r1 < rows ? x + r1 * x_stride : nullptr;
    uint32_t* o = out + p * cols;
    auto widen = [](const uint16_t* row, int64_t c) {  // 16 values zero-extended to 32 bits
      return row ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c)))
                 : _mm512_setzero_si512();
    };
    for (int64_t c = 0; c < cols; c += 16)
      _mm512_storeu_si512(o + c, _mm512_or_si512(widen(x0, c), _mm512_slli_epi32(widen(x1, c), 16)));
  }
}

// VNNI of X^T as the B operand of a product over X's columns: out[p][r] = (x[r][2p], x[r][2p+1]),
// i.e. the 32-bit transpose of X (x_stride even); r < rows_pad (zero past `rows`), row stride
// rows_pad words.
inline void pack_pairs_over_columns(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint32_t* out,
                                    int64_t rows_pad) {
  const int64_t pairs = cols / 2;
  transpose_32bit(x, x_stride / 2, rows, pairs, out, rows_pad);
  for (int64_t p = 0; p < pairs; ++p) std::fill(out + p * rows_pad + rows, out + (p + 1) * rows_pad, 0u);
}

// out[c][r] = x[r][c] for r < rows_pad (zero past `rows`; rows_pad a multiple of 16, cols even), row
// stride out_stride: the 32-bit transpose of x's pairs into `pairs` ([cols / 2 x rows_pad] words),
// then each row of pairs split into its low halves (out row 2p) and high halves (row 2p + 1).
inline void transpose_bf16(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint16_t* out,
                           int64_t out_stride, uint32_t* pairs, int64_t rows_pad) {
  pack_pairs_over_columns(x, x_stride, rows, cols, pairs, rows_pad);
  for (int64_t p = 0; p < cols / 2; ++p) {
    uint16_t* low = out + 2 * p * out_stride;
    uint16_t* high = low + out_stride;
    for (int64_t r = 0; r < rows_pad; r += 16) {
      const __m512i w = _mm512_loadu_si512(pairs + p * rows_pad + r);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(low + r), _mm512_cvtepi32_epi16(w));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(high + r), _mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)));
    }
  }
}

}  // namespace ct::vnni

#endif
