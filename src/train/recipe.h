#pragma once
// A recipe (recipes/*.toml): everything that defines a training run. Every field has the baseline's
// value as its default (docs/model.md); a recipe file states what it changes. Unknown tables or fields
// are errors naming the file and the field. The recipe's hash is the SHA-256 of its resolved form
// (to_json of the struct after command-line overrides), so results name exactly what ran.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "model/config.h"
#include "optim/config.h"
#include "util/json.h"

namespace ct {

// [run] settings with a fixed set of values: enums inside the program, read and written as text
// only in the recipe file and its resolved JSON (parsed, and so validated, once when read).
enum class RunBy { budget, steps };    // stop at budget_seconds of training clock, or after `steps`
enum class NanPolicy { stop, skip };   // at a non-finite loss or gradient: stop the run, or skip the step
const char* run_by_name(RunBy run_by);              // "budget", "steps"
const char* nan_policy_name(NanPolicy nan_policy);  // "stop", "skip"

// The one dial (docs/model.md "One dial: model.depth"): a recipe that gives model.depth has its shape,
// batch, learning rates and horizon derived from it when it is read (parse_recipe); depth 0 (the
// default) is a recipe that gives its shape itself. The other three fields are read only with depth.
struct DepthDial {
  int64_t depth = 0;                   // [model] depth: n_layer
  int64_t aspect_ratio = 64;           // [model] aspect_ratio: width per layer before rounding
  int64_t head_dim = 128;              // [model] head_dim
  double tokens_per_parameter = 20.0;  // [run] tokens_per_parameter: the horizon, in tokens per parameter
};

// The width multiple a depth recipe's n_embd is rounded up to on this backend (with head_dim: the
// least common multiple of the two): cpu 64, cuda 128. Errors name `where` for another backend name.
int64_t backend_width_multiple(const std::string& backend_name, const std::string& where);

struct Recipe {
  std::string name = "baseline";
  std::string source_path;       // the TOML file it came from ("" when built in code)

  DepthDial dial;                 // [model] depth, aspect_ratio, head_dim; [run] tokens_per_parameter
  ModelConfig model;              // [model]

  // [batch] tokens per optimizer step = rows_per_step * sequence_len; each step runs
  // rows_per_step / micro_batch_rows micro-batches (gradient accumulation when > 1).
  int64_t tokens_per_step = 65536;
  int64_t micro_batch_rows = 8;

  OptimizerConfig optimizer;      // [optimizer]
  ScheduleConfig schedule;        // [schedule]

  // [run]
  RunBy run_by = RunBy::budget;   // budget: stop at budget_seconds of training clock; steps: after `steps`
  double budget_seconds = 1800.0;
  // A timed run starts a step only if step_time_margin x the slowest of its last 10 steps still ends
  // within the budget: the margin absorbs a step slower than any recent one (the clock must never
  // pass the budget), at the cost of up to that much unused budget at the end.
  double step_time_margin = 1.25;
  int64_t steps = 1000;
  int64_t startup_steps = 2;      // first optimizer steps excluded from the clock (docs/harness.md)
  double startup_cap_seconds = 900.0;
  uint64_t seed = 42;
  NanPolicy nan_policy = NanPolicy::stop;  // stop the run, or skip the step, at a non-finite loss or gradient

  // [eval] the periodic held-out loss (split "heldout"; never the pinned validation set)
  int64_t eval_every_steps = 0;     // 0 = not by steps
  double eval_every_seconds = 300.0;  // of training clock; 0 = not by time
  int64_t eval_tokens = 65536;

  // [checkpoint]
  double checkpoint_every_minutes = 10.0;  // wall-clock minutes between resumable checkpoints; 0 = only at the end

  // [backend]
  std::string backend = "cpu";
  int threads = 0;                  // 0 = every available core
  // auto (the default): the backend's choice for its device, bf16 where the CPU or GPU has a bf16
  // engine and f32 elsewhere; f32 (the reference) or bf16 (an error without the engine). docs/train.md
  MatmulPrecision matmul_precision = MatmulPrecision::automatic;
  bool fp8 = false;                   // the MLP's forward products in fp8 e4m3 (cuda)
  // auto: the backend's choice; flash, cudnn or reference: the cuda backend's attention kernels
  AttentionKernels attention = AttentionKernels::automatic;
  bool graphs = true;                 // record the training step as graph regions where the backend can (cuda)

  // [debug] test-only fault injection (docs/train.md); absent from the resolved recipe (and its hash)
  // while at its default. nan_loss_at_step = k > 0: the loss of step k is replaced by NaN, so the
  // trainer's non-finite handling and the harness's valid_score check can be tested end to end.
  int64_t debug_nan_loss_at_step = 0;

  int64_t rows_per_step() const { return tokens_per_step / model.sequence_len; }
  int64_t micro_steps() const { return rows_per_step() / micro_batch_rows; }
  bool timed() const { return run_by == RunBy::budget; }

  // Checks every rule across fields; errors name `where` (the file) and the field.
  void validate(const std::string& where) const;
};

// Parses a recipe file (TOML). Errors name the file, the line where known, and the field.
Recipe load_recipe(const std::filesystem::path& path);
// Same from TOML text (`where` names the source in errors).
Recipe parse_recipe(const std::string& toml_text, const std::string& where);

// The backend a run of this recipe trains on ([backend]: name, threads, matmul_precision, fp8, attention):
// a ct::Error, prefixed with where the recipe came from, when it cannot start or cannot run the
// recipe's precision here. Under a launcher (mpirun, torchrun) it joins the job's processes (data parallel).
std::unique_ptr<Backend> create_recipe_backend(const Recipe& recipe);

// The resolved recipe: every field, sectioned as in the TOML file. A depth recipe also gives its dial
// (model.depth, model.aspect_ratio, model.head_dim, run.tokens_per_parameter) beside what it derived.
Json to_json(const Recipe& recipe);
// What a depth recipe derived, in one line for the start lines of `clocktrain train` and `clocktrain
// run` ("" for a recipe without model.depth).
std::string depth_summary(const Recipe& recipe);
// SHA-256 of to_json(recipe).dump() (sorted keys, no whitespace).
std::string recipe_hash(const Recipe& recipe);

}  // namespace ct
