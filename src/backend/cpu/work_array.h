#pragma once
// Work arrays that a CPU kernel keeps between calls (in a thread_local std::vector): a training step
// calls the same kernels dozens of times on a few shapes, and fresh arrays cost their page faults and
// zeroing every time.
#include <cstdint>
#include <vector>

namespace ct {

// storage.data() with at least n elements, grown when smaller. The contents are whatever an earlier
// call left: every user writes an element before it reads it.
template <typename T>
T* work_array(std::vector<T>& storage, int64_t n) {
  if (storage.size() < static_cast<size_t>(n)) storage.resize(static_cast<size_t>(n));
  return storage.data();
}

inline int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// A row stride (in elements) of at least `elements` whose size is an odd number of 64-byte lines, for
// work arrays whose rows a kernel reads or writes several at a time: rows a power of two of lines
// apart (512 keys of f32: 2 KB) map to a few L1 sets only and evict each other, an odd number of lines
// apart they spread over all sets.
inline int64_t spread_stride(int64_t elements, int64_t element_bytes) {
  const int64_t per_line = 64 / element_bytes;
  const int64_t lines = (elements + per_line - 1) / per_line;
  return (lines % 2 == 0 ? lines + 1 : lines) * per_line;
}

}  // namespace ct
