#pragma once
// Blocked transposes for the CPU kernels' packing steps.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_level.h"
#include "backend/cpu/simd_math.h"

namespace ct {

// dst[c * dst_stride + r] = load(r, c) for r < rows, c < cols, in 32 x 32 blocks. A plain loop over
// one side walks the other at a fixed stride, and at a power-of-two stride of a kilobyte or more all
// the lines it touches fall into a few L1 sets and evict one another (this made the AMX attention's
// packings half of its backward kernel's time); a block keeps 32 lines of each side in use at a time.
template <typename T, typename Load>
void transpose_blocked(int64_t rows, int64_t cols, T* dst, int64_t dst_stride, Load load) {
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) dst[c * dst_stride + r] = load(r, c);
    }
}

#ifdef CLOCKTRAIN_SIMD_AVX512
// GCC 12 reports the _mm512_undefined_* pass-through operands of its unpack and shuffle intrinsics
// as used uninitialized once they are inlined here (as simd_math.h notes for -Wmaybe-uninitialized):
// false positives.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
namespace transpose_detail {

// The 16 x 16 block of 32-bit words at src (row stride src_stride words) into dst (row stride
// dst_stride words), transposed: four rounds of interleaving, 32-bit pairs, 64-bit pairs, then
// 128-bit lanes twice, each round halving the distance between a word and its place.
inline void transpose_16x16(const void* src, int64_t src_stride, void* dst, int64_t dst_stride) {
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  __m512i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(s + 4 * i * src_stride);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_i32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_i32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(d + 4 * i * dst_stride, r[i]);
}

}  // namespace transpose_detail
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

// dst[c * dst_stride + r] = src[r * src_stride + c] for 32-bit elements (f32 or bf16 pairs; strides in
// elements), r < rows, c < cols: full 16 x 16 blocks with AVX-512 shuffles where built and the CPU
// level in use is avx512 or above, the edges (and other levels) element by element.
inline void transpose_32bit(const void* src, int64_t src_stride, int64_t rows, int64_t cols, void* dst,
                            int64_t dst_stride) {
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  auto element = [&](int64_t r, int64_t c) {
    std::memcpy(d + 4 * (c * dst_stride + r), s + 4 * (r * src_stride + c), 4);
  };
  int64_t full_rows = 0, full_cols = 0;
#ifdef CLOCKTRAIN_SIMD_AVX512
  static const bool avx512 = cpu_level_at_least(CpuLevel::avx512);
  full_rows = avx512 ? rows / 16 * 16 : 0;
  full_cols = avx512 ? cols / 16 * 16 : 0;
  for (int64_t r0 = 0; r0 < full_rows; r0 += 16)
    for (int64_t c0 = 0; c0 < full_cols; c0 += 16)
      transpose_detail::transpose_16x16(s + 4 * (r0 * src_stride + c0), src_stride, d + 4 * (c0 * dst_stride + r0),
                                        dst_stride);
#endif
  // the rest: columns past full_cols of every row, and rows past full_rows of the full columns
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = full_cols; c < cols; ++c) element(r, c);
  for (int64_t r = full_rows; r < rows; ++r)
    for (int64_t c = 0; c < full_cols; ++c) element(r, c);
}

}  // namespace ct
