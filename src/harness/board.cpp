#include "harness/board.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "util/error.h"
#include "util/read_guard.h"
#include "util/text_table.h"
#include "util/text_format.h"

namespace ct {

namespace {

// Text from a result file goes to a terminal: control characters (escape sequences) become '?'.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  return out;
}

std::string lines_text(const std::optional<int64_t>& lines) { return lines ? format_count(*lines) : "-"; }

// Missing required checks and failed checks, plus what the round needs that the result lacks.
// "on a subset (max_per_task 50)", "on a subset (--tasks)", "coverage not recorded", or "" when full.
std::string core_coverage(const CoreScore& core) {
  if (!core.subset_recorded) return "coverage not recorded (a result written before clocktrain recorded it)";
  if (core.full()) return "";
  std::string what;
  if (core.max_per_task > 0) what = str("max_per_task ", core.max_per_task);
  if (core.task_subset) what += std::string(what.empty() ? "" : ", ") + "some tasks only";
  return "on a subset (" + what + ")";
}

IneligibleRow ineligibility(const BoardInput& in, int round) {
  IneligibleRow row{in.source, in.result, {}, {}};
  const GateVerdict& gate = in.result.gate;
  for (const auto& name : required_checks(round)) {
    const GateCheck* check = gate.find(name);
    if (!check) {
      row.failed_checks.push_back(name);
      row.reasons.push_back(name == kCheckCoreTime && in.result.round == 1
                                ? name + ": not checked (a round 1 result)"
                                : name + ": not checked");
    }
  }
  for (const auto& check : gate.checks) {
    if (!check.passed) {
      row.failed_checks.push_back(check.name);
      row.reasons.push_back(check.name + ": " + check.evidence);
    }
  }
  if (row.failed_checks.empty() && !in.result.val_bpb) {
    row.failed_checks.push_back(kCheckValidScore);
    row.reasons.push_back("valid_score: no val_bpb");
  }
  if (round == 2 && !in.result.core) {
    row.reasons.push_back("no CORE score (round 2 ranks by val_bpb and CORE)");
    if (row.failed_checks.empty()) row.failed_checks.push_back(kCheckCoreTime);
  }
  // Not ranked, whatever the gate said: a practice run, and in round 2 a CORE that is not the full one
  // (a subset's score is not comparable with a full score).
  if (in.result.practice) row.reasons.push_back("a practice run (practice: true): never ranked with real runs");
  if (round == 2 && in.result.core && !in.result.core->full())
    row.reasons.push_back("CORE " + core_coverage(*in.result.core) + ": round 2 ranks full CORE scores only");
  return row;
}

// The commit a result's changed lines were counted against (source_changes.baseline_commit); "" when
// unknown or not recorded (a result written before clocktrain recorded it).
std::string baseline_commit_of(const RunResult& r) {
  const Json& changes = r.extra.contains("source_changes") ? r.extra["source_changes"] : Json();
  return changes.is_object() && changes.contains("baseline_commit") && changes["baseline_commit"].is_string()
             ? changes["baseline_commit"].get<std::string>()
             : "";
}

// The board's order: score, then parameters, then changed lines, which break a tie only between
// results counted against the same baseline commit (counts against different commits measure
// different things). The sort key groups results by commit so that it is a strict weak order;
// `beats` says whether a ranks above b (rows between which it says neither share a rank).
auto order_key(const BoardRow& r) {
  const std::string commit = baseline_commit_of(r.result);
  const bool counted = r.result.changed_source_lines.has_value() && !commit.empty();
  return std::make_tuple(r.score, r.result.parameters, !counted, counted ? commit : std::string(),
                         counted ? *r.result.changed_source_lines : int64_t{0});
}

bool beats(const BoardRow& a, const BoardRow& b) {
  if (a.score != b.score) return a.score < b.score;
  if (a.result.parameters != b.result.parameters) return a.result.parameters < b.result.parameters;
  const auto ka = order_key(a), kb = order_key(b);
  if (std::get<2>(ka) != std::get<2>(kb)) return !std::get<2>(ka);  // counted before unknown
  return std::get<3>(ka) == std::get<3>(kb) && std::get<4>(ka) < std::get<4>(kb);
}

}  // namespace

