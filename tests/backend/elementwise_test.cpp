// Memory, dtype conversion (bf16 rounding), fill/copy/axpby/scale and the reductions.
#include <cstring>

#include "backend/cpu/bf16.h"
#include "backend_test_support.h"
#include "util/threads.h"

namespace ct::test {
namespace {

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::vector<uint16_t> upload_f32_read_bf16(const std::vector<float>& values) {
  Buffer t(cpu(), Shape{static_cast<int64_t>(values.size())}, DType::bf16);
  cpu().upload(t, values.data(), DType::f32);
  std::vector<uint16_t> bits(values.size());
  cpu().download(bits.data(), DType::bf16, t);
  return bits;
}

TEST(Bf16, RoundsToNearestEvenWithKnownBitPatterns) {
  std::vector<float> values = {
      1.0f,                         // exact: 0x3F80
      float_from_bits(0x3F808000),  // 1 + 2^-8, halfway between 0x3F80 and 0x3F81 -> even 0x3F80
      float_from_bits(0x3F818000),  // halfway between 0x3F81 and 0x3F82 -> even 0x3F82
      float_from_bits(0x3F808001),  // just above the tie -> 0x3F81
      float_from_bits(0x3F807FFF),  // just below the tie -> 0x3F80
      float_from_bits(0xBF808000),  // negative tie -> 0xBF80
      float_from_bits(0x7F7FFFFF),  // largest float rounds up to +inf 0x7F80
      0.1f,                         // 0x3DCCCCCD -> 0x3DCD
  };
  std::vector<uint16_t> expected = {0x3F80, 0x3F80, 0x3F82, 0x3F81, 0x3F80, 0xBF80, 0x7F80, 0x3DCD};
  EXPECT_EQ(upload_f32_read_bf16(values), expected);
}

TEST(Bf16, NanStaysNan) {
  uint16_t bits = upload_f32_read_bf16({std::nanf("")})[0];
  EXPECT_EQ(bits & 0x7F80, 0x7F80);
  EXPECT_NE(bits & 0x007F, 0);
}

TEST(Bf16, DoubleRoundsOnceNotTwice) {
  // 1 + 2^-8 + 2^-40: its nearest f32 is the tie 1 + 2^-8 (-> 0x3F80 if rounded again), but the value
  // itself lies above the tie, so the correctly rounded bf16 is 0x3F81.
  double value = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  Buffer t(cpu(), Shape{1}, DType::bf16);
  cpu().upload(t, &value, DType::f64);
  uint16_t bits = 0;
  cpu().download(&bits, DType::bf16, t);
  EXPECT_EQ(bits, 0x3F81);
  EXPECT_EQ(double_to_bf16(-value), 0xBF81);
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -40)), 0x3F80);
}

TEST(Bf16, DownloadsExactlyAsF32AndF64) {
  std::vector<uint16_t> bits = {0x3F80, 0xC040, 0x3DCD};
  Buffer t(cpu(), Shape{3}, DType::bf16);
  cpu().upload(t, bits.data(), DType::bf16);
  std::vector<float> as_f32(3);
  cpu().download(as_f32.data(), DType::f32, t);
  EXPECT_EQ(as_f32[0], 1.0f);
  EXPECT_EQ(as_f32[1], -3.0f);
  EXPECT_EQ(as_f32[2], bf16_to_float(0x3DCD));
  Values as_f64 = read(t);
  EXPECT_EQ(as_f64[2], static_cast<double>(bf16_to_float(0x3DCD)));
}

TEST(Memory, AllocateIsZeroedAndAligned) {
  Buffer t(cpu(), Shape{3, 5}, DType::f64);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.tensor().data) % 64, 0u);
  for (double v : read(t)) EXPECT_EQ(v, 0.0);
}

TEST(Fill, EveryDtype) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
    Buffer t(cpu(), Shape{7}, dtype);
    cpu().fill(t, -2.5);
    for (double v : read(t)) EXPECT_EQ(v, -2.5) << dtype_name(dtype);
  }
  Buffer ids(cpu(), Shape{4}, DType::i32);
  cpu().fill(ids, -1);
  std::vector<int32_t> out(4);
  cpu().download(out.data(), DType::i32, ids);
  EXPECT_EQ(out, std::vector<int32_t>(4, -1));
  expect_error([&] { cpu().fill(ids, 0.5); }, {"fill", "i32"});
  expect_error([&] { cpu().fill(ids, 1e10); }, {"fill", "i32"});
}

