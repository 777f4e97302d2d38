// The forward pass is written once (model/layer_forward.h) and serves training, evaluation, sampling
// with a KV cache and shared-prefix scoring. On the same weights and tokens, and at the same shapes,
// the uses must give the same numbers bit for bit on the CPU: the per-position losses of training,
// evaluate() and the shared-prefix pass, and the logits of logits() and of the KV cache. (The KV
// cache's head multiplies only each row's last position: after a prefill of T tokens its product
// has B rows where logits()'s has B*T, and a BLAS may block, hence round, those differently; so the
// bitwise comparison of the two is at T = 1, and the prefill is compared to a float's rounding.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "bf16_engine_support.h"
#include "model/shared_prefix_eval.h"
#include "tiny_model.h"

namespace ct {
namespace {

using test::cpu_backend;
using test::tiny_config;

void expect_same_uses(MatmulPrecision precision, const ModelConfig& c = tiny_config()) {
  auto backend = cpu_backend(2, precision);
  GPT model(*backend, c);
  test::randomize_parameters(model, 21);
  const int64_t B = 2, T = c.sequence_len, N = B * T, V = c.vocab_size;
  std::vector<int32_t> x, y;
  test::random_batch(B, T, V, 9, x, y);

  // training's forward pass, then evaluation
  std::vector<float> train_losses(static_cast<size_t>(N)), eval_losses(static_cast<size_t>(N));
  std::vector<int32_t> eval_argmax(static_cast<size_t>(N));
  model.forward(x.data(), y.data(), B, T);
  model.last_losses(train_losses.data());
  model.evaluate(x.data(), y.data(), B, T, eval_losses.data(), eval_argmax.data());

  // shared-prefix scoring: each row a group of one continuation and no prefix (the same shapes)
  std::vector<SharedPrefixGroup> groups(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    groups[static_cast<size_t>(b)].inputs = {std::vector<int32_t>(x.begin() + b * T, x.begin() + (b + 1) * T)};
    groups[static_cast<size_t>(b)].targets = {std::vector<int32_t>(y.begin() + b * T, y.begin() + (b + 1) * T)};
  }
  std::vector<std::vector<SharedPrefixRowScores>> shared;
  SharedPrefixEvaluator(model).evaluate(groups, shared);

  for (int64_t i = 0; i < N; ++i) {
    const size_t k = static_cast<size_t>(i);
    const SharedPrefixRowScores& s = shared[static_cast<size_t>(i / T)][0];
    // bf16: training keeps its logits in bf16 (the fused loss), evaluation in f32: compared below
    if (precision == MatmulPrecision::f32) EXPECT_EQ(train_losses[k], eval_losses[k]) << "position " << i;
    EXPECT_EQ(s.loss[static_cast<size_t>(i % T)], eval_losses[k]) << "position " << i;
    EXPECT_EQ(s.argmax[static_cast<size_t>(i % T)], eval_argmax[k]) << "position " << i;
  }
  if (precision != MatmulPrecision::f32)
    for (size_t k = 0; k < train_losses.size(); ++k) EXPECT_NEAR(train_losses[k], eval_losses[k], 2e-2) << k;

  // the logits of one position: logits() and the KV cache, the same shapes
  std::vector<float> first(static_cast<size_t>(B * V)), first_cached(static_cast<size_t>(B * V));
  const std::vector<int32_t> first_tokens = {x[0], x[static_cast<size_t>(T)]};
  model.logits(first_tokens.data(), B, 1, first.data());
  KVCache first_cache(model, B, 1);
  model.forward_incremental(first_tokens.data(), B, 1, first_cache, first_cached.data());
  EXPECT_EQ(std::memcmp(first.data(), first_cached.data(), first.size() * sizeof(float)), 0);

  // the logits of every position, and the KV cache's for the last one (all T tokens in one call)
  std::vector<float> logits(static_cast<size_t>(N * V)), cached(static_cast<size_t>(B * V));
  model.logits(x.data(), B, T, logits.data());
  KVCache cache(model, B, T);
  model.forward_incremental(x.data(), B, T, cache, cached.data());
  for (int64_t b = 0; b < B; ++b) {
    const float* want = logits.data() + ((b + 1) * T - 1) * V;
    for (int64_t v = 0; v < V; ++v)
      EXPECT_NEAR(cached[static_cast<size_t>(b * V + v)], want[v], 1e-5 + 1e-6 * std::abs(want[v])) << b << "/" << v;
    // and logits() is the distribution evaluate() scored: its argmax (first on ties)
    for (int64_t t = 0; t < T; ++t) {
      const float* z = logits.data() + (b * T + t) * V;
      int32_t best = 0;
      for (int32_t v = 1; v < V; ++v)
        if (z[v] > z[best]) best = v;
      EXPECT_EQ(best, eval_argmax[static_cast<size_t>(b * T + t)]) << "row " << b << " position " << t;
    }
  }
}

TEST(ForwardUses, SameLossesAndLogitsInF32) { expect_same_uses(MatmulPrecision::f32); }

TEST(ForwardUses, SameLossesAndLogitsInBf16) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  expect_same_uses(MatmulPrecision::bf16);
}

// With the residual scalars (frontier.md 1.1) every use keeps x0 and mixes it in before each layer.
TEST(ForwardUses, WithResidualScalarsSameLossesAndLogits) {
  ModelConfig c = tiny_config();
  c.residual_scalars = true;
  expect_same_uses(MatmulPrecision::f32, c);
  if (bf16_engine_available()) expect_same_uses(MatmulPrecision::bf16, c);
}

}  // namespace
}  // namespace ct
