#pragma once
// Small open-addressing hash tables for the tokenizer's hot loops (training counts tens of millions
// of chunks; encoding looks up every adjacent pair): linear probing, power-of-two capacity, at most
// half full. Only what the tokenizer needs: insert and find, no erase.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace ct::text_detail {

// The splitmix64 finaliser: a cheap, well-mixed 64-bit hash of a 64-bit key.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A hash of a byte string, 8 bytes at a time (multiply-rotate), finished with mix64. The last 1-7
// bytes are read with two overlapping loads (or three single bytes), never a byte loop: most
// chunks are that short.
inline uint64_t hash_bytes(const char* p, size_t n) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = kMul ^ (n * 0xff51afd7ed558ccdULL);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = std::rotl((h ^ w) * kMul, 29);
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    h = std::rotl((h ^ ((uint64_t{a} << 32) | b)) * kMul, 29);
  } else if (n > 0) {
    const uint64_t w = (uint64_t{static_cast<uint8_t>(p[0])} << 16) |
                       (uint64_t{static_cast<uint8_t>(p[n >> 1])} << 8) | static_cast<uint8_t>(p[n - 1]);
    h = std::rotl((h ^ w) * kMul, 29);
  }
  return mix64(h);
}
inline uint64_t hash_bytes(std::string_view s) { return hash_bytes(s.data(), s.size()); }

// a[0, n) == b[0, n), inline for the short strings that chunks mostly are (memcmp is a call).
inline bool bytes_equal(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t x, y;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      if (x != y) return false;
    }
    uint64_t x, y;  // the last 8 bytes, overlapping what was compared
    std::memcpy(&x, a + n - 8, 8);
    std::memcpy(&y, b + n - 8, 8);
    return x == y;
  }
  if (n >= 4) {
    uint32_t x0, y0, x1, y1;
    std::memcpy(&x0, a, 4);
    std::memcpy(&y0, b, 4);
    std::memcpy(&x1, a + n - 4, 4);
    std::memcpy(&y1, b + n - 4, 4);
    return x0 == y0 && x1 == y1;
  }
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}
inline bool bytes_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && bytes_equal(a.data(), b.data(), a.size());
}

// The key of an ordered pair of token ids.
inline uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}
inline int32_t pair_left(uint64_t key) { return static_cast<int32_t>(key >> 32); }
inline int32_t pair_right(uint64_t key) { return static_cast<int32_t>(key & 0xffffffffu); }

// uint64 key -> Value. The key ~0 is reserved (pair keys never use it: ids are below 2^31).
template <typename Value>
class U64Map {
 public:
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  explicit U64Map(size_t expected = 16) { rehash(std::bit_ceil(std::max<size_t>(16, expected * 2))); }

  const Value* find(uint64_t key) const {
    for (size_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  Value* find(uint64_t key) { return const_cast<Value*>(std::as_const(*this).find(key)); }

  // The value for key, inserted as `initial` if absent; `inserted` tells which.
  Value& get_or_insert(uint64_t key, const Value& initial, bool* inserted = nullptr) {
    if ((size_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
    size_t i = mix64(key) & mask_;
    for (; keys_[i] != kEmpty; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        if (inserted) *inserted = false;
        return values_[i];
      }
    }
    keys_[i] = key;
    values_[i] = initial;
    ++size_;
    if (inserted) *inserted = true;
    return values_[i];
  }

  size_t size() const { return size_; }
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != kEmpty) f(keys_[i], values_[i]);
  }

 private:
  void rehash(size_t capacity) {
    std::vector<uint64_t> old_keys(capacity, kEmpty);
    std::vector<Value> old_values(capacity);
    old_keys.swap(keys_);
    old_values.swap(values_);
    mask_ = capacity - 1;
    for (size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] == kEmpty) continue;
      size_t i = mix64(old_keys[j]) & mask_;
      while (keys_[i] != kEmpty) i = (i + 1) & mask_;
      keys_[i] = old_keys[j];
      values_[i] = std::move(old_values[j]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<Value> values_;
  size_t mask_ = 0, size_ = 0;
};

}  // namespace ct::text_detail
