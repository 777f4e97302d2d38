// The graph-region schedule of TrainStep (train_step.h): every region's first call runs eagerly,
// whichever region ran before it (issue 24: the optimizer's first call used to be recorded, because it
// read the step count that forward_backward had already advanced, so cuBLASLt's heuristics and a
// cudaMalloc would have run under stream capture).
#include "train/train_step.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ct
