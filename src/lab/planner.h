#pragma once
// The planner (docs/plan.md): which depth gives the lowest val_bpb for S seconds of
// training clock on this machine. For each candidate depth (docs/model.md, "One dial") it takes the
// step time (measured here on random tokens, startup excluded as the training clock excludes it, or
// read from a recorded table), converts it to the tokens a timed run of S seconds trains, and predicts
// val_bpb from the loss model (lab/loss_model.h) at N = the model's matmul parameters and D = those
// tokens. The candidate with the lowest prediction is the plan; its recipe is a depth recipe run by
// the budget.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lab/loss_model.h"
#include "train/recipe.h"
#include "util/json.h"

namespace ct::lab {

// The loss model a plan uses when none is named: the fit committed with the source tree
// (recipes/loss_model.json, docs/lab.md "The committed fit").
std::filesystem::path default_loss_model_path();

struct PlanOptions {
  double budget_seconds = 0;            // S > 0
  std::string backend = "cpu";          // the recipe's [backend] name
  int threads = 0;                      // 0: every core (what the gate's full_machine wants)
  std::filesystem::path loss_model;     // default: default_loss_model_path()
  std::vector<int64_t> depths;          // the candidates, in increasing order; default kDefaultPlanDepths
  double measure_seconds = 45.0;        // the step-time measurement's cap, all candidates together
  std::filesystem::path step_times;     // a recorded table instead of measuring (read_step_times); "" = measure
};

inline const std::vector<int64_t> kDefaultPlanDepths = {2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 26};

struct PlanCandidate {
  int64_t depth = 0;
  int64_t n_embd = 0;
  int64_t parameters = 0;         // ModelConfig::parameter_count()
  int64_t matmul_parameters = 0;  // N of the loss model
  int64_t tokens_per_step = 0;
  // Not measured (the cap ran out, or the predictions had already turned up): the reason, and no figures below.
  std::string skipped;
  double step_seconds = 0;
  double tokens_per_second = 0;
  int64_t tokens = 0;             // D: whole steps in S seconds x tokens_per_step
  LossPrediction predicted;
  bool extrapolated = false;      // N or D outside the range of the loss model's runs
  bool measured() const { return skipped.empty(); }
};

struct Plan {
  double budget_seconds = 0;
  std::string backend;
  std::string device;               // the backend's description of what it timed on (or the table's)
  std::string step_times_from;      // "measured" or the recorded table's path
  std::filesystem::path loss_model_path;
  LossModel loss_model;
  std::vector<PlanCandidate> candidates;
  size_t best = 0;                  // index into candidates: the lowest predicted val_bpb
  double planning_seconds = 0;      // wall clock of make_plan
  Recipe recipe;                    // the planned recipe (parsed from recipe_toml)
  std::string recipe_toml;          // what `clocktrain plan --out` writes
  const PlanCandidate& chosen() const { return candidates[best]; }
};

// Seconds of one training step of `recipe` (forward, backward, optimizer), startup excluded; nullopt
// when there is no figure for it (a recorded table without its depth).
using StepTimer = std::function<std::optional<double>(const Recipe& recipe)>;

// The depth recipe of a candidate: depth `depth` at the dial's default aspect ratio and head size,
// run by the budget for `budget_seconds` on `backend` (with `threads`), the periodic held-out loss
// every tenth of the budget. `comment` heads the file (every line prefixed "# ").
std::string candidate_recipe_toml(int64_t depth, double budget_seconds, const std::string& backend, int threads,
                                  const std::string& comment);

// Measures step times on a backend made once for the candidates' [backend]: for each recipe, its
// startup_steps (at least one) unmeasured, as the training clock leaves them out, then steps until a
// second has passed (at most 3), on random tokens; the median.
class MeasuredStepTimer {
 public:
  explicit MeasuredStepTimer(const Recipe& first_candidate);
  std::optional<double> operator()(const Recipe& recipe);
  std::string device_description() const;

 private:
  std::shared_ptr<Backend> backend_;
};

// Step times recorded by an earlier plan (`clocktrain plan --json`'s "candidates", or that whole
// object): depth -> seconds, with the device they were measured on. Errors name the file and field.
struct RecordedStepTimes {
  std::string device;
  std::string backend;
  std::vector<std::pair<int64_t, double>> seconds;  // (depth, step seconds), measured candidates only
  std::optional<double> at(int64_t depth) const;    // nullopt for a depth the table lacks
};
RecordedStepTimes read_step_times(const std::filesystem::path& path);

// The plan. `timer` gives each candidate's step time; candidates are taken in increasing depth and
// measuring stops when (a) two measured depths in a row predict worse than the best so far (the
// law is convex in the depth once the tokens fall), or (b) the next one's estimated measuring time
// ((startup_steps + 2) x its step, scaled from the last by FLOPs per step) would pass
// options.measure_seconds.
// Progress goes to `log`. Errors: no loss model, a budget <= 0, no candidate measured.
Plan make_plan(const PlanOptions& options, const StepTimer& timer, const std::string& device, std::ostream& log);

// make_plan with the step times options.step_times records, or measured here (MeasuredStepTimer) when
// it names none. With a table, a backend that is not the table's is an error.
Plan plan_recipe(const PlanOptions& options, std::ostream& log);

// The table of candidates and the chosen one, for people.
std::string plan_table(const Plan& plan);

// {recipe, predicted_val_bpb, interval, depth, budget_seconds, backend, device, step_times_from,
//  planning_seconds, candidates: [...], loss_model: {path, runs, held_out_max_abs, clocktrain, machine}};
// `recipe_path` is where the recipe was written ("" when it was not).
Json plan_to_json(const Plan& plan, const std::string& recipe_path);

}  // namespace ct::lab
