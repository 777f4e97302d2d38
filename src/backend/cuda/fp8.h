#pragma once
// fp8 e4m3 (the OCP "E4M3FN" format of Hopper's tensor cores) with per-tensor scaling, host and
// device. 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits; largest finite 448, no infinities,
// S.1111.111 is NaN; subnormals 2^-9 .. 7 * 2^-9.
//
// Scaling ("current scaling"): before a product, amax = max |x| over the tensor; the tensor is
// stored as e4m3(x * s) and the product is multiplied back by 1/s. s is the largest power of two
// with amax * s <= 448, so 1/s is exact and the only rounding is e4m3's own. amax 0 gives s = 1. A
// NaN or Inf amax gives s = NaN: every element of the quantised tensor becomes NaN, so the product
// is NaN and the step's non-finite check sees it (with s = 1 an Inf would have been clamped to 448 by
// the saturating conversion, and the overflow would have stayed finite).
#include <cmath>
#include <cstdint>

#include "backend/cuda/cuda_kernels.h"  // CT_HOST_DEVICE

namespace ct::cuda {

inline constexpr float kFp8E4m3Max = 448.0f;

// One step of the amax reduction, per element and across lanes: NaN wins over everything (fmaxf
// would drop it), else the larger. Order-free, so any reduction tree gives the same result.
CT_HOST_DEVICE inline float amax_combine(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

CT_HOST_DEVICE inline float fp8_e4m3_scale(float amax) {
  if (amax != amax || amax > 3.4028235e38f) return NAN;  // NaN, Inf: poison the product (above)
  if (!(amax > 0.0f)) return 1.0f;                        // zero
  // 2^floor(log2(448 / amax)), clamped to [2^-126, 2^126] so that s and 1/s are normal floats
  int exponent = static_cast<int>(floorf(log2f(kFp8E4m3Max / amax)));
  if (exponent > 126) exponent = 126;
  if (exponent < -126) exponent = -126;
  float s = ldexpf(1.0f, exponent);
  if (amax * s > kFp8E4m3Max) s *= 0.5f;  // log2f rounding at an exact power of two
  return s;
}

// Host reference of the device's saturating conversion (round to nearest even, values beyond
// +-448 become +-448, NaN stays NaN): used by the tests to check the quantisation kernel.
inline uint8_t float_to_e4m3_reference(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= kFp8E4m3Max) return sign | 0x7e;
  int exponent = a > 0 ? static_cast<int>(std::floor(std::log2(a))) : -10;
  if (exponent < -6) exponent = -6;  // subnormal range: units of 2^-9
  // a = q * 2^(exponent - 3) with q rounded to nearest even; q in [8, 16] for normals (16 carries)
  const double q = std::nearbyint(std::ldexp(a, 3 - exponent));  // default rounding: to nearest even
  int code = exponent == -6 && q < 8 ? static_cast<int>(q) : ((exponent + 7) << 3) + (static_cast<int>(q) - 8);
  if (code > 0x7e) code = 0x7e;
  return static_cast<uint8_t>(sign | code);
}

inline float e4m3_to_float_reference(uint8_t code) {
  const int exponent = (code >> 3) & 0xf, mantissa = code & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return NAN;
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

}  // namespace ct::cuda