TEST(Copy, ConvertsBetweenFloatDtypes) {
  Values values = random_values(33, 1);
  Buffer src = make_buffer(Shape{3, 11}, DType::f64, values);
  Buffer as_f32(cpu(), Shape{33}, DType::f32), back(cpu(), Shape{11, 3}, DType::f64);
  cpu().copy(as_f32, src);
  cpu().copy(back, as_f32);
  Values result = read(back);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(result[i], static_cast<double>(static_cast<float>(values[i])));
}

TEST(Copy, RejectsIntFloatAndSizeMismatch) {
  Buffer ids(cpu(), Shape{4}, DType::i32), f(cpu(), Shape{4}, DType::f32), g(cpu(), Shape{5}, DType::f32);
  expect_error([&] { cpu().copy(f, ids); }, {"copy", "i32", "f32"});
  expect_error([&] { cpu().copy(g, f); }, {"copy", "dst", "5"});
}

TEST(Axpby, MatchesFormulaAndOverwritesWhenBetaIsZero) {
  for (DType dtype : {DType::f32, DType::f64}) {
    Values x = random_values(100, 2), y = random_values(100, 3);
    Buffer xb = make_buffer(Shape{100}, dtype, x), yb = make_buffer(Shape{10, 10}, dtype, y);
    cpu().axpby(yb, 0.5, xb, -2.0);
    Values expected(100);
    for (size_t i = 0; i < 100; ++i) expected[i] = 0.5 * x[i] - 2.0 * y[i];
    EXPECT_LT(relative_error(read(yb), expected), dtype == DType::f64 ? 1e-15 : 1e-6);
    cpu().fill(yb, NAN);
    cpu().axpby(yb, 3.0, xb, 0.0);
    Values result = read(yb);
    for (size_t i = 0; i < 100; ++i) EXPECT_NEAR(result[i], 3.0 * x[i], 1e-5);
  }
}

TEST(Scale, MultipliesEveryElement) {
  Values x = random_values(50, 4);
  Buffer xb = make_buffer(Shape{50}, DType::f64, x);
  cpu().scale(xb, -0.25);
  Values result = read(xb);
  for (size_t i = 0; i < 50; ++i) EXPECT_EQ(result[i], -0.25 * x[i]);
}

TEST(Reductions, SumAndSumSquaresInDouble) {
  // 2^24 + 1 ones: a float accumulator would stop at 2^24.
  int64_t n = (1 << 24) + 1;
  Buffer ones(cpu(), Shape{n}, DType::f32);
  cpu().fill(ones, 1.0);
  EXPECT_EQ(cpu().sum(ones), static_cast<double>(n));
  EXPECT_EQ(cpu().sum_squares(ones), static_cast<double>(n));

  Values x = random_values(10001, 5);
  Buffer xb = make_buffer(Shape{10001}, DType::f64, x);
  double sum = 0, squares = 0;
  for (double v : x) sum += v, squares += v * v;
  EXPECT_NEAR(cpu().sum(xb), sum, 1e-10);
  EXPECT_NEAR(cpu().sum_squares(xb), squares, 1e-9);
}

TEST(Reductions, SameBitsForAnyThreadCount) {
  Values x = random_values(300000, 6);
  Buffer xb = make_buffer(Shape{300000}, DType::f32, x);
  int saved = thread_count();
  set_thread_count(1);
  double one_thread = cpu().sum_squares(xb), one_thread_sum = cpu().sum(xb);
  set_thread_count(2);
  double two_threads = cpu().sum_squares(xb), two_threads_sum = cpu().sum(xb);
  set_thread_count(saved);
  EXPECT_EQ(one_thread, two_threads);
  EXPECT_EQ(one_thread_sum, two_threads_sum);
}

TEST(Errors, ComputeOpsRejectBf16AndMismatchedShapes) {
  Buffer a(cpu(), Shape{4}, DType::bf16), b(cpu(), Shape{4}, DType::bf16), c(cpu(), Shape{5}, DType::f32),
      d(cpu(), Shape{4}, DType::f32), e(cpu(), Shape{4}, DType::f64);
  expect_error([&] { cpu().axpby(a, 1.0, b, 1.0); }, {"axpby", "bf16"});
  expect_error([&] { cpu().scale(a, 2.0); }, {"scale", "bf16"});
  expect_error([&] { cpu().sum(a); }, {"sum", "bf16"});
  expect_error([&] { cpu().axpby(c, 1.0, d, 1.0); }, {"axpby", "x", "4", "5"});
  expect_error([&] { cpu().axpby(d, 1.0, e, 1.0); }, {"axpby", "f64", "f32"});
  expect_error([&] { cpu().fill(Tensor{}, 1.0); }, {"fill", "empty"});
}

}  // namespace
}  // namespace ct::test
