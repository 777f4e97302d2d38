// The SIMD building blocks of src/backend/cpu/simd_math.h against scalar references: exp on 8 lanes
// (AVX2 FMA) and 16 (AVX-512) within 3 ulps of std::exp over the range each is for, the two widths
// giving the same bits; the clamped 16-lane exp at the ends of f32 (0, inf, NaN); and the f32 -> bf16
// roundings of 8 and 16 lanes against float_to_bf16. Each part runs where the build has its
// instructions (-march=native), whatever the CPU level in use.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/bf16.h"
#include "backend/cpu/simd_math.h"
#include "backend_test_support.h"

namespace ct::test {
namespace {

#ifdef CLOCKTRAIN_SIMD_AVX2

// Arguments over [lo, hi]: a fine even grid, its ends, and random values, padded to a multiple of 16.
std::vector<float> arguments(float lo, float hi) {
  std::vector<float> x;
  for (int i = 0; i <= 20000; ++i) x.push_back(lo + (hi - lo) * static_cast<float>(i) / 20000.0f);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> any(lo, hi);
  while (x.size() % 16 != 0 || x.size() < 30000) x.push_back(any(gen));
  return x;
}

// |got - exp(x)| in units of the f32 spacing at exp(x) (the subnormal spacing below FLT_MIN).
double ulps_from_exp(float got, float x) {
  const double want = std::exp(static_cast<double>(x));
  const double spacing = std::max(std::ldexp(1.0, std::ilogb(want) - 23), static_cast<double>(FLT_TRUE_MIN));
  return std::abs(static_cast<double>(got) - want) / spacing;
}

TEST(SimdMath, ExpOnEightLanesWithinThreeUlpsOverItsRange) {
  const std::vector<float> x = arguments(-87.0f, 88.0f);
  double worst = 0;
  for (size_t i = 0; i < x.size(); i += 8) {
    float got[8];
    _mm256_storeu_ps(got, simd::exp_in_range(_mm256_loadu_ps(x.data() + i)));
    for (size_t lane = 0; lane < 8; ++lane) worst = std::max(worst, ulps_from_exp(got[lane], x[i + lane]));
  }
  EXPECT_LT(worst, 3.0);
  float nan[8];
  _mm256_storeu_ps(nan, simd::exp_in_range(_mm256_set1_ps(std::nanf(""))));
  EXPECT_TRUE(std::isnan(nan[0]));
}

// Floats for the roundings: zeros, infinities, NaN, the largest, the normal and denormal edges, ties,
// and random bit patterns.
std::vector<float> rounding_cases() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, std::nanf(""), FLT_MAX, -FLT_MAX, FLT_MIN,
                               -FLT_MIN, FLT_MIN / 2, -FLT_MIN / 4, FLT_TRUE_MIN, 1.00390625f /* a tie: 1 + 2^-8 */,
                               1.01171875f /* a tie rounding up: 1 + 3 2^-8 */, 3.0e38f, 1e-39f, -5e-45f, 65504.5f};
  std::mt19937 gen(3);
  std::uniform_int_distribution<uint32_t> any_bits;
  while (values.size() % 16 != 0 || values.size() < 4096) {
    const uint32_t bits = any_bits(gen);
    float v;
    std::memcpy(&v, &bits, sizeof v);
    values.push_back(v);
  }
  return values;
}

TEST(SimdMath, EightLaneBf16RoundingAgreesWithTheScalarOne) {
  const std::vector<float> values = rounding_cases();
  for (size_t i = 0; i < values.size(); i += 8) {
    uint16_t got[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(got), simd::round_to_bf16(_mm256_loadu_ps(values.data() + i)));
    for (size_t lane = 0; lane < 8; ++lane) EXPECT_EQ(got[lane], float_to_bf16(values[i + lane])) << values[i + lane];
    // and the widening back: every bf16 value is an f32 exactly
    float widened[8];
    _mm256_storeu_ps(widened, simd::load_bf16x8(got));
    for (size_t lane = 0; lane < 8; ++lane) {
      const float want = bf16_to_float(got[lane]);
      EXPECT_EQ(std::memcmp(&widened[lane], &want, sizeof want), 0) << values[i + lane];
    }
  }
}

