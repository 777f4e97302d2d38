// clocktrain run RECIPE: prepare, train against the clock, evaluate in a separate process, judge
// by the gate, write result.json and report.html (docs/run.md; the steps are harness/run_pipeline.h).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "harness/gate.h"
#include "harness/run_pipeline.h"
#include "lab/planner.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/child_process.h"
#include "util/data_dir.h"
#include "util/error.h"

namespace ct::cli {

namespace {

// The exit status of a run whose gate failed (1 is an error before or outside the run).
constexpr int kGateFailedExitCode = 3;

// The command line: the pipeline's options bound where they are plain values (run_pipeline.h),
// and what needs the command's own handling (given or not, resolved, inverted, planned).
struct RunArgs {
  RunPipelineOptions pipeline;
  std::string recipe, data, cache = kDefaultCacheDir;  // cache: a string, so that --help shows it unquoted
  double budget = 0;
  int64_t seed = 0;  // read when --seed was given
  int threads = 0;   // read when --threads was given
  bool no_progress = false;
  bool plan = false;
  std::string plan_backend = "cpu", plan_model;
  std::vector<int64_t> plan_depths;
};

// The round's budget when --budget is not given: round 1's 30 minutes, round 2's 4 hours (docs/run.md).
double round_budget_seconds(int round) { return round == 2 ? 4 * 3600.0 : 1800.0; }

// `run --plan`: plans the recipe for the budget (lab/planner.h) and points the run at it. The
// planned recipe goes to RUN_DIR/planned.toml (RUN_DIR defaults to runs/<the planned name>-<UTC time>);
// the plan goes to result.json's "plan", its time to the startup.
void plan_the_run(const RunArgs& a, bool budget_given, RunPipelineOptions& o) {
  check(a.recipe.empty(), "clocktrain run: --plan plans the recipe; give no RECIPE (got ", a.recipe, ")");
  lab::PlanOptions p;
  p.budget_seconds = budget_given ? a.budget : round_budget_seconds(a.pipeline.round);
  p.backend = a.plan_backend;
  p.threads = o.threads.value_or(0);
  p.loss_model = a.plan_model;
  p.depths = a.plan_depths;
  if (!o.out_dir.empty()) {  // before the planner's minute, and before planned.toml lands in another run's folder
    check(!std::filesystem::exists(o.out_dir) || std::filesystem::is_empty(o.out_dir), "--out ", o.out_dir.string(),
          ": --plan writes the planned recipe into the run folder, and this one is not empty; choose a new --out");
    check_writable_folder(o.out_dir, "--out");
  }
  const lab::Plan plan = lab::plan_recipe(p, std::cout);
  std::cout << lab::plan_table(plan) << std::flush;
  if (o.out_dir.empty())
    o.out_dir = std::filesystem::path("runs") / (plan.recipe.name + "-" + utc_text(unix_seconds(), "%Y%m%d-%H%M%S"));
  o.recipe_path = o.out_dir / "planned.toml";
  ensure_directory(o.out_dir);
  write_file_atomic(o.recipe_path, plan.recipe_toml);
  o.plan = lab::plan_to_json(plan, o.recipe_path.string());
  o.planning_seconds = plan.planning_seconds;
  o.budget_seconds = p.budget_seconds;
}

void run_run(const RunArgs& a, bool budget_given, bool seed_given, bool threads_given) {
  RunPipelineOptions o = a.pipeline;
  o.recipe_path = a.recipe;
  if (budget_given) o.budget_seconds = a.budget;
  if (seed_given) o.seed = static_cast<uint64_t>(a.seed);
  if (threads_given) o.threads = a.threads;
  o.data.data_dir = resolve_data_dir(a.data);
  o.data.cache_dir = a.cache;
  o.evaluator_binary = current_executable();
  o.progress = !a.no_progress;
  if (a.plan) plan_the_run(a, budget_given, o);
  // Data parallel (mpirun, torchrun): rank 0 speaks for the job; the others train silently (errors still print).
  std::ostream discard(nullptr);  // no buffer: every write is dropped
  const bool rank0 = launched_as_rank0();
  const RunOutcome outcome = run_pipeline(o, rank0 ? std::cout : discard);
  if (!outcome.speaks) return;
  std::cout << gate_summary(outcome.result);
  for (const auto& note : outcome.notes) std::cout << "note: " << note << "\n";
  std::cout << "result: " << outcome.result_path.string() << "\n";
  if (!outcome.report_path.empty()) std::cout << "report: " << outcome.report_path.string() << "\n";
  std::cout << std::flush;
  if (outcome.stop_signal != 0) {
    std::fprintf(stderr, "clocktrain run: stopped by %s during training; recorded in %s, not evaluated\n",
                 outcome.stop_signal == SIGINT ? "SIGINT" : "SIGTERM", outcome.result_path.c_str());
    throw CLI::RuntimeError(128 + outcome.stop_signal);  // the shell's convention for a signalled command
  }
  if (!outcome.result.gate.eligible) {
    std::string failed;
    for (const auto& name : outcome.result.gate.failed_checks()) failed += (failed.empty() ? "" : ", ") + name;
    std::fprintf(stderr, "clocktrain run: the gate failed: %s (evidence in %s)\n", failed.c_str(),
                 outcome.result_path.c_str());
    throw CLI::RuntimeError(kGateFailedExitCode);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand(
      "run", "The timed run: prepare data, train against the clock, evaluate, gate, result.json (docs/run.md)");
  cmd->add_option("recipe", args->recipe, "Recipe file (TOML), e.g. recipes/cpu-small.toml (not with --plan)");
  cmd->add_flag("--plan", args->plan,
                "Plan the recipe for the budget on this machine first (clocktrain plan; docs/plan.md): the planning "
                "counts as startup");
  auto* plan_backend = cmd->add_option("--plan-backend", args->plan_backend, "With --plan: the backend to plan for")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  auto* plan_model = cmd->add_option("--plan-model", args->plan_model,
                  "With --plan: the loss model (default: recipes/loss_model.json of the source tree)");
  auto* budget = cmd->add_option("--budget", args->budget,
                                 "Training-clock budget in seconds: a timed run (default: the recipe's; round 2: 4 h, "
                                 "except in a practice run)")
                     ->check(number_above(0, true));
  auto* seed = cmd->add_option("--seed", args->seed, "Seed of the initialisation and data order (recipe: run.seed)")
                   ->check(integer_in(0, kMaxSeed));
  auto* threads = cmd->add_option("--threads", args->threads, "CPU threads (default: every core, as the gate requires)")
                      ->check(thread_count_option());
  cmd->add_option("--data", args->data, "The shipped data folder: corpus/, val/, eval_bundle/ (default: $CLOCKTRAIN_DATA or ../shared/data)");
  cmd->add_option("--out", args->pipeline.out_dir, "Run folder (default runs/<recipe>-<UTC time>)");
  cmd->add_option("--cache", args->cache, "Folder of prepared data, one sub-folder per content hash")->capture_default_str();
  cmd->add_flag("--core", args->pipeline.core, "Also evaluate CORE (always in round 2)");
  cmd->add_option("--round", args->pipeline.round, "Competition round: 1 (val_bpb) or 2 (4 h, every device, CORE)")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  cmd->add_flag("--practice", args->pipeline.practice,
                "A practice run: round 2's 4-hour budget and full CORE are not required; marked so in result.json "
                "and never ranked by the board with real runs");
  cmd->add_option("--baseline", args->pipeline.baseline_revision,
                  "Git revision the tie-break's changed source lines are counted against (in the tree the binary "
                  "was built from)")
      ->capture_default_str();
  cmd->add_option("--max-per-task", args->pipeline.core_max_per_task, "CORE: the first N shuffled rows of each task (0 = all)")
      ->check(integer_in(0))
      ->capture_default_str();
  cmd->add_option("--core-timeout", args->pipeline.core_timeout_seconds, "Round 2: seconds CORE may take before the gate fails")
      ->check(number_above(0, true))
      ->capture_default_str();
  cmd->add_option("--shard-tokens", args->pipeline.data.shard_tokens, "Preparation: tokens per shard")
      ->check(integer_in(1))
      ->capture_default_str();
  cmd->add_option("--heldout-tokens", args->pipeline.data.heldout_tokens, "Preparation: tokens held out for the trainer's loss")
      ->check(integer_in(0))
      ->capture_default_str();
  cmd->add_flag("--no-progress", args->no_progress,
                "No progress: neither status lines (on a terminal) nor progress lines (otherwise)");
  add_log_every_options(cmd, args->pipeline.log_every_seconds, args->pipeline.log_every_steps);
  auto* plan_depths = cmd->add_option("--plan-depths", args->plan_depths, "With --plan: the candidate depths")
                          ->delimiter(',')
                          ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->callback([args, budget, seed, threads, plan_backend, plan_model, plan_depths] {
    check(args->plan || !args->recipe.empty(), "clocktrain run: give a RECIPE, or --plan to plan one");
    check(args->plan || (plan_backend->count() == 0 && plan_model->count() == 0 && plan_depths->count() == 0),
          "clocktrain run: --plan-backend, --plan-model and --plan-depths go with --plan");
    run_run(*args, budget->count() > 0, seed->count() > 0, threads->count() > 0);
  });
}

}  // namespace ct::cli
