#pragma once
// The trusted evaluation of `clocktrain run`: the evaluators run as child processes of the same
// binary (`clocktrain eval bpb CKPT`, then `clocktrain eval core CKPT` when asked), each reading only
// the saved checkpoint and the pinned data through its own read guard. A separate process means
// nothing the trainer left in memory (weights, caches, globals) can reach the score; the harness
// reads the numbers back from the JSON the evaluator wrote and turns them into the gate's
// EvalEvidence (with the files the evaluator says it read, judged against the folders the harness
// allows) and the result's val and core fields.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/gate.h"
#include "harness/result.h"

namespace ct {

struct EvaluationStep {
  std::filesystem::path binary;          // the clocktrain binary to run
  std::filesystem::path checkpoint_dir;  // RUN_DIR/checkpoint
  std::filesystem::path data_dir;        // the pinned data: DATA/val, DATA/eval_bundle
  std::filesystem::path out_dir;         // where the evaluators' JSON goes (RUN_DIR/eval)
  std::string backend = "cpu";           // the trainer's backend (the recipe's backend.name)
  int threads = 0;                       // the evaluator's CPU threads (0 = every core)
  bool core = false;
  int64_t core_max_per_task = 0;         // 0 = every row
  double core_timeout_seconds = 0;       // 0 = none; past it the evaluator is killed
  bool progress = true;                  // false: the evaluators print no progress (--no-progress)
};

struct EvaluationOutcome {
  EvalEvidence evidence;  // trainer_* fields left for the caller
  std::optional<ValScore> val;
  std::optional<CoreScore> core;
  bool core_timed_out = false;
  std::vector<std::string> notes;  // what went wrong, for result.json and the terminal
};

// Runs the evaluators and reads their JSON. A failing evaluator is not an exception: its figures
// stay absent (the gate then fails) and a note says why.
EvaluationOutcome run_evaluation_step(const EvaluationStep& step, std::ostream& log);

// The evaluators' JSON as the harness reads it (exposed for the tests).
void read_bpb_json(const Json& j, const std::string& where, EvaluationOutcome& out);
void read_core_json(const Json& j, const std::string& where, double seconds, EvaluationOutcome& out);

}  // namespace ct
