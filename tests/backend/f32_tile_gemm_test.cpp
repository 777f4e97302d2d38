// The AVX2 FMA products of the f32 attention kernels (src/backend/cpu/f32_tile_gemm.h) against f64
// arithmetic on the same f32 inputs: A read row-major and transposed, B row-major in place (and, in
// one test, ending where an unreadable page begins, so a load past its last column crashes) and packed
// from a transpose into panels, C overwritten or accumulated, partial row blocks and partial panels,
// and per-block ranges (columns a block does not name keep their NaN; terms it does not name are not
// added). The blocks of the CPU level in use: zmm at avx512 and above, ymm at avx2 (the avx2/ run of
// these tests). Skipped in builds without AVX2 and FMA.
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/f32_tile_gemm.h"
#include "backend_test_support.h"

namespace ct::test {
namespace {

#ifdef CLOCKTRAIN_F32_TILES

using f32_tiles::BlockRange;

struct TileCase {
  int64_t m, n, k;
  bool transposed_a, packed_b, accumulate, ranged;
};

// The range each block of rows [first, last] gets in a ranged case: columns from a panel that moves
// right with the rows (a causal mask's shape), terms [first / 2, k - last % 3).
BlockRange range_of(const TileCase& cs, int64_t first, int64_t last) {
  if (!cs.ranged) return {0, cs.n, 0, cs.k};
  return {std::min(first * 3, cs.n), cs.n - last % 2, first / 2, cs.k - last % 3};
}

void check_case(const TileCase& cs) {
  SCOPED_TRACE(testing::Message() << "M=" << cs.m << " N=" << cs.n << " K=" << cs.k << " transposed A "
                                  << cs.transposed_a << " packed B " << cs.packed_b << " accumulate "
                                  << cs.accumulate << " ranged " << cs.ranged);
  std::mt19937 gen(static_cast<unsigned>(cs.m * 7 + cs.n * 3 + cs.k));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  // A(r, p): row-major [m x k] with a padded row, or the transpose of a row-major [k x m]
  const int64_t a_ld = (cs.transposed_a ? cs.m : cs.k) + 3;
  // (at least one element: with k = 0 an empty vector's data() would be null, and the kernel still
  // forms addresses from A and B, which it never reads then)
  const int64_t a_rows = cs.transposed_a ? cs.k : cs.m;
  std::vector<float> a(static_cast<size_t>(std::max<int64_t>(a_rows * a_ld, 1)), std::nanf(""));
  auto a_at = [&](int64_t r, int64_t p) -> float& {
    return a[static_cast<size_t>(cs.transposed_a ? p * a_ld + r : r * a_ld + p)];
  };
  for (int64_t r = 0; r < cs.m; ++r)
    for (int64_t p = 0; p < cs.k; ++p) a_at(r, p) = value(gen);
  // B(p, n): row-major [k x n], exactly k * n floats (no padding to read by mistake)
  std::vector<float> b(static_cast<size_t>(std::max<int64_t>(cs.k * cs.n, 1)));
  for (float& x : b) x = value(gen);
  std::vector<float> panels;
  f32_tiles::Operand operand = f32_tiles::rows_of(b.data(), cs.n);
  if (cs.packed_b) {  // B = X^T with X [n x k] row-major (row stride k + 5)
    const int64_t x_ld = cs.k + 5, panel_stride = f32_tiles::panel_floats(cs.k) + 8;
    std::vector<float> x(static_cast<size_t>(cs.n * x_ld), std::nanf(""));
    for (int64_t j = 0; j < cs.n; ++j)
      for (int64_t p = 0; p < cs.k; ++p) x[static_cast<size_t>(j * x_ld + p)] = b[static_cast<size_t>(p * cs.n + j)];
    panels.assign(static_cast<size_t>((cs.n + 15) / 16 * panel_stride), std::nanf(""));
    f32_tiles::pack_columns_into_panels(x.data(), x_ld, cs.n, cs.k, panels.data(), panel_stride);
    operand = f32_tiles::panels_of(panels.data(), panel_stride);
  }
  const int64_t ldc = cs.n + 5;
  std::vector<float> c(static_cast<size_t>(cs.m * ldc), std::nanf(""));
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t j = 0; j < cs.n; ++j) c[static_cast<size_t>(i * ldc + j)] = value(gen);
  const std::vector<float> start = c;
  const float alpha = 0.75f;
  const int64_t a_row = cs.transposed_a ? 1 : a_ld, a_col = cs.transposed_a ? a_ld : 1;
  f32_tiles::product(c.data(), ldc, a.data(), a_row, a_col, operand, cs.m, cs.n, alpha, cs.accumulate,
                     [&](int64_t first, int64_t last) { return range_of(cs, first, last); });
  double worst = 0;
  for (int64_t i = 0; i < cs.m; ++i) {
    const int64_t height = f32_tiles::row_block_height(), first = i / height * height;
    const BlockRange range = range_of(cs, first, std::min(cs.m, first + height) - 1);
    const int64_t column_begin = range.n_begin / 16 * 16;  // whole panels
    const int64_t column_end = std::min(cs.n, (range.n_end + 15) / 16 * 16);
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      if (j >= cs.n || j < column_begin || j >= column_end) {  // not this block's to write
        if (std::isnan(start[at])) {
          EXPECT_TRUE(std::isnan(c[at])) << i << "," << j;
        } else {
          EXPECT_EQ(c[at], start[at]) << i << "," << j;
        }
        continue;
      }
      double sum = 0, magnitude = cs.accumulate ? std::fabs(start[at]) : 0.0;
      for (int64_t p = std::max<int64_t>(range.p_begin, 0); p < range.p_end; ++p) {
        const double term = static_cast<double>(a_at(i, p)) * b[static_cast<size_t>(p * cs.n + j)];
        sum += term;
        magnitude += std::fabs(alpha * term);
      }
      const double expected = alpha * sum + (cs.accumulate ? start[at] : 0.0);
      worst = std::max(worst, std::fabs(c[at] - expected) / std::max(magnitude, 1e-30));
    }
  }
  EXPECT_LT(worst, 1e-5);
}

