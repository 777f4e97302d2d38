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

// The B operand of a GEMM whose blocks take 16 columns at a time (amx_gemm.cpp, dot_gemm.cpp): packs
// op(B) ([K x N], N a multiple of 16, K even) into panels of 16 columns: panel p holds words
// (op(B)[2q][16p + j], op(B)[2q + 1][16p + j]) at [q][j]. B stored [K x N] (not transposed): pairs of
// rows interleaved; stored [N x K] (transposed): the 32-bit transpose of 16 of its rows (element by
// element when an odd row stride leaves B's pairs unaligned to 32-bit words). Called inside an
// OpenMP parallel region, the team shares the panels; ends in the work-sharing loop's barrier.
inline void pack_panels(bool transpose_b, const uint16_t* b, int64_t ldb, int64_t n, int64_t k, uint32_t* panels) {
  const int64_t panel_words = k / 2 * 16;
#pragma omp for schedule(static)
  for (int64_t p = 0; p < n / 16; ++p) {
    uint32_t* out = panels + p * panel_words;
    if (transpose_b && ldb % 2 == 0) {
      pack_pairs_over_columns(b + p * 16 * ldb, ldb, 16, k, out, 16);
    } else if (transpose_b) {
      for (int64_t q = 0; q < k / 2; ++q)
        for (int64_t j = 0; j < 16; ++j) {
          const uint16_t* pair = b + (p * 16 + j) * ldb + 2 * q;
          out[q * 16 + j] = uint32_t{pair[0]} | uint32_t{pair[1]} << 16;
        }
    } else {
      pack_pairs_over_rows(b + p * 16, ldb, k, 16, out, k);
    }
  }
}

}  // namespace ct::vnni

#endif
