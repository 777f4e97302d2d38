// Device tests (skipped without a GPU): cuBLASLt products, fp8 linear layers, Newton-Schulz and
// the optimizer updates against the CPU backend.
#include "backend/cuda/fp8.h"
#include "cuda_test_support.h"

namespace ct::test {
namespace {

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
};

// c = alpha op(a) op(b) + beta c on both backends; a and b of `dtype` on the GPU, c of c_dtype.
void check_gemm(Backend& gpu, const GemmCase& g, DType dtype, DType c_dtype, double alpha, double beta, double tol,
                uint64_t seed) {
  const Shape a_shape = g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k};
  const Shape b_shape = g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n};
  auto maybe_round = [&](Values v) { return dtype == DType::bf16 ? round_to_bf16(v) : v; };
  const Values a = maybe_round(random_values(static_cast<size_t>(a_shape.numel()), seed));
  const Values b = maybe_round(random_values(static_cast<size_t>(b_shape.numel()), seed + 1));
  const Values c = c_dtype == DType::bf16 ? round_to_bf16(random_values(static_cast<size_t>(g.m * g.n), seed + 2))
                                          : random_values(static_cast<size_t>(g.m * g.n), seed + 2);
  Buffer ca = make(cpu(), a_shape, DType::f32, a), cb = make(cpu(), b_shape, DType::f32, b);
  Buffer cc = make(cpu(), Shape{g.m, g.n}, DType::f32, c);
  Buffer ga = make(gpu, a_shape, dtype, a), gb = make(gpu, b_shape, dtype, b);
  Buffer gc = make(gpu, Shape{g.m, g.n}, c_dtype, c);
  if (beta == 0.0) gpu.fill(gc, NAN);  // beta 0 must not read c
  cpu().gemm(ca, cb, cc, g.ta, g.tb, alpha, beta);
  gpu.gemm(ga, gb, gc, g.ta, g.tb, alpha, beta);
  CT_EXPECT_CLOSE(read(gpu, gc), read(cpu(), cc), tol);
}

TEST(CudaGemm, EveryTransposeInF32AndBf16) {
  CT_REQUIRE_CUDA();
  uint64_t seed = 100;
  for (const GemmCase& g : {GemmCase{37, 53, 29, false, false}, GemmCase{64, 96, 128, false, true},
                            GemmCase{33, 17, 70, true, false}, GemmCase{128, 256, 512, true, true},
                            GemmCase{640, 2560, 640, false, true}}) {
    for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{0.5, 1.0}}) {
      SCOPED_TRACE(testing::Message() << g.m << "x" << g.n << "x" << g.k << " ta " << g.ta << " tb " << g.tb << " alpha "
                                      << alpha << " beta " << beta);
      check_gemm(*cuda(), g, DType::f32, DType::f32, alpha, beta, 1e-4, seed++);
      check_gemm(*cuda(), g, DType::bf16, DType::f32, alpha, beta, 1e-2, seed++);
      check_gemm(*cuda(), g, DType::bf16, DType::bf16, alpha, beta, 1e-2, seed++);
      check_gemm(*cuda({"bf16"}), g, DType::f32, DType::f32, alpha, beta, 1e-2, seed++);  // f32 rounded to bf16
    }
  }
}

TEST(CudaGemm, Fp8LinearIsCloseToBf16AndReallyLowerPrecision) {
  CT_REQUIRE_CUDA();
  Backend& fp8 = *cuda({"bf16", true});
  Backend& bf16 = *cuda({"bf16"});
  const int64_t M = 256, N = 2560, K = 640;
  const Values x = round_to_bf16(random_values(M * K, 11)), w = round_to_bf16(random_values(N * K, 12, 0.04));
  Buffer fx = make(fp8, Shape{M, K}, DType::bf16, x), fw = make(fp8, Shape{N, K}, DType::bf16, w);
  Buffer bx = make(bf16, Shape{M, K}, DType::bf16, x), bw = make(bf16, Shape{N, K}, DType::bf16, w);
  Buffer fy = poisoned(fp8, Shape{M, N}, DType::f32), by(bf16, Shape{M, N}, DType::f32);
  fp8.linear_forward_fp8(fx, fw, fy, 0.0);
  bf16.linear_forward_fp8(bx, bw, by, 0.0);  // fp8 off: exactly the bf16 gemm
  const Values low = read(fp8, fy), reference = read(bf16, by);
  const double error = norm_relative_error(low, reference);
  EXPECT_LT(error, 0.08) << "e4m3 keeps 3 mantissa bits: a few percent";
  EXPECT_GT(error, 1e-3) << "indistinguishable from bf16: the fp8 path did not run";
  // beta = 1 accumulates into a bf16 output
  Buffer acc = make(fp8, Shape{M, N}, DType::bf16, round_to_bf16(random_values(M * N, 13)));
  const Values before = read(fp8, acc);
  fp8.linear_forward_fp8(fx, fw, acc, 1.0);
  Values expected = before;
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += reference[i];
  EXPECT_LT(norm_relative_error(read(fp8, acc), expected), 0.05);
  // shapes that are not multiples of 16 fall back to the bf16 product
  Buffer sx = make(fp8, Shape{10, 24}, DType::bf16, round_to_bf16(random_values(240, 14)));
  Buffer sw = make(fp8, Shape{20, 24}, DType::bf16, round_to_bf16(random_values(480, 15)));
  Buffer sy(fp8, Shape{10, 20}, DType::f32), sref(fp8, Shape{10, 20}, DType::f32);
  fp8.linear_forward_fp8(sx, sw, sy, 0.0);
  fp8.gemm(sx, sw, sref, false, true, 1.0, 0.0);
  EXPECT_EQ(read(fp8, sy), read(fp8, sref));
}

