// The trainer with bf16 matmuls (backend.matmul_precision = "bf16"): it learns, its losses follow the
// f32 reference run's, same seed and threads give the same bits, a resumed run equals an uninterrupted
// one, and the checkpoint holds the f32 master weights (which an f32 model then evaluates).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "model/checkpoint.h"
#include "model/gpt.h"
#include "model/safetensors.h"
#include "train/train_test_support.h"
#include "train/trainer.h"
#include "bf16_engine_support.h"

namespace ct {
namespace {

class Bf16TrainerTest : public test::TrainerFixture {
 protected:
  static Recipe bf16_recipe() {
    Recipe r = test::tiny_recipe();  // 2 heads of 32 over 1 kv head: the AMX attention kernels' shape
    r.matmul_precision = MatmulPrecision::bf16;
    r.steps = 8;
    r.eval_every_steps = 4;
    return r;
  }
};

TEST_F(Bf16TrainerTest, LearnsLikeF32AndSavesF32MasterWeights) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  Recipe r = bf16_recipe();
  TrainResult bf16 = train(options("bf16", r));
  ASSERT_TRUE(bf16.ok()) << bf16.error;
  EXPECT_NE(bf16.device_description.find("bf16 matmuls"), std::string::npos) << bf16.device_description;
  r.matmul_precision = MatmulPrecision::f32;
  ASSERT_TRUE(train(options("f32", r)).ok());
  const auto l16 = losses("bf16"), l32 = losses("f32");
  ASSERT_EQ(l16.size(), 8u);
  ASSERT_EQ(l32.size(), 8u);
  EXPECT_LT(l16.back(), l16.front() - 0.5) << "the repetitive corpus should be learned";
  // the same trajectory within bf16 rounding (8 steps of a tiny model: a few percent at most)
  for (size_t i = 0; i < l16.size(); ++i) EXPECT_NEAR(l16[i], l32[i], 0.03 * l32[i]) << "step " << i + 1;
  EXPECT_GT(bf16.last_eval_loss, 0);
  // the checkpoint holds the f32 master weights; f32 and bf16 models built from it evaluate alike
  const fs::path ckpt = scratch_.path() / "bf16" / "checkpoint";
  SafetensorsFile file(ckpt / "model.safetensors");
  for (const SafetensorsEntry& e : file.entries()) EXPECT_EQ(e.dtype, "F32") << e.name;
  BackendOptions o;
  o.threads = 1;
  auto be32 = make_cpu_backend(o);
  o.matmul_precision = MatmulPrecision::bf16;
  auto be16 = make_cpu_backend(o);
  const ModelConfig config = load_model_config(ckpt);
  GPT m32(*be32, config), m16(*be16, config);
  load_model_weights(m32, ckpt / "model.safetensors");
  load_model_weights(m16, ckpt / "model.safetensors");
  const int64_t B = 2, T = config.sequence_len;
  std::vector<int32_t> x(static_cast<size_t>(B * T)), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<int32_t>((i * 7) % 100 + 32);
    y[i] = static_cast<int32_t>((i * 7 + 7) % 100 + 32);
  }
  std::vector<float> a(x.size()), b(x.size());
  m32.evaluate(x.data(), y.data(), B, T, a.data());
  m16.evaluate(x.data(), y.data(), B, T, b.data());
  double sa = 0, sb = 0;
  for (size_t i = 0; i < a.size(); ++i) sa += a[i], sb += b[i];
  EXPECT_NEAR(sb, sa, 0.01 * sa);
}

TEST_F(Bf16TrainerTest, DeterministicAndResumable) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  Recipe r = bf16_recipe();
  r.eval_every_steps = 0;
  r.steps = 3;
  r.threads = 2;  // two threads split the work, and the result must not depend on the timing
  ASSERT_TRUE(train(options("one", r)).ok());
  ASSERT_TRUE(train(options("two", r)).ok());
  EXPECT_EQ(losses("one"), losses("two"));
  r.threads = 1;  // (one thread keeps the rest fast on a loaded machine)
  r.steps = 4;
  ASSERT_TRUE(train(options("whole", r)).ok());
  TrainOptions first = options("split", r);
  first.stop_after_steps = 2;
  ASSERT_TRUE(train(first).ok());
  TrainOptions second = options("split", r);
  second.resume_dir = scratch_.path() / "split" / "checkpoint";
  TrainResult rest = train(second);
  ASSERT_TRUE(rest.ok()) << rest.error;
  // bit-identical: the compute copies are rebuilt from the loaded master weights
  EXPECT_EQ(losses("split"), losses("whole"));
}

}  // namespace
}  // namespace ct
