#pragma once
// The decision rule of an experiment, written before any run (docs/lab.md, step 1), in a one-line
// language that people can read and the lab can apply:
//
//   accept if mean(B) - mean(A) < -0.005 at 95%
//   accept if mean(fast.val_bpb) - mean(base.val_bpb) <= 0.002
//   accept if mean(B.core) - mean(A.core) > 0 at 90%
//
// Grammar (keywords case-insensitive, spaces free):
//   rule       := "accept" "if" mean "-" mean comparison number [ "at" number "%" ]
//   mean       := "mean" "(" arm [ "." metric ] ")"
//   arm        := [A-Za-z0-9_]+        (the arm names used by lab run / lab add)
//   metric     := [A-Za-z0-9_]+        (val_bpb when absent; "core" or any numeric result.json field)
//   comparison := "<" | "<=" | ">" | ">="
// The effect is d = mean(first arm) - mean(second arm). "at C%" is the confidence of the interval
// on d (the experiment's --confidence when absent). Applying it (verdict.h): accept when the whole
// confidence interval of d satisfies the comparison with the threshold, reject when the whole
// interval violates it, inconclusive when the interval straddles the threshold.
#include <optional>
#include <string>
#include <string_view>

#include "util/json.h"

namespace ct::lab {

enum class Comparison { less, less_equal, greater, greater_equal };

struct DecisionRule {
  std::string text;  // as written
  std::string metric = "val_bpb";
  std::string treatment_arm;  // the first mean
  std::string control_arm;    // the second mean
  Comparison comparison = Comparison::less;
  double threshold = 0;
  std::optional<double> confidence;  // from "at C%", as a fraction

  // True when `effect` satisfies "effect <comparison> threshold".
  bool satisfied_by(double effect) const;
  std::string comparison_text() const;
  // "accept if mean(B.val_bpb) - mean(A.val_bpb) < -0.005 at 95%" (confidence when known)
  std::string canonical(std::optional<double> confidence_fallback = std::nullopt) const;
  Json to_json() const;
};

// Parses a rule; a ct::Error names the column and what was expected there.
DecisionRule parse_decision_rule(std::string_view text);

}  // namespace ct::lab