TEST(CudaOptimizer, AdamwAndMuonMomentumAndUpdateMatchTheCpu) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const int64_t n = 50001;
  Values p = random_values(n, 20), g = random_values(n, 21, 0.1), m = random_values(n, 22, 0.01);
  Values v = random_values(n, 23, 0.01);
  for (double& x : v) x = x * x;
  Buffer cp = make(cpu(), Shape{n}, DType::f32, p), cg = make(cpu(), Shape{n}, DType::f32, g);
  Buffer cm = make(cpu(), Shape{n}, DType::f32, m), cv = make(cpu(), Shape{n}, DType::f32, v);
  Buffer gp = make(gpu, Shape{n}, DType::f32, p), gg = make(gpu, Shape{n}, DType::f32, g);
  Buffer gm = make(gpu, Shape{n}, DType::f32, m), gv = make(gpu, Shape{n}, DType::f32, v);
  for (int64_t step = 1; step <= 3; ++step) {
    cpu().adamw_update(cp, cg, cm, cv, 0.01, 0.8, 0.95, 1e-10, 0.1, step);
    gpu.adamw_update(gp, gg, gm, gv, 0.01, 0.8, 0.95, 1e-10, 0.1, step);
  }
  CT_EXPECT_CLOSE(read(gpu, gp), read(cpu(), cp), 1e-5);
  CT_EXPECT_CLOSE(read(gpu, gm), read(cpu(), cm), 1e-5);
  CT_EXPECT_CLOSE(read(gpu, gv), read(cpu(), cv), 1e-5);
  Buffer cu(cpu(), Shape{n}, DType::f32), gu = poisoned(gpu, Shape{n}, DType::f32);
  cpu().muon_momentum(cu, cm, cg, 0.95);
  gpu.muon_momentum(gu, gm, gg, 0.95);
  CT_EXPECT_CLOSE(read(gpu, gu), read(cpu(), cu), 1e-5);
  CT_EXPECT_CLOSE(read(gpu, gm), read(cpu(), cm), 1e-5);
  // Muon's update with cautious weight decay (u of both signs against p of both signs)
  cpu().muon_update(cp, cu, 0.02, 0.28);
  gpu.muon_update(gp, gu, 0.02, 0.28);
  CT_EXPECT_CLOSE(read(gpu, gp), read(cpu(), cp), 1e-5);
  expect_error([&] { gpu.adamw_update(gp, gg, gm, gv, 0.01, 0.8, 0.95, 1e-10, 0.0, 0); }, {"step is 1-based"});
  Buffer half(gpu, Shape{n}, DType::bf16);
  expect_error([&] { gpu.muon_momentum(gu, gm, half, 0.9); }, {"muon_momentum", "grad must be f32"});
}

// Newton-Schulz: f32 products against the CPU at 1e-4; bf16 products at 3e-2 (bf16 rounding of
// X, A and B at each of the 5 iterations leaves 1.0-1.4% norm-relative error against float64 for
// random matrices, measured with PyTorch's bf16 on 48x64 .. 2560x640 shapes; the same
// computation modded-nanogpt runs).
TEST(CudaNewtonSchulz, MatchesTheCpuForWideAndTallMatrices) {
  CT_REQUIRE_CUDA();
  const double a = 3.4445, b = -4.7750, c = 2.0315;
  uint64_t seed = 30;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{48, 64}, {160, 96}, {640, 640}, {640, 2560}, {2560, 640}}) {
    SCOPED_TRACE(testing::Message() << rows << "x" << cols);
    const Values g = random_values(static_cast<size_t>(rows * cols), seed++, 0.02);
    Buffer cg = make(cpu(), Shape{rows, cols}, DType::f32, g), cx(cpu(), Shape{rows, cols}, DType::f32);
    cpu().newton_schulz(cx, cg, 5, a, b, c);
    const Values expected = read(cpu(), cx);
    for (const char* precision : {"f32", "bf16"}) {
      Backend& gpu = *cuda({precision});
      Buffer gg = make(gpu, Shape{rows, cols}, DType::f32, g), gx = poisoned(gpu, Shape{rows, cols}, DType::f32);
      gpu.newton_schulz(gx, gg, 5, a, b, c);
      const Values actual = read(gpu, gx);
      const double tolerance = std::string(precision) == "f32" ? 1e-4 : 3e-2;
      EXPECT_LT(norm_relative_error(actual, expected), tolerance) << precision;
    }
  }
}

}  // namespace
}  // namespace ct::test
