#include "lab/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "clocktrain_version.h"
#include "model/gpt.h"
#include "model/init_rng.h"
#include "optim/optimizer.h"
#include "train/train_step.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"
#include "util/text_format.h"
#include "util/text_table.h"
#include "util/threads.h"

namespace ct::lab {

namespace fs = std::filesystem;

std::filesystem::path default_loss_model_path() { return fs::path(CLOCKTRAIN_SOURCE_DIR) / "recipes" / "loss_model.json"; }

namespace {

// The micro-batch of a planned recipe: the most rows up to `cap` that divide the step's rows (the
// CPU's kernels want 8 rows of 1024 at a time, docs/cpu.md; a GPU takes a whole step of a small model).
int64_t micro_batch_rows_for(int64_t rows_per_step, int64_t cap) {
  for (int64_t m = std::min(rows_per_step, cap); m > 1; --m)
    if (rows_per_step % m == 0) return m;
  return 1;
}

std::string budget_text(double seconds) { return format_fixed(seconds, seconds == std::floor(seconds) ? 0 : 3); }

}  // namespace

std::string candidate_recipe_toml(int64_t depth, double budget_seconds, const std::string& backend, int threads,
                                  const std::string& comment) {
  std::ostringstream head, body;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) head << "# " << line << "\n";
  body << "[model]\ndepth = " << depth << "\n";
  std::ostringstream run;
  run << "\n[run]\nrun_by = \"budget\"\nbudget_seconds = " << budget_text(budget_seconds) << "\n";
  // The periodic held-out loss every tenth of the budget on 16 rows (not counted by the training clock).
  std::ostringstream rest;
  rest << "\n[eval]\nevery_seconds = " << budget_text(budget_seconds / 10) << "\n";
  std::ostringstream backend_table;
  backend_table << "\n[backend]\nname = \"" << backend << "\"\nthreads = " << threads << "\n";
  // The derived batch's rows are known once the dial is applied: read the recipe once without a
  // micro-batch, then give the one that divides them.
  const std::string name = str("planned-d", depth, "-", budget_text(budget_seconds), "s");
  const std::string draft = str("name = \"", name, "\"\n\n", body.str(), run.str(), rest.str(), backend_table.str());
  const Recipe r = parse_recipe(draft, "the planned recipe");
  const int64_t rows = r.rows_per_step();
  const int64_t micro = micro_batch_rows_for(rows, backend == "cpu" ? 8 : 32);
  const int64_t eval_tokens = 16 * r.model.sequence_len;
  return str(head.str(), "name = \"", name, "\"\n\n", body.str(), "\n[batch]\nmicro_batch_rows = ", micro, "\n",
             run.str(), rest.str(), "tokens = ", eval_tokens, "\n", backend_table.str());
}

MeasuredStepTimer::MeasuredStepTimer(const Recipe& first_candidate) {
  set_thread_count(first_candidate.threads);
  backend_ = create_recipe_backend(first_candidate);
  check(backend_->world_size() == 1, "clocktrain plan: plans in one process (it times one backend); run it without "
                                     "a launcher and give the plan's recipe to the data-parallel job");
}

std::string MeasuredStepTimer::device_description() const { return backend_->device_description(); }

