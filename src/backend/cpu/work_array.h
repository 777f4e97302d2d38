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

}  // namespace ct
