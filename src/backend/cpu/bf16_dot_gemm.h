#pragma once
// C[M x N] (f32) (+)= A[M x K] B with bf16 operands on AVX512-BF16's vdpbf16ps, for CPUs without AMX
// (AMD Zen 4, Intel Cooper Lake). The contract is the AMX tile product's (amx_tiles.h), so the bf16
// attention kernels run on either: A row-major, B in VNNI layout (vnni_pack.h).
//
// vdpbf16ps adds to each of 16 f32 lanes the two products of a pair of bf16: lane n of
// dpbf16(c, a, b) = c[n] + a[2n] b[2n] + a[2n+1] b[2n+1]. With every lane of `a` holding the pair
// (A[i][2p], A[i][2p+1]) and `b` the VNNI row p of B (columns n..n+15), it adds the pair's terms of
// C[i][n..n+15]; over p < K/2 that is the whole product. Each lane's sum runs over p in order, so the
// result does not depend on the blocking or on the thread.
//
// Register block: 4 rows x 64 columns (16 accumulators), or 8 rows x 32 columns for a last strip of
// 32 columns; per pair p, 4 (2) loads of B and 4 (8) broadcasts of A feed 16 products.
#include "backend/cpu/simd_math.h"

#if defined(CLOCKTRAIN_SIMD_AVX512) && defined(__AVX512BF16__)
#define CLOCKTRAIN_BF16_DOT 1
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ct {

namespace bf16_dot_detail {

template <int kRows, int kVectors>
inline void block(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* bv, int64_t ldb, int64_t k,
                  bool accumulate) {
  __m512 acc[kRows][kVectors];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v)
      acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t p = 0; p < k / 2; ++p) {
    __m512i b[kVectors];
    for (int v = 0; v < kVectors; ++v) b[v] = _mm512_loadu_si512(bv + p * ldb + 16 * v);
    for (int r = 0; r < kRows; ++r) {
      uint32_t pair;
      std::memcpy(&pair, a + r * lda + 2 * p, 4);
      const __m512bh a_pair = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a_pair, (__m512bh)b[v]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

}  // namespace bf16_dot_detail

// C[M x N] (f32, row stride ldc) = (accumulate ? C : 0) + A[M x K] B: A bf16 row-major (row stride lda
// elements), B in VNNI layout (bv[K/2][N] 32-bit words, row stride ldb words). M, N and K multiples of
// 32 (the tile product's contract; 8 would do here).
inline void bf16_dot_gemm(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* bv, int64_t ldb,
                          int64_t m, int64_t n, int64_t k, bool accumulate) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64)
    for (int64_t i = 0; i < m; i += 4)
      bf16_dot_detail::block<4, 4>(c + i * ldc + j, ldc, a + i * lda, lda, bv + j, ldb, k, accumulate);
  if (j < n)  // the last 32 columns
    for (int64_t i = 0; i < m; i += 8)
      bf16_dot_detail::block<8, 2>(c + i * ldc + j, ldc, a + i * lda, lda, bv + j, ldb, k, accumulate);
}

}  // namespace ct

#endif