std::optional<double> MeasuredStepTimer::operator()(const Recipe& recipe) {
  Backend& backend = *backend_;
  GPT model(backend, recipe.model, DType::f32);
  model.initialize(recipe.seed);
  Optimizer optimizer(model, recipe.optimizer);
  const int64_t rows = recipe.micro_batch_rows, seq = recipe.model.sequence_len;
  TrainStep step(model, optimizer, nullptr, recipe.micro_steps(), rows, seq, recipe.graphs);
  uint64_t counter = 0;
  const uint64_t vocab = static_cast<uint64_t>(recipe.model.vocab_size);
  auto random_rows = [&](std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
    inputs.resize(static_cast<size_t>(rows * seq));
    targets.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputs[i] = static_cast<int32_t>(splitmix64_mix(counter++) % vocab);
      targets[i] = static_cast<int32_t>(splitmix64_mix(counter++) % vocab);
    }
  };
  auto one_step = [&] {
    const double start = monotonic_seconds();
    const StepMeasurement m = step.forward_backward(random_rows);
    step.apply(StepSchedule{}, m.gradients.norm);
    backend.synchronize();
    return monotonic_seconds() - start;
  };
  // The training clock leaves out the first startup_steps (allocations, graph recording); so does this.
  for (int64_t i = 0; i < std::max<int64_t>(1, recipe.startup_steps); ++i) one_step();
  std::vector<double> seconds;
  double spent = 0;
  while (seconds.size() < 3 && (seconds.empty() || spent < 1.0)) {
    seconds.push_back(one_step());
    spent += seconds.back();
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

RecordedStepTimes read_step_times(const std::filesystem::path& path) {
  const Json root = read_json_file(path);
  const std::string where = path.string();
  check(root.is_object(), where, ": expected a JSON object (the output of clocktrain plan --json)");
  RecordedStepTimes t;
  auto text = [&](const char* key) {
    check(root.contains(key) && root[key].is_string(), where, ": field '", key, "': expected a string");
    return root[key].get<std::string>();
  };
  t.device = text("device");
  t.backend = text("backend");
  check(root.contains("candidates") && root["candidates"].is_array(), where,
        ": field 'candidates': expected an array");
  const Json& candidates = root["candidates"];
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Json& c = candidates[i];
    const std::string field = str("candidates[", i, "]");
    check(c.is_object() && c.contains("depth") && c["depth"].is_number_integer(), where, ": field '", field,
          ".depth': expected an integer");
    if (!c.contains("step_seconds") || c["step_seconds"].is_null()) continue;  // not measured there
    check(c["step_seconds"].is_number(), where, ": field '", field, ".step_seconds': expected a number or null");
    const double s = c["step_seconds"].get<double>();
    check(std::isfinite(s) && s > 0, where, ": field '", field, ".step_seconds': expected seconds > 0, got ", s);
    t.seconds.emplace_back(c["depth"].get<int64_t>(), s);
  }
  check(!t.seconds.empty(), where, ": no candidate with a step time");
  return t;
}

std::optional<double> RecordedStepTimes::at(int64_t depth) const {
  for (const auto& [d, s] : seconds)
    if (d == depth) return s;
  return std::nullopt;
}

namespace {

void check_budget(double seconds) {
  check(std::isfinite(seconds) && seconds > 0, "clocktrain plan: --budget must be seconds > 0, got ", seconds);
}

}  // namespace

