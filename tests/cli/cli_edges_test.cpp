// The top level of the command line: --version, a mistyped command named with the closest
// one, and usage lines that name the program as typed, not the binary's path.
#include <gmock/gmock.h>

#include "test_support.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string bin() { return test::clocktrain_bin(); }

TEST(CliEdges, VersionFlagPrintsTheFirstLineOfTheVersionCommand) {
  const auto version = test::run_command(bin() + " version");
  ASSERT_EQ(version.exit_code, 0) << version.output;
  const std::string first_line = version.output.substr(0, version.output.find('\n') + 1);
  ASSERT_EQ(first_line.rfind("clocktrain ", 0), 0u) << version.output;
  const auto flag = test::run_command(bin() + " --version");
  EXPECT_EQ(flag.exit_code, 0) << flag.output;
  EXPECT_EQ(flag.output, first_line);
}

TEST(CliEdges, AMistypedCommandIsNamedWithTheClosestOne) {
  const auto swapped = test::run_command(bin() + " trian recipes/tiny.toml");
  EXPECT_EQ(swapped.exit_code, 1) << swapped.output;
  EXPECT_THAT(swapped.output, HasSubstr("clocktrain: error: unknown command 'trian'; did you mean 'train'?"));
  const auto nested = test::run_command(bin() + " tokenizer decod --tokenizer x 1 2");
  EXPECT_EQ(nested.exit_code, 1) << nested.output;
  EXPECT_THAT(nested.output, HasSubstr("unknown command 'tokenizer decod'; did you mean 'tokenizer decode'?"));
  const auto flags_first = test::run_command(bin() + " --help-all evl");
  EXPECT_EQ(flags_first.exit_code, 1) << flags_first.output;
  EXPECT_THAT(flags_first.output, HasSubstr("unknown command 'evl'; did you mean 'eval'?"));
  // Nothing close: the commands are listed.
  const auto far = test::run_command(bin() + " frobnicate");
  EXPECT_EQ(far.exit_code, 1) << far.output;
  EXPECT_THAT(far.output, HasSubstr("unknown command 'frobnicate'; the commands are: version, tokenizer, data, train"));
  // Known commands, their options and their values are not taken for commands.
  EXPECT_EQ(test::run_command(bin() + " eval bpb --help").exit_code, 0);
  EXPECT_EQ(test::run_command(bin() + " version").exit_code, 0);
  const auto value = test::run_command(bin() + " data prepare --out /nonexistent/x --data trian");
  EXPECT_THAT(value.output, Not(HasSubstr("unknown command"))) << value.output;
}

TEST(CliEdges, UsageLinesNameTheProgramNotTheBinaryPath) {
  ASSERT_NE(bin().find('/'), std::string::npos) << "the test runs the binary by its path";
  const auto help = test::run_command(bin() + " train --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("Usage: clocktrain train [OPTIONS] recipe"));
  EXPECT_THAT(help.output, Not(HasSubstr(bin())));
  const auto top = test::run_command(bin() + " --help");
  EXPECT_THAT(top.output, HasSubstr("Usage: clocktrain [OPTIONS] SUBCOMMAND"));
  EXPECT_THAT(top.output, Not(HasSubstr(bin())));
}

}  // namespace
}  // namespace ct
