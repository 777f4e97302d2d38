#pragma once
// `clocktrain run RECIPE` (docs/run.md, docs/harness.md): the whole timed run and its verdict.
//   1. the tokenizer and shards, from the training corpus only, cached by content (data_cache.h);
//   2. the trainer against the clock into RUN_DIR, every file it opens admitted by a read guard
//      that refuses DATA/val and DATA/eval_bundle; the final checkpoint hashed right after saving;
//   3. the trusted evaluators as separate processes on that checkpoint (evaluation_step.h);
//   4. the gate (gate.h) on the evidence of all three;
//   5. RUN_DIR/result.json (atomic) and RUN_DIR/report.html.
// A failed step is recorded, not thrown: result.json is written whenever the run folder could be
// made, and its gate says what failed. Set-up errors (recipe, options, data) throw ct::Error before
// anything is written.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/data_cache.h"
#include "harness/result.h"
#include "harness/source_changes.h"
#include "util/json.h"
#include "train/trainer.h"

namespace ct {


struct RunPipelineOptions {
  std::filesystem::path recipe_path;
  std::optional<double> budget_seconds;  // a timed run of this budget (round 2 default: 4 h)
  std::optional<uint64_t> seed;
  std::optional<int> threads;            // default: every core (the gate's full_machine)
  std::filesystem::path out_dir;         // RUN_DIR; default runs/<recipe>-<UTC time>
  int round = 1;
  bool practice = false;                 // round 2's 4-hour budget and full CORE waived; marked, never ranked
  // The revision the tie-break's changed source lines are counted against (source_changes.h).
  std::string baseline_revision = kDefaultBaselineRevision;
  std::filesystem::path source_dir;      // the tree to count in; default: the one the binary was built from
  bool core = false;                     // round 2 always runs CORE
  int64_t core_max_per_task = 0;
  double core_timeout_seconds = 3600;    // round 2: CORE past this fails the gate
  std::filesystem::path evaluator_binary;  // the clocktrain binary that runs `eval`
  // The shipped data (data.data_dir: corpus/, val/, eval_bundle/), the cache and the preparation's
  // settings as given; the pipeline sets data.vocab_size, data.threads and data.progress from the
  // recipe and `progress`.
  DataCacheSettings data;
  bool progress = true;                  // the status lines on a terminal
  // Progress lines of the training when stdout is not a terminal (train/trainer.h TrainOptions).
  double log_every_seconds = kDefaultLogEverySeconds;
  int64_t log_every_steps = 0;
  // `clocktrain run --plan` (lab/planner.h, docs/plan.md): the plan the recipe came from, recorded as
  // result.json's "plan" (null: none), and the seconds planning took, counted as startup (inside the
  // startup cap), since the planner's timing ran before the trainer's clock.
  Json plan;
  double planning_seconds = 0;
};

struct RunOutcome {
  // false on the data-parallel processes other than rank 0: they train and return; rank 0 evaluates
  // and writes every record (result, run_dir and the paths are then empty).
  bool speaks = true;
  RunResult result;
  std::filesystem::path run_dir, result_path, report_path;
  std::vector<std::string> notes;  // what went wrong along the way (also in result.json's notes)
  // SIGINT or SIGTERM when one stopped the training: the run is recorded, not evaluated, not eligible.
  int stop_signal = 0;
};

RunOutcome run_pipeline(const RunPipelineOptions& options, std::ostream& log);

// True unless a launcher (mpirun, torchrun, srun: backend/parallel/launch.h) started this process as
// a rank other than 0. Under a launcher rank 0 writes the run folder and speaks for the job.
bool launched_as_rank0();

// The lines printed at the end: val_bpb (and CORE), then one line per gate check.
std::string gate_summary(const RunResult& result);

}  // namespace ct