Plan make_plan(const PlanOptions& o, const StepTimer& timer, const std::string& device, std::ostream& log) {
  const double start = monotonic_seconds();
  check_budget(o.budget_seconds);
  Plan plan;
  plan.budget_seconds = o.budget_seconds;
  plan.backend = o.backend;
  plan.device = device;
  plan.step_times_from = o.step_times.empty() ? "measured" : o.step_times.string();
  plan.loss_model_path = o.loss_model.empty() ? default_loss_model_path() : o.loss_model;
  check(fs::exists(plan.loss_model_path), "clocktrain plan: no loss model at ", plan.loss_model_path.string(),
        " (fit one with scripts/loss_ladder.sh, docs/lab.md \"The loss model\", and give it with --model)");
  plan.loss_model = read_loss_model(plan.loss_model_path);
  const LossModel& lm = plan.loss_model;
  double n_min = std::numeric_limits<double>::infinity(), n_max = 0, d_min = n_min, d_max = 0;
  for (const LossRun& r : lm.runs) {
    n_min = std::min(n_min, static_cast<double>(r.matmul_parameters));
    n_max = std::max(n_max, static_cast<double>(r.matmul_parameters));
    d_min = std::min(d_min, static_cast<double>(r.tokens));
    d_max = std::max(d_max, static_cast<double>(r.tokens));
  }

  std::vector<int64_t> depths = o.depths.empty() ? kDefaultPlanDepths : o.depths;
  std::sort(depths.begin(), depths.end());
  depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
  double best = std::numeric_limits<double>::infinity(), spent = 0;
  int rising = 0;  // measured depths in a row predicted worse than the best so far
  std::optional<size_t> last;  // the last measured candidate
  for (int64_t depth : depths) {
    const Recipe recipe =
        parse_recipe(candidate_recipe_toml(depth, o.budget_seconds, o.backend, o.threads, ""), str("depth ", depth));
    PlanCandidate c;
    c.depth = depth;
    c.n_embd = recipe.model.n_embd;
    c.parameters = recipe.model.parameter_count();
    c.matmul_parameters = recipe.model.matmul_parameter_count();
    c.tokens_per_step = recipe.tokens_per_step;
    const double step_flops = recipe.model.flops_per_token() * static_cast<double>(recipe.tokens_per_step);
    if (rising >= 2) {
      c.skipped = "not measured: the two depths below it already predicted worse than the best";
    } else if (last && o.step_times.empty()) {
      const PlanCandidate& previous_candidate = plan.candidates[*last];
      // The cost of measuring this depth, scaled from the last one by the FLOPs per step.
      const Recipe previous = parse_recipe(candidate_recipe_toml(previous_candidate.depth, o.budget_seconds, o.backend, o.threads, ""),
                                           "the previous candidate");
      const double estimate = previous_candidate.step_seconds * step_flops /
                              (previous.model.flops_per_token() * static_cast<double>(previous.tokens_per_step)) *
                              static_cast<double>(recipe.startup_steps + 2);
      if (spent + estimate > o.measure_seconds)
        c.skipped = str("not measured: about ", format_fixed(estimate, 0), " s more would pass the ",
                        format_fixed(o.measure_seconds, 0), " s measuring cap");
    }
    if (c.measured()) {
      const double t0 = monotonic_seconds();
      const std::optional<double> seconds = timer(recipe);
      if (seconds) c.step_seconds = *seconds;
      else c.skipped = str("not measured: ", plan.step_times_from, " has no step time for it");
      spent += monotonic_seconds() - t0;
    }
    if (c.measured()) {
      c.tokens_per_second = static_cast<double>(c.tokens_per_step) / c.step_seconds;
      c.tokens = static_cast<int64_t>(std::floor(o.budget_seconds / c.step_seconds)) * c.tokens_per_step;
      if (c.tokens == 0) {
        c.skipped = str("not a candidate: one step takes ", format_fixed(c.step_seconds, 2), " s, over the budget");
      } else {
        const double n = static_cast<double>(c.matmul_parameters), d = static_cast<double>(c.tokens);
        c.predicted = lm.predict(n, d);
        c.extrapolated = n < n_min || n > n_max || d < d_min || d > d_max;
        if (c.predicted.val_bpb < best) {
          best = c.predicted.val_bpb;
          rising = 0;
        } else {
          ++rising;
        }
        log << "plan: depth " << depth << ": " << format_fixed(c.step_seconds, 3) << " s a step, "
            << format_count(c.tokens) << " tokens in " << budget_text(o.budget_seconds) << " s, predicted val_bpb "
            << format_fixed(c.predicted.val_bpb, 4) << "\n"
            << std::flush;
      }
    }
    plan.candidates.push_back(c);
    if (c.measured()) last = plan.candidates.size() - 1;
  }
  bool any = false;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const PlanCandidate& c = plan.candidates[i];
    if (!c.measured()) continue;
    if (!any || c.predicted.val_bpb < plan.candidates[plan.best].predicted.val_bpb) plan.best = i;
    any = true;
  }
  check(any, "clocktrain plan: no candidate depth could be timed within the cap or the budget");
  const PlanCandidate& chosen = plan.chosen();
  plan.planning_seconds = monotonic_seconds() - start;
  const std::string comment =
      str("Planned by clocktrain ", kVersion, " (clocktrain plan --budget ", budget_text(o.budget_seconds),
          ", docs/plan.md) on ", device, ":\ndepth ", chosen.depth, ", ", format_count(chosen.tokens_per_step),
          " tokens a step in ", format_fixed(chosen.step_seconds, 3), " s, about ", format_count(chosen.tokens),
          " tokens in the budget; predicted val_bpb ", format_fixed(chosen.predicted.val_bpb, 4), " [",
          format_fixed(chosen.predicted.low, 4), ", ", format_fixed(chosen.predicted.high, 4), "] by the loss model ",
          plan.loss_model_path.string(), " (", lm.runs.size(), " runs)",
          chosen.extrapolated ? ",\nextrapolated: outside the N or D of the model's runs" : "", ".");
  plan.recipe_toml = candidate_recipe_toml(chosen.depth, o.budget_seconds, o.backend, o.threads, comment);
  plan.recipe = parse_recipe(plan.recipe_toml, "the planned recipe");
  return plan;
}

Plan plan_recipe(const PlanOptions& o, std::ostream& log) {
  check_budget(o.budget_seconds);  // before a backend is made for the measuring
  if (!o.step_times.empty()) {
    const RecordedStepTimes table = read_step_times(o.step_times);
    check(table.backend == o.backend, o.step_times.string(), ": step times of the ", table.backend,
          " backend, but the plan is for ", o.backend, " (give --backend ", table.backend, ")");
    return make_plan(o, [&](const Recipe& r) { return table.at(r.dial.depth); }, table.device, log);
  }
  // The backend is made once, for the smallest candidate's [backend] (all share it).
  const std::vector<int64_t>& depths = o.depths.empty() ? kDefaultPlanDepths : o.depths;
  const int64_t first = *std::min_element(depths.begin(), depths.end());
  MeasuredStepTimer timer(parse_recipe(candidate_recipe_toml(first, o.budget_seconds, o.backend, o.threads, ""),
                                       "the planned recipe"));
  return make_plan(o, [&](const Recipe& r) { return timer(r); }, timer.device_description(), log);
}