#ifdef CLOCKTRAIN_SIMD_AVX512
TEST(SimdMath, ExpOnSixteenLanesWithinThreeUlpsAndTheBitsOfEightLanes) {
  const std::vector<float> x = arguments(-104.0f, 88.7f);
  double worst = 0;
  for (size_t i = 0; i < x.size(); i += 16) {
    float got[16], in_range[16];
    _mm512_storeu_ps(got, simd::exp(_mm512_loadu_ps(x.data() + i)));
    _mm512_storeu_ps(in_range, simd::exp_in_range(_mm512_loadu_ps(x.data() + i)));
    for (size_t lane = 0; lane < 16; ++lane) {
      worst = std::max(worst, ulps_from_exp(got[lane], x[i + lane]));
      EXPECT_EQ(std::memcmp(&got[lane], &in_range[lane], sizeof(float)), 0) << x[i + lane];  // no clamp needed
    }
    for (size_t half = 0; half < 16; half += 8) {
      float eight[8];
      _mm256_storeu_ps(eight, simd::exp_in_range(_mm256_loadu_ps(x.data() + i + half)));
      for (size_t lane = 0; lane < 8; ++lane)
        if (x[i + half + lane] >= -87.0f && x[i + half + lane] <= 88.0f)
          EXPECT_EQ(std::memcmp(&eight[lane], &got[half + lane], sizeof(float)), 0) << x[i + half + lane];
    }
  }
  EXPECT_LT(worst, 3.0);
  // the clamps: 0 from -104 down, inf above ~88.7, also for infinite arguments; NaN stays NaN
  const float inf = std::numeric_limits<float>::infinity();
  alignas(64) float ends[16] = {-inf, -1e30f, -104.0f, inf, 1e30f, 89.0f, std::nanf(""), -103.0f};
  _mm512_store_ps(ends, simd::exp(_mm512_load_ps(ends)));
  EXPECT_EQ(ends[0], 0.0f);
  EXPECT_EQ(ends[1], 0.0f);
  EXPECT_EQ(ends[2], 0.0f);
  EXPECT_EQ(ends[3], inf);
  EXPECT_EQ(ends[4], inf);
  EXPECT_EQ(ends[5], inf);
  EXPECT_TRUE(std::isnan(ends[6]));
  EXPECT_EQ(ends[7], FLT_TRUE_MIN);  // exp(-103) ~ 1.8e-45 rounds to the smallest subnormal
}

// The kernels' two 16-lane roundings: round_to_bf16 has float_to_bf16's bits for every float;
// round_to_bf16_flushing (vcvtneps2bf16 where the build has AVX512_BF16) has them for every float but
// the denormals, which it turns into a zero of their sign.
TEST(SimdMath, SixteenLaneBf16RoundingsAgreeWithTheScalarOne) {
  const std::vector<float> values = rounding_cases();
  for (size_t i = 0; i < values.size(); i += 16) {
    const __m512 v = _mm512_loadu_ps(values.data() + i);
    uint16_t exact[16], flushing[16];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(exact), simd::round_to_bf16(v));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(flushing), simd::round_to_bf16_flushing(v));
    for (size_t lane = 0; lane < 16; ++lane) {
      const float x = values[i + lane];
      const uint16_t want = float_to_bf16(x);
      EXPECT_EQ(exact[lane], want) << x;
      if (std::fpclassify(x) == FP_SUBNORMAL) {
        EXPECT_EQ(flushing[lane], std::signbit(x) ? 0x8000 : 0x0000) << x;
      } else if (std::isnan(x)) {
        EXPECT_TRUE(std::isnan(bf16_to_float(flushing[lane]))) << x;
      } else {
        EXPECT_EQ(flushing[lane], want) << x;
      }
    }
  }
}
#endif  // CLOCKTRAIN_SIMD_AVX512

#endif  // CLOCKTRAIN_SIMD_AVX2

}  // namespace
}  // namespace ct::test
