#pragma once
// SIMD building blocks of the f32 kernels that run at memory or AMX speed: exp and f32 <-> bf16
// conversion over 8 lanes (AVX2 with FMA: CLOCKTRAIN_SIMD_AVX2) or 16 lanes (AVX-512:
// CLOCKTRAIN_SIMD_AVX512). Each part is compiled only where the build targets its instructions
// (-march=native); callers keep a portable path for other builds.
#if defined(__AVX2__) && defined(__FMA__)
#define CLOCKTRAIN_SIMD_AVX2 1
#include <immintrin.h>

#include <cstdint>

namespace ct::simd {

// exp(x) for 8 floats x in [-87, 88], by the steps of the 16-lane exp_in_range below: x = n ln2 + r,
// exp(r) by its degree-6 Taylor polynomial p, then p 2^n with 2^n made from exponent bits (n lies in
// [-126, 127]; vscalefps on 16 lanes), which gives the same bits. For kernels whose arguments lie in
// that range by construction: without clamps, and with 2^n in one step (docs/performance-journal.md:
// a third less time for the cross-entropy at avx2); outside it the result is not exp(x). NaN gives NaN.
inline __m256 exp_in_range(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);  // ln2 in two parts: r exact
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23)));
}

// Lanes [0, count) of 8 as all-ones 32-bit lanes (count clipped to [0, 8]): the mask of AVX2's
// masked loads and stores, and of bitwise selections.
inline __m256i first_lanes_of_8(int64_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int clipped = count <= 0 ? 0 : count >= 8 ? 8 : static_cast<int>(count);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(clipped), lane);
}

// 8 bf16 values (as stored) widened to f32, exactly.
inline __m256 load_bf16x8(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// 8 floats rounded to bf16 (nearest even, NaN kept quiet, denormals kept): the bits of float_to_bf16.
inline __m128i round_to_bf16(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(lowest_kept, _mm256_set1_epi32(0x7fff)));
  rounded = _mm256_srli_epi32(rounded, 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  rounded = _mm256_blendv_epi8(rounded, quiet, nan);
  // 8 values < 2^16 packed to 16 bits: packus works within 128-bit halves, so pack the two halves
  return _mm_packus_epi32(_mm256_castsi256_si128(rounded), _mm256_extracti128_si256(rounded, 1));
}

}  // namespace ct::simd
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define CLOCKTRAIN_SIMD_AVX512 1
#include <immintrin.h>

#include <cstdint>

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsics (their _mm512_undefined_*
// pass-through operands) once they are inlined into OpenMP regions; the reports are false positives.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ct::simd {

// exp(x) for 16 floats x in [-104, 88.8] (see exp below for the others): x = n ln2 + r with
// n = round(x / ln2) and |r| <= ln2 / 2 (ln2 split in two parts so that r is exact), exp(r) by its
// degree-6 Taylor polynomial (truncation < 1.2e-7 relative at |r| = ln2/2; with the rounding of each
// step the result is within 3 ulps of exp(x), tests/backend/simd_math_test.cpp), then
// scaled by 2^n with vscalefps. NaN gives NaN; infinities give NaN (exp clamps them).
inline __m512 exp_in_range(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// exp(x) for any 16 floats: x clamped to [-104, 88.8] first, where vscalefps gives 0 below (x <= -104)
// and inf above (x > ~88.7), also for infinite x; NaN gives NaN.
inline __m512 exp(__m512 x) {
  // vmaxps / vminps return their second operand when either is NaN: x goes second, so NaN stays NaN
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
  return exp_in_range(x);
}

// 16 bf16 values (as stored) widened to f32, exactly.
inline __m512 load_bf16(const uint16_t* p) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}
inline __m512 maskz_load_bf16(__mmask16 mask, const uint16_t* p) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

// 16 floats rounded to bf16 (nearest even, NaN kept quiet): the same bits as float_to_bf16 (bf16.h),
// denormals included (unlike vcvtneps2bf16, which flushes them).
inline __m256i round_to_bf16(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lowest_kept, _mm512_set1_epi32(0x7fff)));
  rounded = _mm512_srli_epi32(rounded, 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  rounded = _mm512_mask_mov_epi32(rounded, nan, quiet);
  return _mm512_cvtepi32_epi16(rounded);
}
inline void store_bf16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round_to_bf16(v));
}

// 16 floats rounded to bf16 by the AVX512_BF16 instruction vcvtneps2bf16 (one instruction against the
// eight of round_to_bf16): nearest even and NaN kept quiet as there, but denormal inputs (|v| < 2^-126)
// become zero. For operands of bf16 products whose denormals carry nothing next to their row's other
// terms: probabilities, their gradients, the loss gradient. Without AVX512_BF16 it is round_to_bf16.
inline __m256i round_to_bf16_flushing(__m512 v) {
#ifdef __AVX512BF16__
  return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
#else
  return round_to_bf16(v);
#endif
}
inline void store_bf16_flushing(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round_to_bf16_flushing(v));
}
inline void mask_store_bf16_flushing(uint16_t* p, __mmask16 mask, __m512 v) {
  _mm256_mask_storeu_epi16(p, mask, round_to_bf16_flushing(v));
}

// Lanes [0, count) of 16 (count clipped to [0, 16]), for masked loads, stores and comparisons.
inline __mmask16 first_lanes_of_16(int64_t count) {
  if (count <= 0) return 0;
  if (count >= 16) return 0xffff;
  return static_cast<__mmask16>((1u << count) - 1u);
}

}  // namespace ct::simd
#endif
