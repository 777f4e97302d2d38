#include "lab/verdict.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>

#include "lab/statistics.h"
#include "util/error.h"
#include "util/text_format.h"

namespace ct::lab {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double std_or_nan(const std::vector<double>& values) { return values.size() >= 2 ? sample_std(values) : kNaN; }

std::map<int64_t, double> per_seed_means(const ArmSample& arm) {
  std::map<int64_t, std::vector<double>> by_seed;
  for (size_t i = 0; i < arm.values.size(); ++i) by_seed[arm.seeds[i]].push_back(arm.values[i]);
  std::map<int64_t, double> means;
  for (const auto& [seed, values] : by_seed) means[seed] = mean(values);
  return means;
}

std::string fmt(double v) { return format_fixed(v, 5); }

Json number_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

Json VerdictNumbers::to_json() const {
  return Json{{"verdict", verdict},
              {"design", design},
              {"metric", metric},
              {"confidence", confidence},
              {"power", power},
              {"effect", effect},
              {"standard_error", standard_error},
              {"df", df},
              {"interval", {interval_low, interval_high}},
              {"mde", number_or_null(mde)},
              {"threshold", threshold},
              {"comparison", comparison},
              {"treatment", {{"mean", treatment_mean}, {"std", number_or_null(treatment_std)}, {"runs", treatment_runs}}},
              {"control", {{"mean", control_mean}, {"std", number_or_null(control_std)}, {"runs", control_runs}}},
              {"pairs", pairs},
              {"reason", reason}};
}

VerdictNumbers decide(const DecisionRule& rule, double confidence, double power, const ArmSample& treatment,
                      const ArmSample& control) {
  check(!treatment.values.empty(), "verdict: arm ", treatment.arm, " has no runs with ", rule.metric);
  check(!control.values.empty(), "verdict: arm ", control.arm, " has no runs with ", rule.metric);
  VerdictNumbers v;
  v.metric = rule.metric;
  v.confidence = confidence;
  v.power = power;
  v.threshold = rule.threshold;
  v.comparison = rule.comparison_text();
  v.treatment_runs = static_cast<int>(treatment.values.size());
  v.control_runs = static_cast<int>(control.values.size());
  v.treatment_mean = mean(treatment.values);
  v.control_mean = mean(control.values);
  v.treatment_std = std_or_nan(treatment.values);
  v.control_std = std_or_nan(control.values);

  auto treatment_seeds = per_seed_means(treatment), control_seeds = per_seed_means(control);
  std::set<int64_t> ts, cs;
  for (const auto& [s, m] : treatment_seeds) ts.insert(s);
  for (const auto& [s, m] : control_seeds) cs.insert(s);
  if (ts == cs && ts.size() >= 2) {
    v.design = "paired";
    std::vector<double> differences;
    for (const auto& [seed, m] : treatment_seeds) differences.push_back(m - control_seeds.at(seed));
    v.pairs = static_cast<int>(differences.size());
    v.effect = mean(differences);
    v.standard_error = sample_std(differences) / std::sqrt(static_cast<double>(differences.size()));
    v.df = static_cast<double>(differences.size()) - 1.0;
  } else {
    v.design = "unpaired";
    int nt = v.treatment_runs, nc = v.control_runs;
    check(nt + nc - 2 >= 1, "verdict: needs at least 3 runs in all (2 in one arm) to estimate the noise; arm ",
          treatment.arm, " has ", nt, ", arm ", control.arm, " has ", nc);
    double sst = nt >= 2 ? (nt - 1) * v.treatment_std * v.treatment_std : 0.0;
    double ssc = nc >= 2 ? (nc - 1) * v.control_std * v.control_std : 0.0;
    double pooled = std::sqrt((sst + ssc) / (nt + nc - 2));
    v.effect = v.treatment_mean - v.control_mean;
    v.standard_error = pooled * std::sqrt(1.0 / nt + 1.0 / nc);
    v.df = nt + nc - 2.0;
  }
  double t = student_t_quantile(0.5 + confidence / 2.0, v.df);
  v.interval_low = v.effect - t * v.standard_error;
  v.interval_high = v.effect + t * v.standard_error;
  v.mde = minimum_detectable_effect(v.standard_error, v.df, confidence, power);
  bool low_ok = rule.satisfied_by(v.interval_low), high_ok = rule.satisfied_by(v.interval_high);
  std::string interval = "[" + fmt(v.interval_low) + ", " + fmt(v.interval_high) + "]";
  std::string threshold = v.comparison + " " + fmt(rule.threshold);
  if (low_ok && high_ok) {
    v.verdict = "accept";
    v.reason = "the whole " + str(confidence * 100) + "% interval " + interval + " of d is " + threshold;
  } else if (!low_ok && !high_ok) {
    v.verdict = "reject";
    v.reason = "no part of the " + str(confidence * 100) + "% interval " + interval + " of d is " + threshold;
  } else {
    v.verdict = "inconclusive";
    v.reason = "the " + str(confidence * 100) + "% interval " + interval + " straddles the threshold " +
               fmt(rule.threshold) + ": |d - threshold| = " + fmt(std::fabs(v.effect - rule.threshold)) +
               " is below what these runs resolve (MDE " + fmt(v.mde) + " at power " + str(power) + ")";
  }
  return v;
}

}  // namespace ct::lab
