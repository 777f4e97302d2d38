#pragma once
// Elasticity (docs/lab.md, step 4): how val_bpb responds to more training, measured locally. Runs of one
// recipe at several budgets (or step counts) are grouped into levels, sorted by x = ln(steps) (or
// ln(tokens)); each pair of adjacent levels is one range with its own ordinary-least-squares line
// through every run of the two levels, y = a + slope * x, and the slope's standard error
// sqrt(s^2 / Sxx), s^2 = RSS / (n - 2) (undefined with one run per level: n = 2).
//
// A speed-up of p% gives (1 + p/100) times the steps in the same budget, so x grows by ln(1 + p/100)
// and the expected change of val_bpb is
//   delta_bpb = slope * ln(1 + p/100),   standard error = se(slope) * ln(1 + p/100),
// with the interval delta_bpb +- t_{(1+c)/2, n-2} * standard error, using the slope of the range
// that holds the operating point (by default the largest level: the full budget).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lab/statistics.h"

namespace ct::lab {

struct ElasticityPoint {
  double level = 0;  // the budget in seconds (or the step count) that groups runs
  double x = 0;      // ln(steps) or ln(tokens)
  double y = 0;      // val_bpb
  int64_t run_id = 0;
};

struct ElasticityLevel {
  double level = 0;
  double mean_x = 0, mean_y = 0;
  int runs = 0;
};

struct ElasticityRange {
  ElasticityLevel low, high;
  LinearFit fit;
};

struct ElasticityFit {
  std::vector<ElasticityPoint> points;
  std::vector<ElasticityLevel> levels;  // sorted by mean_x
  std::vector<ElasticityRange> ranges;  // levels.size() - 1
};

// Needs at least two levels with distinct x.
ElasticityFit fit_elasticity(std::vector<ElasticityPoint> points);

struct SpeedupEffect {
  double speedup_percent = 0;
  size_t range_index = 0;
  double log_gain = 0;  // ln(1 + p/100)
  double delta = 0;
  std::optional<double> standard_error, low, high;
  bool beyond_range = false;  // the shifted operating point leaves the range whose slope was used
};

// `operating_x` is ln(steps) of the operating point; the range used is the one with
// low.mean_x <= operating_x < high.mean_x (the first or last range outside the measured span).
SpeedupEffect speedup_effect(const ElasticityFit& fit, double speedup_percent, double operating_x,
                             double confidence);

}  // namespace ct::lab
