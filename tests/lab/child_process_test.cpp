#include "lab/child_process.h"
#include "test_support.h"

namespace ct::lab {
namespace {

TEST(ChildProcess, QuotesForTheShellAndKeepsTheOutputTail) {
  EXPECT_EQ(shell_join({"clocktrain", "run", "cpu-small", "--budget", "300"}), "clocktrain run cpu-small --budget 300");
  EXPECT_EQ(shell_join({"sh", "-c", "echo it's $HOME"}), "sh -c 'echo it'\\''s $HOME'");
  ChildResult r = run_child({"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done; exit 3"}, 100);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output_tail.size(), 100u);
  EXPECT_NE(r.output_tail.find("line1999\n"), std::string::npos);
  EXPECT_EQ(run_child({"/nonexistent/clocktrain"}, 100).exit_code, 127);
}

}  // namespace
}  // namespace ct::lab
