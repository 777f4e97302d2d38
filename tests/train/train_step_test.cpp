// The graph-region schedule of TrainStep (train_step.h): every region's first call runs eagerly,
// whichever region ran before it (were the optimizer's first call recorded because forward_backward
// had already advanced the step count it reads, cuBLASLt's heuristics and a cudaMalloc would run under
// stream capture). Which regions a TrainStep drops. And the gradient
// buckets of a data-parallel step.
#include "train/train_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/probe_backend.h"
#include "model/tiny_model.h"
#include "optim/optimizer.h"

namespace ct {
namespace {

TEST(RegionSchedule, EveryRegionsFirstCallRunsEagerly) {
  RegionSchedule schedule;
  EXPECT_FALSE(schedule.record("forward_backward"));  // step 1
  EXPECT_FALSE(schedule.record("optimizer"));         // step 1's optimizer: eager too
  EXPECT_TRUE(schedule.record("forward_backward"));   // step 2 records, later steps replay
  EXPECT_TRUE(schedule.record("optimizer"));
  EXPECT_TRUE(schedule.record("forward_backward"));   // step 3: a skipped optimizer step (NaN) changes nothing
  EXPECT_TRUE(schedule.record("forward_backward"));
  EXPECT_TRUE(schedule.record("optimizer"));
  EXPECT_FALSE(schedule.record("a_new_region"));      // any region's first call
}

// The first device check (H200): a second TrainStep on one backend, its model's memory elsewhere,
// replayed the first one's "forward_backward" recording and failed on its first call. Each TrainStep
// now drops the backend's two regions when it is made and when it goes.
TEST(TrainStep, DropsTheBackendsRegionsWhenMadeAndWhenGone) {
  test::ProbeBackend backend;
  backend.graphs = true;
  GPT model(backend, test::three_layer_config(64, 16, 32, 2, 1), DType::f32);
  Optimizer optimizer(model, OptimizerConfig{});
  const std::vector<std::string> both{"forward_backward", "optimizer"};
  {
    TrainStep step(model, optimizer, /*processes=*/nullptr, 1, 2, 16, /*graphs=*/true);
    EXPECT_EQ(backend.graph_resets, both);
  }
  EXPECT_EQ(backend.graph_resets, (std::vector<std::string>{both[0], both[1], both[0], both[1]}));
  backend.graphs = false;  // a backend without regions is not asked
  backend.graph_resets.clear();
  { TrainStep step(model, optimizer, /*processes=*/nullptr, 1, 2, 16, true); }
  EXPECT_TRUE(backend.graph_resets.empty());
}

// A NaN weight inside the MLP: relu(x)^2 may hide it from the loss, never from the gradients, which
// the step checks tensor by tensor. (The trainer tested this through a poisoned checkpoint, which
// is now refused when it is read.)
TEST(TrainStep, ANanWeightShowsInTheGradients) {
  auto backend = test::cpu_backend(1);
  GPT model(*backend, test::three_layer_config(64, 16, 32, 2, 1), DType::f32);
  test::randomize_parameters(model, 7);
  Optimizer optimizer(model, OptimizerConfig{});
  for (Parameter& p : model.parameters()) {
    if (p.spec.name != "transformer.h.0.mlp.c_fc.weight") continue;
    std::vector<float> host(static_cast<size_t>(p.spec.shape.numel()));
    backend->download(host.data(), DType::f32, p.value);
    host[3] = std::nanf("");
    backend->upload(p.value, host.data(), DType::f32);
  }
  model.weights_changed();
  TrainStep step(model, optimizer, /*processes=*/nullptr, 1, 2, 16, /*graphs=*/false);
  const auto batch = [](std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
    test::random_batch(2, 16, 64, 3, inputs, targets);
  };
  const StepMeasurement measured = step.forward_backward(batch);
  EXPECT_FALSE(measured.gradients.finite());
  EXPECT_FALSE(measured.gradients.first_nonfinite.empty());
}

// The data-parallel step's buckets: parameters in the order backward finishes them (reverse index
// order), a bucket handed out once all of its parameters are final, each bucket once per pass.
TEST(GradientBuckets, EachBucketStartsWhenItsLastParameterIsFinal) {
  // bytes of parameters 0..4 (0 = wte, 4 = lm_head); buckets of <= 100 bytes in ready order 4,3,2,1,0
  GradientBuckets buckets({60, 30, 30, 50, 120}, 100);
  ASSERT_EQ(buckets.bucket_count(), 3u);            // {4} (over the size alone), {3, 2}, {1, 0}
  EXPECT_EQ(buckets.complete_from(4), (std::vector<std::vector<int>>{{4}}));
  EXPECT_TRUE(buckets.complete_from(3).empty());   // {3, 2} waits for 2
  EXPECT_EQ(buckets.complete_from(1), (std::vector<std::vector<int>>{{3, 2}}));  // 1 final, 0 not yet
  EXPECT_EQ(buckets.complete_from(0), (std::vector<std::vector<int>>{{1, 0}}));
  EXPECT_TRUE(buckets.complete_from(0).empty());   // nothing twice
  buckets.reset();                                 // the next step's pass
  EXPECT_EQ(buckets.complete_from(0).size(), 3u);  // everything final at once: every bucket, in order
}

}  // namespace
}  // namespace ct
