// The fused softcapped cross-entropy on f32 (or bf16) logits, AVX-512 (math: cpu_cross_entropy.cpp).
// Used for every f32 cross-entropy with a cap (forward, backward and fused), so that the training
// loss and the evaluation loss of the same logits are the same bits.
// Per row, with y = logit / cap and th = tanh(y) = 1 - 2 / (exp(2y) + 1):
//   pass 1: z = cap th, e = exp(z - cap), sum += e     (e and th kept in a scratch row)
//   loss = cap + log(sum) - z[target]
//   pass 2: dlogit = loss_scale (e / sum - [j == target]) (1 - th^2)
// 1 - 2 / (t + 1) has an absolute error of a few f32 ulps of 1 near y = 0, i.e. ~1e-6 in z at
// cap 15: far below what bf16 matmuls or the loss's own rounding contribute.
#include "backend/cpu/cpu_cross_entropy_fast.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backend/cpu/bf16.h"
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/simd_math.h"

namespace ct {

#ifdef CLOCKTRAIN_SIMD_AVX512

namespace {

// 1 / a to ~1e-8 relative: vrcp14ps and one Newton step (a single vdivps costs more than the rest).
inline __m512 reciprocal(__m512 a) {
  const __m512 r = _mm512_rcp14_ps(a);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(a, r, _mm512_set1_ps(2.0f)));
}

// kGradient: write dlogits (f32, or bf16 when kBf16); argmax may be null. Logits are f32, or bf16 when
// kBf16Logits (widened exactly on load, so the same values give the same bits either way).
template <bool kGradient, bool kBf16, bool kBf16Logits>
void fused_rows(float* losses, int32_t* argmax, void* dlogits, const void* logits, const int32_t* targets,
                int64_t rows, int64_t vocab, float cap, float loss_scale) {
#pragma omp parallel if (rows * vocab > kMinParallelElements)
  {
    std::vector<float> e_row(static_cast<size_t>(vocab)), th_row(static_cast<size_t>(vocab));
    float* e = e_row.data();
    float* th = th_row.data();
    const __m512 two_over_cap = _mm512_set1_ps(2.0f / cap), cap_v = _mm512_set1_ps(cap);
    const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    const int64_t full = vocab / 16 * 16;
    const __mmask16 tail = simd::tail_mask(vocab - full);
    // th = tanh(logit / cap) and e = exp(cap th - cap), for 16 logits. 2y is clamped to [-30, 30],
    // where th is already exactly -1 or 1 in f32 (the same bits as unclamped), so that exp(2y) never
    // overflows: 1 / inf's Newton step would make th NaN for logits past ~44 cap.
    const __m512 max_2y = _mm512_set1_ps(30.0f), min_2y = _mm512_set1_ps(-30.0f);
    auto tanh_and_exp = [&](__m512 logit, __m512& th_v) {
      // (a NaN stays NaN: min/max return their second operand when either is NaN)
      const __m512 t = simd::exp(_mm512_min_ps(max_2y, _mm512_max_ps(min_2y, _mm512_mul_ps(logit, two_over_cap))));
      th_v = _mm512_fnmadd_ps(two, reciprocal(_mm512_add_ps(t, one)), one);
      return simd::exp(_mm512_fmsub_ps(cap_v, th_v, cap_v));
    };
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      const float* l32 = kBf16Logits ? nullptr : static_cast<const float*>(logits) + n * vocab;
      const uint16_t* l16 = kBf16Logits ? static_cast<const uint16_t*>(logits) + n * vocab : nullptr;
      auto load = [&](int64_t j) { return kBf16Logits ? simd::load_bf16(l16 + j) : _mm512_loadu_ps(l32 + j); };
      auto load_tail = [&](__mmask16 mask, int64_t j) {
        return kBf16Logits ? simd::maskz_load_bf16(mask, l16 + j) : _mm512_maskz_loadu_ps(mask, l32 + j);
      };
      // (dlogits is null without kGradient: no offset is applied to it then)
      float* d32 = kGradient && !kBf16 ? static_cast<float*>(dlogits) + n * vocab : nullptr;
      uint16_t* d16 = kGradient && kBf16 ? static_cast<uint16_t*>(dlogits) + n * vocab : nullptr;
      const int32_t target = targets[n];
      float sum = 0.0f;
      if (target >= 0 || argmax) {
        // pass 1 (reads the whole row, so that dlogits may alias it). e is kept only for pass 2.
        // The argmax is the first index of the largest z = cap th (z is increasing in th): each lane
        // keeps its largest th and, by a strict comparison over increasing indices, that value's first
        // index; the row's is the smallest index among the lanes that hold the largest value.
        __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
        __m512 best = _mm512_set1_ps(-INFINITY);
        __m512i best_index = _mm512_setzero_si512();
        const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        auto keep = [&](int64_t at, __m512 th_v, __m512 e_v, __mmask16 mask) {
          _mm512_mask_storeu_ps(th + at, mask, th_v);
          if constexpr (kGradient) _mm512_mask_storeu_ps(e + at, mask, e_v);
          if (!argmax) return;
          const __mmask16 larger = _mm512_mask_cmp_ps_mask(mask, th_v, best, _CMP_GT_OQ);
          best = _mm512_mask_mov_ps(best, larger, th_v);
          best_index = _mm512_mask_mov_epi32(best_index, larger,
                                             _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(at))));
        };
        int64_t j = 0;
        for (; j + 32 <= full; j += 32) {
          __m512 th0, th1;
          const __m512 e0 = tanh_and_exp(load(j), th0);
          const __m512 e1 = tanh_and_exp(load(j + 16), th1);
          keep(j, th0, e0, 0xffff);
          keep(j + 16, th1, e1, 0xffff);
          sum0 = _mm512_add_ps(sum0, e0);
          sum1 = _mm512_add_ps(sum1, e1);
        }
        for (; j < full; j += 16) {
          __m512 th0;
          const __m512 e0 = tanh_and_exp(load(j), th0);
          keep(j, th0, e0, 0xffff);
          sum0 = _mm512_add_ps(sum0, e0);
        }
        if (tail) {
          __m512 th0;
          const __m512 e0 = tanh_and_exp(load_tail(tail, j), th0);
          keep(j, th0, e0, tail);
          sum0 = _mm512_add_ps(sum0, _mm512_maskz_mov_ps(tail, e0));
        }
        sum = _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
        if (argmax) {
          const __mmask16 holders = _mm512_cmp_ps_mask(best, _mm512_set1_ps(_mm512_reduce_max_ps(best)), _CMP_EQ_OQ);
          argmax[n] = _mm512_mask_reduce_min_epi32(holders, best_index);
        }
      }
      if (target < 0) {
        losses[n] = 0.0f;
        if constexpr (kGradient) {
          if constexpr (kBf16) {
            std::fill(d16, d16 + vocab, uint16_t{0});
          } else {
            std::fill(d32, d32 + vocab, 0.0f);
          }
        }
        continue;
      }
      const float th_target = th[target];
      losses[n] = cap + std::log(sum) - cap * th_target;
      if constexpr (!kGradient) continue;
      // pass 2: dlogit = loss_scale e / sum (1 - th^2); the target's entry is set afterwards
      const __m512 coef = _mm512_set1_ps(loss_scale / sum);
      auto gradient = [&](int64_t at, __mmask16 mask) {
        const __m512 th_v = _mm512_maskz_loadu_ps(mask, th + at);
        const __m512 slope = _mm512_fnmadd_ps(th_v, th_v, one);
        return _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(mask, e + at), coef), slope);
      };
      int64_t j = 0;
      for (; j < full; j += 16) {
        const __m512 g = gradient(j, 0xffff);
        if constexpr (kBf16) {
          simd::store_bf16_flushing(d16 + j, g);
        } else {
          _mm512_storeu_ps(d32 + j, g);
        }
      }
      if (tail) {
        const __m512 g = gradient(j, tail);
        if constexpr (kBf16) {
          simd::mask_store_bf16_flushing(d16 + j, tail, g);
        } else {
          _mm512_mask_storeu_ps(d32 + j, tail, g);
        }
      }
      const float g_target = (e[target] / sum - 1.0f) * (1.0f - th_target * th_target) * loss_scale;
      if constexpr (kBf16) {
        d16[target] = float_to_bf16(g_target);
      } else {
        d32[target] = g_target;
      }
    }
  }
}

}  // namespace

