#pragma once
// Applying an experiment's decision rule to its runs (docs/lab.md, step 6).
//
// d = mean(treatment) - mean(control) of the rule's metric, estimated with one of two designs:
//   paired    both arms ran the same set of seeds (2 or more): per seed, the difference of the
//             arms' means; d = mean of the differences, se = s_d / sqrt(k), df = k - 1.
//   unpaired  otherwise: Student's two-sample t with pooled variance,
//             s_p^2 = ((n_t - 1) s_t^2 + (n_c - 1) s_c^2) / (n_t + n_c - 2),
//             se = s_p sqrt(1/n_t + 1/n_c), df = n_t + n_c - 2 (needs df >= 1).
// Interval: d +- t_{(1+c)/2, df} * se, c the rule's confidence.
// MDE = (t_{1-(1-c)/2, df} + t_{power, df}) * se: the smallest true effect these runs detect with the
// experiment's power.
// Verdict: accept when the whole interval satisfies the rule's comparison with its threshold,
// reject when the whole interval violates it, inconclusive when it straddles the threshold (the
// difference between the observed effect and the threshold is below what the noise resolves).
#include <cstdint>
#include <string>
#include <vector>

#include "lab/decision_rule.h"
#include "util/json.h"

namespace ct::lab {

struct ArmSample {
  std::string arm;
  std::vector<double> values;
  std::vector<int64_t> seeds;
  std::vector<int64_t> run_ids;
};

struct VerdictNumbers {
  std::string verdict;  // accept | reject | inconclusive
  std::string design;   // paired | unpaired
  std::string metric;
  double confidence = 0, power = 0;
  double effect = 0, standard_error = 0, df = 0;
  double interval_low = 0, interval_high = 0;
  double mde = 0;
  double threshold = 0;
  std::string comparison;
  double treatment_mean = 0, control_mean = 0;
  double treatment_std = 0, control_std = 0;  // NaN with one run
  int treatment_runs = 0, control_runs = 0, pairs = 0;
  std::string reason;
  Json to_json() const;
};

VerdictNumbers decide(const DecisionRule& rule, double confidence, double power, const ArmSample& treatment,
                      const ArmSample& control);

}  // namespace ct::lab
