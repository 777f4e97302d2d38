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
// The register block, block<kRows, kVectors>, and the order of blocks over C (blocks()) are also the
// body of the dot-product GEMM (dot_gemm.h), which keeps B in panels of 16 columns: so the block takes
// B's strides, and an epilogue for alpha, beta and a bf16 C.
#include "backend/cpu/simd_math.h"

#if defined(CLOCKTRAIN_SIMD_AVX512) && defined(__AVX512BF16__)
#define CLOCKTRAIN_BF16_DOT 1
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ct {

namespace bf16_dot_detail {

// Where block() finds its operands. A: row-major, row r at a + r * lda (bf16 elements). B: 16 columns
// (vector v) of VNNI row p at b + v * b_vector + p * b_pair (32-bit words). C: row r at c + r * ldc
// elements (f32 or bf16).
struct Operands {
  const uint16_t* a;
  int64_t lda;
  const uint32_t* b;
  int64_t b_vector, b_pair;
  void* c;
  bool c_bf16;
  int64_t ldc;
};

// C[kRows x 16 kVectors] = alpha (A B over `pairs` pairs of K) + beta C. With every lane of `a`
// holding A's pair (A[r][2p], A[r][2p+1]) and `b` VNNI row p of B, one vdpbf16ps adds that pair's two
// terms to 16 elements of C's row r. An f32 C taking the plain sum (alpha 1, beta 1) starts the accumulators,
// as AMX tiles do (amx_gemm.cpp); any other C is combined after the sum, rounded once to bf16.
template <int kRows, int kVectors>
inline void block(const Operands& o, int64_t pairs, float alpha, float beta) {
  const bool c_is_start = !o.c_bf16 && alpha == 1.0f && beta == 1.0f;
  __m512 acc[kRows][kVectors];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v)
      acc[r][v] = c_is_start ? _mm512_loadu_ps(static_cast<float*>(o.c) + r * o.ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    __m512i b[kVectors];
    for (int v = 0; v < kVectors; ++v) b[v] = _mm512_loadu_si512(o.b + v * o.b_vector + p * o.b_pair);
    for (int r = 0; r < kRows; ++r) {
      uint32_t pair;
      std::memcpy(&pair, o.a + r * o.lda + 2 * p, 4);
      const __m512bh a_pair = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a_pair, (__m512bh)b[v]);
    }
  }
  // Unrolled by force: left as loops (their branches stop GCC 12 unrolling them), acc[r][v] takes a
  // variable index, so the accumulators live on the stack, one store per product in the loop above:
  // block<4, 4> and block<8, 2> then ran at a third of their rate (175 against ~540 GFLOP/s on one
  // Zen 5 core).
  const __m512 scale = _mm512_set1_ps(alpha), keep = _mm512_set1_ps(beta);
#pragma GCC unroll 32
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 32
    for (int v = 0; v < kVectors; ++v) {
      const int64_t at = r * o.ldc + 16 * v;
      if (c_is_start) {
        _mm512_storeu_ps(static_cast<float*>(o.c) + at, acc[r][v]);
        continue;
      }
      __m512 out = alpha == 1.0f ? acc[r][v] : _mm512_mul_ps(scale, acc[r][v]);
      if (o.c_bf16) {
        uint16_t* to = static_cast<uint16_t*>(o.c) + at;
        if (beta != 0.0f) out = _mm512_fmadd_ps(keep, simd::load_bf16(to), out);
        simd::store_bf16(to, out);
      } else {
        float* to = static_cast<float*>(o.c) + at;
        if (beta != 0.0f) out = _mm512_fmadd_ps(keep, _mm512_loadu_ps(to), out);
        _mm512_storeu_ps(to, out);
      }
    }
}

// The blocks that cover C's rows [i_begin, i_end) (a multiple of 16, of 8 in the last 32 columns) and
// all its n columns (a multiple of 32), `at(i, j)` giving the Operands of the block at row i, column j.
// Columns by 64 (4 vectors), rows by blocks of 6, 6 and 4 (per pair of K, 4 loads of B and 6
// broadcasts of A feed 24 products in 24 of the 32 zmm registers); a last strip of 32 columns by
// blocks of 8 rows. (Blocks of 4 rows, and passes of B's panels over every row, ran 5-10% slower on
// a Zen 5.) Inlined by force: out of line, GCC 12 makes no copy of it for each beta (0 or 1) of the
// attention's product, whose forward then runs ~3% slower.
template <typename OperandsAt>
[[gnu::always_inline]] inline void blocks(OperandsAt at, int64_t i_begin, int64_t i_end, int64_t n, int64_t pairs,
                                           float alpha, float beta) {
  const int64_t n_wide = n / 64 * 64;
  for (int64_t j = 0; j < n_wide; j += 64)
    for (int64_t i = i_begin; i < i_end; i += 16) {
      block<6, 4>(at(i, j), pairs, alpha, beta);
      block<6, 4>(at(i + 6, j), pairs, alpha, beta);
      block<4, 4>(at(i + 12, j), pairs, alpha, beta);
    }
  if (n_wide < n)
    for (int64_t i = i_begin; i < i_end; i += 8) block<8, 2>(at(i, n_wide), pairs, alpha, beta);
}

}  // namespace bf16_dot_detail

// C[M x N] (f32, row stride ldc) = (accumulate ? C : 0) + A[M x K] B: A bf16 row-major (row stride lda
// elements), B in VNNI layout (bv[K/2][N] 32-bit words, row stride ldb words). M, N and K multiples of
// 32 (the tile product's contract; 16 would do here). The GEMM's blocks (bf16_dot_detail::blocks).
inline void bf16_dot_gemm(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* bv, int64_t ldb,
                          int64_t m, int64_t n, int64_t k, bool accumulate) {
  auto at = [&](int64_t i, int64_t j) {
    return bf16_dot_detail::Operands{a + i * lda, lda, bv + j, 16, ldb, c + i * ldc + j, false, ldc};
  };
  bf16_dot_detail::blocks(at, 0, m, n, k / 2, 1.0f, accumulate ? 1.0f : 0.0f);
}

}  // namespace ct

#endif