std::vector<BoardInput> load_board_inputs(const std::vector<std::string>& paths, std::vector<std::string>* skipped) {
  std::vector<BoardInput> inputs;
  std::set<std::string> seen;
  for (const auto& p : paths) {
    std::error_code ec;
    const bool no_result = std::filesystem::is_directory(p, ec) &&
                           !std::filesystem::exists(std::filesystem::path(p) / kResultFileName, ec);
    if (skipped && no_result) {
      skipped->push_back(p);
      continue;
    }
    std::filesystem::path file = resolve_result_path(p);
    if (!seen.insert(canonical_for_guard(file).string()).second) continue;
    inputs.push_back({file.string(), read_result_file(file)});
  }
  return inputs;
}

int infer_round(const std::vector<BoardInput>& inputs) {
  check(!inputs.empty(), "board: no result files given");
  for (const auto& in : inputs) {
    if (in.result.round != inputs.front().result.round)
      fail("board: ", inputs.front().source, " is a round ", inputs.front().result.round, " result but ", in.source,
           " is round ", in.result.round, "; pass --round 1 or --round 2");
  }
  return inputs.front().result.round;
}

Board build_board(std::vector<BoardInput> inputs, int round) {
  check(round == 1 || round == 2, "board: round must be 1 or 2, got ", round);
  Board board;
  board.round = round;
  for (auto& in : inputs) {
    IneligibleRow why = ineligibility(in, round);
    if (!why.failed_checks.empty() || !why.reasons.empty()) {
      board.ineligible.push_back(std::move(why));
      continue;
    }
    board.ranked.push_back({in.source, std::move(in.result), 0, 0, std::nullopt, std::nullopt});
  }

  if (round == 1) {
    for (auto& row : board.ranked) row.score = *row.result.val_bpb;
  } else if (!board.ranked.empty()) {
    double bpb_min = INFINITY, bpb_max = -INFINITY, core_min = INFINITY, core_max = -INFINITY;
    for (const auto& row : board.ranked) {
      bpb_min = std::min(bpb_min, *row.result.val_bpb);
      bpb_max = std::max(bpb_max, *row.result.val_bpb);
      core_min = std::min(core_min, row.result.core->core);
      core_max = std::max(core_max, row.result.core->core);
    }
    for (auto& row : board.ranked) {
      double bpb = *row.result.val_bpb, core = row.result.core->core;
      row.bpb_n = bpb_max > bpb_min ? (bpb - bpb_min) / (bpb_max - bpb_min) : 0.0;
      row.core_n = core_max > core_min ? (core_max - core) / (core_max - core_min) : 0.0;
      row.score = 0.5 * *row.bpb_n + 0.5 * *row.core_n;
    }
  }

  std::stable_sort(board.ranked.begin(), board.ranked.end(), [](const BoardRow& a, const BoardRow& b) {
    const auto ka = order_key(a), kb = order_key(b);
    if (ka != kb) return ka < kb;
    if (a.result.name != b.result.name) return a.result.name < b.result.name;
    return a.source < b.source;
  });
  for (size_t i = 0; i < board.ranked.size(); ++i) {
    bool tied_with_previous = i > 0 && !beats(board.ranked[i - 1], board.ranked[i]);
    board.ranked[i].rank = tied_with_previous ? board.ranked[i - 1].rank : static_cast<int>(i + 1);
  }
  std::stable_sort(board.ineligible.begin(), board.ineligible.end(), [](const IneligibleRow& a, const IneligibleRow& b) {
    if (a.result.name != b.result.name) return a.result.name < b.result.name;
    return a.source < b.source;
  });

  std::set<std::string> baselines;
  for (const auto& row : board.ranked)
    if (const std::string commit = baseline_commit_of(row.result); !commit.empty()) baselines.insert(commit);
  if (baselines.size() > 1)
    board.notes.push_back(str("the ranked results counted their changed lines against ", baselines.size(),
                              " baseline commits: changed lines break ties only between results of one"));
  std::set<double> budgets;
  for (const auto& row : board.ranked) budgets.insert(row.result.budget_seconds);
  if (budgets.size() > 1) {
    std::string list;
    for (double b : budgets) list += (list.empty() ? "" : ", ") + format_seconds(b);
    board.notes.push_back("the ranked results had different budgets (" + list + ")");
  }
  return board;
}

