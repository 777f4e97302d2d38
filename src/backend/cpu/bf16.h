#pragma once
// bfloat16 storage: the upper 16 bits of an IEEE float32. Conversion from f32 rounds to nearest,
// ties to even (what PyTorch, CUDA's __float2bfloat16 and oneDNN do); NaN stays a quiet NaN.
#include <cstdint>
#include <cstring>

namespace ct {

inline uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate. Overflow of the
  // mantissa carries into the exponent, which is the correct rounding (up to inf at the top).
  // Written without a branch (a select for NaN) so that loops over arrays vectorise.
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// f64 -> bf16, rounded once (not f64 -> f32 -> bf16, which can round twice): when the f32 nearest to
// the value is exactly halfway between two bf16 values but the value itself is not, the side of the
// tie the value lies on decides.
inline uint16_t double_to_bf16(double value) {
  float nearest = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &nearest, sizeof(bits));
  bool finite = (bits & 0x7f800000u) != 0x7f800000u;
  if (finite && (bits & 0xffffu) == 0x8000u && static_cast<double>(nearest) != value) {
    uint32_t toward_zero = bits >> 16;
    bool beyond_tie = (value < 0 ? -value : value) > (nearest < 0 ? -nearest : nearest);
    return static_cast<uint16_t>(beyond_tie ? toward_zero + 1 : toward_zero);
  }
  return float_to_bf16(nearest);
}

inline float bf16_to_float(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

}  // namespace ct
