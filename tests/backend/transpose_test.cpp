// The CPU kernels' transposes: the 32-bit transpose (AVX-512 16 x 16 blocks and element-wise edges)
// against the plain definition, for sizes around the block size and strides wider than the rows.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend/cpu/transpose.h"

namespace ct {
namespace {

TEST(Transpose, ThirtyTwoBitMatchesTheDefinitionAtEverySize) {
  for (int64_t rows : {0, 1, 5, 15, 16, 17, 32, 47, 64, 130})
    for (int64_t cols : {1, 3, 16, 31, 33, 64, 100}) {
      const int64_t src_stride = cols + 3, dst_stride = rows + 5;
      std::vector<uint32_t> src(static_cast<size_t>(rows * src_stride + 1));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i * 2654435761u + 7);
      const uint32_t kUntouched = 0xdeadbeef;
      std::vector<uint32_t> dst(static_cast<size_t>(cols * dst_stride), kUntouched);
      transpose_32bit(src.data(), src_stride, rows, cols, dst.data(), dst_stride);
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < dst_stride; ++r) {
          const uint32_t want = r < rows ? src[static_cast<size_t>(r * src_stride + c)] : kUntouched;
          ASSERT_EQ(dst[static_cast<size_t>(c * dst_stride + r)], want)
              << rows << " x " << cols << ": dst[" << c << "][" << r << "]";
        }
    }
}

TEST(Transpose, ThirtyTwoBitCarriesFloatsBitForBit) {
  const int64_t rows = 48, cols = 32;
  std::vector<float> src(static_cast<size_t>(rows * cols)), dst(src.size());
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * -0.37f + 1e-30f;
  transpose_32bit(src.data(), cols, rows, cols, dst.data(), rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(dst[static_cast<size_t>(c * rows + r)], src[static_cast<size_t>(r * cols + c)]);
}

}  // namespace
}  // namespace ct
