// AdamW, Muon's momentum and Muon's update with cautious weight decay against hand-computed values and
// the formulas written out in double.
#include "backend_test_support.h"

namespace ct::test {
namespace {

TEST(AdamW, FirstStepByHand) {
  // m = 0.2 * 0.5 = 0.1; v = 0.05 * 0.25 = 0.0125; m_hat = 0.1 / 0.2 = 0.5; v_hat = 0.0125 / 0.05 = 0.25;
  // p = 1 - 0.1 * 0.5 / (0.5 + 1e-10) = 0.9 (to 1e-10).
  for (DType dtype : {DType::f32, DType::f64}) {
    Buffer p = make_buffer(Shape{1}, dtype, {1.0}), g = make_buffer(Shape{1}, dtype, {0.5}), m(cpu(), Shape{1}, dtype),
           v(cpu(), Shape{1}, dtype);
    cpu().adamw_update(p, g, m, v, 0.1, 0.8, 0.95, 1e-10, 0.0, 1);
    double tolerance = dtype == DType::f64 ? 1e-9 : 1e-7;
    EXPECT_NEAR(read(p)[0], 0.9, tolerance);
    EXPECT_NEAR(read(m)[0], 0.1, tolerance);
    EXPECT_NEAR(read(v)[0], 0.0125, tolerance);
  }
}

TEST(AdamW, ThreeStepsMatchTheFormulaWithWeightDecay) {
  const double lr = 0.05, b1 = 0.8, b2 = 0.95, eps = 1e-10, wd = 0.1;
  Values p = random_values(20, 160), m(20, 0.0), v(20, 0.0);
  Buffer pb = make_buffer(Shape{4, 5}, DType::f64, p), mb(cpu(), Shape{4, 5}, DType::f64), vb(cpu(), Shape{4, 5}, DType::f64);
  for (int64_t step = 1; step <= 3; ++step) {
    Values g = random_values(20, 170 + step);
    Buffer gb = make_buffer(Shape{20}, DType::f64, g);
    cpu().adamw_update(pb, gb, mb, vb, lr, b1, b2, eps, wd, step);
    for (size_t i = 0; i < 20; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      double m_hat = m[i] / (1 - std::pow(b1, step)), v_hat = v[i] / (1 - std::pow(b2, step));
      p[i] -= lr * (wd * p[i] + m_hat / (std::sqrt(v_hat) + eps));
    }
  }
  EXPECT_LT(relative_error(read(pb), p), 1e-14);
  EXPECT_LT(relative_error(read(mb), m), 1e-14);
  EXPECT_LT(relative_error(read(vb), v), 1e-14);
}

TEST(AdamW, RejectsStepZeroAndMismatchedState) {
  Buffer p(cpu(), Shape{4}, DType::f32), g(cpu(), Shape{4}, DType::f32), m(cpu(), Shape{3}, DType::f32),
      v(cpu(), Shape{4}, DType::f64);
  expect_error([&] { cpu().adamw_update(p, g, p, p, 0.1, 0.9, 0.95, 1e-8, 0, 0); }, {"adamw_update", "step"});
  expect_error([&] { cpu().adamw_update(p, g, m, p, 0.1, 0.9, 0.95, 1e-8, 0, 1); }, {"adamw_update", "m", "3"});
  expect_error([&] { cpu().adamw_update(p, g, p, v, 0.1, 0.9, 0.95, 1e-8, 0, 1); }, {"adamw_update", "v", "f64"});
}

TEST(MuonMomentum, ByHand) {
  // buf = 0.9 * 0.5 + 0.1 * g = (0.55, 0.25);  u = 0.1 g + 0.9 buf = (0.595, 0.025)
  for (DType dtype : {DType::f32, DType::f64}) {
    Buffer g = make_buffer(Shape{2}, dtype, {1.0, -2.0}), buf = make_buffer(Shape{2}, dtype, {0.5, 0.5}),
           u(cpu(), Shape{2}, dtype);
    cpu().muon_momentum(u, buf, g, 0.9);
    double tolerance = dtype == DType::f64 ? 1e-15 : 1e-6;
    Values b = read(buf), uv = read(u);
    EXPECT_NEAR(b[0], 0.55, tolerance);
    EXPECT_NEAR(b[1], 0.25, tolerance);
    EXPECT_NEAR(uv[0], 0.595, tolerance);
    EXPECT_NEAR(uv[1], 0.025, tolerance);
  }
}

TEST(MuonMomentum, OutputMayAliasTheGradient) {
  Values g = random_values(10, 180), b0 = random_values(10, 181);
  Buffer gb = make_buffer(Shape{10}, DType::f64, g), buf = make_buffer(Shape{10}, DType::f64, b0);
  cpu().muon_momentum(gb, buf, gb, 0.95);
  Values u = read(gb);
  for (size_t i = 0; i < 10; ++i) {
    double b = 0.95 * b0[i] + 0.05 * g[i];
    EXPECT_NEAR(u[i], 0.05 * g[i] + 0.95 * b, 1e-15);
  }
  expect_error([&] { cpu().muon_momentum(Buffer(cpu(), Shape{9}, DType::f64), buf, gb, 0.95); },
               {"muon_momentum", "u_out"});
}

// frontier.md 2.4's cases: a positive weight that the update pushes up (u < 0 at p > 0) is not decayed;
// one the update already pulls down (u > 0) loses lr decay p as well; u = 0 is decayed; decay 0 is the
// plain p -= lr u.
TEST(MuonUpdate, DecaysOnlyWhereTheUpdateAlreadyPullsTowardZero) {
  const double lr = 0.1, decay = 0.5;
  for (DType dtype : {DType::f32, DType::f64}) {
    const Values p0 = {2.0, 2.0, -2.0, -2.0, 2.0, 0.0};
    const Values u = {-1.0, 1.0, -1.0, 1.0, 0.0, 1.0};
    Buffer pb = make_buffer(Shape{6}, dtype, p0), ub = make_buffer(Shape{6}, dtype, u);
    cpu().muon_update(pb, ub, lr, decay);
    // p - lr u, minus lr decay p where u p >= 0
    const Values expected = {2.1, 2.0 - 0.1 - 0.1, -2.0 + 0.1 + 0.1, -2.1, 2.0 - 0.1, -0.1};
    const double tolerance = dtype == DType::f64 ? 1e-15 : 1e-6;
    const Values got = read(pb);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance) << i;
  }
}

TEST(MuonUpdate, WithoutDecayIsThePlainStepAndMatchesTheFormula) {
  const Values p0 = random_values(40, 190), u = random_values(40, 191);
  Buffer plain = make_buffer(Shape{5, 8}, DType::f32, p0), decayed = make_buffer(Shape{5, 8}, DType::f64, p0);
  const Buffer u32 = make_buffer(Shape{40}, DType::f32, u), u64 = make_buffer(Shape{40}, DType::f64, u);
  Buffer reference = make_buffer(Shape{5, 8}, DType::f32, p0);
  cpu().muon_update(plain, u32, 0.02, 0.0);
  cpu().axpby(reference, -0.02, u32, 1.0);
  // (not bit for bit: the compiler may fuse either kernel's multiply-add, so Muon keeps axpby when the
  // recipe has no decay)
  EXPECT_LT(relative_error(read(plain), read(reference)), 1e-6);
  cpu().muon_update(decayed, u64, 0.02, 0.28);
  Values expected = p0;
  for (size_t i = 0; i < expected.size(); ++i)
    expected[i] -= 0.02 * u[i] + (u[i] * p0[i] >= 0 ? 0.02 * 0.28 * p0[i] : 0.0);
  EXPECT_LT(relative_error(read(decayed), expected), 1e-14);
  expect_error([&] { cpu().muon_update(decayed, u32, 0.02, 0.28); }, {"muon_update", "u", "f32"});
}

}  // namespace
}  // namespace ct::test
