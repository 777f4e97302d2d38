#include "backend/cpu/vector_math.h"

#include <cmath>

#if defined(CLOCKTRAIN_HAVE_LIBMVEC) && defined(__AVX512F__)
#include <immintrin.h>
// libmvec's AVX-512 entry points (x86-64 vector function ABI names: 'e' = AVX-512, 16 lanes).
extern "C" __m512 _ZGVeN16v_expf(__m512 x);
extern "C" __m512 _ZGVeN16v_tanhf(__m512 x);
#define CLOCKTRAIN_VECTOR_MATH 1
#endif

namespace ct {

namespace {

#ifdef CLOCKTRAIN_VECTOR_MATH
template <__m512 (*vector_fn)(__m512)>
void apply_in_place(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, vector_fn(_mm512_loadu_ps(x + i)));
  if (i < n) {  // the tail through a masked load, so that every element sees the same function
    __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(x + i, mask, vector_fn(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}
#endif

}  // namespace

void exp_in_place(float* x, int64_t n) {
#ifdef CLOCKTRAIN_VECTOR_MATH
  apply_in_place<_ZGVeN16v_expf>(x, n);
#else
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
#endif
}

void tanh_in_place(float* x, int64_t n) {
#ifdef CLOCKTRAIN_VECTOR_MATH
  apply_in_place<_ZGVeN16v_tanhf>(x, n);
#else
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
#endif
}

void exp_in_place(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

void tanh_in_place(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
}

}  // namespace ct