TEST(F32TileGemm, EveryLayoutAndEdgeMatchesF64) {
  for (int64_t m : {1, 5, 6, 13, 25})
    for (int64_t n : {1, 7, 16, 17, 40})
      for (int64_t k : {0, 1, 9, 33})
        for (int layout = 0; layout < 4; ++layout)
          for (bool accumulate : {false, true})
            for (bool ranged : {false, true})
              check_case({m, n, k, (layout & 1) != 0, (layout & 2) != 0, accumulate, ranged});
}

TEST(F32TileGemm, RowMajorBIsNeverReadPastItsLastColumn) {
  // B [k x n] placed so that its last float is the last one before a PROT_NONE page: a full 16-float
  // load of the last row's partial panel (instead of a masked one) would touch that page. n = 17 and
  // 29: the partial panel is the second of a pair (the zmm blocks at avx512 and above).
  for (int64_t n : {1, 5, 8, 9, 13, 17, 29}) {
    const int64_t k = 3, m = 4;
    BytesBeforeAGuardPage memory(static_cast<size_t>(k * n) * sizeof(float));
    float* b = memory.as<float>();
    for (int64_t i = 0; i < k * n; ++i) b[i] = static_cast<float>(i % 7) - 3.0f;
    std::vector<float> a(static_cast<size_t>(m * k), 0.5f), c(static_cast<size_t>(m * n), 0.0f);
    f32_tiles::product(c.data(), n, a.data(), k, 1, f32_tiles::rows_of(b, n), m, n, 1.0f, false,
                       [&](int64_t, int64_t) { return BlockRange{0, n, 0, k}; });
    for (int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (int64_t p = 0; p < k; ++p) expected += 0.5 * b[p * n + j];
      EXPECT_FLOAT_EQ(c[static_cast<size_t>(j)], static_cast<float>(expected)) << "n " << n << " column " << j;
    }
  }
}

TEST(F32TileGemm, PanelsHoldTheTransposeAndZerosPastTheLastColumn) {
  // X [n x k], n = 21 (a whole panel and 5 columns of a second), k = 19 (8 x 8 blocks and an edge)
  const int64_t n = 21, k = 19, x_ld = 23, panel_stride = f32_tiles::panel_floats(k);
  std::vector<float> x(static_cast<size_t>(n * x_ld));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::vector<float> panels(static_cast<size_t>(2 * panel_stride), std::nanf(""));
  f32_tiles::pack_columns_into_panels(x.data(), x_ld, n, k, panels.data(), panel_stride);
  for (int64_t j = 0; j < 32; ++j)
    for (int64_t p = 0; p < k; ++p) {
      const float got = panels[static_cast<size_t>(j / 16 * panel_stride + p * 16 + j % 16)];
      EXPECT_EQ(got, j < n ? x[static_cast<size_t>(j * x_ld + p)] : 0.0f) << "column " << j << " term " << p;
    }
}

#else

TEST(F32TileGemm, EveryLayoutAndEdgeMatchesF64) { GTEST_SKIP() << "this build has no AVX2 FMA tile kernels"; }

#endif

}  // namespace
}  // namespace ct::test