std::string plan_table(const Plan& plan) {
  TextTable table({"depth", "n_embd", "parameters", "N", "tokens/step", "step s", "tokens/s",
                   str("tokens in ", budget_text(plan.budget_seconds), " s"), "tokens/N", "predicted val_bpb"});
  std::vector<std::string> notes;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const PlanCandidate& c = plan.candidates[i];
    std::vector<std::string> row = {std::to_string(c.depth), std::to_string(c.n_embd), format_count(c.parameters),
                                    format_count(c.matmul_parameters), format_count(c.tokens_per_step)};
    if (c.measured()) {
      const double per_n = static_cast<double>(c.tokens) / static_cast<double>(c.matmul_parameters);
      row.insert(row.end(), {format_fixed(c.step_seconds, 3), format_count(std::llround(c.tokens_per_second)),
                             format_count(c.tokens), format_fixed(per_n, 2),
                             str(format_fixed(c.predicted.val_bpb, 4), c.extrapolated ? " (extrapolated)" : "",
                                 i == plan.best ? "  <- plan" : "")});
    } else {
      row.insert(row.end(), {"-", "-", "-", "-", "-"});
      notes.push_back(str("depth ", c.depth, ": ", c.skipped));
    }
    table.add_row(row);
  }
  std::string out = table.render(2);
  for (const std::string& note : notes) out += "  " + note + "\n";
  const PlanCandidate& c = plan.chosen();
  out += str("plan: depth ", c.depth, ", predicted val_bpb ", format_fixed(c.predicted.val_bpb, 4), " [",
             format_fixed(c.predicted.low, 4), ", ", format_fixed(c.predicted.high, 4), "] after ",
             budget_text(plan.budget_seconds), " s of training clock",
             c.extrapolated ? " (extrapolated: the interval, the largest held-out error of the fit, does not cover it)"
                            : "",
             "; planned in ", format_fixed(plan.planning_seconds, 1), " s\n");
  return out;
}

Json plan_to_json(const Plan& plan, const std::string& recipe_path) {
  Json candidates = Json::array();
  for (const PlanCandidate& c : plan.candidates) {
    Json j{{"depth", c.depth},
           {"n_embd", c.n_embd},
           {"parameters", c.parameters},
           {"matmul_parameters", c.matmul_parameters},
           {"tokens_per_step", c.tokens_per_step}};
    if (c.measured()) {
      j["step_seconds"] = c.step_seconds;
      j["tokens_per_second"] = c.tokens_per_second;
      j["tokens"] = c.tokens;
      j["predicted_val_bpb"] = c.predicted.val_bpb;
      j["interval"] = {c.predicted.low, c.predicted.high};
      j["extrapolated"] = c.extrapolated;
    } else {
      j["step_seconds"] = nullptr;
      j["skipped"] = c.skipped;
    }
    candidates.push_back(j);
  }
  const PlanCandidate& c = plan.chosen();
  const LossModel& lm = plan.loss_model;
  return Json{{"recipe", recipe_path},
              {"depth", c.depth},
              {"predicted_val_bpb", c.predicted.val_bpb},
              {"interval", {c.predicted.low, c.predicted.high}},
              {"extrapolated", c.extrapolated},
              {"budget_seconds", plan.budget_seconds},
              {"backend", plan.backend},
              {"device", plan.device},
              {"step_times_from", plan.step_times_from},
              {"planning_seconds", plan.planning_seconds},
              {"candidates", candidates},
              {"loss_model",
               {{"path", plan.loss_model_path.string()},
                {"law", {{"E", lm.law.E}, {"A", lm.law.A}, {"alpha", lm.law.alpha}, {"B", lm.law.B}, {"beta", lm.law.beta}}},
                {"runs", lm.runs.size()},
                {"held_out_max_abs", lm.held_out_max_abs},
                {"clocktrain", lm.clocktrain},
                {"cpu_model", lm.cpu_model},
                {"created_unix", lm.created_unix}}}};
}

}  // namespace ct::lab
