// With bf16 matmuls the model keeps bf16 compute copies of its weights: an optimizer step must
// refresh them (a model built from the stepped f32 master weights sees exactly the same ones).
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "model/gpt.h"
#include "model/tiny_model.h"
#include "optim/optimizer.h"
#include "bf16_engine_support.h"

namespace ct {
namespace {

TEST(MixedPrecision, ComputeCopiesFollowTheOptimizer) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  ModelConfig config = test::tiny_config();
  config.n_embd = 64;  // head_dim 32 with 2 heads over 1 kv head
  config.n_head = 2;
  config.n_kv_head = 1;
  config.sequence_len = 80;
  BackendOptions options;
  options.threads = 2;
  options.matmul_precision = MatmulPrecision::bf16;
  auto be = make_cpu_backend(options);
  GPT model(*be, config), fresh(*be, config);
  test::randomize_parameters(model, 6, 2.0);
  const int64_t B = 2, T = 80;
  std::vector<int32_t> x, y;
  test::random_batch(B, T, config.vocab_size, 10, x, y);
  Optimizer optimizer(model, OptimizerConfig{});
  model.zero_grad();
  model.forward(x.data(), y.data(), B, T);
  model.backward(1.0);
  optimizer.step(StepSchedule{}, optimizer.check_gradients().norm);
  const double after_step = model.forward(x.data(), y.data(), B, T);
  // a model built from the stepped master weights must see exactly the same bf16 weights
  for (size_t i = 0; i < model.parameters().size(); ++i) {
    std::vector<float> host(static_cast<size_t>(model.parameters()[i].spec.shape.numel()));
    be->download(host.data(), DType::f32, model.parameters()[i].value);
    be->upload(fresh.parameters()[i].value, host.data(), DType::f32);
  }
  EXPECT_EQ(fresh.forward(x.data(), y.data(), B, T), after_step);
}

}  // namespace
}  // namespace ct
