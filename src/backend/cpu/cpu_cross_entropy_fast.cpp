// The fused softcapped cross-entropy on f32 (or bf16) logits, on 8 lanes (AVX2 FMA) or 16 (AVX-512)
// (math: cpu_cross_entropy.cpp). Used for every f32 cross-entropy with a cap up to
// kFastCrossEntropyMaxCap (forward, backward and fused) at the avx2 level and above, so that the
// training loss and the evaluation loss of the same logits are the same bits.
// Per row, with y = logit / cap and th = tanh(y) = 1 - 2 / (exp(2y) + 1):
//   pass 1: z = cap th, e = exp(z - cap), sum += e     (e and th kept in a scratch row)
//   loss = cap + log(sum) - z[target]
//   pass 2: dlogit = loss_scale (e / sum - [j == target]) (1 - th^2)
// 1 - 2 / (t + 1) has an absolute error of a few f32 ulps of 1 near y = 0, i.e. ~1e-6 in z at
// cap 15: far below what bf16 matmuls or the loss's own rounding contribute.
#include "backend/cpu/cpu_cross_entropy_fast.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/bf16.h"
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/kernel_switch.h"
#include "backend/cpu/simd_math.h"

namespace ct {

#ifdef CLOCKTRAIN_SIMD_AVX2

namespace {

// Software prefetches, in elements ahead of the one at hand: the logits 1,024 ahead (4 KiB of f32:
// the hardware prefetchers stop at each 4 KiB page, and a row of the vocabulary is 8 pages; without
// this the forward pass ran at 41% of its in-cache speed on Xeon-b), and a dlogits row written apart
// 256 ahead, for writing (docs/performance-journal.md).
constexpr int64_t kLogitsAhead = 1024, kDlogitsAhead = 256;

// A prefetch of the cache line at p into L1 (for writing when kWrite); never faults, so p may lie
// past the end of the array.
template <bool kWrite = false>
inline void prefetch(const void* p) {
  _mm_prefetch(static_cast<const char*>(p), kWrite ? _MM_HINT_ET0 : _MM_HINT_T0);
}

// The operations of the kernel on one vector of kLanes floats: Ymm (8 lanes, AVX2 FMA) and Zmm (16
// lanes, AVX-512), so that one kernel (fused_rows) serves both. A row's last `count` < kLanes
// elements go through load_first / store_first.
struct Ymm {
  using F = __m256;
  using I = __m256i;
  static constexpr int64_t kLanes = 8;
  static I lane_index() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a b
  static F fmsub(F a, F b, F c) { return _mm256_fmsub_ps(a, b, c); }    // a b - c
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F exp(F x) { return simd::exp_in_range(x); }  // x in [-87, 88]
  // 1 / a by the division itself: correctly rounded, and no slower here than vrcpps and a Newton step
  // (vdivps on 8 lanes runs beside the FMAs; measured at avx2 on Xeon-b)
  static F reciprocal(F a) { return _mm256_div_ps(_mm256_set1_ps(1.0f), a); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F load(const uint16_t* p) { return simd::load_bf16x8(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void store(uint16_t* p, F v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), simd::round_to_bf16(v)); }
  // (AVX2 has masked 32-bit loads and stores but no 16-bit ones: bf16 goes through a small copy)
  static F load_first(const float* p, int64_t count) {
    return _mm256_maskload_ps(p, simd::first_lanes_of_8(count));
  }
  static F load_first(const uint16_t* p, int64_t count) {
    uint16_t lanes[kLanes] = {};
    std::memcpy(lanes, p, static_cast<size_t>(count) * sizeof(uint16_t));
    return load(lanes);
  }
  static void store_first(float* p, F v, int64_t count) {
    _mm256_maskstore_ps(p, simd::first_lanes_of_8(count), v);
  }
  static void store_first(uint16_t* p, F v, int64_t count) {
    uint16_t lanes[kLanes];
    store(lanes, v);
    std::memcpy(p, lanes, static_cast<size_t>(count) * sizeof(uint16_t));
  }
  static F zero_from(F v, int64_t count) {
    return _mm256_and_ps(v, _mm256_castsi256_ps(simd::first_lanes_of_8(count)));
  }
  static float sum(F v) {
    const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
  }
  // Per lane, the largest value seen and (by a strict comparison over increasing indices) its first
  // index; lanes at or past `count` are not looked at.
  static void keep_largest(F& best, I& best_index, F v, int64_t at, int64_t count) {
    F larger = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
    if (count < kLanes) larger = _mm256_and_ps(larger, _mm256_castsi256_ps(simd::first_lanes_of_8(count)));
    best = _mm256_blendv_ps(best, v, larger);
    const I index = _mm256_add_epi32(lane_index(), _mm256_set1_epi32(static_cast<int>(at)));
    best_index = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(best_index), _mm256_castsi256_ps(index), larger));
  }
  // The smallest index among the lanes that hold the largest value.
  static int32_t first_index_of_largest(F best, I best_index) {
    alignas(32) float values[kLanes];
    alignas(32) int32_t indices[kLanes];
    _mm256_store_ps(values, best);
    _mm256_store_si256(reinterpret_cast<I*>(indices), best_index);
    const float largest = *std::max_element(values, values + kLanes);
    int32_t first = INT32_MAX;
    for (int64_t l = 0; l < kLanes; ++l)
      if (values[l] == largest) first = std::min(first, indices[l]);
    return first;
  }
};

#ifdef CLOCKTRAIN_SIMD_AVX512
struct Zmm {
  using F = __m512;
  using I = __m512i;
  static constexpr int64_t kLanes = 16;
  static I lane_index() { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F fmsub(F a, F b, F c) { return _mm512_fmsub_ps(a, b, c); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F exp(F x) { return simd::exp_in_range(x); }
  // 1 / a to ~1e-8 relative: vrcp14ps and one Newton step (a single vdivps on 16 lanes costs more
  // than the rest of the element's work)
  static F reciprocal(F a) {
    const F r = _mm512_rcp14_ps(a);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(a, r, _mm512_set1_ps(2.0f)));
  }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F load(const uint16_t* p) { return simd::load_bf16(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void store(uint16_t* p, F v) { simd::store_bf16_flushing(p, v); }
  static F load_first(const float* p, int64_t count) {
    return _mm512_maskz_loadu_ps(simd::first_lanes_of_16(count), p);
  }
  static F load_first(const uint16_t* p, int64_t count) {
    return simd::maskz_load_bf16(simd::first_lanes_of_16(count), p);
  }
  static void store_first(float* p, F v, int64_t count) {
    _mm512_mask_storeu_ps(p, simd::first_lanes_of_16(count), v);
  }
  static void store_first(uint16_t* p, F v, int64_t count) {
    simd::mask_store_bf16_flushing(p, simd::first_lanes_of_16(count), v);
  }
  static F zero_from(F v, int64_t count) { return _mm512_maskz_mov_ps(simd::first_lanes_of_16(count), v); }
  static float sum(F v) { return _mm512_reduce_add_ps(v); }
  static void keep_largest(F& best, I& best_index, F v, int64_t at, int64_t count) {
    const __mmask16 larger = _mm512_mask_cmp_ps_mask(simd::first_lanes_of_16(count), v, best, _CMP_GT_OQ);
    best = _mm512_mask_mov_ps(best, larger, v);
    best_index = _mm512_mask_mov_epi32(best_index, larger,
                                       _mm512_add_epi32(lane_index(), _mm512_set1_epi32(static_cast<int32_t>(at))));
  }
  static int32_t first_index_of_largest(F best, I best_index) {
    const __mmask16 holders = _mm512_cmp_ps_mask(best, _mm512_set1_ps(_mm512_reduce_max_ps(best)), _CMP_EQ_OQ);
    return _mm512_mask_reduce_min_epi32(holders, best_index);
  }
};
#endif

// kGradient: write dlogits (D: float, or uint16_t for bf16); kArgmax: write argmax (forward only).
// Logits L are float, or uint16_t for bf16 (widened exactly on load, so the same values give the
// same bits either way).
template <typename V, bool kGradient, bool kArgmax, typename D, typename L>
void fused_rows(float* losses, int32_t* argmax, D* dlogits, const L* logits, const int32_t* targets, int64_t rows,
                int64_t vocab, float cap, float loss_scale) {
  using F = typename V::F;
  constexpr int64_t kLanes = V::kLanes, kStepBytes = 2 * kLanes * int64_t{sizeof(L)};
#pragma omp parallel if (rows * vocab > kMinParallelElements)
  {
    // scratch rows padded to whole vectors: the last vector is stored whole (its extra lanes unused)
    const int64_t padded = (vocab + kLanes - 1) / kLanes * kLanes;
    std::vector<float> e_row(static_cast<size_t>(kGradient ? padded : 0)), th_row(static_cast<size_t>(padded));
    float* e = e_row.data();
    float* th = th_row.data();
    const F two_over_cap = V::set1(2.0f / cap), cap_v = V::set1(cap);
    const F one = V::set1(1.0f), two = V::set1(2.0f);
    const int64_t full = vocab / kLanes * kLanes, tail = vocab - full;
    // th = tanh(logit / cap) and e = exp(cap th - cap), for one vector of logits. 2y is clamped to
    // [-30, 30], where th is already exactly -1 or 1 in f32 (the same bits as unclamped), so that
    // both exps' arguments lie in exp_in_range's [-87, 88] (cap th - cap lies in [-2 cap, 0], cap <=
    // kFastCrossEntropyMaxCap = 40) and exp(2y) is finite (1 / inf's Newton step would make th NaN).
    const F max_2y = V::set1(30.0f), min_2y = V::set1(-30.0f);
    auto tanh_and_exp = [&](F logit, F& th_v) {
      // (a NaN stays NaN: min/max return their second operand when either is NaN)
      const F t = V::exp(V::min(max_2y, V::max(min_2y, V::mul(logit, two_over_cap))));
      th_v = V::fnmadd(two, V::reciprocal(V::add(t, one)), one);
      return V::exp(V::fmsub(cap_v, th_v, cap_v));
    };
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      const L* l = logits + n * vocab;
      D* d = kGradient ? dlogits + n * vocab : nullptr;  // (no offset on a null dlogits)
      const int32_t target = targets[n];
      float sum = 0.0f;
      if (target >= 0 || kArgmax) {
        // pass 1 (reads the whole row, so that dlogits may alias it). e is kept only for pass 2.
        // The argmax is the first index of the largest z = cap th (z is increasing in th).
        F sum0 = V::zero(), sum1 = V::zero();
        F best = V::set1(-INFINITY);
        typename V::I best_index{};
        auto keep = [&](int64_t at, F th_v, F e_v, int64_t count) {
          V::store(th + at, th_v);
          if constexpr (kGradient) V::store(e + at, e_v);
          if constexpr (kArgmax) V::keep_largest(best, best_index, th_v, at, count);
        };
        int64_t j = 0;
        for (; j + 2 * kLanes <= full; j += 2 * kLanes) {
          for (int64_t byte = 0; byte < kStepBytes; byte += 64)  // each cache line this step consumes
            prefetch(reinterpret_cast<const char*>(l + j + kLogitsAhead) + byte);
          F th0, th1;
          const F e0 = tanh_and_exp(V::load(l + j), th0);
          const F e1 = tanh_and_exp(V::load(l + j + kLanes), th1);
          keep(j, th0, e0, kLanes);
          keep(j + kLanes, th1, e1, kLanes);
          sum0 = V::add(sum0, e0);
          sum1 = V::add(sum1, e1);
        }
        for (; j < full; j += kLanes) {
          F th0;
          const F e0 = tanh_and_exp(V::load(l + j), th0);
          keep(j, th0, e0, kLanes);
          sum0 = V::add(sum0, e0);
        }
        if (tail) {
          F th0;
          const F e0 = tanh_and_exp(V::load_first(l + j, tail), th0);
          keep(j, th0, e0, tail);
          sum0 = V::add(sum0, V::zero_from(e0, tail));
        }
        sum = V::sum(V::add(sum0, sum1));
        if constexpr (kArgmax) argmax[n] = V::first_index_of_largest(best, best_index);
      }
      if (target < 0) {
        losses[n] = 0.0f;
        if constexpr (kGradient) std::fill(d, d + vocab, D{0});
        continue;
      }
      const float th_target = th[target];
      losses[n] = cap + std::log(sum) - cap * th_target;
      if constexpr (!kGradient) continue;
      // pass 2: dlogit = loss_scale e / sum (1 - th^2); the target's entry is set afterwards
      const F coef = V::set1(loss_scale / sum);
      auto gradient = [&](int64_t at) {
        const F th_v = V::load(th + at);
        return V::mul(V::mul(V::load(e + at), coef), V::fnmadd(th_v, th_v, one));
      };
      int64_t j = 0;
      for (; j < full; j += kLanes) {
        if (j % (64 / int64_t{sizeof(D)}) == 0) prefetch<true>(d + j + kDlogitsAhead);  // once per line
        V::store(d + j, gradient(j));
      }
      if (tail) V::store_first(d + j, gradient(j), tail);
      const float g_target = (e[target] / sum - 1.0f) * (1.0f - th_target * th_target) * loss_scale;
      if constexpr (std::is_same_v<D, uint16_t>) {
        d[target] = float_to_bf16(g_target);
      } else {
        d[target] = g_target;
      }
    }
  }
}

// The kernel for these storages, on the widest vectors the level in use allows.
template <bool kGradient, bool kArgmax, typename D, typename L>
void fused_rows_at_level(float* losses, int32_t* argmax, D* dlogits, const L* logits, const int32_t* targets,
                         int64_t rows, int64_t vocab, float cap, float loss_scale) {
#ifdef CLOCKTRAIN_SIMD_AVX512
  if (fast_cross_entropy_lanes() == 16) {
    fused_rows<Zmm, kGradient, kArgmax>(losses, argmax, dlogits, logits, targets, rows, vocab, cap, loss_scale);
    return;
  }
#endif
  fused_rows<Ymm, kGradient, kArgmax>(losses, argmax, dlogits, logits, targets, rows, vocab, cap, loss_scale);
}

// The instantiation for the storages at hand: dlogits bf16, f32, or none (the forward pass, with or
// without argmax).
template <typename L>
void fused_rows_for(float* losses, int32_t* argmax, void* dlogits, bool dlogits_bf16, const L* logits,
                    const int32_t* targets, int64_t rows, int64_t vocab, float cap, float loss_scale) {
  if (dlogits && dlogits_bf16) {
    fused_rows_at_level<true, false>(losses, nullptr, static_cast<uint16_t*>(dlogits), logits, targets, rows, vocab,
                                     cap, loss_scale);
  } else if (dlogits) {
    fused_rows_at_level<true, false>(losses, nullptr, static_cast<float*>(dlogits), logits, targets, rows, vocab, cap,
                                     loss_scale);
  } else if (argmax) {
    fused_rows_at_level<false, true>(losses, argmax, static_cast<float*>(nullptr), logits, targets, rows, vocab, cap,
                                     loss_scale);
  } else {
    fused_rows_at_level<false, false>(losses, nullptr, static_cast<float*>(nullptr), logits, targets, rows, vocab,
                                      cap, loss_scale);
  }
}

}  // namespace

int fast_cross_entropy_lanes() {
  static const bool on = !switched_off("CLOCKTRAIN_CPU_FAST_CROSS_ENTROPY");
  if (!on || !cpu_level_at_least(CpuLevel::avx2)) return 0;
#ifdef CLOCKTRAIN_SIMD_AVX512
  if (cpu_level_at_least(CpuLevel::avx512)) return 16;
#endif
  return 8;
}

void fast_softcap_cross_entropy(float* losses, int32_t* argmax, void* dlogits, bool dlogits_bf16, const void* logits,
                                bool logits_bf16, const int32_t* targets, int64_t rows, int64_t vocab, float cap,
                                float loss_scale) {
  if (argmax && dlogits) fail("fast_softcap_cross_entropy: argmax is written by the forward pass only");
  if (logits_bf16) {
    fused_rows_for(losses, argmax, dlogits, dlogits_bf16, static_cast<const uint16_t*>(logits), targets, rows, vocab,
                   cap, loss_scale);
  } else {
    fused_rows_for(losses, argmax, dlogits, dlogits_bf16, static_cast<const float*>(logits), targets, rows, vocab,
                   cap, loss_scale);
  }
}

#else

int fast_cross_entropy_lanes() { return 0; }
void fast_softcap_cross_entropy(float*, int32_t*, void*, bool, const void*, bool, const int32_t*, int64_t, int64_t,
                                float, float) {
  fail("fast_softcap_cross_entropy: not built (needs AVX2 and FMA)");
}

#endif

}  // namespace ct
