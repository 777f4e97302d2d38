// Schedules, gradient checks and clipping, the first steps of AdamW and Muon against their closed
// forms, and a tiny model overfitting one batch.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/tiny_model.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"

namespace ct {
namespace {

TEST(Schedule, WarmdownOverTheLastFifth) {
  ScheduleConfig s;
  EXPECT_EQ(lr_factor(s, 0.0), 1.0);
  EXPECT_EQ(lr_factor(s, 0.8), 1.0);
  EXPECT_NEAR(lr_factor(s, 0.9), 0.5, 1e-12);
  EXPECT_NEAR(lr_factor(s, 0.95), 0.25, 1e-12);
  EXPECT_EQ(lr_factor(s, 1.0), 0.0);
  EXPECT_EQ(lr_factor(s, 1.5), 0.0);  // clamped
  s.final_lr_fraction = 0.1;
  EXPECT_NEAR(lr_factor(s, 1.0), 0.1, 1e-12);
  EXPECT_NEAR(lr_factor(s, 0.9), 0.55, 1e-12);
  s.warmup_fraction = 0.1;
  EXPECT_NEAR(lr_factor(s, 0.05), 0.5, 1e-12);
  // nanochat's 2026 shape after its warm-up (frontier.md 2.6): f(N - W) = 1, f(N) = 0.05, W = 0.65 N
  ScheduleConfig frontier;
  frontier.warmdown_fraction = 0.65;
  frontier.final_lr_fraction = 0.05;
  EXPECT_EQ(lr_factor(frontier, 0.35), 1.0);
  EXPECT_NEAR(lr_factor(frontier, 0.675), 0.525, 1e-12);
  EXPECT_NEAR(lr_factor(frontier, 1.0), 0.05, 1e-12);
}

TEST(Schedule, MuonMomentumWarmsUpOver300Steps) {
  OptimizerConfig c;
  EXPECT_DOUBLE_EQ(muon_momentum_at(c, 0), 0.85);
  EXPECT_NEAR(muon_momentum_at(c, 150), 0.90, 1e-12);
  EXPECT_DOUBLE_EQ(muon_momentum_at(c, 300), 0.95);
  EXPECT_DOUBLE_EQ(muon_momentum_at(c, 5000), 0.95);
  EXPECT_DOUBLE_EQ(muon_momentum_at(c, 5000, 1.0), 0.95);  // no muon_momentum_final: no warmdown
}

// nanochat's 2026 momentum (frontier.md 2.6): 0.85 -> 0.97 over 400 steps, then 0.97 -> 0.90 over the
// lr warmdown (0.65 of the run); its tests: mu(0) = 0.85, mu(200) = 0.91, mu(N) = 0.90.
TEST(Schedule, MuonMomentumWarmsDownWithTheLearningRate) {
  OptimizerConfig c;
  c.muon_momentum_start = 0.85;
  c.muon_momentum = 0.97;
  c.muon_momentum_warmup_steps = 400;
  c.muon_momentum_final = 0.90;
  ScheduleConfig s;
  s.warmdown_fraction = 0.65;
  EXPECT_DOUBLE_EQ(muon_momentum_at(c, 0, warmdown_position(s, 0.0)), 0.85);
  EXPECT_NEAR(muon_momentum_at(c, 200, warmdown_position(s, 0.1)), 0.91, 1e-12);
  EXPECT_DOUBLE_EQ(muon_momentum_at(c, 1000, warmdown_position(s, 0.35)), 0.97);  // the warmdown starts
  EXPECT_NEAR(muon_momentum_at(c, 2000, warmdown_position(s, 0.675)), 0.935, 1e-12);
  EXPECT_NEAR(muon_momentum_at(c, 3000, warmdown_position(s, 1.0)), 0.90, 1e-12);
  // the warm-up wins while it lasts, even inside the warmdown (a short run)
  EXPECT_NEAR(muon_momentum_at(c, 200, warmdown_position(s, 0.9)), 0.91, 1e-12);
  EXPECT_EQ(warmdown_position(s, 0.2), 0.0);
  EXPECT_EQ(warmdown_position(s, 1.5), 1.0);
}

// Cautious weight decay's cosine (frontier.md 2.4): lambda_0 at the start, lambda_0 / 2 half-way, 0 at
// the end; progress outside [0, 1] is clamped; no lambda_0, no decay.
TEST(Schedule, MuonWeightDecayFollowsACosineToZero) {
  OptimizerConfig c;
  EXPECT_EQ(muon_weight_decay_at(c, 0.3), 0.0);
  c.muon_weight_decay = 0.28;
  EXPECT_DOUBLE_EQ(muon_weight_decay_at(c, 0.0), 0.28);
  EXPECT_NEAR(muon_weight_decay_at(c, 0.5), 0.14, 1e-15);
  EXPECT_NEAR(muon_weight_decay_at(c, 0.25), 0.14 * (1 + std::sqrt(0.5)), 1e-15);
  EXPECT_NEAR(muon_weight_decay_at(c, 1.0), 0.0, 1e-15);
  EXPECT_NEAR(muon_weight_decay_at(c, 1.7), 0.0, 1e-15);
  EXPECT_DOUBLE_EQ(muon_weight_decay_at(c, -1.0), 0.28);
  const StepSchedule at = schedule_at(ScheduleConfig{}, 0.9);
  EXPECT_DOUBLE_EQ(at.lr_factor, lr_factor(ScheduleConfig{}, 0.9));
  EXPECT_DOUBLE_EQ(at.warmdown_position, 0.5);
  EXPECT_EQ(at.progress, 0.9);
}

struct Fixture {
  std::unique_ptr<Backend> backend = test::cpu_backend();
  ModelConfig config = test::tiny_config();
  GPT model{*backend, config};
  std::vector<int32_t> x, y;
  Fixture() {
    test::randomize_parameters(model, 3);
    test::random_batch(2, 16, config.vocab_size, 4, x, y);
    model.zero_grad();
    model.forward(x.data(), y.data(), 2, 16);
    model.backward(1.0);
  }
};

TEST(Optimizer, GradientNormAndFirstNonFiniteTensor) {
  Fixture f;
  Optimizer opt(f.model, OptimizerConfig{});
  double sq = 0;
  for (Parameter& p : f.model.parameters())
    for (double g : test::download_f64(*f.backend, p.grad)) sq += g * g;
  GradientCheck g = opt.check_gradients();
  EXPECT_TRUE(g.finite());
  EXPECT_NEAR(g.norm, std::sqrt(sq), 1e-9 * std::sqrt(sq));
  // poison one gradient element of the MLP-only layer
  Parameter& p = f.model.parameter("transformer.h.1.mlp.c_fc.weight");
  auto host = test::download_f64(*f.backend, p.grad);
  host[5] = std::numeric_limits<double>::quiet_NaN();
  f.backend->upload(p.grad, host.data(), DType::f64);
  Parameter& later = f.model.parameter("lm_head.weight");
  auto host2 = test::download_f64(*f.backend, later.grad);
  host2[0] = std::numeric_limits<double>::infinity();
  f.backend->upload(later.grad, host2.data(), DType::f64);
  g = opt.check_gradients();
  EXPECT_FALSE(g.finite());
  EXPECT_EQ(g.first_nonfinite, "transformer.h.1.mlp.c_fc.weight");
  EXPECT_THROW(opt.step({1.0}, g.norm), Error);
}

// First AdamW step: m_hat = g and v_hat = g^2, so each element moves by lr * g / (|g| + eps).
TEST(Optimizer, FirstAdamWStepIsSignDescentWithScaledLr) {
  Fixture f;
  OptimizerConfig c;
  c.grad_clip = 0;  // no clipping: the step uses the raw gradient
  Optimizer opt(f.model, c);
  const double width_scale = std::pow(32.0 / 768.0, -0.5);
  EXPECT_NEAR(opt.adamw_lr("transformer.wte.weight"), 0.2 * width_scale, 1e-12);
  EXPECT_NEAR(opt.adamw_lr("lm_head.weight"), 0.004 * width_scale, 1e-12);
  Parameter& head = f.model.parameter("lm_head.weight");
  auto before = test::download_f64(*f.backend, head.value);
  auto grad = test::download_f64(*f.backend, head.grad);
  opt.step({0.5}, opt.check_gradients().norm);
  auto after = test::download_f64(*f.backend, head.value);
  const double lr = 0.004 * width_scale * 0.5;
  for (size_t i = 0; i < before.size(); i += 37) {
    const double expected = before[i] - lr * grad[i] / (std::abs(grad[i]) + 1e-10);
    ASSERT_NEAR(after[i], expected, 1e-6 * std::abs(lr) + 1e-7) << i;
  }
}

// First Muon step: the momentum makes u a multiple of g, and Newton-Schulz normalises it, so the
// update is lr * sqrt(max(1, rows/cols)) * X with X roughly orthogonal: X X^T ~ I on the small side.
TEST(Optimizer, FirstMuonStepIsRoughlyOrthogonal) {
  Fixture f;
  Optimizer opt(f.model, OptimizerConfig{});
  Parameter& fc = f.model.parameter("transformer.h.0.mlp.c_fc.weight");  // [128, 32]: rows > cols
  auto before = test::download_f64(*f.backend, fc.value);
  opt.step({1.0}, opt.check_gradients().norm);
  auto after = test::download_f64(*f.backend, fc.value);
  const double scale = 0.02 * std::sqrt(128.0 / 32.0);
  const int rows = 128, cols = 32;
  std::vector<double> X(before.size());
  for (size_t i = 0; i < X.size(); ++i) X[i] = (before[i] - after[i]) / scale;
  // X^T X [32 x 32]: diagonal near 1 (the quintic iteration leaves singular values in ~[0.7, 1.2])
  for (int a = 0; a < cols; ++a)
    for (int b = 0; b < cols; ++b) {
      double dot = 0;
      for (int r = 0; r < rows; ++r) dot += X[static_cast<size_t>(r * cols + a)] * X[static_cast<size_t>(r * cols + b)];
      if (a == b) {
        EXPECT_GT(dot, 0.4) << a;
        EXPECT_LT(dot, 1.6) << a;
      } else {
        EXPECT_LT(std::abs(dot), 0.5) << a << "," << b;
      }
    }
}

TEST(Optimizer, ClippingScalesGradientsToTheClipNorm) {
  Fixture f;
  OptimizerConfig c;
  c.grad_clip = 1e-3;
  Optimizer opt(f.model, c);
  const double norm = opt.check_gradients().norm;
  ASSERT_GT(norm, 1e-3);
  opt.step({0.0}, norm);  // lr factor 0: only the clipping acts
  EXPECT_NEAR(opt.check_gradients().norm, 1e-3 * norm / (norm + 1e-6), 1e-9);
}

TEST(Optimizer, TinyModelOverfitsOneBatch) {
  auto backend = test::cpu_backend();
  ModelConfig c = test::tiny_config();
  GPT model(*backend, c);
  model.initialize(5);
  std::vector<int32_t> x, y;
  test::random_batch(2, 16, c.vocab_size, 8, x, y);
  Optimizer opt(model, OptimizerConfig{});
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    model.zero_grad();
    last = model.forward(x.data(), y.data(), 2, 16);
    if (step == 0) first = last;
    model.backward(1.0);
    opt.step({1.0}, opt.check_gradients().norm);
  }
  EXPECT_NEAR(first, std::log(200.0), 1e-4);
  EXPECT_LT(last, 0.05) << "started at " << first;
}

}  // namespace
}  // namespace ct
