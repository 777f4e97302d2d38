// clocktrain's own bf16 GEMMs, the AMX one (src/backend/cpu/amx_gemm.h) and the AVX512-BF16 dot-product
// one (dot_gemm.h), each against f64 arithmetic on the same bf16 inputs: both transpose cases they
// take, f32 and bf16 C, alpha and beta, K from 32 to the largest, row counts that split unevenly over
// threads, N over several passes of B's panels (AMX) and with a last 32 columns (dot), and leading
// dimensions wider than the matrices. Then: the same bits for any thread count and from inside a
// parallel region, and which products each declines. Each engine's tests are skipped, saying why,
// where the process cannot run it.
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/amx.h"
#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/bf16.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/dot_gemm.h"
#include "backend_test_support.h"

namespace ct::test {
namespace {

// One engine: its name, whether it takes a product, the product, its largest K and why it cannot run.
struct Engine {
  const char* name;
  bool (*handles)(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);
  void (*gemm)(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
               int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c, bool c_bf16, int64_t ldc);
  int64_t max_k;
  std::string (*why_not)();
};

const Engine kEngines[] = {
    {"amx", amx_gemm_handles, amx_gemm_bf16, kAmxGemmMaxK, [] { return "AMX GEMM not usable: " + amx_status(); }},
    {"dot", dot_gemm_handles, dot_gemm_bf16, kDotGemmMaxK,
     [] { return "dot-product GEMM not usable at CPU level " + cpu_level_description() + " (or not built)"; }},
};

void PrintTo(const Engine& engine, std::ostream* out) { *out << engine.name; }  // gtest's name for a parameter

class OwnBf16Gemm : public ::testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    if (!GetParam().handles(false, false, 32, 32, 32)) GTEST_SKIP() << GetParam().why_not();
  }
};

struct Operands {
  int64_t m, n, k, lda, ldb, ldc;
  bool ta, tb;
  std::vector<uint16_t> a, b;
};

// Random bf16 operands, stored [m, lda] or [k, lda] (A^T), [k, ldb] or [n, ldb] (B^T), with padding
// columns past the matrix that a correct kernel never reads (they hold NaN).
Operands make_operands(int64_t m, int64_t n, int64_t k, bool ta, bool tb, int64_t pad, unsigned seed) {
  Operands o{m, n, k, (ta ? m : k) + pad, (tb ? k : n) + pad, n + pad, ta, tb, {}, {}};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  auto fill = [&](std::vector<uint16_t>& x, int64_t rows, int64_t cols, int64_t ld) {
    x.assign(static_cast<size_t>(rows * ld), float_to_bf16(std::nanf("")));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(r * ld + c)] = float_to_bf16(value(gen));
  };
  fill(o.a, ta ? k : m, ta ? m : k, o.lda);
  fill(o.b, tb ? n : k, tb ? k : n, o.ldb);
  return o;
}

double element_a(const Operands& o, int64_t i, int64_t p) {
  return bf16_to_float(o.a[static_cast<size_t>(o.ta ? p * o.lda + i : i * o.lda + p)]);
}
double element_b(const Operands& o, int64_t p, int64_t j) {
  return bf16_to_float(o.b[static_cast<size_t>(o.tb ? j * o.ldb + p : p * o.ldb + j)]);
}

// The f64 products of one case, computed once for all its alpha/beta/C-dtype checks: sum_p a_ip b_pj
// and sum_p |a_ip b_pj| for every (i, j), row-major [m, n].
struct F64Product {
  std::vector<double> sum, magnitude;
};

F64Product f64_product(const Operands& o) {
  F64Product r{std::vector<double>(static_cast<size_t>(o.m * o.n)), std::vector<double>(static_cast<size_t>(o.m * o.n))};
  for (int64_t i = 0; i < o.m; ++i)
    for (int64_t j = 0; j < o.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < o.k; ++p) {
        const double term = element_a(o, i, p) * element_b(o, p, j);
        sum += term;
        magnitude += std::fabs(term);
      }
      r.sum[static_cast<size_t>(i * o.n + j)] = sum;
      r.magnitude[static_cast<size_t>(i * o.n + j)] = magnitude;
    }
  return r;
}

// Runs the kernel on C = c_start (f32 or bf16 as given) and returns the worst |error| over
// (|alpha| sum |a b| + |beta c|) against f64 (`exact`: f64_product(o)).
double worst_relative_error(const Engine& engine, const Operands& o, const F64Product& exact, float alpha, float beta,
                            bool c_bf16) {
  std::mt19937 gen(99);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> c32(static_cast<size_t>(o.m * o.ldc));
  std::vector<uint16_t> c16(c32.size());
  for (size_t i = 0; i < c32.size(); ++i) {
    c16[i] = float_to_bf16(value(gen));
    c32[i] = bf16_to_float(c16[i]);
  }
  const std::vector<float> start = c32;
  engine.gemm(o.ta, o.tb, o.m, o.n, o.k, alpha, o.a.data(), o.lda, o.b.data(), o.ldb, beta,
              c_bf16 ? static_cast<void*>(c16.data()) : c32.data(), c_bf16, o.ldc);
  double worst = 0;
  for (int64_t i = 0; i < o.m; ++i)
    for (int64_t j = 0; j < o.n; ++j) {
      const size_t at = static_cast<size_t>(i * o.ldc + j), ij = static_cast<size_t>(i * o.n + j);
      const double expected = alpha * exact.sum[ij] + beta * start[at];
      const double got = c_bf16 ? bf16_to_float(c16[at]) : c32[at];
      worst = std::max(worst, std::fabs(got - expected) /
                                  (std::fabs(alpha) * exact.magnitude[ij] + std::fabs(beta * start[at])));
    }
  // the padding columns of C are left alone
  for (int64_t i = 0; i < o.m; ++i)
    for (int64_t j = o.n; j < o.ldc; ++j) {
      const size_t at = static_cast<size_t>(i * o.ldc + j);
      if (c_bf16 ? c16[at] != float_to_bf16(start[at]) : c32[at] != start[at]) return INFINITY;
    }
  return worst;
}

