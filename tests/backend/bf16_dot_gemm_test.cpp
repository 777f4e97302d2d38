// The AVX512-BF16 product of the bf16 attention kernels (src/backend/cpu/bf16_dot_gemm.h) against f64
// arithmetic on the same bf16 inputs: B packed into VNNI layout by vnni_pack.h, C overwritten or
// accumulated, N with and without a last strip of 32 columns, strides wider than the matrices (the
// padding holds NaN, which must never be read or written). Skipped in builds without AVX512-BF16.
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/bf16.h"
#include "backend/cpu/bf16_dot_gemm.h"
#include "backend/cpu/vnni_pack.h"
#include "backend_test_support.h"

namespace ct::test {
namespace {

#ifdef CLOCKTRAIN_BF16_DOT

struct DotCase {
  int64_t m, n, k;
  bool accumulate;
};

// One product against f64: the worst |C - reference| / (sum |a b| + |C start|) stays below 1e-5, and
// C's padding keeps its NaN.
void check_case(const DotCase& cs) {
  SCOPED_TRACE(testing::Message() << "M=" << cs.m << " N=" << cs.n << " K=" << cs.k << " accumulate " << cs.accumulate);
  const int64_t lda = cs.k + 16, ldb_rows = cs.n + 16, ldc = cs.n + 16, ldv = cs.n + 32;  // padded strides
  std::mt19937 gen(static_cast<unsigned>(cs.m * 7 + cs.n * 3 + cs.k));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const uint16_t nan16 = float_to_bf16(std::nanf(""));
  std::vector<uint16_t> a(static_cast<size_t>(cs.m * lda), nan16), b(static_cast<size_t>(cs.k * ldb_rows), nan16);
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t p = 0; p < cs.k; ++p) a[static_cast<size_t>(i * lda + p)] = float_to_bf16(value(gen));
  for (int64_t p = 0; p < cs.k; ++p)
    for (int64_t j = 0; j < cs.n; ++j) b[static_cast<size_t>(p * ldb_rows + j)] = float_to_bf16(value(gen));
  std::vector<uint32_t> bv(static_cast<size_t>(cs.k / 2 * ldv), uint32_t{nan16} * 0x10001u);  // NaN pairs
  for (int64_t q = 0; q < cs.k / 2; ++q)  // VNNI rows with a stride wider than N
    vnni::pack_pairs_over_rows(b.data() + 2 * q * ldb_rows, ldb_rows, 2, cs.n, bv.data() + q * ldv, 2);
  std::vector<float> c(static_cast<size_t>(cs.m * ldc), std::nanf(""));
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t j = 0; j < cs.n; ++j) c[static_cast<size_t>(i * ldc + j)] = value(gen);
  const std::vector<float> start = c;
  bf16_dot_gemm(c.data(), ldc, a.data(), lda, bv.data(), ldv, cs.m, cs.n, cs.k, cs.accumulate);
  double worst = 0;
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      double sum = cs.accumulate ? start[at] : 0.0, magnitude = cs.accumulate ? std::fabs(start[at]) : 0.0;
      for (int64_t p = 0; p < cs.k; ++p) {
        const double term = static_cast<double>(bf16_to_float(a[static_cast<size_t>(i * lda + p)])) *
                            bf16_to_float(b[static_cast<size_t>(p * ldb_rows + j)]);
        sum += term;
        magnitude += std::fabs(term);
      }
      worst = std::max(worst, std::fabs(c[at] - sum) / magnitude);
    }
    for (int64_t j = cs.n; j < ldc; ++j) EXPECT_TRUE(std::isnan(c[static_cast<size_t>(i * ldc + j)])) << i << "," << j;
  }
  // f32 sums of K products: a few units of f32 rounding relative to the sum of magnitudes
  EXPECT_LT(worst, 1e-5);
  EXPECT_FALSE(std::isnan(worst));
}

TEST(Bf16DotGemm, MatchesF64OnTheSameBf16Inputs) {
  for (bool accumulate : {false, true}) {
    check_case({32, 32, 32, accumulate});     // one strip of 32 columns only
    check_case({64, 64, 128, accumulate});    // one strip of 64
    check_case({64, 96, 64, accumulate});     // 64 and a last 32
    check_case({96, 160, 256, accumulate});   // two of 64 and a last 32, rows in 4s and 8s
    check_case({32, 512, 1024, accumulate});  // long K
  }
}

#else

TEST(Bf16DotGemm, MatchesF64OnTheSameBf16Inputs) { GTEST_SKIP() << "this build has no AVX512-BF16"; }

#endif

}  // namespace
}  // namespace ct::test
