#pragma once
// AVX-512 building blocks of the f32 kernels that run at memory or AMX speed: exp over 16 lanes and
// f32 <-> bf16 conversion of 16 lanes. Only compiled where the build targets AVX-512
// (CLOCKTRAIN_SIMD_AVX512); callers keep a portable path for other builds.
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

// exp(x) for 16 floats: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2 (ln2 split in two
// parts so that r is exact), exp(r) by its degree-6 Taylor polynomial (truncation < 1.2e-7 relative
// at |r| = ln2/2, about 1 ulp), then scaled by 2^n with vscalefps (which also gives 0 for very
// negative x and inf above ~88.7). Inputs below -103 give 0; NaN gives NaN.
inline __m512 exp(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693145751953125f);
  const __m512 ln2_lo = _mm512_set1_ps(1.428606765330187045e-06f);
  // vmaxps / vminps return their second operand when either is NaN: x goes second, so NaN stays NaN
  x = _mm512_max_ps(_mm512_set1_ps(-103.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
  r = _mm512_fnmadd_ps(n, ln2_lo, r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
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
inline void mask_store_bf16(uint16_t* p, __mmask16 mask, __m512 v) { _mm256_mask_storeu_epi16(p, mask, round_to_bf16(v)); }

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

inline __mmask16 tail_mask(int64_t count) {  // the first `count` (< 16) lanes
  return static_cast<__mmask16>((1u << count) - 1u);
}

}  // namespace ct::simd
#endif
