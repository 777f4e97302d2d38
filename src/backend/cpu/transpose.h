#pragma once
// Blocked transposes for the CPU kernels' packing steps.
#include <algorithm>
#include <cstdint>

namespace ct {

// dst[c * dst_stride + r] = load(r, c) for r < rows, c < cols, in 32 x 32 blocks. A plain loop over
// one side walks the other at a fixed stride, and at a power-of-two stride of a kilobyte or more all
// the lines it touches fall into a few L1 sets and evict one another (this made the AMX attention's
// packings half of its backward kernel's time); a block keeps 32 lines of each side in use at a time.
template <typename T, typename Load>
void transpose_blocked(int64_t rows, int64_t cols, T* dst, int64_t dst_stride, Load load) {
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) dst[c * dst_stride + r] = load(r, c);
    }
}

}  // namespace ct
