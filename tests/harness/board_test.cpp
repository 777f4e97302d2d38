#include "harness/board.h"

#include "harness/fixtures.h"
#include <gmock/gmock.h>

#include "test_support.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {
namespace {

using ::testing::HasSubstr;

std::string results_dir() { return (test::source_dir() / "tests" / "data" / "results").string(); }

std::vector<std::string> paths(const std::string& sub, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(results_dir() + "/" + sub + "/" + n);
  return out;
}

std::vector<std::pair<int, std::string>> ranks(const Board& board) {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& row : board.ranked) out.emplace_back(row.rank, row.result.name);
  return out;
}

TEST(Board, Round1RanksByBpbThenParametersThenChangedLines) {
  // b: 1.40; c: 1.50 with fewer parameters; d: 1.50, same parameters, fewer lines; a and f equal
  // on all three (shared rank); e: lines unknown (after every known count); g failed the time check.
  auto inputs = load_board_inputs(paths("round1", {"a.json", "b.json", "c.json", "d.json", "e.json", "f", "g.json"}));
  EXPECT_EQ(infer_round(inputs), 1);
  Board board = build_board(inputs, 1);
  std::vector<std::pair<int, std::string>> expected = {{1, "b"}, {2, "c"}, {3, "d"}, {4, "a"}, {4, "f"}, {6, "e"}};
  EXPECT_EQ(ranks(board), expected);
  EXPECT_DOUBLE_EQ(board.ranked[0].score, 1.40);
  ASSERT_EQ(board.ineligible.size(), 1u);
  EXPECT_EQ(board.ineligible[0].result.name, "g");
  EXPECT_EQ(board.ineligible[0].failed_checks, std::vector<std::string>{"time"});
  EXPECT_THAT(board.ineligible[0].reasons[0], HasSubstr("time: clock 603.4 s > budget 600 s"));
  EXPECT_TRUE(board.notes.empty());
}

// Changed lines break a tie only between results counted against the same baseline commit.
TEST(Board, ChangedLinesAgainstAnotherBaselineDoNotBreakATie) {
  test::TempDir dir;
  for (const char* name : {"a", "d"}) {
    Json j = Json::parse(read_file(results_dir() + "/round1/" + name + ".json"));
    if (std::string(name) == "d") j["source_changes"]["baseline_commit"] = std::string(40, '2');
    write_file_atomic(dir / (std::string(name) + ".json"), j.dump());
  }
  Board board = build_board(load_board_inputs({(dir / "a.json").string(), (dir / "d.json").string()}), 1);
  // d has 5 lines and a 10, but against another commit: they share the rank
  EXPECT_EQ(ranks(board)[0].first, 1);
  EXPECT_EQ(ranks(board)[1].first, 1);
  ASSERT_EQ(board.notes.size(), 1u);
  EXPECT_THAT(board.notes[0], HasSubstr("against 2 baseline commits"));
}

TEST(Board, OrderOfInputsDoesNotMatter) {
  auto forward = load_board_inputs(paths("round1", {"a.json", "b.json", "c.json", "d.json", "e.json", "f"}));
  auto backward = load_board_inputs(paths("round1", {"f", "e.json", "d.json", "c.json", "b.json", "a.json"}));
  EXPECT_EQ(ranks(build_board(forward, 1)), ranks(build_board(backward, 1)));
}

TEST(Board, Round2CompositeByHand) {
  // bpb in [1.0, 1.2], CORE in [0.10, 0.20] over the eligible pool (s failed core_time and is left
  // out of the min and max even though its figures are better):
  //   p: bpb_n 0,   core_n 0.8 -> 0.40;  q: 1, 0 -> 0.50;  r: 0.5, 1 -> 0.75.
  Board board = build_board(load_board_inputs(paths("round2", {"r.json", "q.json", "p.json", "s.json"})), 2);
  ASSERT_EQ(board.ranked.size(), 3u);
  EXPECT_EQ(ranks(board), (std::vector<std::pair<int, std::string>>{{1, "p"}, {2, "q"}, {3, "r"}}));
  EXPECT_NEAR(board.ranked[0].score, 0.40, 1e-12);
  EXPECT_NEAR(*board.ranked[0].bpb_n, 0.0, 1e-12);
  EXPECT_NEAR(*board.ranked[0].core_n, 0.8, 1e-12);
  EXPECT_NEAR(board.ranked[1].score, 0.50, 1e-12);
  EXPECT_NEAR(board.ranked[2].score, 0.75, 1e-12);
  EXPECT_NEAR(*board.ranked[2].bpb_n, 0.5, 1e-12);
  ASSERT_EQ(board.ineligible.size(), 1u);
  EXPECT_EQ(board.ineligible[0].failed_checks, std::vector<std::string>{"core_time"});
}

TEST(Board, Round2EqualMetricsScoreZeroAndParametersDecide) {
  Board board = build_board(load_board_inputs(paths("round2-equal", {"u.json", "v.json"})), 2);
  ASSERT_EQ(board.ranked.size(), 2u);
  for (const auto& row : board.ranked) {
    EXPECT_EQ(*row.bpb_n, 0.0);
    EXPECT_EQ(*row.core_n, 0.0);
    EXPECT_EQ(row.score, 0.0);
  }
  EXPECT_EQ(ranks(board), (std::vector<std::pair<int, std::string>>{{1, "v"}, {2, "u"}}));
}

TEST(Board, Round2TiedCompositeSharesARank) {
  // With q and p alone, both score 0.5 (one best on bpb, the other on CORE), same parameters and lines.
  Board board = build_board(load_board_inputs(paths("round2", {"q.json", "p.json"})), 2);
  EXPECT_EQ(ranks(board), (std::vector<std::pair<int, std::string>>{{1, "p"}, {1, "q"}}));
}

