#pragma once
// The leaderboard of docs/harness.md: eligible results ranked by the round's score, the rest listed apart
// with the reasons: the checks they failed, a practice run (never ranked with real runs), and in
// round 2 a CORE score on a subset of rows or tasks (not comparable with a full CORE).
//   Round 1: score = val_bpb, lower is better.
//   Round 2: over the eligible pool, bpb_n = (bpb - min)/(max - min), core_n = (max - core)/(max - min)
//            (a metric with max == min gives 0 to everyone); score = 0.5*bpb_n + 0.5*core_n, lower
//            is better.
//   Ties: fewer parameters, then fewer changed source lines (unknown sorts after any known count).
//   Entries equal on all three share a rank (1, 1, 3); they are listed by name, then source.
#include <optional>
#include <string>
#include <vector>

#include "harness/result.h"

namespace ct {

struct BoardInput {
  std::string source;  // the result.json it was read from
  RunResult result;
};

struct BoardRow {
  std::string source;
  RunResult result;
  int rank = 0;
  double score = 0;
  std::optional<double> bpb_n, core_n;  // round 2
};

struct IneligibleRow {
  std::string source;
  RunResult result;
  std::vector<std::string> failed_checks;  // names; a missing required check is listed too
  std::vector<std::string> reasons;        // one line per failed check: "name: evidence"
};

struct Board {
  int round = 1;
  std::vector<BoardRow> ranked;
  std::vector<IneligibleRow> ineligible;
  std::vector<std::string> notes;  // e.g. budgets that differ within the ranked pool
};

// Reads each path (a result.json or a run folder holding one); the first malformed file stops
// with an error naming it. A file given twice is read once. A folder without result.json (`runs/*/`
// also matches the data cache runs/cache/, the lab's runs/lab/, a run still going or one that
// crashed) is an error, unless `skipped` is given: then it is left out and its path added there.
std::vector<BoardInput> load_board_inputs(const std::vector<std::string>& paths,
                                          std::vector<std::string>* skipped = nullptr);

// The round the results were run under; an error naming two files when they disagree.
int infer_round(const std::vector<BoardInput>& inputs);

Board build_board(std::vector<BoardInput> inputs, int round);

// A plain-text table for the terminal (control characters in names are shown as '?').
std::string board_table(const Board& board);
OrderedJson board_json(const Board& board);

}  // namespace ct
