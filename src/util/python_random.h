#pragma once
// A bit-identical copy of CPython's random.Random (3.11, Lib/random.py + Modules/_randommodule.c):
// the MT19937 generator, seeding from an int, random(), getrandbits(k), _randbelow(n), shuffle and
// sample. The CORE evaluator (docs/eval.md) orders its rows and picks its few-shot examples with
// Random(1337).shuffle and Random(1234 + idx).sample, so these must match Python exactly.
//
// Only seeding from an int is supported (the CORE procedure never seeds from str/bytes/None).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "util/error.h"

namespace ct {

class PythonRandom {
 public:
  // random.Random(seed) for a seed that fits in 64 bits (the sign is dropped, as CPython does).
  explicit PythonRandom(int64_t seed);
  // random.Random(n) for any Python int n, written as a decimal literal ("-123", "2**70" is not
  // accepted; digits only, optional sign). Errors name the offending character.
  static PythonRandom from_decimal(std::string_view decimal);
  // random.Random(n) where |n| = sum(words[i] << 32*i) (little-endian 32-bit words).
  static PythonRandom from_words(std::vector<uint32_t> abs_value_words);

  // One raw MT19937 output (genrand_uint32).
  uint32_t next_uint32();
  // random.random(): 53 random bits as a double in [0, 1).
  double random();
  // random.getrandbits(k) for 0 <= k <= 64.
  uint64_t getrandbits(int k);
  // random.getrandbits(k) for any k >= 0, as little-endian 32-bit words (ceil(k/32) of them; none
  // for k = 0).
  std::vector<uint32_t> getrandbits_words(int64_t k);
  // random._randbelow(n) for n >= 1 (the getrandbits rejection method).
  uint64_t randbelow(uint64_t n);

  // random.shuffle(x) in place.
  template <typename T>
  void shuffle(std::vector<T>& x);
  // random.sample(population, k) (without counts). Throws when k > population.size().
  template <typename T>
  std::vector<T> sample(const std::vector<T>& population, size_t k);
  // Which of CPython's two strategies sample(n, k) uses: true = the pool (partial Fisher-Yates on a
  // copy), false = rejection against a set of selected indices.
  static bool sample_uses_pool(size_t n, size_t k);

 private:
  PythonRandom() = default;
  void init_genrand(uint32_t s);
  void init_by_array(const std::vector<uint32_t>& key);

  static constexpr int kN = 624;
  std::array<uint32_t, kN> state_{};
  int index_ = kN + 1;
};

template <typename T>
void PythonRandom::shuffle(std::vector<T>& x) {
  // for i in reversed(range(1, len(x))): j = randbelow(i + 1); swap x[i], x[j]
  for (size_t i = x.size(); i-- > 1;) {
    size_t j = static_cast<size_t>(randbelow(static_cast<uint64_t>(i) + 1));
    std::swap(x[i], x[j]);
  }
}

template <typename T>
std::vector<T> PythonRandom::sample(const std::vector<T>& population, size_t k) {
  const size_t n = population.size();
  check(k <= n, "PythonRandom::sample: sample larger than population (k=", k, ", n=", n, ")");
  std::vector<T> result;
  result.reserve(k);
  if (sample_uses_pool(n, k)) {
    // Invariant: the non-selected items are pool[0 : n-i].
    std::vector<T> pool(population);
    for (size_t i = 0; i < k; ++i) {
      size_t j = static_cast<size_t>(randbelow(n - i));
      result.push_back(pool[j]);
      pool[j] = pool[n - i - 1];
    }
  } else {
    std::unordered_set<size_t> selected;
    for (size_t i = 0; i < k; ++i) {
      size_t j = static_cast<size_t>(randbelow(n));
      while (selected.count(j)) j = static_cast<size_t>(randbelow(n));
      selected.insert(j);
      result.push_back(population[j]);
    }
  }
  return result;
}

}  // namespace ct
