// clocktrain lab ...: the experiment protocol (docs/lab.md). Parsing only; the work is in src/lab/.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "lab/lab_commands.h"
#include "util/error.h"

namespace ct::cli {

namespace {

namespace fs = std::filesystem;

struct LabState {
  std::string ledger = lab::default_ledger_path().string();
  lab::NewExperiment propose;
  std::optional<double> propose_confidence;
  std::string interval;
  int64_t experiment = 0;
  std::optional<int64_t> optional_experiment;
  std::vector<std::string> keys;
  lab::RunOptions run;
  std::string run_rung = "full";
  std::string arm;
  std::string rung = "full";
  std::vector<std::string> run_dirs;
  lab::CheckOptions check;
  std::string check_rung = "cpu-check";
  std::string check_arm;
  std::string diff_left, diff_right;
  lab::NoiseOptions noise;
  std::string noise_recipe, noise_rung;
  lab::ElasticityOptions elasticity;
  std::string elasticity_x = "steps", elasticity_by = "auto";
  std::string elasticity_rung;
  std::optional<double> at;
  std::string verdict_rung;
  std::string report_out = "lab-report.html";
  std::string reason;
  lab::FitLossOptions fit_loss;
  std::vector<std::string> fit_loss_runs;
  std::string fit_loss_out = "loss_model.json";
  lab::PredictOptions predict;
  std::string predict_model;
};

void add_ledger_option(CLI::App* cmd, LabState& s) {
  cmd->add_option("--ledger", s.ledger, "The ledger file (default ./lab.sqlite)");
}

std::pair<double, double> parse_interval(const std::string& text) {
  auto comma = text.find(',');
  check(comma != std::string::npos, "--interval: expected LOW,HIGH (e.g. -0.02,0.0), got '", text, "'");
  try {
    size_t used_low = 0, used_high = 0;
    double low = std::stod(text.substr(0, comma), &used_low);
    double high = std::stod(text.substr(comma + 1), &used_high);
    check(used_low == comma && used_high == text.size() - comma - 1, "--interval: trailing characters in '", text, "'");
    check(low <= high, "--interval: LOW must not exceed HIGH, got '", text, "'");
    return {low, high};
  } catch (const std::logic_error&) {
    fail("--interval: expected two numbers LOW,HIGH, got '", text, "'");
  }
}

// A --rung option's word as the lab's Rung (parse_rung's error lists the rungs); nothing when empty.
std::optional<lab::Rung> optional_rung(const std::string& text) {
  return text.empty() ? std::nullopt : std::optional<lab::Rung>(lab::parse_rung(text));
}

std::optional<std::string> non_empty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

}  // namespace

void add_lab_command(CLI::App& app) {
  auto state = std::make_shared<LabState>();
  LabState& s = *state;
  auto* lab = app.add_subcommand("lab", "The experiment protocol: hypotheses, runs, noise, elasticity, verdicts");
  lab->require_subcommand(1);

  auto* propose = lab->add_subcommand("propose", "Open an experiment: change, hypothesis, prediction, decision rule");
  add_ledger_option(propose, s);
  propose->add_option("--change", s.propose.change, "What the experiment changes")->required();
  propose->add_option("--hypothesis", s.propose.hypothesis, "Why it should move val_bpb")->required();
  propose->add_option("--predict", s.propose.predicted_effect, "Predicted effect d (rule's difference), e.g. -0.01")
      ->required();
  propose->add_option("--interval", s.interval, "Predicted interval LOW,HIGH, e.g. -0.02,0.0")->required();
  propose->add_option("--rule", s.propose.rule_text, "Decision rule, e.g. 'accept if mean(B) - mean(A) < -0.005 at 95%'")
      ->required();
  propose->add_option("--confidence", s.propose_confidence, "Confidence of the interval (default 0.95)");
  propose->add_option("--power", s.propose.power, "Power for the minimum detectable effect (default 0.8)");
  propose->add_option("--declare", s.propose.declared, "A difference between arms that is the change (repeatable)");
  propose->callback([state] {
    auto [low, high] = parse_interval(state->interval);
    state->propose.predicted_low = low;
    state->propose.predicted_high = high;
    state->propose.confidence = state->propose_confidence;
    lab::lab_propose(state->ledger, state->propose, std::cout);
  });

  auto* declare = lab->add_subcommand("declare", "Declare differences between arms that are the experiment's change");
  add_ledger_option(declare, s);
  declare->add_option("experiment", s.experiment, "Experiment id")->required();
  declare->add_option("keys", s.keys, "Keys as printed by lab diff (recipe.model.n_layer, env.X, binary)")->required();
  declare->callback([state] { lab::lab_declare(state->ledger, state->experiment, state->keys, std::cout); });

  auto* run = lab->add_subcommand("run", "Run `clocktrain run RECIPE ...` for an arm and record it");
  add_ledger_option(run, s);
  run->add_option("experiment", s.run.experiment, "Experiment id")->required();
  run->add_option("--arm", s.run.arm, "Arm named by the rule (e.g. A or B)")->required();
  run->add_option("--rung", s.run_rung, "cpu-check | probe | smoke | full (default full)");
  run->add_option("--binary", s.run.binary, "The clocktrain binary to run (default: this one)");
  run->add_option("run_args", s.run.run_args, "After --: RECIPE [run options]")->required();
  run->callback([state] {
    state->run.ledger = state->ledger;
    state->run.rung = lab::parse_rung(state->run_rung);
    lab::lab_run(state->run, std::cout);
  });

  auto* add = lab->add_subcommand("add", "Record existing run folders for an arm");
  add_ledger_option(add, s);
  add->add_option("experiment", s.experiment, "Experiment id")->required();
  add->add_option("--arm", s.arm, "Arm named by the rule")->required();
  add->add_option("--rung", s.rung, "cpu-check | probe | smoke | full (default full)");
  add->add_option("run_dirs", s.run_dirs, "Run folders (holding result.json)")->required();
  add->callback([state] {
    std::vector<fs::path> dirs(state->run_dirs.begin(), state->run_dirs.end());
    lab::lab_add(state->ledger, state->experiment, state->arm, lab::parse_rung(state->rung), dirs, std::cout);
  });

  auto* exclude = lab->add_subcommand("exclude", "Take a run out of every statistic and verdict (kept, with the reason)");
  add_ledger_option(exclude, s);
  exclude->add_option("run", s.experiment, "Run id")->required();
  exclude->add_option("--reason", s.reason, "Why (stored in the ledger)")->required();
  exclude->callback([state] { lab::lab_exclude(state->ledger, state->experiment, state->reason, std::cout); });

  auto* check_cmd = lab->add_subcommand("check", "Run a check command and record it as the cpu-check or probe rung");
  add_ledger_option(check_cmd, s);
  check_cmd->add_option("experiment", s.check.experiment, "Experiment id")->required();
  check_cmd->add_option("--arm", s.check_arm, "Arm the check belongs to (optional)");
  check_cmd->add_option("--rung", s.check_rung, "cpu-check | probe (default cpu-check)");
  check_cmd->add_option("command", s.check.command, "After --: the check command")->required();
  check_cmd->callback([state] {
    state->check.ledger = state->ledger;
    state->check.rung = lab::parse_rung(state->check_rung);
    state->check.arm = non_empty(state->check_arm);
    int code = lab::lab_check(state->check, std::cout);
    if (code != 0) throw CLI::RuntimeError(1);
  });

  auto* diff = lab->add_subcommand("diff", "Print every difference between two runs (ledger ids or run folders)");
  add_ledger_option(diff, s);
  diff->add_option("left", s.diff_left, "Run id or folder")->required();
  diff->add_option("right", s.diff_right, "Run id or folder")->required();
  diff->callback([state] { lab::lab_diff(state->ledger, state->diff_left, state->diff_right, std::cout); });

  auto* noise = lab->add_subcommand("noise", "Seed spread, pair noise and minimum detectable effects");
  add_ledger_option(noise, s);
  noise->add_option("experiment", s.optional_experiment, "Experiment id (or --recipe)");
  noise->add_option("--recipe", s.noise_recipe, "Recipe name: every configuration of it in the ledger");
  noise->add_option("--rung", s.noise_rung, "Only runs at this rung");
  noise->add_option("--metric", s.noise.metric, "Metric (default val_bpb)");
  noise->add_option("--confidence", s.noise.confidence, "Confidence (default 0.95)");
  noise->add_option("--power", s.noise.power, "Power (default 0.8)");
  noise->add_option("--n", s.noise.runs_per_arm, "Runs per arm for the MDE table (default 2,3,4,6,8)")->delimiter(',');
  noise->callback([state] {
    state->noise.ledger = state->ledger;
    state->noise.experiment = state->optional_experiment;
    state->noise.recipe = non_empty(state->noise_recipe);
    state->noise.rung = optional_rung(state->noise_rung);
    lab::lab_noise(state->noise, std::cout);
  });

  auto* elasticity = lab->add_subcommand("elasticity", "Piecewise fit of val_bpb against ln(steps); speed-up to bpb");
  add_ledger_option(elasticity, s);
  elasticity->add_option("recipe", s.elasticity.recipe, "Recipe name")->required();
  elasticity->add_option("--x", s.elasticity_x, "steps | tokens (default steps)");
  elasticity->add_option("--by", s.elasticity_by, "Group runs into levels by budget | steps (default auto)");
  elasticity->add_option("--rung", s.elasticity_rung, "Only runs at this rung");
  elasticity->add_option("--speedup", s.elasticity.speedups_percent, "Speed-ups in percent (default 1,2,5,10)")
      ->delimiter(',');
  elasticity->add_option("--at", s.at, "Operating point in steps (or tokens); default: the largest level");
  elasticity->add_option("--at-budget", s.elasticity.at_budget, "Operating point: the runs at this budget (seconds)");
  elasticity->add_option("--confidence", s.elasticity.confidence, "Confidence of the intervals (default 0.95)");
  elasticity->callback([state] {
    state->elasticity.ledger = state->ledger;
    state->elasticity.x = lab::parse_elasticity_x(state->elasticity_x);
    state->elasticity.by = lab::parse_levels_by(state->elasticity_by);
    state->elasticity.rung = optional_rung(state->elasticity_rung);
    state->elasticity.at = state->at;
    lab::lab_elasticity(state->elasticity, std::cout);
  });

  auto* verdict = lab->add_subcommand("verdict", "Apply the experiment's rule: accept, reject or inconclusive");
  add_ledger_option(verdict, s);
  verdict->add_option("experiment", s.experiment, "Experiment id")->required();
  verdict->add_option("--rung", s.verdict_rung, "Rung whose runs to judge (default: highest with both arms)");
  verdict->callback(
      [state] { lab::lab_verdict(state->ledger, state->experiment, optional_rung(state->verdict_rung), std::cout); });

  auto* list = lab->add_subcommand("list", "List the experiments");
  add_ledger_option(list, s);
  list->callback([state] { lab::lab_list(state->ledger, std::cout); });

  auto* show = lab->add_subcommand("show", "Show an experiment: ladder, runs, arm hygiene, verdicts");
  add_ledger_option(show, s);
  show->add_option("experiment", s.experiment, "Experiment id")->required();
  show->callback([state] { lab::lab_show(state->ledger, state->experiment, std::cout); });

  auto* report = lab->add_subcommand("report", "Draw the ledger into one self-contained HTML page");
  add_ledger_option(report, s);
  report->add_option("--out", s.report_out, "Output file (default lab-report.html)");
  report->callback([state] { lab::lab_report(state->ledger, state->report_out, std::cout); });

  auto* fit_loss = lab->add_subcommand("fit-loss", "Fit val_bpb = E + A/N^alpha + B/D^beta to runs (the loss model)");
  add_ledger_option(fit_loss, s);
  fit_loss->add_option("run_dirs", s.fit_loss_runs, "Run folders (holding result.json)");
  fit_loss->add_option("--experiment", s.fit_loss.experiment, "Also every usable run of this ledger experiment");
  fit_loss->add_option("--out", s.fit_loss_out, "The model file to write (default loss_model.json)");
  fit_loss->callback([state] {
    state->fit_loss.ledger = state->ledger;
    state->fit_loss.run_dirs.assign(state->fit_loss_runs.begin(), state->fit_loss_runs.end());
    state->fit_loss.out = state->fit_loss_out;
    lab::lab_fit_loss(state->fit_loss, std::cout);
  });

  auto* predict = lab->add_subcommand("predict", "val_bpb at N matmul parameters and D tokens, from a loss model");
  predict->add_option("--model", s.predict_model, "The loss model file (lab fit-loss --out)")->required();
  predict->add_option("--parameters", s.predict.parameters, "N: matmul parameters (every parameter but wte)")
      ->required();
  predict->add_option("--tokens", s.predict.tokens, "D: tokens trained")->required();
  predict->add_flag("--json", s.predict.json, "Print one JSON object");
  predict->callback([state] {
    state->predict.model = state->predict_model;
    lab::lab_predict(state->predict, std::cout);
  });
}

}  // namespace ct::cli
