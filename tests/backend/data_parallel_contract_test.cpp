// What the device interface promises about data parallelism: no collective of it does nothing quietly.
// The host collectives belong to the job's process group; a backend joins a launched job
// only as the process the launcher started.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/parallel/launch.h"
#include "probe_backend.h"
#include "test_support.h"

namespace ct {
namespace {

using ::testing::HasSubstr;

TEST(DataParallelContract, DefaultCollectivesServeOneProcessAndRefuseSeveral) {
  test::ProbeBackend one;
  Tensor x = one.allocate(Shape{4}, DType::f32);
  EXPECT_NO_THROW(one.all_reduce_begin({x}, 1.0));
  EXPECT_NO_THROW(one.broadcast({x}, {0}));
  test::ProbeBackend two;
  two.world = 2;
  Tensor y = two.allocate(Shape{4}, DType::f32);
  EXPECT_THAT(test::error_of([&] { two.all_reduce_begin({y}, 0.5); }),
              HasSubstr("backend 'probe' has no collectives of its own for 2 processes"));
  EXPECT_THAT(test::error_of([&] { two.broadcast({y}, {1}); }),
              HasSubstr("backend 'probe' has no collectives of its own for 2 processes"));
  one.release(x);
  two.release(y);
}

TEST(DataParallelContract, ABackendOfOneProcessIsRefusedInALaunchedJob) {
  test::ProbeBackend one;
  LaunchEnvironment alone;
  EXPECT_NO_THROW(check_serves_the_job(one, alone));
  LaunchEnvironment job;
  job.launcher = "mpirun";
  job.world_size = 2;
  job.rank = 1;
  EXPECT_THAT(test::error_of([&] { check_serves_the_job(one, job); }),
              HasSubstr("backend 'probe' is process 0 of 1 where the launcher (mpirun) started process 1 of 2: it "
                        "does not train data-parallel"));
}

}  // namespace
}  // namespace ct
