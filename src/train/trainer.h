#pragma once
// The trainer: one recipe, one prepared data folder, one run against the training clock of
// docs/harness.md.
//
// - Startup (backend, data, model and optimizer set-up, and the first recipe.startup_steps optimizer
//   steps, which carry one-time costs) is excluded from the clock but capped at
//   recipe.startup_cap_seconds; passing the cap stops the run (a gate failure).
// - After that the clock is the sum of measured step times (data, forward, backward, optimizer);
//   evaluation and checkpoints are outside it.
// - A timed run (run_by = "budget") never starts a step that the slowest of its recent steps says
//   would end past the budget, and its learning-rate schedule uses progress = clock / budget; a run by
//   steps uses progress = step / steps.
// - A NaN/Inf in the loss or a gradient is caught in the step it appears: the step is not applied and
//   the run stops (nan_policy "stop", naming the step and the first bad tensor) or skips the step.
//
// - SIGINT or SIGTERM stops the run before the next step, with a final checkpoint and the summary
//   (stop_reason "signal"); checkpoints are written every recipe.checkpoint_every_minutes and at the end.
//
// - Data parallel (the backend's world_size() > 1, docs/parallel.md): every process runs this with
//   the same recipe and data; each trains its share of every step's rows (train/train_step.h), the
//   processes agree on rank 0's clock, and rank 0 alone writes the run folder and runs the held-out
//   loss (the weights are the same on every process). A resume needs the checkpoint's process count.
//
// Writes into out_dir: metrics.jsonl (docs/run-records.md), checkpoint/ (model + resumable training
// state, train/checkpoint.h), train_summary.json (to_json(TrainResult)).
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "train/recipe.h"
#include "util/read_guard.h"
#include "util/json.h"

namespace ct {

// The default interval of the progress lines written when stdout is not a terminal (TrainOptions).
inline constexpr double kDefaultLogEverySeconds = 10.0;

struct TrainOptions {
  Recipe recipe;
  std::filesystem::path data_dir;    // a prepared data folder: manifest.json, shards, tokenizer/
  std::filesystem::path out_dir;     // the run folder
  std::filesystem::path resume_dir;  // a checkpoint folder to continue from; empty = a fresh run
  // Progress: the status line on a terminal (stderr), and, when stdout is not a terminal (a log file,
  // a pipe, nohup, Slurm), a plain line with the same figures on stdout once log_every_seconds of wall
  // time have passed since the last and/or every log_every_steps steps (0: not by that measure).
  // false: neither (--no-progress), as `eval bpb` does.
  bool progress_line = true;
  double log_every_seconds = kDefaultLogEverySeconds;
  int64_t log_every_steps = 0;
  // Stop after this many steps of this process, writing a resumable checkpoint (0 = no limit):
  // for runs split over several sessions, and for the resume tests.
  int64_t stop_after_steps = 0;
  // Optional (must outlive the run): admits every file the trainer opens from the data folder (the
  // loaders' manifest and shards, the tokenizer files), refusing what it forbids (docs/harness.md's data
  // gate: the harness forbids val/ and eval_bundle/ and reads the record afterwards).
  ReadGuard* read_guard = nullptr;
  // Optional (must outlive the run): the backend, already made by create_recipe_backend(recipe)
  // (`clocktrain run` makes and probes it before it prepares data); null = the trainer makes it.
  Backend* backend = nullptr;
};

// Why a run stopped. Written as text only in summary.json, result.json and the log lines
// (stop_reason_name): "budget", "steps", "stop_after_steps", "signal", "nonfinite", "startup_cap",
// "error" (an error after set-up: train() throws it on, after recording it); "" while the run has
// not stopped (or failed in set-up).
enum class StopReason { none, budget, steps, stop_after_steps, signal, nonfinite, startup_cap, error };
const char* stop_reason_name(StopReason reason);

struct TrainResult {
  std::string recipe_name, recipe_sha256;
  int64_t parameters = 0;
  double flops_per_token = 0.0;
  int64_t steps = 0;                 // optimizer steps completed (skipped steps included)
  int64_t tokens = 0;
  double train_clock_seconds = 0.0;
  double startup_seconds = 0.0;
  double budget_seconds = 0.0;       // 0 in a run by steps
  double startup_cap_seconds = 0.0;
  double final_loss = 0.0;           // the last step's training loss
  double final_lr_factor = 0.0;      // the schedule's factor of the last step
  double last_eval_loss = -1.0;      // the last held-out loss (-1 when none was run)
  int64_t nonfinite_steps = 0;       // steps with a NaN/Inf loss or gradient
  StopReason stop_reason = StopReason::none;  // why the run stopped (summary.json: stop_reason_name)
  int stop_signal = 0;               // SIGINT or SIGTERM when the run stopped on one (after a final checkpoint)
  std::string error;                 // non-empty when the run failed (nonfinite stop, startup cap)
  std::filesystem::path checkpoint_dir;  // empty when none was written
  uint64_t seed = 0;                      // the weights' seeded initialisation (docs/model.md)
  std::filesystem::path resumed_from;     // the checkpoint the run continued from; empty for a fresh run
  std::string lineage;                    // the run's id (train/run_folder.h), carried through resumes
  std::string manifest_sha256;
  std::vector<std::pair<std::string, std::string>> shards_read;  // name, sha256
  std::string backend, device_description;
  int threads = 0, available_cores = 0;  // threads per process
  int world_size = 1;                      // data-parallel processes (rank 0 writes the run folder)
  MatmulPrecision matmul_precision = MatmulPrecision::f32;  // as the backend resolved it (f32 or bf16)
  std::string matmul_precision_reason;                      // the backend's why ("auto: ...")
  double peak_flops = 0.0;            // the device's theoretical peak (MFU's ceiling), x world_size
  double matmul_ceiling_flops = 0.0;  // the backend's measured matmul rate (0 when not measured), x world_size
  bool ok() const { return error.empty(); }
};

Json to_json(const TrainResult& result);

// "backend: cpu, matmuls auto: bf16, the CPU level ...; <device description>; measured matmul ceiling
// 438.2 GFLOP/s" (or "matmul ceiling not measured on this backend" where it has no probe: cuda): the
// line `clocktrain run` and `clocktrain train` print once they have made the backend (it runs the
// matmul ceiling's probe, so a backend that fails there fails here).
std::string backend_start_line(const Backend& backend);

// Runs the recipe. Errors in set-up (recipe, data, resume folder) throw ct::Error; a run that starts
// and then fails (startup cap, non-finite values) returns with result.error set.
TrainResult train(const TrainOptions& options);

}  // namespace ct
