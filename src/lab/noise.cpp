#include "lab/noise.h"

#include <cmath>
#include <map>

#include "lab/statistics.h"
#include "util/error.h"

namespace ct::lab {

NoiseEstimate estimate_noise(const std::vector<SeededValue>& values) {
  check(!values.empty(), "noise: no runs with a value");
  std::map<int64_t, std::vector<double>> by_seed;
  for (const auto& v : values) by_seed[v.seed].push_back(v.value);

  NoiseEstimate noise;
  noise.runs = static_cast<int>(values.size());
  noise.seeds = static_cast<int>(by_seed.size());
  std::vector<double> all, seed_means;
  double within_sum_squares = 0, inverse_repeats = 0;
  int within_df = 0;
  for (const auto& [seed, runs] : by_seed) {
    double m = mean(runs);
    seed_means.push_back(m);
    inverse_repeats += 1.0 / static_cast<double>(runs.size());
    for (double v : runs) {
      all.push_back(v);
      within_sum_squares += (v - m) * (v - m);
    }
    within_df += static_cast<int>(runs.size()) - 1;
  }
  noise.mean = mean(all);
  noise.harmonic_repeats = static_cast<double>(noise.seeds) / inverse_repeats;
  if (noise.seeds >= 2) {
    noise.seed_spread = sample_std(seed_means);
    noise.seed_df = noise.seeds - 1;
  }
  if (within_df > 0) {
    noise.repeat_std = std::sqrt(within_sum_squares / within_df);
    noise.repeat_df = within_df;
    noise.pair_noise = std::sqrt(2.0) * *noise.repeat_std;
  }
  if (noise.seed_spread) {
    double rep2 = noise.repeat_std ? *noise.repeat_std * *noise.repeat_std : 0.0;
    noise.single_run_std =
        std::sqrt(*noise.seed_spread * *noise.seed_spread + (1.0 - 1.0 / noise.harmonic_repeats) * rep2);
  }
  return noise;
}

MdeRow mde_for(const NoiseEstimate& noise, int n, double confidence, double power) {
  check(n >= 2, "minimum detectable effect: needs at least 2 runs per arm, got ", n);
  MdeRow row;
  row.runs_per_arm = n;
  if (noise.single_run_std)
    row.unpaired = minimum_detectable_effect(*noise.single_run_std * std::sqrt(2.0 / n), 2.0 * n - 2.0,
                                             confidence, power);
  if (noise.pair_noise)
    row.paired = minimum_detectable_effect(*noise.pair_noise / std::sqrt(static_cast<double>(n)), n - 1.0,
                                           confidence, power);
  return row;
}

}  // namespace ct::lab
