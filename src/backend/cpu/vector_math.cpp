#include "backend/cpu/vector_math.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_level.h"

#if defined(CLOCKTRAIN_HAVE_LIBMVEC) && defined(__AVX2__)
#include <immintrin.h>
// libmvec's entry points (x86-64 vector function ABI names: 'd' = AVX2, 8 lanes; 'e' = AVX-512, 16).
extern "C" __m256 _ZGVdN8v_expf(__m256 x);
extern "C" __m256 _ZGVdN8v_tanhf(__m256 x);
#define CLOCKTRAIN_VECTOR_MATH_AVX2 1
#if defined(__AVX512F__)
extern "C" __m512 _ZGVeN16v_expf(__m512 x);
extern "C" __m512 _ZGVeN16v_tanhf(__m512 x);
#define CLOCKTRAIN_VECTOR_MATH_AVX512 1
#endif
#endif

namespace ct {

namespace {

// Which libmvec width runs, by the CPU level in use (cpu_level.h): 16 lanes, 8 lanes, or none.
int vector_lanes() {
  static const int lanes = [] {
#ifdef CLOCKTRAIN_VECTOR_MATH_AVX512
    if (cpu_level_at_least(CpuLevel::avx512)) return 16;
#endif
#ifdef CLOCKTRAIN_VECTOR_MATH_AVX2
    if (cpu_level_at_least(CpuLevel::avx2)) return 8;
#endif
    return 1;
  }();
  return lanes;
}

#ifdef CLOCKTRAIN_VECTOR_MATH_AVX512
template <__m512 (*vector_fn)(__m512)>
void apply_16(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, vector_fn(_mm512_loadu_ps(x + i)));
  if (i < n) {  // the tail through a masked load, so that every element sees the same function
    __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(x + i, mask, vector_fn(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}
#endif

#ifdef CLOCKTRAIN_VECTOR_MATH_AVX2
template <__m256 (*vector_fn)(__m256)>
void apply_8(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, vector_fn(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through a zero-padded copy, so that every element sees the same function
    alignas(32) float tail[8] = {};
    std::copy(x + i, x + n, tail);
    _mm256_store_ps(tail, vector_fn(_mm256_load_ps(tail)));
    std::copy(tail, tail + (n - i), x + i);
  }
}
#endif

}  // namespace

void exp_in_place(float* x, int64_t n) {
#ifdef CLOCKTRAIN_VECTOR_MATH_AVX512
  if (vector_lanes() == 16) return apply_16<_ZGVeN16v_expf>(x, n);
#endif
#ifdef CLOCKTRAIN_VECTOR_MATH_AVX2
  if (vector_lanes() == 8) return apply_8<_ZGVdN8v_expf>(x, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

void tanh_in_place(float* x, int64_t n) {
#ifdef CLOCKTRAIN_VECTOR_MATH_AVX512
  if (vector_lanes() == 16) return apply_16<_ZGVeN16v_tanhf>(x, n);
#endif
#ifdef CLOCKTRAIN_VECTOR_MATH_AVX2
  if (vector_lanes() == 8) return apply_8<_ZGVdN8v_tanhf>(x, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
}

void exp_in_place(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

void tanh_in_place(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
}

}  // namespace ct
