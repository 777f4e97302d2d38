// The planner (lab/planner.h): from a recorded table of step times (a GPU's, with no device here) it
// chooses the depth whose predicted val_bpb is lowest, as computed independently here from the loss
// model; it stops measuring once the predictions turn up or the cap would be passed; it refuses a
// table of another backend and malformed tables; `clocktrain plan` measures on this CPU and writes a
// recipe that loads.
#include <cmath>
#include <sstream>

#include "lab/loss_model.h"
#include "lab/planner.h"
#include "lab_fixtures.h"

namespace ct::lab {
namespace {

using ct::test::error_of;

// A law of this project's magnitudes (docs/lab.md's synthetic ladder): ~1.3 bpb at N = 1e7, D = 1e8.
const LossLaw kLaw{0.7, 30.0, 0.3, 60.0, 0.28};

// A loss model fitted to a noiseless ladder of kLaw over N in [1e6, 1e9], D in [1e6, 1e11].
fs::path write_loss_model_file(const fs::path& path) {
  std::vector<LossRun> runs;
  int i = 0;
  for (double n : {1e6, 1e7, 1e8, 1e9})
    for (double d : {1e6, 1e8, 1e11}) {
      LossRun r;
      r.name = "ladder";
      r.run_dir = "/runs/r" + std::to_string(i++);
      r.depth = i;
      r.matmul_parameters = static_cast<int64_t>(n);
      r.parameters = r.matmul_parameters + 8192 * 64;
      r.tokens = static_cast<int64_t>(d);
      r.val_bpb = kLaw.predict(n, d);
      r.device = "synthetic";
      r.clocktrain = "0.1.0+abc123";
      runs.push_back(r);
    }
  write_loss_model(path, fit_loss_model(runs, "synthetic"));
  return path;
}

Recipe candidate(int64_t depth, double budget, const std::string& backend) {
  return parse_recipe(candidate_recipe_toml(depth, budget, backend, 0, ""), "candidate");
}

// A GPU's step time: the model's FLOPs per step at `flops_per_second`.
double gpu_step_seconds(int64_t depth, double flops_per_second) {
  const Recipe r = candidate(depth, 1800, "cuda");
  return r.model.flops_per_token() * static_cast<double>(r.tokens_per_step) / flops_per_second;
}

class Planner : public ::testing::Test {
 protected:
  ct::test::TempDir dir_;  // before model_, which is written into it
  fs::path model_ = write_loss_model_file(dir_.path() / "loss_model.json");
};

TEST_F(Planner, RecordedGpuStepTimesGiveTheDepthWithTheLowestPrediction) {
  // A table as `clocktrain plan --backend cuda --json` on a device writes it (depth 14 not measured there).
  const std::vector<int64_t> depths = {8, 10, 12, 14, 16, 20, 26};
  Json candidates = Json::array();
  for (int64_t d : depths)
    candidates.push_back(d == 14 ? Json{{"depth", d}, {"step_seconds", nullptr}}
                                 : Json{{"depth", d}, {"step_seconds", gpu_step_seconds(d, 2e14)}});
  const fs::path table = dir_.path() / "h100.json";
  write_file_atomic(table, Json{{"device", "NVIDIA H100 (recorded)"}, {"backend", "cuda"}, {"candidates", candidates}}.dump());

  PlanOptions o;
  o.budget_seconds = 1800;
  o.backend = "cuda";
  o.loss_model = model_;
  o.step_times = table;
  o.depths = depths;
  std::ostringstream log;
  const Plan plan = plan_recipe(o, log);

  // The prediction of each depth, computed here: N = matmul parameters, D = whole steps in 1800 s.
  int64_t expected_depth = 0;
  double expected_best = 1e9;
  const LossModel lm = read_loss_model(model_);
  for (int64_t d : depths) {
    if (d == 14) continue;
    const Recipe r = candidate(d, 1800, "cuda");
    const double steps = std::floor(1800 / gpu_step_seconds(d, 2e14));
    const double y = lm.law.predict(static_cast<double>(r.model.matmul_parameter_count()),
                                    steps * static_cast<double>(r.tokens_per_step));
    if (y < expected_best) expected_best = y, expected_depth = d;
  }
  // The table is made so that neither end wins: the choice is a trade, not a monotone pick.
  ASSERT_NE(expected_depth, depths.front());
  ASSERT_NE(expected_depth, depths.back());
  EXPECT_EQ(plan.chosen().depth, expected_depth) << plan_table(plan);
  EXPECT_NEAR(plan.chosen().predicted.val_bpb, expected_best, 1e-12);
  EXPECT_EQ(plan.device, "NVIDIA H100 (recorded)");
  EXPECT_EQ(plan.step_times_from, table.string());
  for (const PlanCandidate& c : plan.candidates)
    if (c.depth == 14) EXPECT_NE(c.skipped.find("has no step time for it"), std::string::npos) << c.skipped;

  // The recipe: a depth recipe of that depth, timed for the budget, on cuda; the interval is the
  // model's largest held-out error either side.
  EXPECT_EQ(plan.recipe.dial.depth, expected_depth);
  EXPECT_TRUE(plan.recipe.timed());
  EXPECT_EQ(plan.recipe.budget_seconds, 1800);
  EXPECT_EQ(plan.recipe.backend, "cuda");
  EXPECT_EQ(plan.recipe.rows_per_step() % plan.recipe.micro_batch_rows, 0);
  EXPECT_NE(plan.recipe_toml.find("predicted val_bpb"), std::string::npos);
  const Json j = plan_to_json(plan, "planned.toml");
  EXPECT_EQ(j["recipe"], "planned.toml");
  EXPECT_EQ(j["depth"], expected_depth);
  EXPECT_DOUBLE_EQ(j["predicted_val_bpb"].get<double>(), expected_best);
  EXPECT_DOUBLE_EQ(j["interval"][0].get<double>(), expected_best - lm.held_out_max_abs);
  EXPECT_DOUBLE_EQ(j["interval"][1].get<double>(), expected_best + lm.held_out_max_abs);
  EXPECT_EQ(j["candidates"].size(), depths.size());
  EXPECT_EQ(j["loss_model"]["runs"], 12);

  // The JSON is itself a table of step times: planning from it again gives the same plan.
  write_file_atomic(dir_.path() / "again.json", j.dump());
  o.step_times = dir_.path() / "again.json";
  EXPECT_EQ(plan_recipe(o, log).chosen().depth, expected_depth);
}

TEST_F(Planner, StopsMeasuringOnceThePredictionsTurnUp) {
  // Step time proportional to the FLOPs per step at a CPU's rate: on 60 s the small depths win.
  std::vector<int64_t> timed;
  auto timer = [&](const Recipe& r) -> std::optional<double> {
    timed.push_back(r.dial.depth);
    return r.model.flops_per_token() * static_cast<double>(r.tokens_per_step) / 2e11;
  };
  PlanOptions o;
  o.budget_seconds = 60;
  o.loss_model = model_;
  o.depths = {2, 3, 4, 5, 6, 8, 10, 12};
  o.measure_seconds = 1e9;
  std::ostringstream log;
  const Plan plan = make_plan(o, timer, "fake cpu", log);
  // Measured up to two depths past the best one, and no further.
  size_t best_position = 0;
  while (o.depths[best_position] != plan.chosen().depth) ++best_position;
  ASSERT_LT(best_position + 2, o.depths.size()) << plan_table(plan);
  EXPECT_EQ(timed, std::vector<int64_t>(o.depths.begin(), o.depths.begin() + static_cast<long>(best_position) + 3));
  for (size_t i = best_position + 3; i < o.depths.size(); ++i) {
    EXPECT_FALSE(plan.candidates[i].measured());
    EXPECT_NE(plan.candidates[i].skipped.find("already predicted worse"), std::string::npos);
  }
  EXPECT_NE(plan_table(plan).find("<- plan"), std::string::npos);
}

TEST_F(Planner, SkipsADepthWhoseMeasuringWouldPassTheCap) {
  auto timer = [](const Recipe&) -> std::optional<double> { return 0.5; };
  PlanOptions o;
  o.budget_seconds = 60;
  o.loss_model = model_;
  o.depths = {2, 4};
  o.measure_seconds = 1.0;  // depth 4 is estimated at (startup steps + 2) x its step: more than 1 s
  std::ostringstream log;
  const Plan plan = make_plan(o, timer, "fake cpu", log);
  EXPECT_TRUE(plan.candidates[0].measured());
  EXPECT_NE(plan.candidates[1].skipped.find("measuring cap"), std::string::npos) << plan.candidates[1].skipped;
  EXPECT_EQ(plan.chosen().depth, 2);
}

TEST_F(Planner, RefusesWhatItCannotUse) {
  PlanOptions o;
  o.budget_seconds = 60;
  o.loss_model = model_;
  std::ostringstream log;
  const fs::path table = dir_.path() / "t.json";
  write_file_atomic(table, R"({"device": "x", "backend": "cuda", "candidates": [{"depth": 8, "step_seconds": 0.1}]})");
  o.step_times = table;
  EXPECT_NE(error_of([&] { plan_recipe(o, log); }).find("step times of the cuda backend, but the plan is for cpu"),
            std::string::npos);
  write_file_atomic(table, R"({"device": "x", "backend": "cpu", "candidates": [{"depth": 8, "step_seconds": -1}]})");
  EXPECT_NE(error_of([&] { plan_recipe(o, log); }).find("t.json: field 'candidates[0].step_seconds': expected seconds > 0"),
            std::string::npos);
  write_file_atomic(table, R"({"device": "x", "backend": "cpu"})");
  EXPECT_NE(error_of([&] { plan_recipe(o, log); }).find("field 'candidates': expected an array"), std::string::npos);
  o.step_times.clear();
  o.loss_model = dir_.path() / "none.json";
  EXPECT_NE(error_of([&] { plan_recipe(o, log); }).find("no loss model at"), std::string::npos);
  o.loss_model = model_;
  o.budget_seconds = 0;
  EXPECT_NE(error_of([&] { plan_recipe(o, log); }).find("--budget must be seconds > 0"), std::string::npos);
}

TEST_F(Planner, PlanCommandMeasuresOnThisMachineAndWritesARecipeThatLoads) {
  const fs::path out = dir_.path() / "planned.toml";
  // stdout alone (the progress lines go to stderr with --json): one JSON object. The cap is raised so
  // that both depths are measured however slow the build (under the sanitizers depth 1 alone takes
  // most of the default 45 s).
  const auto r = ct::test::run_command("(env OMP_WAIT_POLICY=passive " + ct::test::clocktrain_bin() +
                                       " plan --budget 120 --depths 1,2 --measure-seconds 600 --model " + model_.string() + " --out " +
                                       out.string() + " --json 2>" + (dir_.path() / "stderr").string() + ")");
  ASSERT_EQ(r.exit_code, 0) << r.output << read_file(dir_.path() / "stderr");
  EXPECT_NE(read_file(dir_.path() / "stderr").find("plan: depth 2: "), std::string::npos);
  ASSERT_EQ(r.output.substr(0, 1), "{") << r.output;
  const Json j = Json::parse(r.output);
  EXPECT_EQ(j["recipe"], out.string());
  ASSERT_EQ(j["candidates"].size(), 2u);
  for (const Json& c : j["candidates"]) EXPECT_GT(c["step_seconds"].get<double>(), 0) << c.dump();
  EXPECT_LT(j["interval"][0].get<double>(), j["predicted_val_bpb"].get<double>());
  EXPECT_GT(j["planning_seconds"].get<double>(), 0);
  const Recipe planned = load_recipe(out);
  EXPECT_EQ(planned.dial.depth, j["depth"].get<int64_t>());
  EXPECT_EQ(planned.budget_seconds, 120);

  // An --out whose folder cannot be written fails before the measuring.
  const auto refused = ct::test::run_command(ct::test::clocktrain_bin() + " plan --budget 120 --model " +
                                             model_.string() + " --out /proc/planned.toml");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.output.find("--out /proc/planned.toml"), std::string::npos) << refused.output;
}

// `clocktrain run --plan` end to end on the shipped data: it prepares the real corpus (the planned
// recipe has the competition's vocabulary), so it is left out of the sanitizer build, where that
// alone takes minutes; the planner's code is covered there by the tests above.
#if defined(__SANITIZE_ADDRESS__)
#define CLOCKTRAIN_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLOCKTRAIN_SANITIZED 1
#endif
#endif

TEST_F(Planner, RunPlanPlansTrainsAndRecordsThePlan) {
#ifdef CLOCKTRAIN_SANITIZED
  GTEST_SKIP() << "prepares the whole shipped corpus: release build only";
#endif
  const std::string run = "env OMP_WAIT_POLICY=passive " + ct::test::clocktrain_bin() + " run --data " +
                          ct::test::data_dir().string() + " --cache " + (dir_.path() / "cache").string() +
                          " --no-progress ";
  const fs::path out = dir_.path() / "run";
  const auto r = ct::test::run_command(run + "--plan --budget 2 --plan-depths 1,2 --plan-model " + model_.string() +
                                       " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("<- plan"), std::string::npos) << r.output;
  const Json result = read_json_file(out / "result.json");
  ASSERT_TRUE(result.contains("plan")) << result.dump(2);
  const Json& plan = result["plan"];
  EXPECT_EQ(plan["recipe"], (out / "planned.toml").string());
  EXPECT_EQ(plan["candidates"].size(), 2u);
  EXPECT_EQ(result["recipe"]["resolved"]["model"]["depth"], plan["depth"]);
  EXPECT_EQ(result["budget_seconds"], 2.0);
  // The planning is startup: the recorded startup holds it.
  EXPECT_GE(result["startup_seconds"].get<double>(), plan["planning_seconds"].get<double>());
  const std::string html = read_file(out / "report.html");
  EXPECT_NE(html.find("predicted val_bpb"), std::string::npos);
  EXPECT_NE(html.find("the interval"), std::string::npos);

  // A folder that is not empty (here: the run just made) is refused before any planning or writing.
  const std::string before = read_file(out / "planned.toml");
  const auto again = ct::test::run_command(run + "--plan --budget 2 --plan-depths 1 --plan-model " + model_.string() +
                                           " --out " + out.string());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.output.find("this one is not empty; choose a new --out"), std::string::npos) << again.output;
  EXPECT_EQ(read_file(out / "planned.toml"), before);

  // --plan plans the recipe: one given beside it is refused, and the plan's options need --plan.
  const auto both = ct::test::run_command(run + "--plan recipes/tiny.toml --out " + (dir_.path() / "x").string());
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.output.find("--plan plans the recipe; give no RECIPE"), std::string::npos) << both.output;
  const auto stray = ct::test::run_command(run + "recipes/tiny.toml --plan-depths 1");
  EXPECT_EQ(stray.exit_code, 1);
  EXPECT_NE(stray.output.find("go with --plan"), std::string::npos) << stray.output;
}

}  // namespace
}  // namespace ct::lab
