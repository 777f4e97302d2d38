#pragma once
// Noise is measured, not assumed (docs/lab.md, step 3). From runs of one configuration (same inputs,
// seeds varying, some seeds repeated):
//   seed spread   s_seed = sample std over seeds of the per-seed mean value (k seeds, df k - 1);
//                 with one run per seed it is the plain sample std of the runs.
//   repeat std    s_rep  = pooled within-seed std: sqrt( sum_s sum_i (x_si - xbar_s)^2 / sum_s (n_s - 1) ),
//                 over the seeds that were run more than once.
//   pair noise    s_pair = sqrt(2) * s_rep: the std of the difference of two runs with the same seed
//                 (with exactly 2 repeats per seed it equals sqrt(mean of squared differences)).
//   single run    s_run  = sqrt(s_seed^2 + (1 - 1/r) * s_rep^2), r the harmonic mean of repeats per
//                 seed: Var(mean of r repeats) = sigma_seed^2 + sigma_rep^2 / r, so this estimates the
//                 spread of one run with a fresh seed (= s_seed when no seed was repeated).
// Minimum detectable effect for n runs per arm (statistics.h, t version):
//   different seeds in the two arms:   MDE = (t_{1-a/2,2n-2} + t_{power,2n-2}) * s_run  * sqrt(2/n)
//   same seeds in both arms (paired):  MDE = (t_{1-a/2,n-1}  + t_{power,n-1})  * s_pair / sqrt(n)
// (the paired figure holds for a change that leaves the numerics alone, such as a pure speed-up:
// a change of numerics adds its own seed-by-change spread to the differences).
#include <cstdint>
#include <optional>
#include <vector>

namespace ct::lab {

struct SeededValue {
  int64_t seed = 0;
  double value = 0;
};

struct NoiseEstimate {
  int runs = 0;
  int seeds = 0;
  double mean = 0;
  std::optional<double> seed_spread;  // needs >= 2 seeds
  int seed_df = 0;
  std::optional<double> repeat_std;  // needs a repeated seed
  int repeat_df = 0;
  std::optional<double> pair_noise;
  double harmonic_repeats = 1;
  std::optional<double> single_run_std;
};

NoiseEstimate estimate_noise(const std::vector<SeededValue>& values);

struct MdeRow {
  int runs_per_arm = 0;
  std::optional<double> unpaired;  // different seeds per arm, from single_run_std
  std::optional<double> paired;    // same seeds in both arms, from pair_noise
};

MdeRow mde_for(const NoiseEstimate& noise, int runs_per_arm, double confidence, double power);

}  // namespace ct::lab