std::string board_table(const Board& board) {
  std::string out;
  if (board.round == 1) {
    out += "Round 1: ranked by val_bpb (lower is better); ties: fewer parameters, then fewer changed lines\n\n";
  } else {
    out += "Round 2: ranked by 0.5*bpb_n + 0.5*core_n over the eligible pool (lower is better); "
           "ties: fewer parameters, then fewer changed lines\n\n";
  }
  if (board.ranked.empty()) {
    out += "No eligible result.\n";
  } else {
    std::vector<std::string> header;
    std::vector<bool> right;
    if (board.round == 1) {
      header = {"rank", "name", "val_bpb", "CORE", "params", "changed", "clock/budget", "result"};
      right = {true, false, true, true, true, true, true, false};
    } else {
      header = {"rank", "name", "score", "val_bpb", "bpb_n", "CORE", "core_n", "params", "changed", "clock/budget", "result"};
      right = {true, false, true, true, true, true, true, true, true, true, false};
    }
    TextTable table(header);
    table.align_right(right);
    for (const auto& row : board.ranked) {
      const RunResult& r = row.result;
      std::string core = r.core ? format_fixed(r.core->core, 4) + (r.core->full() ? "" : " (subset)") : "-";
      std::string clock = format_duration(r.train_clock_seconds) + " / " + format_duration(r.budget_seconds);
      if (board.round == 1) {
        table.add_row({std::to_string(row.rank), printable(r.name), format_fixed(*r.val_bpb, 4), core,
                        format_count(r.parameters), lines_text(r.changed_source_lines), clock, printable(row.source)});
      } else {
        table.add_row({std::to_string(row.rank), printable(r.name), format_fixed(row.score, 4),
                        format_fixed(*r.val_bpb, 4), format_fixed(*row.bpb_n, 3), core, format_fixed(*row.core_n, 3),
                        format_count(r.parameters), lines_text(r.changed_source_lines), clock, printable(row.source)});
      }
    }
    out += table.render();
  }
  if (!board.ineligible.empty()) {
    out += str("\nNot ranked (", board.ineligible.size(), "): ineligible, practice runs, or a CORE subset in round 2\n");
    for (const auto& row : board.ineligible) {
      std::string failed;
      for (const auto& f : row.failed_checks) failed += (failed.empty() ? "" : ", ") + f;
      out += "  " + printable(row.result.name) + "  [" + (failed.empty() ? "not ranked" : "failed: " + failed) + "]  " +
             printable(row.source) + "\n";
      for (const auto& reason : row.reasons) out += "      " + printable(reason) + "\n";
    }
  }
  for (const auto& note : board.notes) out += "\nnote: " + note + "\n";
  return out;
}

OrderedJson board_json(const Board& board) {
  OrderedJson j;
  j["round"] = board.round;
  j["ranked"] = OrderedJson::array();
  for (const auto& row : board.ranked) {
    const RunResult& r = row.result;
    OrderedJson e;
    e["rank"] = row.rank;
    e["name"] = r.name;
    e["score"] = row.score;
    e["val_bpb"] = *r.val_bpb;
    e["core"] = r.core ? OrderedJson(r.core->core) : OrderedJson(nullptr);
    e["core_full"] = r.core ? OrderedJson(r.core->full()) : OrderedJson(nullptr);
    if (board.round == 2) {
      e["bpb_n"] = *row.bpb_n;
      e["core_n"] = *row.core_n;
    }
    e["parameters"] = r.parameters;
    e["changed_source_lines"] = r.changed_source_lines ? OrderedJson(*r.changed_source_lines) : OrderedJson(nullptr);
    e["train_clock_seconds"] = r.train_clock_seconds;
    e["budget_seconds"] = r.budget_seconds;
    e["source"] = row.source;
    j["ranked"].push_back(std::move(e));
  }
  j["ineligible"] = OrderedJson::array();
  for (const auto& row : board.ineligible) {
    j["ineligible"].push_back({{"name", row.result.name},
                               {"failed_checks", row.failed_checks},
                               {"reasons", row.reasons},
                               {"source", row.source}});
  }
  j["notes"] = board.notes;
  return j;
}

}  // namespace ct
