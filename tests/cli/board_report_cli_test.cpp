// `clocktrain board` and `clocktrain report` as a user runs them.
#include <gmock/gmock.h>

#include "test_support.h"
#include "util/files.h"
#include "util/json.h"

namespace ct {
namespace {

using ::testing::HasSubstr;

std::string results() { return (test::source_dir() / "tests" / "data" / "results").string(); }

test::CommandResult clocktrain(const std::string& args) { return test::run_command(test::clocktrain_bin() + " " + args); }

TEST(BoardCli, RanksFilesAndRunFolders) {
  auto r = clocktrain("board " + results() + "/round1/*.json " + results() + "/round1/f");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Round 1: ranked by val_bpb"));
  // b first, then c, d, a/f (tied), e; g apart.
  size_t b = r.output.find("   1  b "), c = r.output.find("   2  c "), e = r.output.find("   6  e ");
  ASSERT_NE(b, std::string::npos) << r.output;
  ASSERT_NE(c, std::string::npos) << r.output;
  ASSERT_NE(e, std::string::npos) << r.output;
  EXPECT_LT(b, c);
  EXPECT_LT(c, e);
  EXPECT_THAT(r.output, HasSubstr("   4  a "));
  EXPECT_THAT(r.output, HasSubstr("   4  f "));
  EXPECT_THAT(r.output, HasSubstr("g  [failed: time]"));
}

TEST(BoardCli, Round2Json) {
  auto r = clocktrain("board --json " + results() + "/round2/*.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json j = Json::parse(r.output);
  EXPECT_EQ(j["round"], 2);
  ASSERT_EQ(j["ranked"].size(), 3u);
  EXPECT_EQ(j["ranked"][0]["name"], "p");
  EXPECT_NEAR(j["ranked"][0]["score"].get<double>(), 0.4, 1e-12);
  EXPECT_EQ(j["ineligible"][0]["name"], "s");
}

TEST(BoardCli, MixedRoundsNeedTheRoundOption) {
  std::string files = results() + "/round1/a.json " + results() + "/round2/p.json";
  auto mixed = clocktrain("board " + files);
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_THAT(mixed.output, HasSubstr("pass --round"));
  auto round2 = clocktrain("board --round 2 " + files);
  EXPECT_EQ(round2.exit_code, 0) << round2.output;
  EXPECT_THAT(round2.output, HasSubstr("core_time: not checked (a round 1 result)"));
  EXPECT_NE(clocktrain("board --round 3 " + files).exit_code, 0);
}

TEST(BoardCli, MalformedFileIsNamedAndExitIsNonZero) {
  for (const char* name : {"syntax.json", "field.json", "format.json", "forged.json"}) {
    std::string path = results() + "/bad/" + name;
    auto r = clocktrain("board " + results() + "/round1/a.json " + path);
    EXPECT_EQ(r.exit_code, 1) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("clocktrain: error: " + path)) << r.output;
  }
  auto missing = clocktrain("board /nonexistent/result.json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("/nonexistent/result.json"));
}

TEST(BoardCli, FoldersWithoutAResultAreSkippedAndNamed) {
  // `board runs/*/` after `clocktrain run`: runs/cache/ (prepared data) holds no result.json.
  test::TempDir dir;
  fs::create_directories(dir / "runs" / "cache" / "0123abcd");
  fs::create_directories(dir / "runs" / "a");
  fs::copy_file(results() + "/round1/a.json", dir / "runs" / "a" / "result.json");
  const std::string runs = (dir / "runs").string();
  auto r = clocktrain("board " + runs + "/*/");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("board: skipped " + runs + "/cache/: no result.json"));
  EXPECT_THAT(r.output, HasSubstr("   1  a "));
  auto none = clocktrain("board " + runs + "/cache/");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_THAT(none.output, HasSubstr("none of the 1 paths given holds a result.json"));
}

TEST(ReportCli, BuildsThePageOfARunFolder) {
  test::TempDir dir;
  auto run = dir / "run";
  fs::create_directories(run);
  fs::copy_file(results() + "/round1/a.json", run / "result.json");
  write_file_atomic(run / "metrics.jsonl",
                    "{\"kind\": \"train\", \"step\": 1, \"tokens\": 8, \"clock_seconds\": 0, \"loss\": 9.1}\n"
                    "{\"kind\": \"train\", \"step\": 2, \"tokens\": 16, \"clock_seconds\": 1.5, \"loss\": 8.2}\n");
  auto r = clocktrain("report " + run.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("report.html"));
  std::string page = read_file(run / "report.html");
  EXPECT_THAT(page, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(page, HasSubstr("ELIGIBLE"));
}

TEST(ReportCli, AFolderWithNeitherRecordIsAnError) {
  test::TempDir dir;
  auto r = clocktrain("report " + dir.path().string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("neither metrics.jsonl nor result.json: not a run folder"));
  EXPECT_FALSE(fs::exists(dir / "report.html"));
}

TEST(ReportCli, ARunWhoseTrainingNeverStartedGetsAPage) {
  // `clocktrain run` whose backend could not start writes result.json alone.
  test::TempDir dir;
  fs::copy_file(results() + "/round1/g.json", dir / "result.json");
  auto r = clocktrain("report " + dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string page = read_file(dir / "report.html");
  EXPECT_THAT(page, HasSubstr("metrics.jsonl is missing: training never started"));
  EXPECT_THAT(page, HasSubstr("from result.json</footer>"));
  EXPECT_THAT(page, HasSubstr("NOT ELIGIBLE"));
}

}  // namespace
}  // namespace ct
