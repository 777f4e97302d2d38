// The GPT: shape arithmetic, the seeded initialisation, the loss at initialisation, gradients
// against central finite differences in float64, float32 against float64, evaluation and the KV cache.
#include <gtest/gtest.h>

#include <cmath>

#include "model/gpt.h"
#include "model/tiny_model.h"
#include "util/threads.h"

namespace ct {
namespace {

using test::cpu_backend;
using test::tiny_config;

TEST(ModelConfig, BaselineParameterCountAndFlops) {
  ModelConfig c;  // the defaults are the baseline of docs/model.md
  c.validate("test");
  EXPECT_EQ(c.padded_vocab_size(), 8192);
  EXPECT_EQ(c.head_dim(), 128);
  EXPECT_EQ(c.parameter_count(), 59637760);  // 10*12*640^2 + 2*8192*640 (docs/model.md)
  // 6 * (every parameter but wte) + 12 * L * H * D * T
  const double expected = 6.0 * (10.0 * 12 * 640 * 640 + 8192.0 * 640) + 12.0 * 10 * 5 * 128 * 1024;
  EXPECT_DOUBLE_EQ(c.flops_per_token(), expected);
}

TEST(ModelConfig, PaddingAndMlpOnlyLayers) {
  ModelConfig c = tiny_config();
  EXPECT_EQ(c.padded_vocab_size(), 256);
  EXPECT_EQ(c.attention_layer_count(), 2);
  const int64_t C = 32, kv = 2 * 8;
  EXPECT_EQ(c.parameter_count(), 2 * 256 * C + 2 * (2 * C * C + 2 * kv * C) + 3 * 2 * 4 * C * C);
  auto specs = parameter_specs(c);
  ASSERT_EQ(specs.size(), 1u + 6 + 2 + 6 + 1);
  EXPECT_EQ(specs[0].name, "transformer.wte.weight");
  EXPECT_EQ(specs[2].name, "transformer.h.0.attn.c_k.weight");
  EXPECT_EQ(specs[2].shape, (Shape{16, 32}));
  EXPECT_EQ(specs[7].name, "transformer.h.1.mlp.c_fc.weight");
  EXPECT_EQ(specs.back().name, "lm_head.weight");
  EXPECT_EQ(specs.back().shape, (Shape{256, 32}));
}

TEST(ModelConfig, ValidationNamesTheField) {
  ModelConfig c = tiny_config();
  c.n_kv_head = 3;
  try {
    c.validate("recipe.toml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'n_kv_head'"), std::string::npos) << e.what();
  }
  c = tiny_config();
  c.attention_layers = {true};
  EXPECT_THROW(c.validate("x"), Error);
  c = tiny_config();
  c.qk_gain = 0.0;
  EXPECT_THROW(c.validate("x"), Error);
}

TEST(ModelConfig, JsonRoundTripRejectsUnknownFields) {
  ModelConfig c = tiny_config();
  Json j = to_json(c);
  ModelConfig back = model_config_from_json(j, "config.json");
  EXPECT_EQ(to_json(back), j);
  j["n_layers"] = 3;
  EXPECT_THROW(model_config_from_json(j, "config.json"), Error);
}

std::vector<float> weights_of(GPT& model) {
  std::vector<float> all;
  for (Parameter& p : model.parameters()) {
    std::vector<float> host(static_cast<size_t>(p.spec.shape.numel()));
    model.backend().download(host.data(), DType::f32, p.value);
    all.insert(all.end(), host.begin(), host.end());
  }
  return all;
}

TEST(Initialisation, SameSeedSameWeightsAnyThreadCount) {
  auto backend = cpu_backend();
  GPT model(*backend, tiny_config());
  set_thread_count(1);
  model.initialize(7);
  auto one_thread = weights_of(model);
  set_thread_count(2);
  model.initialize(7);
  EXPECT_EQ(weights_of(model), one_thread);
  model.initialize(8);
  EXPECT_NE(weights_of(model), one_thread);
}

TEST(Initialisation, FollowsModelMd) {
  ModelConfig c = tiny_config();
  c.n_embd = 64;
  c.n_head = 4;
  c.vocab_size = 512;
  auto backend = cpu_backend();
  GPT model(*backend, c);
  model.initialize(3);
  for (Parameter& p : model.parameters()) {
    auto v = test::download_f64(*backend, p.value);
    double sum = 0, sq = 0;
    for (double x : v) {
      sum += x;
      sq += x * x;
    }
    const double n = static_cast<double>(v.size()), mean = sum / n, std = std::sqrt(sq / n - mean * mean);
    const std::string& name = p.spec.name;
    if (name.find("c_proj") != std::string::npos || name == "lm_head.weight") {
      EXPECT_EQ(sq, 0.0) << name;
    } else {
      const double fan_out = static_cast<double>(p.spec.shape[0]), fan_in = static_cast<double>(p.spec.shape[1]);
      const double expected = name == "transformer.wte.weight" ? 1.0 : std::min(1.0, std::sqrt(fan_out / fan_in)) / std::sqrt(fan_in);
      EXPECT_NEAR(std, expected, 0.05 * expected) << name;
      EXPECT_NEAR(mean, 0.0, 5 * expected / std::sqrt(n)) << name;
    }
  }
}

TEST(Forward, LossAtInitialisationIsLnVocab) {
  auto backend = cpu_backend();
  ModelConfig c = tiny_config();
  GPT model(*backend, c);
  model.initialize(1);
  std::vector<int32_t> x, y;
  test::random_batch(3, 16, c.vocab_size, 5, x, y, 7);
  // lm_head starts at 0: every logit is 0 over the 200 real tokens (the 56 padding rows are not scored)
  EXPECT_NEAR(model.forward(x.data(), y.data(), 3, 16), std::log(200.0), 1e-5);
}

// Central differences of the mean loss in float64 against backward(), for a sample of elements of
// every parameter (the first, the last and a stride through the middle).
void check_finite_differences(ModelConfig c) {
  auto backend = cpu_backend();
  c.sequence_len = 8;
  GPT model(*backend, c, DType::f64);
  test::randomize_parameters(model, 11);
  std::vector<int32_t> x, y;
  test::random_batch(2, 8, c.vocab_size, 3, x, y, 5);
  model.zero_grad();
  model.forward(x.data(), y.data(), 2, 8);
  model.backward(1.0);
  const double h = 1e-5;
  int checked = 0;
  for (Parameter& p : model.parameters()) {
    auto grad = test::download_f64(*backend, p.grad);
    auto value = test::download_f64(*backend, p.value);
    const int64_t n = p.spec.shape.numel();
    std::vector<int64_t> picks = {0, n - 1};
    for (int64_t i = 1; i < 6; ++i) picks.push_back(i * n / 6 + i);
    if (p.spec.group == ParamGroup::embedding) picks = {static_cast<int64_t>(x[0]) * c.n_embd + 3, static_cast<int64_t>(x[5]) * c.n_embd, 250 * c.n_embd};
    if (p.spec.group == ParamGroup::lm_head) picks = {static_cast<int64_t>(y[0]) * c.n_embd + 1, 17 * c.n_embd + 31, 250 * c.n_embd + 2};
    if (p.spec.shape.ndim == 1) {  // the residual scalars: every layer's
      picks.clear();
      for (int64_t i = 0; i < n; ++i) picks.push_back(i);
    }
    for (int64_t i : picks) {
      const double saved = value[static_cast<size_t>(i)];
      auto loss_at = [&](double v) {
        value[static_cast<size_t>(i)] = v;
        backend->upload(p.value, value.data(), DType::f64);
        return model.forward(x.data(), y.data(), 2, 8);
      };
      const double numeric = (loss_at(saved + h) - loss_at(saved - h)) / (2 * h);
      loss_at(saved);
      const double analytic = grad[static_cast<size_t>(i)];
      EXPECT_NEAR(analytic, numeric, 1e-7 + 1e-5 * std::abs(numeric)) << p.spec.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(Backward, MatchesFiniteDifferencesInFloat64) { check_finite_differences(tiny_config()); }

// QK gain (frontier.md 1.6) enters the attention logits as qk_gain^2 / sqrt(D): exactly the baseline's
// 1 / sqrt(D) at gain 1, the gradients right at another gain, and a loss that moves with it.
TEST(Backward, WithQkGainMatchesFiniteDifferencesInFloat64) {
  ModelConfig c = tiny_config();
  EXPECT_EQ(c.attention_scale(), 1.0 / std::sqrt(static_cast<double>(c.head_dim())));
  c.qk_gain = 1.2;
  EXPECT_DOUBLE_EQ(c.attention_scale(), 1.44 / std::sqrt(static_cast<double>(c.head_dim())));
  check_finite_differences(c);
  auto backend = cpu_backend();
  std::vector<int32_t> x, y;
  test::random_batch(2, 8, c.vocab_size, 3, x, y, 5);
  auto loss_with_gain = [&](double gain) {
    ModelConfig g = tiny_config();
    g.qk_gain = gain;
    GPT model(*backend, g);
    test::randomize_parameters(model, 11);
    return model.forward(x.data(), y.data(), 2, 8);
  };
  EXPECT_NE(loss_with_gain(1.0), loss_with_gain(1.2));
}

// Residual scalars (frontier.md 1.1): x = r_i x + a_i x0 before each layer. The gradients of r and a
// (sums over every position and channel) and of everything upstream of the mix, which now also reaches
// x0 through every layer's a term.
TEST(Backward, WithResidualScalarsMatchesFiniteDifferencesInFloat64) {
  ModelConfig c = tiny_config();
  c.residual_scalars = true;
  check_finite_differences(c);
}

// With r = 1 and a = 0 the mix is exact (1 x = x, 0 x0 = 0): the same loss and gradients, bit for bit,
// as the model without the scalars (docs/model.md's), in f32 and with two micro-batches accumulated.
TEST(Forward, ResidualScalarsAtOneAndZeroAreTheModelWithoutThem) {
  auto backend = cpu_backend();
  ModelConfig plain = tiny_config(), mixed = tiny_config();
  mixed.residual_scalars = true;
  GPT without(*backend, plain), with(*backend, mixed);
  test::randomize_parameters(without, 9);
  for (Parameter& p : with.parameters()) {
    if (p.spec.name == "resid_lambdas") backend->fill(p.value, 1.0);
    else if (p.spec.name == "x0_lambdas") backend->fill(p.value, 0.0);
    else backend->copy(p.value, without.parameter(p.spec.name).value);
  }
  std::vector<int32_t> x, y;
  test::random_batch(3, 16, plain.vocab_size, 5, x, y, 7);
  without.zero_grad();
  with.zero_grad();
  for (int micro = 0; micro < 2; ++micro) {
    EXPECT_EQ(without.forward(x.data(), y.data(), 3, 16), with.forward(x.data(), y.data(), 3, 16));
    without.backward(0.5);
    with.backward(0.5);
  }
  for (Parameter& p : without.parameters())
    EXPECT_EQ(test::download_f64(*backend, p.grad), test::download_f64(*backend, with.parameter(p.spec.name).grad))
        << p.spec.name;
  // r's gradient is sum(g x) over the layer's input, a's sum(g x0): neither is 0 here
  for (const char* name : {"resid_lambdas", "x0_lambdas"})
    for (double g : test::download_f64(*backend, with.parameter(name).grad)) EXPECT_NE(g, 0.0) << name;
  EXPECT_EQ(with.parameter_count(), without.parameter_count() + 2 * plain.n_layer);
}

// nanochat's initialisation of the scalars (frontier.md 1.1): r from 1.15 down to 1.05, a from 0.20
// down to 0.05, linear over the layers.
TEST(Initialisation, ResidualScalarsStartOnNanochatsRamps) {
  auto backend = cpu_backend();
  ModelConfig c = tiny_config();
  c.residual_scalars = true;
  GPT model(*backend, c);
  model.initialize(3);
  const std::vector<double> r = test::download_f64(*backend, model.parameter("resid_lambdas").value);
  const std::vector<double> a = test::download_f64(*backend, model.parameter("x0_lambdas").value);
  ASSERT_EQ(r.size(), 3u);
  const double expected_r[] = {1.15, 1.10, 1.05}, expected_a[] = {0.20, 0.125, 0.05};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(r[i], expected_r[i], 1e-7) << i;
    EXPECT_NEAR(a[i], expected_a[i], 1e-7) << i;
  }
  EXPECT_EQ(model.parameters()[0].spec.name, "resid_lambdas");  // nanochat's state_dict order
  EXPECT_EQ(model.parameters()[1].spec.name, "x0_lambdas");
}

TEST(Backward, Float32MatchesFloat64) {
  auto backend = cpu_backend();
  ModelConfig c = tiny_config();
  GPT m32(*backend, c, DType::f32), m64(*backend, c, DType::f64);
  test::randomize_parameters(m64, 4);
  for (size_t i = 0; i < m64.parameters().size(); ++i)
    backend->copy(m32.parameters()[i].value, m64.parameters()[i].value);
  std::vector<int32_t> x, y;
  test::random_batch(2, 16, c.vocab_size, 9, x, y);
  m32.zero_grad();
  m64.zero_grad();
  const double l32 = m32.forward(x.data(), y.data(), 2, 16), l64 = m64.forward(x.data(), y.data(), 2, 16);
  EXPECT_NEAR(l32, l64, 1e-5 * l64);
  m32.backward(1.0);
  m64.backward(1.0);
  for (size_t i = 0; i < m64.parameters().size(); ++i) {
    auto g32 = test::download_f64(*backend, m32.parameters()[i].grad);
    auto g64 = test::download_f64(*backend, m64.parameters()[i].grad);
    double diff = 0, norm = 0;
    for (size_t k = 0; k < g64.size(); ++k) {
      diff += (g32[k] - g64[k]) * (g32[k] - g64[k]);
      norm += g64[k] * g64[k];
    }
    EXPECT_LT(std::sqrt(diff), 1e-4 * std::sqrt(norm) + 1e-12) << m64.parameters()[i].spec.name;
  }
}

TEST(Backward, AccumulatesAcrossMicroBatches) {
  auto backend = cpu_backend();
  ModelConfig c = tiny_config();
  GPT model(*backend, c, DType::f64);
  test::randomize_parameters(model, 2);
  std::vector<int32_t> x, y;
  test::random_batch(4, 16, c.vocab_size, 1, x, y);
  model.zero_grad();
  model.forward(x.data(), y.data(), 4, 16);
  model.backward(1.0);
  std::vector<std::vector<double>> whole;
  for (Parameter& p : model.parameters()) whole.push_back(test::download_f64(*backend, p.grad));
  model.zero_grad();
  for (int half = 0; half < 2; ++half) {
    model.forward(x.data() + half * 32, y.data() + half * 32, 2, 16);
    model.backward(0.5);
  }
  for (size_t i = 0; i < whole.size(); ++i) {
    auto g = test::download_f64(*backend, model.parameters()[i].grad);
    for (size_t k = 0; k < g.size(); ++k) ASSERT_NEAR(g[k], whole[i][k], 1e-12 + 1e-9 * std::abs(whole[i][k]));
  }
}

TEST(Evaluate, PerPositionLossesMatchTraining) {
  auto backend = cpu_backend();
  ModelConfig c = tiny_config();
  GPT model(*backend, c);
  test::randomize_parameters(model, 5);
  std::vector<int32_t> x, y;
  test::random_batch(3, 16, c.vocab_size, 2, x, y, 4);
  const double mean = model.forward(x.data(), y.data(), 3, 16);
  std::vector<float> train_losses(48), eval_losses(48);
  std::vector<int32_t> argmax(48);
  model.last_losses(train_losses.data());
  model.evaluate(x.data(), y.data(), 3, 16, eval_losses.data(), argmax.data());
  double sum = 0;
  int valid = 0;
  for (int i = 0; i < 48; ++i) {
    EXPECT_EQ(eval_losses[static_cast<size_t>(i)], train_losses[static_cast<size_t>(i)]) << i;
    if (y[static_cast<size_t>(i)] < 0) {
      EXPECT_EQ(eval_losses[static_cast<size_t>(i)], 0.0f);
    } else {
      sum += eval_losses[static_cast<size_t>(i)];
      ++valid;
    }
    EXPECT_GE(argmax[static_cast<size_t>(i)], 0);
    EXPECT_LT(argmax[static_cast<size_t>(i)], 200);
  }
  EXPECT_NEAR(sum / valid, mean, 1e-5);
}

// Prefill then one token at a time through the KV cache: each step's logits give the same loss and
// argmax as the full causal forward at that position.
TEST(Inference, KvCacheMatchesFullForward) {
  auto backend = cpu_backend();
  ModelConfig c = tiny_config();
  GPT model(*backend, c);
  test::randomize_parameters(model, 8);
  const int64_t B = 2, T = 12;
  std::vector<int32_t> x, y;
  test::random_batch(B, T, c.vocab_size, 4, x, y);
  std::vector<float> losses(static_cast<size_t>(B * T));
  std::vector<int32_t> argmax(static_cast<size_t>(B * T));
  model.evaluate(x.data(), y.data(), B, T, losses.data(), argmax.data());

  KVCache cache(model, B, 32);
  const int64_t prefill = 5;
  std::vector<float> logits(static_cast<size_t>(B * c.vocab_size));
  auto check_position = [&](int64_t t) {
    for (int64_t b = 0; b < B; ++b) {
      const float* z = logits.data() + b * c.vocab_size;
      double mx = z[0];
      int32_t best = 0;
      for (int32_t v = 1; v < c.vocab_size; ++v)
        if (z[v] > mx) mx = z[v], best = v;
      double s = 0;
      for (int32_t v = 0; v < c.vocab_size; ++v) s += std::exp(z[v] - mx);
      const int32_t target = y[static_cast<size_t>(b * T + t)];
      const double loss = mx + std::log(s) - z[target];
      EXPECT_NEAR(loss, losses[static_cast<size_t>(b * T + t)], 2e-4) << "row " << b << " position " << t;
      EXPECT_EQ(best, argmax[static_cast<size_t>(b * T + t)]) << "row " << b << " position " << t;
    }
  };
  std::vector<int32_t> chunk;
  for (int64_t b = 0; b < B; ++b) chunk.insert(chunk.end(), x.begin() + b * T, x.begin() + b * T + prefill);
  model.forward_incremental(chunk.data(), B, prefill, cache, logits.data());
  check_position(prefill - 1);
  for (int64_t t = prefill; t < T; ++t) {
    std::vector<int32_t> one = {x[static_cast<size_t>(t)], x[static_cast<size_t>(T + t)]};
    model.forward_incremental(one.data(), B, 1, cache, logits.data());
    check_position(t);
  }
  EXPECT_EQ(cache.position(), T);
  std::vector<int32_t> too_many(static_cast<size_t>(B * 30), 1);
  EXPECT_THROW(model.forward_incremental(too_many.data(), B, 30, cache, logits.data()), Error);
}

}  // namespace
}  // namespace ct
