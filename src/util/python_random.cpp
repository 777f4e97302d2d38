#include "util/python_random.h"

#include <bit>

namespace ct {

namespace {
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;
}  // namespace

PythonRandom::PythonRandom(int64_t seed) {
  // abs() without overflow for INT64_MIN.
  uint64_t magnitude = seed < 0 ? uint64_t(0) - static_cast<uint64_t>(seed) : static_cast<uint64_t>(seed);
  *this = from_words({static_cast<uint32_t>(magnitude), static_cast<uint32_t>(magnitude >> 32)});
}

PythonRandom PythonRandom::from_decimal(std::string_view decimal) {
  std::string_view digits = decimal;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
  check(!digits.empty(), "PythonRandom: seed '", decimal, "': expected a decimal integer");
  std::vector<uint32_t> words{0};
  for (char c : digits) {
    check(c >= '0' && c <= '9', "PythonRandom: seed '", decimal, "': expected a decimal digit, got '", c, "'");
    // words = words * 10 + digit, in base 2^32.
    uint64_t carry = static_cast<uint64_t>(c - '0');
    for (auto& w : words) {
      uint64_t v = static_cast<uint64_t>(w) * 10 + carry;
      w = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
    if (carry) words.push_back(static_cast<uint32_t>(carry));
  }
  return from_words(std::move(words));
}

PythonRandom PythonRandom::from_words(std::vector<uint32_t> words) {
  // CPython (random_seed): key = the 32-bit words of abs(n), as many as n.bit_length() needs, and
  // a single zero word for n = 0.
  while (words.size() > 1 && words.back() == 0) words.pop_back();
  if (words.empty()) words.push_back(0);
  PythonRandom r;
  r.init_by_array(words);
  return r;
}

void PythonRandom::init_genrand(uint32_t s) {
  state_[0] = s;
  for (int i = 1; i < kN; ++i) {
    state_[i] = 1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  index_ = kN;
}

void PythonRandom::init_by_array(const std::vector<uint32_t>& key) {
  init_genrand(19650218U);
  size_t i = 1, j = 0;
  const size_t key_length = key.size();
  for (size_t k = std::max<size_t>(kN, key_length); k; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525U)) + key[j] +
                static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= static_cast<size_t>(kN)) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (size_t k = kN - 1; k; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941U)) -
                static_cast<uint32_t>(i);
    ++i;
    if (i >= static_cast<size_t>(kN)) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000U;  // MSB set: a non-zero initial state
}

uint32_t PythonRandom::next_uint32() {
  static constexpr uint32_t mag01[2] = {0x0U, kMatrixA};
  if (index_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      uint32_t y = (state_[kk] & kUpperMask) | (state_[kk + 1] & kLowerMask);
      state_[kk] = state_[kk + kM] ^ (y >> 1) ^ mag01[y & 1U];
    }
    for (; kk < kN - 1; ++kk) {
      uint32_t y = (state_[kk] & kUpperMask) | (state_[kk + 1] & kLowerMask);
      state_[kk] = state_[kk + (kM - kN)] ^ (y >> 1) ^ mag01[y & 1U];
    }
    uint32_t y = (state_[kN - 1] & kUpperMask) | (state_[0] & kLowerMask);
    state_[kN - 1] = state_[kM - 1] ^ (y >> 1) ^ mag01[y & 1U];
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double PythonRandom::random() {
  // a = 27 bits, b = 26 bits: (a * 2^26 + b) / 2^53.
  uint32_t a = next_uint32() >> 5, b = next_uint32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

std::vector<uint32_t> PythonRandom::getrandbits_words(int64_t k) {
  check(k >= 0, "PythonRandom::getrandbits: number of bits must be non-negative, got ", k);
  // Words are filled least significant first; the last one keeps only its top (k mod 32) bits.
  std::vector<uint32_t> words;
  words.reserve(static_cast<size_t>((k + 31) / 32));
  for (int64_t left = k; left > 0; left -= 32) {
    uint32_t r = next_uint32();
    if (left < 32) r >>= (32 - left);
    words.push_back(r);
  }
  return words;
}

uint64_t PythonRandom::getrandbits(int k) {
  check(k >= 0 && k <= 64, "PythonRandom::getrandbits: k must be in [0, 64] here, got ", k);
  if (k <= 32) return k == 0 ? 0 : next_uint32() >> (32 - k);
  auto words = getrandbits_words(k);
  return static_cast<uint64_t>(words[0]) | (static_cast<uint64_t>(words[1]) << 32);
}

uint64_t PythonRandom::randbelow(uint64_t n) {
  check(n >= 1, "PythonRandom::randbelow: n must be at least 1");
  const int k = std::bit_width(n);  // n.bit_length(), not (n-1): n may be 1
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

bool PythonRandom::sample_uses_pool(size_t n, size_t k) {
  // setsize = 21 (a small set minus an empty list); for k > 5 add 4 ** ceil(log(3k, 4)), computed
  // with the same double logarithms as math.log(x, base) = log(x) / log(base).
  double setsize = 21;
  if (k > 5) {
    double exponent = std::ceil(std::log(static_cast<double>(k * 3)) / std::log(4.0));
    setsize += std::pow(4.0, exponent);  // exact: a power of two below 2^1024
  }
  return static_cast<double>(n) <= setsize;
}

}  // namespace ct
