// clocktrain plan --budget S: the depth predicted best for S seconds of training clock on this
// machine, written as a recipe (docs/plan.md; the work is lab/planner.h).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "lab/planner.h"
#include "util/files.h"

namespace ct::cli {

namespace {

struct PlanArgs {
  lab::PlanOptions plan;
  std::string model, step_times, out = "planned.toml";
  bool json = false;
};

void run_plan(const PlanArgs& a) {
  lab::PlanOptions o = a.plan;
  o.loss_model = a.model;
  o.step_times = a.step_times;
  check_out_file_writable("--out", a.out);  // before the minute of measuring
  // With --json the progress lines would break the one object on stdout: they go to stderr.
  const lab::Plan plan = lab::plan_recipe(o, a.json ? std::cerr : std::cout);
  write_file_atomic(a.out, plan.recipe_toml);
  if (a.json) {
    std::cout << lab::plan_to_json(plan, a.out).dump() << "\n";
  } else {
    std::cout << "plan: " << plan.budget_seconds << " s of training clock on " << plan.backend << " ("
              << plan.device << "); step times " << plan.step_times_from << "; loss model "
              << plan.loss_model_path.string() << " (" << plan.loss_model.runs.size() << " runs)\n"
              << lab::plan_table(plan) << "wrote " << a.out << "\n";
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan", "The depth predicted best for a training-clock budget on this machine, as a recipe (docs/plan.md)");
  cmd->add_option("--budget", args->plan.budget_seconds, "Seconds of training clock the recipe is planned for")
      ->required()
      ->check(number_above(0, true));
  cmd->add_option("--backend", args->plan.backend, "The backend to plan for")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--threads", args->plan.threads, "CPU threads (default: every core, as the gate requires)")
      ->check(thread_count_option());
  cmd->add_option("--out", args->out, "The recipe file to write")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object (the progress lines go to stderr)");
  cmd->add_option("--model", args->model, "The loss model (default: recipes/loss_model.json of the source tree)");
  cmd->add_option("--depths", args->plan.depths, "Candidate depths (default 2,3,4,5,6,8,10,12,16,20,26)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--step-times", args->step_times,
                  "Plan from the step times of an earlier `clocktrain plan --json` (e.g. measured on a GPU) instead "
                  "of measuring here");
  cmd->add_option("--measure-seconds", args->plan.measure_seconds, "Cap on the time spent timing candidates")
      ->check(number_above(0, true))
      ->capture_default_str();
  cmd->callback([args] { run_plan(*args); });
}

}  // namespace ct::cli
