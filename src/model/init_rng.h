#pragma once
// The seeded initialisation's random numbers: a counter-based generator, so that element i of a
// tensor gets the same value whatever the thread count or the order of generation.
//
//   key(seed, name) = splitmix64(seed) XOR fnv1a64(name)
//   bits(key, i)    = splitmix64(key + i * 0x9E3779B97F4A7C15)      (SplitMix64's finaliser)
//   u1 = ((bits(key, 2j) >> 11) + 1) / 2^53      in (0, 1]
//   u2 = (bits(key, 2j+1) >> 11) / 2^53           in [0, 1)
//   element 2j   = sqrt(-2 ln u1) cos(2 pi u2)    (Box-Muller, computed in double)
//   element 2j+1 = sqrt(-2 ln u1) sin(2 pi u2)
// and a value N(0, std) is std times that, rounded once to the tensor's dtype.
#include <cmath>
#include <cstdint>
#include <string_view>

namespace ct {

inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

inline uint64_t init_stream_key(uint64_t seed, std::string_view name) {
  return splitmix64_mix(seed + 0x9E3779B97F4A7C15ULL) ^ fnv1a64(name);
}

// The standard normal value of element `index` of the stream `key`.
inline double counter_normal(uint64_t key, uint64_t index) {
  const uint64_t pair = index / 2;
  const uint64_t a = splitmix64_mix(key + (2 * pair) * 0x9E3779B97F4A7C15ULL);
  const uint64_t b = splitmix64_mix(key + (2 * pair + 1) * 0x9E3779B97F4A7C15ULL);
  const double two_pow_minus_53 = 1.0 / 9007199254740992.0;
  const double u1 = (static_cast<double>(a >> 11) + 1.0) * two_pow_minus_53;
  const double u2 = static_cast<double>(b >> 11) * two_pow_minus_53;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 6.283185307179586476925286766559 * u2;
  return (index % 2 == 0) ? radius * std::cos(angle) : radius * std::sin(angle);
}

}  // namespace ct
