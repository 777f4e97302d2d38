// embedding, rmsnorm, rope_qknorm and relu2: f64 forward against naive host code, backward
// against float64 finite differences, f32 against f64.
#include "backend_test_support.h"
#include "util/threads.h"

namespace ct::test {
namespace {

constexpr double kEps = 1.1920929e-07;

// ---- embedding ------------------------------------------------------------------------------------

TEST(Embedding, ForwardGathersAndBackwardAccumulates) {
  const int64_t vocab = 7, width = 5;
  std::vector<int32_t> ids = {3, 0, 3, 6, 1, 3};
  const int64_t n = static_cast<int64_t>(ids.size());
  Buffer tokens = make_tokens(Shape{2, 3}, ids);
  Values table = random_values(vocab * width, 40);
  Buffer table_b = make_buffer(Shape{vocab, width}, DType::f64, table), out(cpu(), Shape{2, 3, width}, DType::f64);
  cpu().embedding_forward(out, tokens, table_b);
  Values gathered = read(out);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < width; ++c)
      EXPECT_EQ(gathered[static_cast<size_t>(i * width + c)], table[static_cast<size_t>(ids[i] * width + c)]);

  Values w = random_values(n * width, 41), initial = random_values(vocab * width, 42);
  Buffer dout = make_buffer(Shape{n, width}, DType::f64, w), dtable = make_buffer(Shape{vocab, width}, DType::f64, initial);
  cpu().embedding_backward(dtable, dout, tokens);
  Values analytic = read(dtable);
  for (size_t i = 0; i < analytic.size(); ++i) analytic[i] -= initial[i];
  expect_gradient_matches(
      [&](const Values& t) {
        Buffer tb = make_buffer(Shape{vocab, width}, DType::f64, t), o(cpu(), Shape{n, width}, DType::f64);
        cpu().embedding_forward(o, tokens, tb);
        return read(o);
      },
      table, w, analytic, 1e-9);
}

TEST(Embedding, RejectsOutOfRangeTokens) {
  Buffer table(cpu(), Shape{4, 3}, DType::f32), out(cpu(), Shape{2, 3}, DType::f32);
  Buffer bad = make_tokens(Shape{2}, {1, 4}), negative = make_tokens(Shape{2}, {-1, 0});
  expect_error([&] { cpu().embedding_forward(out, bad, table); }, {"embedding_forward", "tokens[1] = 4"});
  expect_error([&] { cpu().embedding_backward(table, out, negative); }, {"embedding_backward", "tokens[0] = -1"});
  expect_error([&] { cpu().embedding_forward(Buffer(cpu(), Shape{3, 3}, DType::f32), make_tokens(Shape{2}, {0, 1}), table); },
               {"embedding_forward", "out"});
}

// ---- rmsnorm --------------------------------------------------------------------------------------

Values naive_rmsnorm(const Values& x, int64_t width, Values* rstd = nullptr) {
  Values y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(width); ++r) {
    double ms = 0;
    for (int64_t c = 0; c < width; ++c) ms += x[r * width + c] * x[r * width + c];
    double inv = 1.0 / std::sqrt(ms / static_cast<double>(width) + kEps);
    for (int64_t c = 0; c < width; ++c) y[r * width + c] = x[r * width + c] * inv;
    if (rstd) rstd->push_back(inv);
  }
  return y;
}

struct RmsnormResult {
  Values y, rstd, dx;
};

// Forward, then backward with dy into dx_acc that starts at `initial`.
RmsnormResult run_rmsnorm(DType dtype, const Values& x, const Values& dy, const Values& initial, int64_t width) {
  int64_t rows = static_cast<int64_t>(x.size()) / width;
  Buffer xb = make_buffer(Shape{rows, width}, dtype, x), y(cpu(), Shape{rows, width}, dtype),
         rstd(cpu(), Shape{rows}, dtype);
  cpu().rmsnorm_forward(y, rstd, xb, kEps);
  Buffer dyb = make_buffer(Shape{rows, width}, dtype, dy), dx = make_buffer(Shape{rows, width}, dtype, initial);
  cpu().rmsnorm_backward(dx, dyb, y, rstd);
  return {read(y), read(rstd), read(dx)};
}

TEST(Rmsnorm, ForwardAndBackward) {
  const int64_t rows = 6, width = 16;
  Values x = random_values(rows * width, 50, 3.0), w = random_values(rows * width, 51),
         initial = random_values(rows * width, 52);
  RmsnormResult r = run_rmsnorm(DType::f64, x, w, initial, width);
  Values expected_rstd;
  EXPECT_LT(relative_error(r.y, naive_rmsnorm(x, width, &expected_rstd)), 1e-14);
  EXPECT_LT(relative_error(r.rstd, expected_rstd), 1e-14);
  Values analytic = r.dx;
  for (size_t i = 0; i < analytic.size(); ++i) analytic[i] -= initial[i];
  expect_gradient_matches([&](const Values& xs) { return naive_rmsnorm(xs, width); }, x, w, analytic);
  // The same gradient through the backend's own forward pass.
  expect_gradient_matches([&](const Values& xs) { return run_rmsnorm(DType::f64, xs, w, initial, width).y; }, x, w,
                          analytic);

  RmsnormResult single = run_rmsnorm(DType::f32, x, w, initial, width);
  EXPECT_LT(relative_error(single.y, r.y), 1e-5);
  EXPECT_LT(relative_error(single.dx, r.dx), 1e-5);
}