bool fast_cross_entropy_available() { return cpu_level_at_least(CpuLevel::avx512); }

void fast_softcap_cross_entropy(float* losses, int32_t* argmax, void* dlogits, bool dlogits_bf16, const void* logits,
                                bool logits_bf16, const int32_t* targets, int64_t rows, int64_t vocab, float cap,
                                float loss_scale) {
  auto run = [&](auto bf16_logits) {
    constexpr bool kBf16Logits = decltype(bf16_logits)::value;
    if (!dlogits) {
      fused_rows<false, false, kBf16Logits>(losses, argmax, nullptr, logits, targets, rows, vocab, cap, loss_scale);
    } else if (dlogits_bf16) {
      fused_rows<true, true, kBf16Logits>(losses, argmax, dlogits, logits, targets, rows, vocab, cap, loss_scale);
    } else {
      fused_rows<true, false, kBf16Logits>(losses, argmax, dlogits, logits, targets, rows, vocab, cap, loss_scale);
    }
  };
  if (logits_bf16) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
}

#else

bool fast_cross_entropy_available() { return false; }
void fast_softcap_cross_entropy(float*, int32_t*, void*, bool, const void*, bool, const int32_t*, int64_t, int64_t,
                                float, float) {
  fail("fast_softcap_cross_entropy: not built (needs AVX-512)");
}

#endif

}  // namespace ct
