#include "util/child_process.h"

#include "test_support.h"
#include "util/clock.h"

namespace ct {
namespace {

TEST(ChildProcess, KillsAChildThatRunsPastItsTimeout) {
  Stopwatch watch;
  ChildResult r = run_child({"sleep", "30"}, 0, 0.2);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + 9);
  EXPECT_LT(watch.seconds(), 20.0);  // not a timing assertion: only that it did not wait for the 30 s sleep
  ChildResult captured = run_child({"sh", "-c", "echo started; sleep 30"}, 100, 0.2);
  EXPECT_TRUE(captured.timed_out);
  EXPECT_NE(captured.output_tail.find("started"), std::string::npos);
}

TEST(ChildProcess, AChildWithinItsTimeoutKeepsItsExitCode) {
  ChildResult r = run_child({"sh", "-c", "exit 4"}, 0, 30);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 4);
}

}  // namespace
}  // namespace ct
