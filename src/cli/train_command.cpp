// clocktrain train RECIPE: one training run against the clock (docs/train.md).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/parallel/launch.h"
#include "cli/commands.h"
#include "cli/number_options.h"
#include "train/recipe.h"
#include "train/recipe_overrides.h"
#include "train/run_layout.h"
#include "train/trainer.h"
#include "util/child_process.h"
#include "util/clock.h"
#include "util/error.h"

namespace ct::cli {

namespace {

// Each value is read only when its option was given (the Option*'s count), so that no value is
// taken for "not given".
struct TrainArgs {
  std::string recipe;
  double budget = 0;
  int64_t steps = 0;
  int64_t seed = 0;
  int threads = 0;
  int64_t micro_batch_rows = 0;
  int64_t stop_after_steps = 0;
  CLI::Option *budget_option = nullptr, *steps_option = nullptr, *seed_option = nullptr, *threads_option = nullptr,
              *micro_batch_rows_option = nullptr;
  std::string data = "runs/data";
  std::string out;
  std::string resume;
  bool no_progress = false;
  double log_every_seconds = kDefaultLogEverySeconds;
  int64_t log_every_steps = 0;
  CLI::Option *log_every_seconds_option = nullptr, *log_every_steps_option = nullptr;
};

// The command that continues this run: the same launcher and process count (a checkpoint resumes on
// as many processes as trained it), the binary as it was invoked, the same recipe and options (a
// resumed run is the same run only with the same budget or steps, data, seed, threads and batch),
// reading the checkpoint, and writing into this run folder when that is not the checkpoint's own. A
// run stopped before its first step has no checkpoint: the same command again, into the same folder.
std::string resume_command(const std::string& program, const TrainArgs& a, const std::filesystem::path& checkpoint,
                           const std::filesystem::path& out_dir) {
  std::vector<std::string> argv = {program, "train", a.recipe, "--data", a.data};
  char budget[32];
  std::snprintf(budget, sizeof(budget), "%.15g", a.budget);
  if (a.budget_option->count()) argv.insert(argv.end(), {"--budget", budget});
  if (a.steps_option->count()) argv.insert(argv.end(), {"--steps", std::to_string(a.steps)});
  if (a.seed_option->count()) argv.insert(argv.end(), {"--seed", std::to_string(a.seed)});
  if (a.threads_option->count()) argv.insert(argv.end(), {"--threads", std::to_string(a.threads)});
  if (a.micro_batch_rows_option->count())
    argv.insert(argv.end(), {"--micro-batch-rows", std::to_string(a.micro_batch_rows)});
  if (a.no_progress) argv.push_back("--no-progress");
  char log_seconds[32];
  std::snprintf(log_seconds, sizeof(log_seconds), "%.15g", a.log_every_seconds);
  if (a.log_every_seconds_option->count()) argv.insert(argv.end(), {"--log-every-seconds", log_seconds});
  if (a.log_every_steps_option->count())
    argv.insert(argv.end(), {"--log-every-steps", std::to_string(a.log_every_steps)});
  if (checkpoint.empty() || checkpoint.lexically_normal().parent_path() != out_dir.lexically_normal())
    argv.insert(argv.end(), {"--out", out_dir.string()});
  if (!checkpoint.empty()) argv.insert(argv.end(), {"--resume", checkpoint.string()});
  return shell_join(relaunch_command_for_this_process(launch_environment_from_process(), argv, ::geteuid() == 0));
}

void run_train(const std::string& program, const TrainArgs& a) {
  const bool budget_given = a.budget_option->count() > 0, steps_given = a.steps_option->count() > 0;
  check(!(budget_given && steps_given), "train: give --budget or --steps, not both");
  TrainOptions options;
  options.recipe = load_recipe(a.recipe);
  Recipe& r = options.recipe;
  RecipeOverrides overrides;
  if (budget_given) overrides.budget_seconds = a.budget;
  if (steps_given) overrides.steps = a.steps;
  if (a.seed_option->count()) overrides.seed = static_cast<uint64_t>(a.seed);
  if (a.threads_option->count()) overrides.threads = a.threads;
  if (a.micro_batch_rows_option->count()) overrides.micro_batch_rows = a.micro_batch_rows;
  apply_recipe_overrides(r, overrides, a.recipe + " (with command-line overrides)");

  options.data_dir = a.data;
  options.resume_dir = a.resume;
  if (!a.out.empty()) {
    options.out_dir = a.out;
  } else if (!a.resume.empty()) {
    options.out_dir = std::filesystem::path(a.resume).lexically_normal().parent_path();  // runs/X/checkpoint -> runs/X
    if (options.out_dir.empty()) options.out_dir = ".";
  } else {
    options.out_dir = std::filesystem::path("runs") / (r.name + "-" + utc_text(unix_seconds(), "%Y%m%d-%H%M%S"));
  }
  options.progress_line = !a.no_progress;
  options.log_every_seconds = a.log_every_seconds;
  options.log_every_steps = a.log_every_steps;
  options.stop_after_steps = a.stop_after_steps;

  const std::unique_ptr<Backend> backend = create_recipe_backend(r);
  options.backend = backend.get();
  // Data parallel: rank 0 speaks for the job (and alone writes the run folder); the others print
  // only their errors.
  const bool speaks = backend->rank() == 0;
  if (speaks) {
    std::printf("clocktrain train: recipe %s (%s), %s, out %s%s\n", r.name.c_str(), recipe_hash(r).substr(0, 12).c_str(),
                r.timed() ? str("budget ", r.budget_seconds, " s").c_str() : str(r.steps, " steps").c_str(),
                options.out_dir.string().c_str(),
                backend->world_size() > 1 ? str(", ", backend->world_size(), " processes").c_str() : "");
    if (const std::string derived = depth_summary(r); !derived.empty()) std::printf("recipe %s\n", derived.c_str());
    std::printf("%s\n", backend_start_line(*backend).c_str());
    std::fflush(stdout);
  }
  const TrainResult result = train(options);
  check(speaks || result.ok(), "train: ", result.error);
  if (!speaks) return;
  std::printf("%s: %lld steps, %lld tokens, training clock %.1f s (startup %.1f s), final loss %.4f%s\n",
              stop_reason_name(result.stop_reason), static_cast<long long>(result.steps), static_cast<long long>(result.tokens),
              result.train_clock_seconds, result.startup_seconds, result.final_loss,
              result.last_eval_loss >= 0 ? str(", held-out loss ", result.last_eval_loss).c_str() : "");
  if (!result.checkpoint_dir.empty()) std::printf("checkpoint: %s\n", result.checkpoint_dir.string().c_str());
  if (std::filesystem::exists(options.out_dir / kMetricsFileName))  // not for a run stopped in start-up
    std::printf("metrics: %s\n", (options.out_dir / kMetricsFileName).string().c_str());
  check(result.ok(), "train: ", result.error);
  if (result.stop_signal != 0) {
    std::printf("stopped by %s; continue with: %s\n", result.stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                resume_command(program, a, result.checkpoint_dir, options.out_dir).c_str());
    std::fflush(stdout);
    throw CLI::RuntimeError(128 + result.stop_signal);  // the shell's convention for a signalled command
  }
}

}  // namespace

void add_train_command(CLI::App& app, const std::string& invoked_as) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train a model from a recipe against the training clock (docs/train.md)");
  cmd->add_option("recipe", args->recipe, "Recipe file (TOML), e.g. recipes/cpu-small.toml")->required();
  args->budget_option = cmd->add_option("--budget", args->budget, "Timed run: training-clock budget in seconds")
                            ->check(number_above(0, true));
  args->steps_option =
      cmd->add_option("--steps", args->steps, "Run by steps: this many optimizer steps")->check(integer_in(1));
  args->seed_option =
      cmd->add_option("--seed", args->seed, "Seed of the initialisation and data order (recipe: run.seed)")
          ->check(integer_in(0, kMaxSeed));
  args->threads_option =
      cmd->add_option("--threads", args->threads, "CPU threads, 0 = every core (recipe: backend.threads)")
          ->check(thread_count_option());
  args->micro_batch_rows_option =
      cmd->add_option("--micro-batch-rows", args->micro_batch_rows, "Rows per micro-batch (recipe: batch.micro_batch_rows)")
          ->check(integer_in(1));
  cmd->add_option("--data", args->data,
                  "Prepared data folder, made by `clocktrain data prepare --out DIR` (default runs/data)");
  cmd->add_option("--out", args->out, "Run folder (default runs/<recipe>-<UTC time>; with --resume, the checkpoint's run)");
  cmd->add_option("--resume", args->resume, "Continue the run of this checkpoint folder (e.g. runs/X/checkpoint)");
  cmd->add_option("--stop-after-steps", args->stop_after_steps,
                  "Stop after this many steps of this session and save a resumable checkpoint")
      ->check(integer_in(1));
  cmd->add_flag("--no-progress", args->no_progress,
                "No progress: neither the status line (on a terminal) nor the progress lines (otherwise)");
  add_log_every_options(cmd, args->log_every_seconds, args->log_every_steps, &args->log_every_seconds_option,
                        &args->log_every_steps_option);
  cmd->callback([invoked_as, args] { run_train(invoked_as, *args); });
}

}  // namespace ct::cli
