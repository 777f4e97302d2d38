// The residual scalars' ops (ops.def, frontier.md 1.1): x = r x + a x0, and its backward, against the
// formulas on the host in double.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "backend_test_support.h"
#include "test_support.h"

namespace ct::test {
namespace {

TEST(ResidualMix, ForwardMixesAndKeepsTheIncomingStream) {
  const Values x = random_values(6 * 10, 300), x0 = random_values(6 * 10, 301);
  const double r = 1.13, a = -0.27;
  for (DType dtype : {DType::f32, DType::f64}) {
    Buffer xb = make_buffer(Shape{6, 10}, dtype, x), x0b = make_buffer(Shape{6, 10}, dtype, x0);
    Buffer rb = make_buffer(Shape{1}, dtype, {r}), ab = make_buffer(Shape{1}, dtype, {a});
    Buffer saved(cpu(), Shape{6, 10}, dtype);
    cpu().residual_mix_forward(xb, saved, x0b, rb, ab);
    Values expected(x.size());
    for (size_t i = 0; i < x.size(); ++i) expected[i] = r * x[i] + a * x0[i];
    const double tolerance = dtype == DType::f64 ? 1e-15 : 1e-6;
    EXPECT_LT(relative_error(read(xb), expected), tolerance) << dtype_name(dtype);
    EXPECT_LT(relative_error(read(saved), x), tolerance) << dtype_name(dtype);
    // without a place to keep it (a pass with no backward): the mix alone
    Buffer again = make_buffer(Shape{6, 10}, dtype, x);
    cpu().residual_mix_forward(again, Tensor{}, x0b, rb, ab);
    EXPECT_EQ(read(again), read(xb)) << dtype_name(dtype);
  }
}

// dx = r g; dx0 += a g; dr += sum(g x); da += sum(g x0): over 70,000 elements (several reduction
// blocks, and the threaded path), accumulating onto values already there.
TEST(ResidualMix, BackwardGivesEveryGradientAndAccumulates) {
  const int64_t rows = 700, cols = 100, n = rows * cols;
  const Values g = random_values(n, 310), x = random_values(n, 311), x0 = random_values(n, 312);
  const Values dx0_before = random_values(n, 313);
  const double r = 0.9, a = 0.35, dr_before = 0.5, da_before = -1.25;
  Values dx(n), dx0(n);
  double dr = dr_before, da = da_before;
  for (int64_t i = 0; i < n; ++i) {
    dx[i] = r * g[i];
    dx0[i] = dx0_before[i] + a * g[i];
    dr += g[i] * x[i];
    da += g[i] * x0[i];
  }
  for (DType dtype : {DType::f32, DType::f64}) {
    const Shape shape{rows, cols};
    Buffer gb = make_buffer(shape, dtype, g), dx0b = make_buffer(shape, dtype, dx0_before);
    Buffer xb = make_buffer(shape, dtype, x), x0b = make_buffer(shape, dtype, x0);
    Buffer rb = make_buffer(Shape{1}, dtype, {r}), ab = make_buffer(Shape{1}, dtype, {a});
    Buffer drb = make_buffer(Shape{1}, dtype, {dr_before}), dab = make_buffer(Shape{1}, dtype, {da_before});
    cpu().residual_mix_backward(gb, dx0b, drb, dab, xb, x0b, rb, ab);
    const double tolerance = dtype == DType::f64 ? 1e-13 : 1e-6;
    EXPECT_LT(relative_error(read(gb), dx), tolerance) << dtype_name(dtype);
    EXPECT_LT(relative_error(read(dx0b), dx0), tolerance) << dtype_name(dtype);
    // the sums are taken in double whatever the dtype: only the stored inputs' rounding differs
    EXPECT_NEAR(read(drb)[0], dr, (dtype == DType::f64 ? 1e-10 : 1e-4) * std::abs(dr) + 1e-9) << dtype_name(dtype);
    EXPECT_NEAR(read(dab)[0], da, (dtype == DType::f64 ? 1e-10 : 1e-4) * std::abs(da) + 1e-9) << dtype_name(dtype);
  }
}

TEST(ResidualMix, TheSumsAreTheSameForEveryThreadCount) {
  const int64_t n = 300 * 128;
  const Values g = random_values(n, 320), x = random_values(n, 321), x0 = random_values(n, 322);
  std::vector<Values> results;
  for (int threads : {1, 2}) {
    BackendOptions options;
    options.name = "cpu";
    options.threads = threads;
    auto be = create_backend(options);
    auto buffer = [&](const Shape& shape, const Values& v) {
      Buffer b(*be, shape, DType::f32);
      be->upload(b, v.data(), DType::f64);
      return b;
    };
    Buffer gb = buffer({300, 128}, g), dx0b = buffer({300, 128}, Values(n, 0.0)), xb = buffer({300, 128}, x),
           x0b = buffer({300, 128}, x0), rb = buffer({1}, {1.1}), ab = buffer({1}, {0.2}), drb = buffer({1}, {0.0}),
           dab = buffer({1}, {0.0});
    be->residual_mix_backward(gb, dx0b, drb, dab, xb, x0b, rb, ab);
    Values sums(2);
    be->download(&sums[0], DType::f64, drb);
    be->download(&sums[1], DType::f64, dab);
    results.push_back(sums);
  }
  EXPECT_EQ(results[0], results[1]);
}

}  // namespace
}  // namespace ct::test