TEST(Board, Round1ResultIsIneligibleInRound2) {
  auto inputs = load_board_inputs({results_dir() + "/round1/a.json", results_dir() + "/round2/p.json"});
  try {
    infer_round(inputs);
    ADD_FAILURE() << "mixed rounds accepted";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("pass --round"));
  }
  Board board = build_board(inputs, 2);
  ASSERT_EQ(board.ineligible.size(), 1u);
  EXPECT_EQ(board.ineligible[0].result.name, "a");
  EXPECT_THAT(board.ineligible[0].reasons[0], HasSubstr("core_time: not checked (a round 1 result)"));
  // Round 1 ranks both, and notes that their budgets differ.
  Board round1 = build_board(inputs, 1);
  EXPECT_EQ(round1.ranked.size(), 2u);
  ASSERT_EQ(round1.notes.size(), 1u);
  EXPECT_THAT(round1.notes[0], HasSubstr("different budgets"));
}

// A CORE on a subset of rows or tasks, or of unrecorded coverage, is never ranked with full ones in
// round 2; a practice run is never ranked at all. Each says why.
TEST(Board, SubsetCoreAndPracticeRunsAreNotRankedWithRealOnes) {
  auto inputs = load_board_inputs(paths("round2", {"p.json", "q.json", "r.json"}));
  inputs[0].result.core->max_per_task = 50;      // p: the first 50 rows of each task
  inputs[1].result.core->subset_recorded = false;  // q: written before coverage was recorded
  Board board = build_board(inputs, 2);
  ASSERT_EQ(board.ranked.size(), 1u);
  EXPECT_EQ(board.ranked[0].result.name, "r");
  EXPECT_EQ(*board.ranked[0].core_n, 0.0);  // the pool is r alone: p's and q's CORE never moved it
  ASSERT_EQ(board.ineligible.size(), 2u);
  EXPECT_EQ(board.ineligible[0].result.name, "p");
  EXPECT_TRUE(board.ineligible[0].failed_checks.empty());
  EXPECT_THAT(board.ineligible[0].reasons.back(),
              HasSubstr("CORE on a subset (max_per_task 50): round 2 ranks full CORE scores only"));
  EXPECT_THAT(board.ineligible[1].reasons.back(), HasSubstr("CORE coverage not recorded"));
  EXPECT_THAT(board_table(board), HasSubstr("p  [not ranked]"));
  // Round 1 ranks by val_bpb and shows the subset for what it is.
  Board round1 = build_board(inputs, 1);
  EXPECT_EQ(round1.ranked.size(), 3u);
  EXPECT_THAT(board_table(round1), HasSubstr("0.1200 (subset)"));

  inputs = load_board_inputs(paths("round2", {"p.json", "q.json", "r.json"}));
  inputs[2].result.practice = true;
  board = build_board(inputs, 2);
  ASSERT_EQ(board.ranked.size(), 2u);
  ASSERT_EQ(board.ineligible.size(), 1u);
  EXPECT_EQ(board.ineligible[0].result.name, "r");
  EXPECT_THAT(board.ineligible[0].reasons.back(), HasSubstr("a practice run (practice: true): never ranked"));
  EXPECT_EQ(build_board(inputs, 1).ranked.size(), 2u);  // in round 1 too
}

TEST(Board, MalformedFilesStopWithTheirName) {
  for (const char* name : {"syntax.json", "field.json", "format.json", "forged.json"}) {
    std::string path = results_dir() + "/bad/" + name;
    try {
      load_board_inputs({results_dir() + "/round1/a.json", path});
      ADD_FAILURE() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr(path)) << e.what();
    }
  }
  EXPECT_THROW(load_board_inputs({results_dir() + "/no-such-file.json"}), Error);
  EXPECT_THROW(infer_round({}), Error);
}

TEST(Board, SameFileTwiceIsReadOnce) {
  auto inputs = load_board_inputs({results_dir() + "/round1/f", results_dir() + "/round1/f/result.json"});
  EXPECT_EQ(inputs.size(), 1u);
}

TEST(Board, TableAndJson) {
  Board board = build_board(load_board_inputs(paths("round1", {"a.json", "b.json", "g.json"})), 1);
  std::string table = board_table(board);
  EXPECT_THAT(table, HasSubstr("Round 1: ranked by val_bpb"));
  EXPECT_LT(table.find("  b  "), table.find("  a  "));
  EXPECT_THAT(table, HasSubstr("Not ranked (1)"));
  EXPECT_THAT(table, HasSubstr("[failed: time]"));
  OrderedJson j = board_json(board);
  EXPECT_EQ(j["round"], 1);
  EXPECT_EQ(j["ranked"][0]["name"], "b");
  EXPECT_EQ(j["ranked"][1]["rank"], 2);
  EXPECT_TRUE(j["ranked"][0]["changed_source_lines"].is_number());
  EXPECT_EQ(j["ineligible"][0]["failed_checks"][0], "time");
}

TEST(Board, TerminalControlCharactersInNamesAreNeutralised) {
  test::TempDir dir;
  RunResult r = test::sample_result("evil\x1b[2J\x07name");
  write_result_file(dir / "result.json", r);
  std::string table = board_table(build_board(load_board_inputs({dir.path().string()}), 1));
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_EQ(table.find('\x07'), std::string::npos);
  EXPECT_THAT(table, HasSubstr("evil?[2J?name"));
}

}  // namespace
}  // namespace ct
