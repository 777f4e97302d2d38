// Softcapped cross-entropy: per-row losses and argmax against a naive reference, ignored targets,
// ties, the backward pass by finite differences (also in place), f32 against f64, and the SIMD kernel
// (8 lanes in the avx2/ run of these tests, 16 at avx512 and above) at its largest cap and on rows
// that end at an unreadable page.
#include <cmath>

#include "backend/cpu/bf16.h"
#include "backend/cpu/cpu_cross_entropy_fast.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/simd_math.h"
#include "backend_test_support.h"
#include "util/threads.h"

namespace ct::test {
namespace {

double capped(double logit, double cap) { return cap > 0 ? cap * std::tanh(logit / cap) : logit; }

Values naive_losses(const Values& logits, const std::vector<int32_t>& targets, int64_t vocab, double cap) {
  Values losses;
  for (size_t n = 0; n < targets.size(); ++n) {
    if (targets[n] < 0) {
      losses.push_back(0.0);
      continue;
    }
    double max_z = -INFINITY, total = 0;
    for (int64_t j = 0; j < vocab; ++j) max_z = std::max(max_z, capped(logits[n * vocab + j], cap));
    for (int64_t j = 0; j < vocab; ++j) total += std::exp(capped(logits[n * vocab + j], cap) - max_z);
    losses.push_back(max_z + std::log(total) - capped(logits[n * vocab + targets[n]], cap));
  }
  return losses;
}

// d (sum_n loss_n) / d logits (0 on rows with t_n < 0), the math of cpu_cross_entropy.cpp in f64.
Values naive_dlogits(const Values& logits, const std::vector<int32_t>& targets, int64_t vocab, double cap) {
  Values d(logits.size(), 0.0);
  for (size_t n = 0; n < targets.size(); ++n) {
    if (targets[n] < 0) continue;
    double max_z = -INFINITY, total = 0;
    for (int64_t j = 0; j < vocab; ++j) max_z = std::max(max_z, capped(logits[n * vocab + j], cap));
    for (int64_t j = 0; j < vocab; ++j) total += std::exp(capped(logits[n * vocab + j], cap) - max_z);
    for (int64_t j = 0; j < vocab; ++j) {
      const double z = capped(logits[n * vocab + j], cap), th = z / cap;
      d[n * vocab + j] = (std::exp(z - max_z) / total - (j == targets[n] ? 1.0 : 0.0)) * (1 - th * th);
    }
  }
  return d;
}

struct CrossEntropyRun {
  Values losses, dlogits;
  std::vector<int32_t> argmax;
};

CrossEntropyRun run_cross_entropy(DType dtype, const Values& logits, const std::vector<int32_t>& targets, int64_t vocab,
                                  double cap, double loss_scale, bool in_place) {
  const int64_t rows = static_cast<int64_t>(targets.size());
  Buffer lb = make_buffer(Shape{rows, vocab}, dtype, logits), tb = make_tokens(Shape{rows}, targets),
         losses(cpu(), Shape{rows}, dtype), argmax(cpu(), Shape{rows}, DType::i32);
  cpu().softcap_cross_entropy_forward(losses, argmax, lb, tb, cap);
  CrossEntropyRun run{read(losses), {}, std::vector<int32_t>(static_cast<size_t>(rows))};
  cpu().download(run.argmax.data(), DType::i32, argmax);
  if (in_place) {
    cpu().softcap_cross_entropy_backward(lb, lb, tb, cap, loss_scale);
    run.dlogits = read(lb);
  } else {
    Buffer d(cpu(), Shape{rows, vocab}, dtype);
    cpu().fill(d, 5.0);
    cpu().softcap_cross_entropy_backward(d, lb, tb, cap, loss_scale);
    run.dlogits = read(d);
  }
  return run;
}

TEST(CrossEntropy, LossesArgmaxAndGradient) {
  const int64_t vocab = 11;
  const std::vector<int32_t> targets = {3, -1, 0, 10, 7, -5};
  const double cap = 15.0, loss_scale = 1.0 / 3.0;
  Values logits = random_values(targets.size() * vocab, 130, 12.0);  // large enough for the cap to bend
  for (bool in_place : {false, true}) {
    CrossEntropyRun r = run_cross_entropy(DType::f64, logits, targets, vocab, cap, loss_scale, in_place);
    EXPECT_LT(relative_error(r.losses, naive_losses(logits, targets, vocab, cap)), 1e-14);
    EXPECT_EQ(r.losses[1], 0.0);
    EXPECT_EQ(r.losses[5], 0.0);
    for (size_t n = 0; n < targets.size(); ++n) {
      auto row = logits.begin() + static_cast<ptrdiff_t>(n * vocab);
      EXPECT_EQ(r.argmax[n], std::max_element(row, row + vocab) - row) << "row " << n;
    }
    Values numeric = finite_difference_gradient(
        [&](const Values& l) {
          Values losses = naive_losses(l, targets, vocab, cap);
          double total = 0;
          for (double v : losses) total += v;
          return loss_scale * total;
        },
        logits);
    EXPECT_LT(relative_error(r.dlogits, numeric), 1e-6) << "in_place=" << in_place;
    for (int64_t j = 0; j < vocab; ++j) EXPECT_EQ(r.dlogits[1 * vocab + j], 0.0);  // ignored row
  }
}

TEST(CrossEntropy, NoCapAndF32MatchesF64) {
  const int64_t vocab = 37;
  const std::vector<int32_t> targets = {1, 36, -1, 0, 20};
  Values logits = random_values(targets.size() * vocab, 140, 4.0);
  CrossEntropyRun uncapped = run_cross_entropy(DType::f64, logits, targets, vocab, 0.0, 1.0, false);
  EXPECT_LT(relative_error(uncapped.losses, naive_losses(logits, targets, vocab, 0.0)), 1e-14);
  CrossEntropyRun r64 = run_cross_entropy(DType::f64, logits, targets, vocab, 15.0, 0.5, false);
  CrossEntropyRun r32 = run_cross_entropy(DType::f32, logits, targets, vocab, 15.0, 0.5, false);
  EXPECT_LT(relative_error(r32.losses, r64.losses), 1e-5);
  EXPECT_LT(relative_error(r32.dlogits, r64.dlogits), 1e-5);
  EXPECT_EQ(r32.argmax, r64.argmax);
}

// The SIMD kernel's exps take arguments down to -2 cap: at its largest cap (40) they reach -80, and
// saturated logits (also infinite ones) must still give exact-enough losses and gradients.
TEST(CrossEntropy, F32MatchesF64AtTheLargestFastCap) {
  const int64_t vocab = 37;
  const std::vector<int32_t> targets = {1, 36, -1, 0, 20};
  const double cap = kFastCrossEntropyMaxCap;
  Values logits = random_values(targets.size() * vocab, 141, 100.0);
  logits[3] = INFINITY;
  logits[vocab + 4] = -INFINITY;
  logits[vocab + 36] = -1e30;  // row 1's target: its probability is e^-80 of the largest
  CrossEntropyRun r32 = run_cross_entropy(DType::f32, logits, targets, vocab, cap, 1.0, false);
  EXPECT_LT(relative_error(r32.losses, naive_losses(logits, targets, vocab, cap)), 1e-5);
  EXPECT_LT(relative_error(r32.dlogits, naive_dlogits(logits, targets, vocab, cap)), 1e-5);
  EXPECT_EQ(r32.argmax[0], 3);
}

TEST(CrossEntropy, ArgmaxTakesTheFirstOfTies) {
  const int64_t vocab = 6;
  // Row 0: an exact tie at 2 and 5. Row 1: 50 and 60 both cap to exactly 1.0 (tanh saturates),
  // so z ties and the first index (1) wins although logit 4 is larger.
  Values logits = {0, 1, 3, -2, 1, 3, 0, 50, 0, 0, 60, 0};
  CrossEntropyRun r = run_cross_entropy(DType::f64, logits, {0, 0}, vocab, 1.0, 1.0, false);
  EXPECT_EQ(r.argmax, (std::vector<int32_t>{2, 1}));
}

// The same rule in f32 over a row longer than one SIMD vector (the AVX-512 kernel keeps a largest
// value and its index per lane): ties across lanes and within a lane, and a tie made by the cap.
TEST(CrossEntropy, ArgmaxTakesTheFirstOfTiesAcrossAWideRow) {
  const int64_t vocab = 100;
  Values logits(3 * vocab, 0.0);
  for (int64_t j = 0; j < vocab; ++j) logits[j] = logits[vocab + j] = logits[2 * vocab + j] = 0.01 * (j % 7);
  logits[35] = logits[20] = 3.0;              // row 0: lanes 3 and 4 of different vectors: 20 wins
  logits[vocab + 36] = logits[vocab + 20] = logits[vocab + 99] = 3.0;  // row 1: 20 and 36 share lane 4
  logits[2 * vocab + 70] = 80.0;              // row 2: both cap to exactly 1 at cap 1: 61 first
  logits[2 * vocab + 61] = 60.0;
  CrossEntropyRun r = run_cross_entropy(DType::f32, logits, {0, 0, 0}, vocab, 1.0, 1.0, false);
  EXPECT_EQ(r.argmax, (std::vector<int32_t>{20, 20, 61}));
  CrossEntropyRun r64 = run_cross_entropy(DType::f64, logits, {0, 0, 0}, vocab, 1.0, 1.0, false);
  EXPECT_EQ(r64.argmax, r.argmax);
  EXPECT_LT(relative_error(r.losses, r64.losses), 1e-5);  // saturated logits give finite losses
  // A NaN logit still makes its row's loss NaN (the saturation must not hide it).
  logits[2 * vocab + 5] = std::nan("");
  EXPECT_TRUE(std::isnan(run_cross_entropy(DType::f32, logits, {0, 0, 0}, vocab, 1.0, 1.0, false).losses[2]));
}

// The SIMD kernel on rows whose last logit (and last dlogit) is the last byte before an unreadable
// page, f32 and bf16, at every tail length of both widths: a whole-vector load or store of a row's
// last partial vector would crash. Losses, argmax and gradient against f64 on the same values.
TEST(CrossEntropy, FastKernelNeverTouchesPastTheLastLogit) {
  if (!fast_cross_entropy_available()) GTEST_SKIP() << "the SIMD cross-entropy is not in use at this CPU level";
  const std::vector<int32_t> targets = {0, -1, 2};
  const int64_t rows = 3;
  const double cap = 15.0;
  for (int64_t vocab : {3, 13, 16, 21, 31})
    for (bool bf16 : {false, true}) {
      SCOPED_TRACE(testing::Message() << "vocab " << vocab << (bf16 ? " bf16" : " f32"));
      const size_t count = static_cast<size_t>(rows * vocab), element = bf16 ? 2 : 4;
      Values values = random_values(count, 300 + static_cast<uint64_t>(vocab), 8.0);
      // row 1 all negative: the lanes past a row's end (loaded as zeros) must not win its argmax
      for (size_t j = static_cast<size_t>(vocab); j < 2 * static_cast<size_t>(vocab); ++j)
        values[j] = -20.0 - std::abs(values[j]);
      BytesBeforeAGuardPage logits(count * element), dlogits(count * element);
      for (size_t i = 0; i < count; ++i) {
        if (bf16) {
          logits.as<uint16_t>()[i] = double_to_bf16(values[i]);
          values[i] = bf16_to_float(logits.as<uint16_t>()[i]);
        } else {
          logits.as<float>()[i] = static_cast<float>(values[i]);
          values[i] = logits.as<float>()[i];
        }
      }
      std::vector<float> losses(rows), fused_losses(rows);
      std::vector<int32_t> argmax(rows);
      fast_softcap_cross_entropy(losses.data(), argmax.data(), nullptr, false, logits.as<void>(), bf16,
                                 targets.data(), rows, vocab, static_cast<float>(cap), 1.0f);
      fast_softcap_cross_entropy(fused_losses.data(), nullptr, dlogits.as<void>(), bf16, logits.as<void>(), bf16,
                                 targets.data(), rows, vocab, static_cast<float>(cap), 1.0f);
      EXPECT_EQ(losses, fused_losses);  // one path: the same bits
      EXPECT_LT(relative_error(Values(losses.begin(), losses.end()), naive_losses(values, targets, vocab, cap)), 1e-5);
      for (int64_t n = 0; n < rows; ++n) {
        auto row = values.begin() + n * vocab;
        EXPECT_EQ(argmax[static_cast<size_t>(n)], std::max_element(row, row + vocab) - row) << "row " << n;
      }
      Values got(count);
      for (size_t i = 0; i < count; ++i)
        got[i] = bf16 ? bf16_to_float(dlogits.as<uint16_t>()[i]) : dlogits.as<float>()[i];
      EXPECT_LT(relative_error(got, naive_dlogits(values, targets, vocab, cap)), bf16 ? 4e-3 : 1e-5);
    }
}

// The kernel follows the CPU level (8 lanes in the avx2/ run), and the device description says which.
TEST(CrossEntropy, TheSimdKernelFollowsTheLevelAndIsNamed) {
  const int lanes = fast_cross_entropy_lanes();
#ifdef CLOCKTRAIN_SIMD_AVX2
  if (cpu_level() == CpuLevel::avx2) EXPECT_EQ(lanes, 8);
#endif
#ifdef CLOCKTRAIN_SIMD_AVX512
  if (cpu_level_at_least(CpuLevel::avx512)) EXPECT_EQ(lanes, 16);
#endif
  const std::string named = lanes == 16  ? "; cross-entropy: 16 lanes (AVX-512)"
                            : lanes == 8 ? "; cross-entropy: 8 lanes (AVX2 FMA)"
                                         : "; cross-entropy: portable";
  EXPECT_NE(cpu().device_description().find(named), std::string::npos) << cpu().device_description();
}

TEST(CrossEntropy, ArgmaxIsOptionalAndLossesMayBeF32) {
  Values logits = random_values(2 * 5, 150);
  Buffer lb = make_buffer(Shape{2, 5}, DType::f64, logits), tb = make_tokens(Shape{2}, {1, 4}),
         losses(cpu(), Shape{2}, DType::f32);
  cpu().softcap_cross_entropy_forward(losses, Tensor{}, lb, tb, 15.0);
  EXPECT_LT(relative_error(read(losses), naive_losses(logits, {1, 4}, 5, 15.0)), 1e-7);
}

TEST(CrossEntropy, RejectsBadTargetsAndShapes) {
  Buffer logits(cpu(), Shape{2, 5}, DType::f32), losses(cpu(), Shape{2}, DType::f32), argmax_f(cpu(), Shape{2}, DType::f32);
  Buffer bad = make_tokens(Shape{2}, {1, 5}), good = make_tokens(Shape{2}, {1, 2}), short_targets = make_tokens(Shape{1}, {1});
  expect_error([&] { cpu().softcap_cross_entropy_forward(losses, Tensor{}, logits, bad, 15.0); },
               {"softcap_cross_entropy_forward", "targets[1] = 5"});
  expect_error([&] { cpu().softcap_cross_entropy_forward(losses, argmax_f, logits, good, 15.0); },
               {"softcap_cross_entropy_forward", "argmax", "i32"});
  expect_error([&] { cpu().softcap_cross_entropy_backward(logits, logits, short_targets, 15.0, 1.0); },
               {"softcap_cross_entropy_backward", "targets", "expected 2"});
  expect_error([&] { cpu().softcap_cross_entropy_forward(losses, Tensor{}, logits, good, -1.0); },
               {"softcap_cross_entropy_forward", "softcap"});
}

TEST(CrossEntropy, LargeInputsSameForOneAndTwoThreads) {
  const int64_t rows = 60, vocab = 1000;
  Values logits = random_values(rows * vocab, 191, 5.0);
  std::vector<int32_t> targets(static_cast<size_t>(rows));
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = i % 7 == 0 ? -1 : static_cast<int32_t>(i * 13 % vocab);
  int saved = thread_count();
  set_thread_count(1);
  CrossEntropyRun one = run_cross_entropy(DType::f32, logits, targets, vocab, 15.0, 0.01, true);
  set_thread_count(2);
  CrossEntropyRun two = run_cross_entropy(DType::f32, logits, targets, vocab, 15.0, 0.01, true);
  set_thread_count(saved);
  EXPECT_EQ(one.losses, two.losses);
  EXPECT_EQ(one.dlogits, two.dlogits);
  EXPECT_EQ(one.argmax, two.argmax);
  EXPECT_LT(relative_error(one.losses, naive_losses(logits, targets, vocab, 15.0)), 1e-5);
}

}  // namespace
}  // namespace ct::test