TEST_P(OwnBf16Gemm, EveryCaseMatchesF64OnTheSameBf16Inputs) {
  const Engine& engine = GetParam();
  struct Case {
    bool ta, tb;
    int64_t m, n, k, pad;  // pad: extra elements per stored row (33: odd row strides)
  };
  // m = 160: 5 blocks of 32 rows (uneven over 2 threads); n = 1088 with k = 1024: passes of 512
  // columns of B for AMX (~1 MB each), the last one short; n = 96 and 32: the dot GEMM's last 32
  // columns (8 x 32 blocks); the engine's largest K
  const Case cases[] = {{false, false, 160, 96, 1024, 32},
                        {false, true, 64, 32, engine.max_k, 0},
                        {false, true, 64, 1088, 1024, 32},
                        {false, true, 64, 64, 32, 33},
                        {false, false, 96, 32, 288, 33}};
  for (const Case& cs : cases) {
    const Operands o = make_operands(cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.pad, 7);
    const std::string what = std::string(cs.ta ? "T" : "N") + (cs.tb ? "T" : "N") + " k=" + std::to_string(cs.k);
    const F64Product exact = f64_product(o);
    const auto error = [&](float alpha, float beta, bool c_bf16) {
      return worst_relative_error(engine, o, exact, alpha, beta, c_bf16);
    };
    // f32 sums: errors of ~k f32 roundings of partial sums, far below bf16's 2^-9
    EXPECT_LT(error(1.0f, 0.0f, false), 1e-5) << what << " plain";
    EXPECT_LT(error(1.0f, 1.0f, false), 1e-5) << what << " accumulate";
    EXPECT_LT(error(0.75f, 1.0f, false), 1e-5) << what << " scaled, accumulate";
    EXPECT_LT(error(-0.5f, 0.5f, false), 1e-5) << what << " scaled both";
    // a bf16 C: one rounding of the f32 result (8 significant bits: at most 2^-8 relative)
    EXPECT_LT(error(1.0f, 0.0f, true), 1.0 / 256 + 1e-5) << what << " bf16";
    EXPECT_LT(error(0.5f, 0.0f, true), 1.0 / 256 + 1e-5) << what << " bf16 scaled";
    EXPECT_LT(error(0.5f, 1.0f, true), 1.0 / 256 + 1e-5) << what << " bf16 accumulate";
  }
}

TEST_P(OwnBf16Gemm, SameBitsForAnyThreadCountAndInsideAParallelRegion) {
  const Engine& engine = GetParam();
  for (bool tb : {false, true}) {
    const Operands o = make_operands(192, 64, 800, false, tb, 0, 11);
    auto run = [&](int threads, bool inside_region) {
      std::vector<float> c(static_cast<size_t>(o.m * o.n), 0.0f);
      auto call = [&] {
        engine.gemm(o.ta, o.tb, o.m, o.n, o.k, 0.25f, o.a.data(), o.lda, o.b.data(), o.ldb, 0.0f, c.data(), false, o.n);
      };
      const int saved = omp_get_max_threads();
      omp_set_num_threads(threads);
      if (inside_region) {
#pragma omp parallel num_threads(2)
        {
          if (omp_get_thread_num() == 1) call();
        }
      } else {
        call();
      }
      omp_set_num_threads(saved);
      return c;
    };
    const std::vector<float> two = run(2, false);
    EXPECT_EQ(run(1, false), two) << "tb=" << tb;
    EXPECT_EQ(run(3, false), two) << "tb=" << tb;
    EXPECT_EQ(run(2, true), two) << "tb=" << tb;
  }
}

TEST_P(OwnBf16Gemm, DeclinesWhatItCannotRun) {
  const Engine& engine = GetParam();
  EXPECT_TRUE(engine.handles(false, true, 4096, 8192, 256));
  EXPECT_TRUE(engine.handles(false, false, 4096, 256, engine.max_k));
  EXPECT_FALSE(engine.handles(true, false, 256, 256, 256));                // A transposed
  EXPECT_FALSE(engine.handles(false, true, 256, 256, engine.max_k + 32));  // a longer K
  EXPECT_FALSE(engine.handles(false, false, 48, 32, 32));                  // not multiples of 32
  EXPECT_FALSE(engine.handles(false, false, 32, 40, 32));
  EXPECT_FALSE(engine.handles(false, false, 32, 32, 16));
  EXPECT_FALSE(engine.handles(false, false, 0, 32, 32));
  EXPECT_THROW(engine.gemm(false, false, 48, 32, 32, 1.0f, nullptr, 32, nullptr, 32, 0.0f, nullptr, false, 32),
               std::exception);
}

INSTANTIATE_TEST_SUITE_P(Engines, OwnBf16Gemm, ::testing::ValuesIn(kEngines),
                         [](const ::testing::TestParamInfo<Engine>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ct::test