TEST(Rmsnorm, F32SideValuesWithF64Compute) {
  const int64_t rows = 3, width = 8;
  Values x = random_values(rows * width, 53);
  Buffer xb = make_buffer(Shape{rows, width}, DType::f64, x), y(cpu(), Shape{rows, width}, DType::f64),
         rstd(cpu(), Shape{rows}, DType::f32);
  cpu().rmsnorm_forward(y, rstd, xb, kEps);
  Values expected_rstd;
  naive_rmsnorm(x, width, &expected_rstd);
  EXPECT_LT(relative_error(read(rstd), expected_rstd), 1e-7);
  Buffer y32(cpu(), Shape{rows, width}, DType::f32), bad(cpu(), Shape{rows}, DType::bf16);
  expect_error([&] { cpu().rmsnorm_forward(y32, rstd, xb, kEps); }, {"rmsnorm_forward", "y", "f32", "f64"});
  expect_error([&] { cpu().rmsnorm_forward(y, bad, xb, kEps); }, {"rmsnorm_forward", "rstd", "bf16"});
  expect_error([&] { cpu().rmsnorm_forward(y, Buffer(cpu(), Shape{4}, DType::f64), xb, kEps); },
               {"rmsnorm_forward", "rstd", "3"});
}

// ---- rope + QK norm -------------------------------------------------------------------------------

struct RopeCase {
  int64_t batch = 2, time = 5, heads = 3, head_dim = 8, max_time = 9, pos_offset = 2;
  Values cos, sin;
  RopeCase() { build_tables(); }
  RopeCase(int64_t b, int64_t t, int64_t h, int64_t d, int64_t t_max, int64_t offset)
      : batch(b), time(t), heads(h), head_dim(d), max_time(t_max), pos_offset(offset) {
    build_tables();
  }
  void build_tables() {
    int64_t half = head_dim / 2;
    for (int64_t t = 0; t < max_time; ++t)
      for (int64_t j = 0; j < half; ++j) {
        double inv_freq = std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
        cos.push_back(std::cos(static_cast<double>(t) * inv_freq));
        sin.push_back(std::sin(static_cast<double>(t) * inv_freq));
      }
  }
  Shape shape() const { return Shape{batch, time, heads, head_dim}; }
  int64_t numel() const { return batch * time * heads * head_dim; }

  Values naive_forward(const Values& x) const {
    int64_t half = head_dim / 2;
    Values rot(x.size());
    for (int64_t row = 0; row < batch * time * heads; ++row) {
      int64_t pos = pos_offset + (row / heads) % time;
      for (int64_t j = 0; j < half; ++j) {
        double c = cos[static_cast<size_t>(pos * half + j)], s = sin[static_cast<size_t>(pos * half + j)];
        double x1 = x[static_cast<size_t>(row * head_dim + j)], x2 = x[static_cast<size_t>(row * head_dim + j + half)];
        rot[static_cast<size_t>(row * head_dim + j)] = x1 * c + x2 * s;
        rot[static_cast<size_t>(row * head_dim + j + half)] = -x1 * s + x2 * c;
      }
    }
    return naive_rmsnorm(rot, head_dim);
  }

  // Forward then backward (dy) in `dtype`; returns y and dx.
  std::pair<Values, Values> run(DType dtype, const Values& x, const Values& dy) const {
    Buffer xb = make_buffer(shape(), dtype, x), y(cpu(), shape(), dtype), rstd(cpu(), Shape{batch * time * heads}, dtype);
    Buffer cb = make_buffer(Shape{max_time, head_dim / 2}, dtype, cos), sb = make_buffer(Shape{max_time, head_dim / 2}, dtype, sin);
    cpu().rope_qknorm_forward(y, rstd, xb, cb, sb, pos_offset, kEps);
    Buffer dyb = make_buffer(shape(), dtype, dy), dx(cpu(), shape(), dtype);
    cpu().fill(dx, 123.0);  // overwritten, not accumulated
    cpu().rope_qknorm_backward(dx, dyb, y, rstd, cb, sb, pos_offset);
    return {read(y), read(dx)};
  }
};

TEST(RopeQkNorm, ForwardAndBackward) {
  RopeCase rc;
  Values x = random_values(rc.numel(), 60, 2.0), w = random_values(rc.numel(), 61);
  auto [y, dx] = rc.run(DType::f64, x, w);
  EXPECT_LT(relative_error(y, rc.naive_forward(x)), 1e-14);
  expect_gradient_matches([&](const Values& xs) { return rc.naive_forward(xs); }, x, w, dx);
  auto [y32, dx32] = rc.run(DType::f32, x, w);
  EXPECT_LT(relative_error(y32, y), 1e-5);
  EXPECT_LT(relative_error(dx32, dx), 1e-5);
}

