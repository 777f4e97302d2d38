// The loss model (lab/loss_model.h): the fit recovers known coefficients from synthetic ladders, the
// held-out errors are leave-one-out as documented, the file round-trips and refuses malformed fields,
// and `clocktrain lab fit-loss` / `lab predict` work on fake run folders and on a ledger experiment.
#include <cmath>
#include <random>
#include <sstream>

#include "lab/lab_commands.h"
#include "lab/loss_model.h"
#include "lab_fixtures.h"
#include "model/config.h"

namespace ct::lab {
namespace {

using ct::test::error_of;
using test::ResultSpec;

// Chinchilla-like magnitudes for this project's sizes: ~1.3 bpb at N = 1e7, D = 1e8.
const LossLaw kTruth{0.7, 30.0, 0.3, 60.0, 0.28};

// A ladder: 5 model sizes x 4 token counts, with Gaussian noise of `noise_std` bpb.
std::vector<LossPoint> ladder(const LossLaw& law, double noise_std, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, noise_std);
  std::vector<LossPoint> points;
  for (double n : {2e6, 5e6, 1.2e7, 3e7, 6e7})
    for (double d : {2e7, 5e7, 1.5e8, 4e8})
      points.push_back({n, d, law.predict(n, d) + (noise_std > 0 ? noise(rng) : 0.0)});
  return points;
}

TEST(LossModel, RecoversExactCoefficientsWithoutNoise) {
  const LossFit fit = fit_loss_law(ladder(kTruth, 0), "synthetic");
  EXPECT_NEAR(fit.law.alpha, kTruth.alpha, 1e-3);
  EXPECT_NEAR(fit.law.beta, kTruth.beta, 1e-3);
  EXPECT_NEAR(fit.law.E, kTruth.E, 2e-3);
  EXPECT_NEAR(fit.law.A / kTruth.A, 1.0, 2e-2);
  EXPECT_NEAR(fit.law.B / kTruth.B, 1.0, 2e-2);
  EXPECT_LT(fit.residual_rms, 1e-5);
}

TEST(LossModel, RecoversCoefficientsUnderSmallNoise) {
  // Noise of 0.002 bpb (about the seed spread of a short run): the exponents trade off against A, B
  // and E, so the check is on the exponents loosely and on predictions tightly, inside and just past
  // the ladder.
  const LossFit fit = fit_loss_law(ladder(kTruth, 0.002), "synthetic");
  EXPECT_NEAR(fit.law.alpha, kTruth.alpha, 0.1);
  EXPECT_NEAR(fit.law.beta, kTruth.beta, 0.1);
  EXPECT_NEAR(fit.law.E, kTruth.E, 0.15);
  EXPECT_GT(fit.residual_rms, 0.0005);
  EXPECT_LT(fit.residual_rms, 0.004);
  for (auto [n, d] : {std::pair{8e6, 1e8}, std::pair{4e7, 3e8}, std::pair{1e8, 6e8}})
    EXPECT_NEAR(fit.law.predict(n, d), kTruth.predict(n, d), 0.01) << n << " " << d;
}

TEST(LossModel, KeepsEABNonNegative) {
  // val_bpb = -0.3 + A/N^alpha + B/D^beta: the unconstrained best E is negative; the fit must give
  // E = 0 exactly (the support without E), and A, B >= 0.
  const LossLaw negative{-0.3, 30.0, 0.3, 60.0, 0.28};
  const LossFit fit = fit_loss_law(ladder(negative, 0), "synthetic");
  EXPECT_EQ(fit.law.E, 0.0);
  EXPECT_GE(fit.law.A, 0.0);
  EXPECT_GE(fit.law.B, 0.0);
  // A law rising with D (B < 0 in truth) is fitted with B = 0.
  std::vector<LossPoint> rising = ladder(kTruth, 0);
  for (LossPoint& p : rising) p.val_bpb = 1.0 + 30.0 * std::pow(p.parameters, -0.3) - 5.0 * std::pow(p.tokens, -0.2);
  EXPECT_EQ(fit_loss_law(rising, "synthetic").law.B, 0.0);
}

TEST(LossModel, HeldOutErrorsAreLeaveOneOut) {
  const std::vector<LossPoint> points = ladder(kTruth, 0.002);
  const HeldOutErrors held = leave_one_out(points, "synthetic");
  ASSERT_EQ(held.errors.size(), points.size());
  for (size_t i : {size_t{0}, size_t{7}, points.size() - 1}) {
    std::vector<LossPoint> rest = points;
    rest.erase(rest.begin() + static_cast<long>(i));
    const double expected =
        fit_loss_law(rest, "rest").law.predict(points[i].parameters, points[i].tokens) - points[i].val_bpb;
    EXPECT_DOUBLE_EQ(held.errors[i], expected) << i;
  }
  double squares = 0, max_abs = 0;
  for (double e : held.errors) {
    squares += e * e;
    max_abs = std::max(max_abs, std::abs(e));
  }
  EXPECT_DOUBLE_EQ(held.rms, std::sqrt(squares / static_cast<double>(points.size())));
  EXPECT_DOUBLE_EQ(held.max_abs, max_abs);
  // Held-out points are predicted worse than fitted ones, and about as well as the noise allows.
  EXPECT_GT(held.rms, fit_loss_law(points, "all").residual_rms);
  EXPECT_LT(held.rms, 0.006);
  // Without noise every held-out point is predicted almost exactly.
  EXPECT_LT(leave_one_out(ladder(kTruth, 0), "exact").max_abs, 1e-3);
}

TEST(LossModel, RefusesTooFewOrDegeneratePoints) {
  std::vector<LossPoint> points = ladder(kTruth, 0);
  EXPECT_NE(error_of([&] { fit_loss_law({points.begin(), points.begin() + 5}, "five"); })
                .find("five: the loss model needs at least 6 points"),
            std::string::npos);
  // Two model sizes only (the first 8 points: 2e6 and 5e6 x 4 token counts).
  EXPECT_NE(error_of([&] { fit_loss_law({points.begin(), points.begin() + 8}, "two sizes"); })
                .find("two sizes: the loss model needs at least 3 distinct parameter counts"),
            std::string::npos);
  points[3].tokens = 0;
  EXPECT_NE(error_of([&] { fit_loss_law(points, "zero"); }).find("zero: point 3: tokens must be a positive number"),
            std::string::npos);
}

LossModel fitted_model() {
  std::vector<LossRun> runs;
  int i = 0;
  for (const LossPoint& p : ladder(kTruth, 0.002)) {
    LossRun r;
    r.name = "ladder";
    r.run_dir = "/runs/r" + std::to_string(i++);
    r.depth = 2 + i % 5;
    r.matmul_parameters = static_cast<int64_t>(p.parameters);
    r.parameters = r.matmul_parameters + 8192 * 64;
    r.tokens = static_cast<int64_t>(p.tokens);
    r.val_bpb = p.val_bpb;
    r.device = "synthetic cpu";
    r.clocktrain = "0.1.0+abc123";
    runs.push_back(r);
  }
  return fit_loss_model(runs, "synthetic");
}

TEST(LossModel, FileRoundTrips) {
  const LossModel m = fitted_model();
  EXPECT_EQ(m.interval_half_width(), m.held_out_max_abs);
  const LossPrediction p = m.predict(1e7, 1e8);
  EXPECT_DOUBLE_EQ(p.high - p.val_bpb, m.held_out_max_abs);
  EXPECT_DOUBLE_EQ(p.val_bpb - p.low, m.held_out_max_abs);

  ct::test::TempDir dir;
  write_loss_model(dir / "loss_model.json", m);
  const LossModel back = read_loss_model(dir / "loss_model.json");
  EXPECT_EQ(to_json(back), to_json(m));
  EXPECT_EQ(back.law.alpha, m.law.alpha);
  EXPECT_EQ(back.held_out_max_abs, m.held_out_max_abs);
  ASSERT_EQ(back.runs.size(), 20u);
  EXPECT_EQ(back.runs[5].tokens, m.runs[5].tokens);
  EXPECT_EQ(back.runs[5].held_out_error, m.runs[5].held_out_error);
  EXPECT_EQ(back.clocktrain, m.clocktrain);
  EXPECT_FALSE(back.cpu_model.empty());
}

TEST(LossModel, MalformedFileNamesTheField) {
  const Json good = to_json(fitted_model());
  auto error = [&](auto&& edit) {
    Json j = good;
    edit(j);
    return error_of([&] { loss_model_from_json(j, "m.json"); });
  };
  EXPECT_EQ(error([](Json&) {}), "");
  EXPECT_NE(error([](Json& j) { j["coefficients"].erase("alpha"); }).find("m.json: missing field 'coefficients.alpha'"),
            std::string::npos);
  EXPECT_NE(error([](Json& j) { j["coefficients"]["A"] = -1.0; })
                .find("m.json: field 'coefficients.A': expected a finite number >= 0"),
            std::string::npos);
  EXPECT_NE(error([](Json& j) { j["provenance"]["runs"][3]["tokens"] = "many"; })
                .find("m.json: field 'provenance.runs[3].tokens'"),
            std::string::npos);
  EXPECT_NE(error([](Json& j) { j["fit"]["points"] = 19; }).find("field 'provenance.runs': expected 19 runs"),
            std::string::npos);
  EXPECT_NE(error([](Json& j) { j["fit"]["interval_half_width"] = 1.0; }).find("field 'fit.interval_half_width'"),
            std::string::npos);
  EXPECT_NE(error([](Json& j) { j["format"] = "clocktrain-loss-model/2"; }).find("field 'format'"), std::string::npos);
  EXPECT_NE(error([](Json& j) { j["coefficients"]["gamma"] = 1.0; }).find("unknown field 'coefficients.gamma'"),
            std::string::npos);
  EXPECT_NE(error([](Json& j) { j.erase("provenance"); }).find("missing field 'provenance'"), std::string::npos);
}

// Fake ladder runs: result.json as the fixtures write it, with a real resolved model (depth d, n_embd
// 64 d, head_dim 64) whose parameter count is the run's, and val_bpb from kTruth at (N, D) +/- 0.001.
class LossCli : public ::testing::Test {
 protected:
  static ModelConfig shape(int depth) {
    ModelConfig c;
    c.vocab_size = 512;
    c.sequence_len = 256;
    c.n_layer = depth;
    c.n_embd = 64 * depth;
    c.n_head = c.n_kv_head = depth;
    return c;
  }
  fs::path write_ladder_run(int depth, int64_t tokens, int seed) {
    const ModelConfig c = shape(depth);
    Json model = to_json(c);
    for (const char* f : {"format", "norm_eps", "padded_vocab_size"}) model.erase(f);  // as the resolved recipe
    model["depth"] = depth;
    model["aspect_ratio"] = 64;
    model["head_dim"] = 64;
    ResultSpec spec;
    spec.name = "ladder";
    spec.seed = seed;
    spec.tokens = tokens;
    const double n = static_cast<double>(c.matmul_parameter_count());
    spec.val_bpb = kTruth.predict(n, static_cast<double>(tokens)) + (seed % 2 ? 0.001 : -0.001);
    const fs::path run = dir_ / ("d" + std::to_string(depth) + "-t" + std::to_string(tokens));
    Json result = test::result_json(spec, run);
    result["recipe"]["resolved"]["model"] = model;
    result["parameters"] = c.parameter_count();
    fs::create_directories(run);
    write_file_atomic(run / "result.json", result.dump(2));
    return run;
  }
  std::vector<fs::path> ladder_runs() {
    std::vector<fs::path> runs;
    int seed = 0;
    for (int depth : {2, 4, 6, 8})
      for (int64_t tokens : {10'000'000, 30'000'000, 100'000'000})
        runs.push_back(write_ladder_run(depth, tokens, ++seed));
    return runs;
  }
  ct::test::TempDir dir_;
};

TEST_F(LossCli, RunFromResultJsonUsesMatmulParameters) {
  const fs::path run = write_ladder_run(4, 30'000'000, 1);
  const LossRun r = loss_run_from_record(read_run_record(run));
  EXPECT_EQ(r.matmul_parameters, shape(4).matmul_parameter_count());
  EXPECT_EQ(r.parameters, shape(4).parameter_count());
  EXPECT_LT(r.matmul_parameters, r.parameters);
  EXPECT_EQ(r.depth, 4);
  EXPECT_EQ(r.tokens, 30'000'000);
  EXPECT_EQ(r.device, "synthetic cpu");
  EXPECT_EQ(r.clocktrain, "0.1.0+abc123");

  // A parameter count that the recorded model does not give is refused, naming the file and field.
  Json result = read_json_file(run / "result.json");
  result["parameters"] = 123;
  write_file_atomic(run / "result.json", result.dump());
  EXPECT_NE(error_of([&] { loss_run_from_record(read_run_record(run)); })
                .find((run / "result.json").string() + ": field 'parameters': 123 is not the parameter count"),
            std::string::npos);
}

TEST_F(LossCli, FitsFakeRunFoldersAndPredicts) {
  std::string args;
  for (const fs::path& run : ladder_runs()) args += " " + run.string();
  const fs::path model = dir_ / "loss_model.json";
  auto fit = ct::test::run_command(ct::test::clocktrain_bin() + " lab fit-loss" + args + " --out " + model.string());
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.output.find("held out (leave-one-out): RMS"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("alpha"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("wrote " + model.string()), std::string::npos) << fit.output;

  const LossModel m = read_loss_model(model);
  ASSERT_EQ(m.runs.size(), 12u);
  EXPECT_EQ(m.runs[0].depth, 2);
  EXPECT_LT(m.residual_rms, 0.002);
  EXPECT_LT(m.held_out_max_abs, 0.02);
  const double n = static_cast<double>(m.runs[4].matmul_parameters);
  EXPECT_NEAR(m.law.predict(n, 5e7), kTruth.predict(n, 5e7), 0.005);

  auto predict = ct::test::run_command(ct::test::clocktrain_bin() + " lab predict --model " + model.string() +
                                       " --parameters " + std::to_string(static_cast<int64_t>(n)) +
                                       " --tokens 50000000 --json");
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const Json p = Json::parse(predict.output);
  EXPECT_NEAR(p.at("predicted_val_bpb").get<double>(), m.law.predict(n, 5e7), 1e-9);
  EXPECT_NEAR(p.at("interval")[1].get<double>() - p.at("interval")[0].get<double>(), 2 * m.held_out_max_abs, 1e-9);

  // Too few runs: the command fails, says why, and writes nothing.
  auto few = ct::test::run_command(ct::test::clocktrain_bin() + " lab fit-loss " + (dir_ / "d2-t10000000").string() +
                                   " --out " + (dir_ / "x.json").string());
  EXPECT_NE(few.exit_code, 0);
  EXPECT_NE(few.output.find("needs at least 6 points"), std::string::npos) << few.output;
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

TEST_F(LossCli, FitsTheRunsOfALedgerExperiment) {
  const std::vector<fs::path> runs = ladder_runs();
  const fs::path ledger = dir_ / "lab.sqlite";
  std::ostringstream out;
  NewExperiment e;
  e.change = "ladder";
  e.hypothesis = "loss model";
  e.predicted_low = -1;
  e.predicted_high = 1;
  e.rule_text = "accept if mean(B) - mean(A) < 0 at 95%";
  const int64_t id = lab_propose(ledger, e, out);
  CheckOptions check;  // the ladder: a passed cpu-check before probe runs
  check.ledger = ledger;
  check.experiment = id;
  check.command = {"true"};
  ASSERT_EQ(lab_check(check, out), 0);
  const std::vector<int64_t> ids = lab_add(ledger, id, "A", Rung::probe, runs, out);
  lab_exclude(ledger, ids[0], "a broken run", out);
  FitLossOptions o;
  o.ledger = ledger;
  o.experiment = id;
  o.out = dir_ / "from-ledger.json";
  const LossModel m = lab_fit_loss(o, out);
  // The excluded run is left out, saying why; the others are fitted.
  EXPECT_EQ(m.runs.size(), runs.size() - 1);
  EXPECT_NE(out.str().find(str("left out run ", ids[0])), std::string::npos) << out.str();
  EXPECT_EQ(read_loss_model(o.out).runs.size(), runs.size() - 1);
}

}  // namespace
}  // namespace ct::lab
