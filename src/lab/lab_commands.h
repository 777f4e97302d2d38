#pragma once
// The `clocktrain lab` subcommands as functions: each takes its parsed options and writes its
// tables to `out`, so that the CLI (src/cli/lab_command.cpp) only parses and the tests can call
// them directly. docs/lab.md is the user's guide.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lab/ladder.h"
#include "lab/ledger.h"
#include "lab/loss_model.h"

namespace ct::lab {

namespace fs = std::filesystem;

// lab propose: opens an experiment (creating the ledger if needed) and prints its id.
int64_t lab_propose(const fs::path& ledger, const NewExperiment& experiment, std::ostream& out);

// lab declare EXP KEY...: the keys become declared changes of the experiment.
void lab_declare(const fs::path& ledger, int64_t experiment, const std::vector<std::string>& keys,
                 std::ostream& out);

struct RunOptions {
  fs::path ledger;
  int64_t experiment = 0;
  std::string arm;
  Rung rung = Rung::full;
  std::optional<fs::path> binary;      // the clocktrain to run (default: this executable)
  std::vector<std::string> run_args;   // RECIPE [run options...], passed to `clocktrain run`
};
// lab run: refuses before launching anything when the run could not be recorded (no hypothesis,
// unknown arm, ladder); runs `BINARY run RECIPE ... [--out DIR]`; records the run folder.
// Returns the ledger's run id.
int64_t lab_run(const RunOptions& options, std::ostream& out);

// lab add: records existing run folders. Returns their run ids.
std::vector<int64_t> lab_add(const fs::path& ledger, int64_t experiment, const std::string& arm,
                             Rung rung, const std::vector<fs::path>& run_dirs, std::ostream& out);

struct CheckOptions {
  fs::path ledger;
  int64_t experiment = 0;
  std::optional<std::string> arm;
  Rung rung = Rung::cpu_check;
  std::vector<std::string> command;
};
// lab check: runs a check command (tests of what changed) and records it as a cpu-check or probe
// rung; passed when it exits with 0. Returns the command's exit code.
int lab_check(const CheckOptions& options, std::ostream& out);

// lab exclude RUN --reason TEXT: the run stays in the ledger but leaves every statistic and verdict.
void lab_exclude(const fs::path& ledger, int64_t run, const std::string& reason, std::ostream& out);

// lab diff A B: A and B are ledger run ids or run folders.
void lab_diff(const fs::path& ledger, const std::string& left, const std::string& right, std::ostream& out);

struct NoiseOptions {
  fs::path ledger;
  std::optional<std::string> recipe;
  std::optional<int64_t> experiment;
  std::optional<Rung> rung;
  std::string metric = "val_bpb";
  double confidence = 0.95, power = 0.8;
  std::vector<int> runs_per_arm = {2, 3, 4, 6, 8};
};
void lab_noise(const NoiseOptions& options, std::ostream& out);

// What `lab elasticity` fits against (--x) and how it groups runs into levels (--by); the command
// line's words are parse_elasticity_x / parse_levels_by, the printed ones the *_name functions.
enum class ElasticityX { steps, tokens };
enum class LevelsBy { automatic, budget, steps };  // automatic: budget when the runs' budgets differ
const char* elasticity_x_name(ElasticityX x);      // "steps", "tokens"
const char* levels_by_name(LevelsBy by);           // "auto", "budget", "steps"
ElasticityX parse_elasticity_x(const std::string& text);  // errors name --x and the choices
LevelsBy parse_levels_by(const std::string& text);        // errors name --by and the choices

struct ElasticityOptions {
  fs::path ledger;
  std::string recipe;
  ElasticityX x = ElasticityX::steps;
  LevelsBy by = LevelsBy::automatic;
  std::optional<Rung> rung;
  std::vector<double> speedups_percent = {1, 2, 5, 10};
  std::optional<double> at;   // operating point in steps (or tokens); default: the largest level
  std::optional<double> at_budget;  // or: the level of this budget (levels by budget)
  double confidence = 0.95;
};
void lab_elasticity(const ElasticityOptions& options, std::ostream& out);

// lab verdict EXP: applies the rule and stores the verdict. Returns accept | reject | inconclusive.
std::string lab_verdict(const fs::path& ledger, int64_t experiment, std::optional<Rung> rung,
                        std::ostream& out);

void lab_list(const fs::path& ledger, std::ostream& out);
void lab_show(const fs::path& ledger, int64_t experiment, std::ostream& out);

// lab report: one self-contained HTML page.
void lab_report(const fs::path& ledger, const fs::path& out_file, std::ostream& out);

struct FitLossOptions {
  fs::path ledger;                    // read for --experiment
  std::vector<fs::path> run_dirs;     // run folders (or their result.json)
  std::optional<int64_t> experiment;  // and/or the runs of this ledger experiment usable for statistics
  fs::path out = "loss_model.json";
};
// lab fit-loss: fits the loss model to the runs (each run folder once), prints the coefficients, the
// residual and held-out errors and the runs, and writes the model to `out`.
LossModel lab_fit_loss(const FitLossOptions& options, std::ostream& out);

struct PredictOptions {
  fs::path model;
  double parameters = 0;  // N, matmul parameters
  double tokens = 0;      // D
  bool json = false;      // one object: parameters, tokens, predicted_val_bpb, interval [low, high], model
};
// lab predict: val_bpb at (N, D) from a loss model file, with its interval.
LossPrediction lab_predict(const PredictOptions& options, std::ostream& out);

}  // namespace ct::lab