TEST(RopeQkNorm, RejectsShortTablesAndOddHeadDim) {
  Buffer x(cpu(), Shape{1, 4, 2, 8}, DType::f32), y(cpu(), Shape{1, 4, 2, 8}, DType::f32), rstd(cpu(), Shape{8}, DType::f32);
  Buffer table(cpu(), Shape{5, 4}, DType::f32), narrow(cpu(), Shape{8, 3}, DType::f32);
  expect_error([&] { cpu().rope_qknorm_forward(y, rstd, x, table, table, 2, kEps); },
               {"rope_qknorm_forward", "cos", "5 positions", "6"});
  expect_error([&] { cpu().rope_qknorm_forward(y, rstd, x, narrow, narrow, 0, kEps); },
               {"rope_qknorm_forward", "cos", "[8, 3]"});
  Buffer odd(cpu(), Shape{1, 4, 2, 7}, DType::f32);
  expect_error([&] { cpu().rope_qknorm_forward(odd, rstd, odd, table, table, 0, kEps); },
               {"rope_qknorm_forward", "even"});
}

// ---- relu2 ----------------------------------------------------------------------------------------

TEST(Relu2, ForwardAndBackward) {
  const int64_t n = 40;
  Values x = random_values(n, 70), w = random_values(n, 71);
  auto forward = [&](DType dtype, const Values& xs) {
    Buffer xb = make_buffer(Shape{4, 10}, dtype, xs), y(cpu(), Shape{4, 10}, dtype);
    cpu().relu2_forward(y, xb);
    return read(y);
  };
  Values y = forward(DType::f64, x);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], x[i] > 0 ? x[i] * x[i] : 0.0);
  Buffer xb = make_buffer(Shape{4, 10}, DType::f64, x), dy = make_buffer(Shape{4, 10}, DType::f64, w),
         dx(cpu(), Shape{4, 10}, DType::f64);
  cpu().fill(dx, 7.0);
  cpu().relu2_backward(dx, dy, xb);
  expect_gradient_matches([&](const Values& xs) { return forward(DType::f64, xs); }, x, w, read(dx));
  EXPECT_LT(relative_error(forward(DType::f32, x), y), 1e-6);
  expect_error([&] { cpu().relu2_forward(Buffer(cpu(), Shape{41}, DType::f64), xb); }, {"relu2_forward", "y"});
}

}  // namespace
}  // namespace ct::test

namespace ct::test {
namespace {

// ---- the multithreaded paths (sizes above the parallel threshold) ---------------------------------

// Runs fn with 1 and then 2 threads and expects the same values, bit for bit.
void expect_same_for_one_and_two_threads(const std::function<Values()>& fn) {
  int saved = thread_count();
  set_thread_count(1);
  Values one = fn();
  set_thread_count(2);
  Values two = fn();
  set_thread_count(saved);
  EXPECT_EQ(one, two);
}

TEST(ParallelPaths, LargeInputsMatchNaiveAndThreadCountsAgree) {
  const int64_t rows = 600, width = 128, vocab = 1000;
  Values x = random_values(rows * width, 190);
  std::vector<int32_t> ids(rows);
  for (int64_t i = 0; i < rows; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37) % 50);  // repeats
  Buffer tokens = make_tokens(Shape{rows}, ids);

  expect_same_for_one_and_two_threads([&] {  // rmsnorm forward + backward
    RmsnormResult r = run_rmsnorm(DType::f32, x, x, Values(x.size(), 0.0), width);
    EXPECT_LT(relative_error(r.y, naive_rmsnorm(x, width)), 1e-6);
    Values all = r.y;
    all.insert(all.end(), r.dx.begin(), r.dx.end());
    return all;
  });
  expect_same_for_one_and_two_threads([&] {  // embedding backward with repeated tokens
    Buffer dtable(cpu(), Shape{50, width}, DType::f32), dout = make_buffer(Shape{rows, width}, DType::f32, x);
    cpu().embedding_backward(dtable, dout, tokens);
    Values result = read(dtable), expected(50 * width, 0.0);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t c = 0; c < width; ++c)
        expected[static_cast<size_t>(ids[n] * width + c)] += static_cast<float>(x[static_cast<size_t>(n * width + c)]);
    EXPECT_LT(relative_error(result, expected), 1e-5);
    return result;
  });
  expect_same_for_one_and_two_threads([&] {  // rope + QK norm, forward and backward
    RopeCase rc(8, 40, 4, 32, 50, 7);
    Values xr = random_values(rc.numel(), 192), dy = random_values(rc.numel(), 193);
    auto [y, dx] = rc.run(DType::f32, xr, dy);
    EXPECT_LT(relative_error(y, rc.naive_forward(xr)), 1e-6);
    y.insert(y.end(), dx.begin(), dx.end());
    return y;
  });
}

}  // namespace
}  // namespace ct::test
