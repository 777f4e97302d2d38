// The whole GPT with bf16 matmuls (CPU backend, matmul_precision "bf16") against the same model in
// f32: loss and every gradient within bf16 tolerance, the same bits on every run, compute copies of
// evaluation and the KV cache (tests/optim/bf16_step_test.cpp: the weights' compute copies after a step).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "model/gpt.h"
#include "model/tiny_model.h"
#include "bf16_engine_support.h"

namespace ct {
namespace {

// head_dim 32 (the AMX attention kernels take it), grouped-query heads, rows of 80 positions (two
// attention blocks, the second partial) and an MLP-only layer.
ModelConfig bf16_config() { return test::three_layer_config(300, 80, 64, 2, 1); }

std::unique_ptr<Backend> backend_with(MatmulPrecision precision) { return test::cpu_backend(2, precision); }

struct Pass {
  double loss = 0;
  std::vector<std::vector<double>> grads;
};

Pass train_pass(GPT& model, const std::vector<int32_t>& x, const std::vector<int32_t>& y, int64_t B, int64_t T) {
  model.zero_grad();
  Pass pass;
  pass.loss = model.forward(x.data(), y.data(), B, T);
  model.backward(1.0);
  for (const Parameter& p : model.parameters()) pass.grads.push_back(test::download_f64(model.backend(), p.grad));
  return pass;
}

// max |a - b| / max |b| over one tensor
double relative(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

TEST(MixedPrecision, Bf16ModelMatchesF32WithinBf16Tolerance) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  const ModelConfig config = bf16_config();
  auto be32 = backend_with(MatmulPrecision::f32), be16 = backend_with(MatmulPrecision::bf16);
  EXPECT_EQ(be16->matmul_operand_dtype(), DType::bf16);
  GPT m32(*be32, config), m16(*be16, config);
  EXPECT_EQ(m16.matmul_dtype(), DType::bf16);
  EXPECT_EQ(m32.matmul_dtype(), DType::f32);
  test::randomize_parameters(m32, 5, 2.0);
  test::randomize_parameters(m16, 5, 2.0);
  const int64_t B = 3, T = 80;
  std::vector<int32_t> x, y;
  test::random_batch(B, T, config.vocab_size, 9, x, y, 7);
  const Pass want = train_pass(m32, x, y, B, T), got = train_pass(m16, x, y, B, T);
  EXPECT_NEAR(got.loss, want.loss, 2e-3 * want.loss);
  for (size_t i = 0; i < want.grads.size(); ++i) {
    const std::string& name = m32.parameters()[i].spec.name;
    // a chain of bf16-rounded operands through every layer: a few percent of each tensor's scale
    EXPECT_LT(relative(got.grads[i], want.grads[i]), 0.04) << name;
  }
  // the same bits on every run
  const Pass again = train_pass(m16, x, y, B, T);
  EXPECT_EQ(again.loss, got.loss);
  EXPECT_EQ(again.grads, got.grads);
}

TEST(MixedPrecision, EvaluationAndKvCacheInBf16) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  const ModelConfig config = bf16_config();
  auto be32 = backend_with(MatmulPrecision::f32), be16 = backend_with(MatmulPrecision::bf16);
  GPT m32(*be32, config), m16(*be16, config);
  test::randomize_parameters(m32, 7, 2.0);
  test::randomize_parameters(m16, 7, 2.0);
  const int64_t B = 2, T = 80;
  std::vector<int32_t> x, y;
  test::random_batch(B, T, config.vocab_size, 11, x, y);
  std::vector<float> l32(static_cast<size_t>(B * T)), l16(l32.size());
  m32.evaluate(x.data(), y.data(), B, T, l32.data());
  m16.evaluate(x.data(), y.data(), B, T, l16.data());
  double total32 = 0, total16 = 0;
  for (size_t i = 0; i < l32.size(); ++i) total32 += l32[i], total16 += l16[i];
  EXPECT_NEAR(total16, total32, 2e-3 * total32);
  // the KV cache path: prefill 70 positions, then one more; logits close to f32's
  KVCache c32(m32, B, T), c16(m16, B, T);
  std::vector<int32_t> prefill(static_cast<size_t>(B * 70));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < 70; ++t) prefill[static_cast<size_t>(b * 70 + t)] = x[static_cast<size_t>(b * T + t)];
  std::vector<float> g32(static_cast<size_t>(B * config.vocab_size)), g16(g32.size());
  m32.forward_incremental(prefill.data(), B, 70, c32, g32.data());
  m16.forward_incremental(prefill.data(), B, 70, c16, g16.data());
  std::vector<int32_t> next = {x[70], x[T + 70]};
  m32.forward_incremental(next.data(), B, 1, c32, g32.data());
  m16.forward_incremental(next.data(), B, 1, c16, g16.data());
  std::vector<double> a(g16.begin(), g16.end()), b(g32.begin(), g32.end());
  EXPECT_LT(relative(a, b), 0.05);
}

}  // namespace
}  // namespace ct
