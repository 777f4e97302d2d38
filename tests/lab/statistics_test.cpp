// The lab's statistics against hand-computed values and against scipy (tests/python/lab_reference.py).
#include "lab/statistics.h"

#include <cmath>
#include <vector>

#include "lab/elasticity.h"
#include "lab/noise.h"
#include "lab/verdict.h"
#include "lab_fixtures.h"

namespace ct::lab {
namespace {

TEST(Statistics, MeanAndSampleStdByHand) {
  std::vector<double> v = {1.0, 2.0, 3.0, 4.0};
  EXPECT_DOUBLE_EQ(mean(v), 2.5);
  // sum of squares 2.25 + 0.25 + 0.25 + 2.25 = 5, / 3
  EXPECT_DOUBLE_EQ(sample_std(v), std::sqrt(5.0 / 3.0));
  std::vector<double> one = {1.0};
  EXPECT_THROW(sample_std(one), Error);
}

TEST(Statistics, TQuantileClosedForms) {
  // df = 1 is the Cauchy distribution: quantile tan(pi (p - 1/2)).
  for (double p : {0.6, 0.9, 0.975, 0.999})
    EXPECT_NEAR(student_t_quantile(p, 1), std::tan(M_PI * (p - 0.5)), 1e-9 * std::tan(M_PI * (p - 0.5)));
  // df = 2: t = (2p - 1) / sqrt(2 p (1 - p)).
  for (double p : {0.6, 0.9, 0.975, 0.999})
    EXPECT_NEAR(student_t_quantile(p, 2), (2 * p - 1) / std::sqrt(2 * p * (1 - p)), 1e-10);
  EXPECT_DOUBLE_EQ(student_t_quantile(0.5, 7), 0.0);
  EXPECT_NEAR(student_t_quantile(0.025, 5), -student_t_quantile(0.975, 5), 1e-12);
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_THROW(student_t_quantile(1.0, 3), Error);
  EXPECT_THROW(student_t_quantile(0.5, 0), Error);
}

TEST(Statistics, AgainstScipy) {
  CT_NEED_PYTHON_MODULES("numpy scipy", "system python3 lacks numpy/scipy");
  ct::test::TempDir dir;
  Json cases;
  std::vector<std::pair<double, double>> t_cases = {{0.975, 1},   {0.975, 2},  {0.975, 3},    {0.95, 4.5},
                                                    {0.8, 2},     {0.8, 6},    {0.995, 7},    {0.9995, 3},
                                                    {0.999999, 10}, {0.6, 30}, {0.975, 1000}, {0.01, 5},
                                                    {0.975, 0.5}, {0.9, 2.7}};
  for (auto [p, df] : t_cases) cases["t_ppf"].push_back({p, df});
  std::vector<std::pair<double, double>> cdf_cases = {{0.0, 3}, {1.5, 2}, {-2.0, 5}, {4.0, 1.5}, {12.0, 9}, {0.3, 200}};
  // Our quantiles go back through scipy's cdf, which is accurate to ~1e-16 (its ppf is not).
  for (auto [p, df] : t_cases) cdf_cases.push_back({student_t_quantile(p, df), df});
  for (auto [t, df] : cdf_cases) cases["t_cdf"].push_back({t, df});
  std::vector<double> norm_cases = {0.5, 0.8, 0.975, 0.999, 1e-6, 0.3};
  cases["norm_ppf"] = norm_cases;
  std::vector<std::array<double, 3>> beta_cases = {{0.5, 0.5, 0.3}, {2, 3, 0.4}, {10, 0.5, 0.9}, {0.5, 20, 0.01}, {50, 60, 0.45}};
  for (auto c : beta_cases) cases["betainc"].push_back(c);
  std::vector<std::array<double, 4>> mde_cases = {{0.01, 6, 0.95, 0.8}, {0.004, 3, 0.9, 0.8}, {0.02, 14, 0.99, 0.9}};
  for (auto c : mde_cases) cases["mde"].push_back(c);
  std::vector<double> xs = {4.6, 4.7, 5.5, 5.6, 6.2}, ys = {1.90, 1.88, 1.75, 1.74, 1.69};
  cases["linregress"].push_back({xs, ys});

  Json ref = test::python_reference(cases, dir.path());
  for (size_t i = 0; i < t_cases.size(); ++i) {
    double expected = ref["t_ppf"][i].get<double>();
    EXPECT_NEAR(student_t_quantile(t_cases[i].first, t_cases[i].second), expected, 1e-8 * std::max(1.0, std::fabs(expected)))
        << "p=" << t_cases[i].first << " df=" << t_cases[i].second;
    double p = t_cases[i].first;
    EXPECT_NEAR(ref["t_cdf"][6 + i].get<double>(), p, 1e-12 * std::min(p, 1 - p) + 1e-15)
        << "scipy's cdf at our quantile, p=" << p << " df=" << t_cases[i].second;
  }
  for (size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(student_t_cdf(cdf_cases[i].first, cdf_cases[i].second), ref["t_cdf"][i].get<double>(), 1e-12);
  for (size_t i = 0; i < norm_cases.size(); ++i)
    EXPECT_NEAR(normal_quantile(norm_cases[i]), ref["norm_ppf"][i].get<double>(), 1e-10);
  for (size_t i = 0; i < beta_cases.size(); ++i)
    EXPECT_NEAR(incomplete_beta(beta_cases[i][0], beta_cases[i][1], beta_cases[i][2]), ref["betainc"][i].get<double>(),
                1e-12);
  for (size_t i = 0; i < mde_cases.size(); ++i)
    EXPECT_NEAR(minimum_detectable_effect(mde_cases[i][0], mde_cases[i][1], mde_cases[i][2], mde_cases[i][3]),
                ref["mde"][i].get<double>(), 1e-10);
  LinearFit fit = fit_line(xs, ys);
  EXPECT_NEAR(fit.slope, ref["linregress"][0]["slope"].get<double>(), 1e-12);
  EXPECT_NEAR(fit.intercept, ref["linregress"][0]["intercept"].get<double>(), 1e-12);
  EXPECT_NEAR(fit.slope_standard_error, ref["linregress"][0]["stderr"].get<double>(), 1e-12);
}

TEST(Statistics, LineFitByHand) {
  // Points exactly on y = 2 - 0.1 x: slope -0.1, no residual.
  std::vector<double> x = {1, 2, 3}, y = {1.9, 1.8, 1.7};
  LinearFit fit = fit_line(x, y);
  EXPECT_NEAR(fit.slope, -0.1, 1e-12);
  EXPECT_NEAR(fit.intercept, 2.0, 1e-12);
  EXPECT_NEAR(fit.slope_standard_error, 0.0, 1e-7);
  // Two points: the slope is exact, its standard error undefined.
  std::vector<double> x2 = {1, 2}, y2 = {1.9, 1.8};
  EXPECT_TRUE(std::isnan(fit_line(x2, y2).slope_standard_error));
  std::vector<double> same = {1, 1};
  EXPECT_THROW(fit_line(same, y2), Error);
}

TEST(Noise, AgainstNumpy) {
  CT_NEED_PYTHON_MODULES("numpy scipy", "system python3 lacks numpy/scipy");
  ct::test::TempDir dir;
  // 4 seeds x 2 repeats (the study's design), and an unbalanced design.
  std::vector<SeededValue> balanced = {{1, 1.731}, {1, 1.733}, {2, 1.742}, {2, 1.739},
                                       {3, 1.725}, {3, 1.728}, {4, 1.736}, {4, 1.735}};
  std::vector<SeededValue> unbalanced = {{1, 1.70}, {1, 1.71}, {1, 1.69}, {2, 1.75}, {3, 1.72}, {3, 1.74}};
  std::vector<int> ns = {2, 4, 8};
  Json cases;
  for (const auto* set : {&balanced, &unbalanced}) {
    Json values = Json::array();
    for (const auto& v : *set) values.push_back({v.seed, v.value});
    cases["noise"].push_back({{"values", values}, {"n", ns}, {"confidence", 0.95}, {"power", 0.8}});
  }
  Json ref = test::python_reference(cases, dir.path());
  int index = 0;
  for (const auto* set : {&balanced, &unbalanced}) {
    const Json& r = ref["noise"][index++];
    NoiseEstimate n = estimate_noise(*set);
    EXPECT_EQ(n.seeds, r["seeds"].get<int>());
    EXPECT_NEAR(n.mean, r["mean"].get<double>(), 1e-12);
    EXPECT_NEAR(*n.seed_spread, r["seed_spread"].get<double>(), 1e-12);
    EXPECT_NEAR(*n.repeat_std, r["repeat_std"].get<double>(), 1e-12);
    EXPECT_NEAR(*n.pair_noise, r["pair_noise"].get<double>(), 1e-12);
    if (r.contains("pair_noise_from_differences"))
      EXPECT_NEAR(*n.pair_noise, r["pair_noise_from_differences"].get<double>(), 1e-12);
    EXPECT_NEAR(*n.single_run_std, r["single_run_std"].get<double>(), 1e-12);
    for (int runs : ns) {
      MdeRow row = mde_for(n, runs, 0.95, 0.8);
      EXPECT_NEAR(*row.unpaired, r["mde"][std::to_string(runs)]["unpaired"].get<double>(), 1e-10);
      EXPECT_NEAR(*row.paired, r["mde"][std::to_string(runs)]["paired"].get<double>(), 1e-10);
    }
  }
}

TEST(Noise, OneRunPerSeedIsThePlainSampleStd) {
  std::vector<SeededValue> values = {{1, 1.0}, {2, 2.0}, {3, 3.0}, {4, 4.0}};
  NoiseEstimate n = estimate_noise(values);
  EXPECT_NEAR(*n.seed_spread, std::sqrt(5.0 / 3.0), 1e-12);
  EXPECT_NEAR(*n.single_run_std, *n.seed_spread, 1e-12);
  EXPECT_FALSE(n.pair_noise.has_value());
  // MDE for 4 runs per arm by hand: (t_{.975,6} + t_{.8,6}) * s * sqrt(2/4)
  // t_{0.975,6} and t_{0.8,6}: the points where scipy.stats.t.cdf(t, 6) is 0.975 and 0.8 to 1e-16.
  // (scipy.stats.t.ppf(0.975, 6) itself returns 2.4469118487916806, whose cdf is 0.97499999992:
  // scipy's t quantile is good to about 1e-9, which is why AgainstScipy checks ours through the cdf.)
  double t975 = 2.4469118511449692, t80 = 0.9057032851805320;
  EXPECT_NEAR(*mde_for(n, 4, 0.95, 0.8).unpaired, (t975 + t80) * std::sqrt(5.0 / 3.0) * std::sqrt(0.5), 1e-9);
}

TEST(Elasticity, PiecewiseSlopesAgainstScipy) {
  CT_NEED_PYTHON_MODULES("numpy scipy", "system python3 lacks numpy/scipy");
  ct::test::TempDir dir;
  // Three budgets (120, 300, 600 s), two runs each; the curve flattens with more steps, so the two
  // ranges must get different slopes.
  std::vector<ElasticityPoint> points = {
      {120, std::log(40.0), 2.100, 1}, {120, std::log(42.0), 2.092, 2}, {300, std::log(100.0), 1.900, 3},
      {300, std::log(103.0), 1.897, 4}, {600, std::log(200.0), 1.820, 5}, {600, std::log(196.0), 1.826, 6}};
  ElasticityFit fit = fit_elasticity(points);
  ASSERT_EQ(fit.levels.size(), 3u);
  ASSERT_EQ(fit.ranges.size(), 2u);
  Json levels = Json::array();
  for (double level : {120.0, 300.0, 600.0}) {
    Json pts = Json::array();
    for (const auto& p : points)
      if (p.level == level) pts.push_back({p.x, p.y});
    levels.push_back(pts);
  }
  Json cases;
  cases["elasticity"].push_back({{"levels", levels}});
  Json ref = test::python_reference(cases, dir.path())["elasticity"][0];
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(fit.ranges[i].fit.slope, ref[i]["slope"].get<double>(), 1e-12);
    EXPECT_NEAR(fit.ranges[i].fit.slope_standard_error, ref[i]["stderr"].get<double>(), 1e-12);
  }
  EXPECT_GT(std::fabs(fit.ranges[0].fit.slope - fit.ranges[1].fit.slope), 0.01) << "one constant slope";

  // A 5% speed-up at the 600 s level uses the second range: delta = slope * ln(1.05).
  double slope = ref[1]["slope"].get<double>(), se = ref[1]["stderr"].get<double>();
  SpeedupEffect e = speedup_effect(fit, 5.0, fit.levels.back().mean_x, 0.95);
  EXPECT_EQ(e.range_index, 1u);
  EXPECT_NEAR(e.delta, slope * std::log(1.05), 1e-12);
  EXPECT_NEAR(*e.standard_error, se * std::log(1.05), 1e-12);
  double t = student_t_quantile(0.975, 2);  // 4 points - 2
  EXPECT_NEAR(*e.low, e.delta - t * se * std::log(1.05), 1e-12);
  EXPECT_TRUE(e.beyond_range);  // the top level plus 5% lies past the measured span
  // At 100 steps (inside the first range) the first slope applies.
  SpeedupEffect first = speedup_effect(fit, 10.0, std::log(60.0), 0.95);
  EXPECT_EQ(first.range_index, 0u);
  EXPECT_NEAR(first.delta, ref[0]["slope"].get<double>() * std::log(1.10), 1e-12);
  EXPECT_FALSE(first.beyond_range);
}

TEST(Verdict, NumbersAgainstScipy) {
  CT_NEED_PYTHON_MODULES("numpy scipy", "system python3 lacks numpy/scipy");
  ct::test::TempDir dir;
  DecisionRule rule = parse_decision_rule("accept if mean(B) - mean(A) < -0.005 at 95%");
  // Paired: same seeds 1..4 in both arms.
  ArmSample a{"A", {1.740, 1.752, 1.731, 1.745}, {1, 2, 3, 4}, {1, 2, 3, 4}};
  ArmSample b{"B", {1.722, 1.735, 1.720, 1.724}, {1, 2, 3, 4}, {5, 6, 7, 8}};
  // Unpaired: different seeds.
  ArmSample c{"A", {1.740, 1.752, 1.731}, {1, 2, 3}, {1, 2, 3}};
  ArmSample d{"B", {1.738, 1.733, 1.749, 1.741}, {11, 12, 13, 14}, {4, 5, 6, 7}};
  Json cases;
  cases["verdict"].push_back({{"treatment", b.values}, {"control", a.values}, {"paired", true}, {"confidence", 0.95}, {"power", 0.8}});
  cases["verdict"].push_back({{"treatment", d.values}, {"control", c.values}, {"paired", false}, {"confidence", 0.95}, {"power", 0.8}});
  Json ref = test::python_reference(cases, dir.path())["verdict"];

  VerdictNumbers paired = decide(rule, 0.95, 0.8, b, a);
  EXPECT_EQ(paired.design, "paired");
  VerdictNumbers unpaired = decide(rule, 0.95, 0.8, d, c);
  EXPECT_EQ(unpaired.design, "unpaired");
  int i = 0;
  for (const auto* v : {&paired, &unpaired}) {
    const Json& r = ref[i++];
    EXPECT_NEAR(v->effect, r["effect"].get<double>(), 1e-12);
    EXPECT_NEAR(v->standard_error, r["standard_error"].get<double>(), 1e-12);
    EXPECT_NEAR(v->df, r["df"].get<double>(), 0);
    EXPECT_NEAR(v->interval_low, r["interval"][0].get<double>(), 1e-10);
    EXPECT_NEAR(v->interval_high, r["interval"][1].get<double>(), 1e-10);
    EXPECT_NEAR(v->mde, r["mde"].get<double>(), 1e-10);
  }
  // Paired: d = -0.01675 with a tight interval below -0.005 -> accept.
  EXPECT_EQ(paired.verdict, "accept") << paired.reason;
  // Unpaired: d ~ -0.0013 with an interval straddling -0.005 -> inconclusive.
  EXPECT_EQ(unpaired.verdict, "inconclusive") << unpaired.reason;
}

TEST(Verdict, RejectWhenTheWholeIntervalMissesTheThreshold) {
  DecisionRule rule = parse_decision_rule("accept if mean(B) - mean(A) < -0.005");
  ArmSample a{"A", {1.700, 1.702, 1.701}, {1, 2, 3}, {1, 2, 3}};
  ArmSample b{"B", {1.720, 1.721, 1.722}, {1, 2, 3}, {4, 5, 6}};
  VerdictNumbers v = decide(rule, 0.95, 0.8, b, a);
  EXPECT_EQ(v.verdict, "reject") << v.reason;
  EXPECT_GT(v.interval_low, -0.005);
}

}  // namespace
}  // namespace ct::lab
