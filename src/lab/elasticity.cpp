#include "lab/elasticity.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "util/error.h"

namespace ct::lab {

ElasticityFit fit_elasticity(std::vector<ElasticityPoint> points) {
  ElasticityFit fit;
  std::map<double, std::vector<const ElasticityPoint*>> by_level;
  for (const auto& p : points) by_level[p.level].push_back(&p);
  for (const auto& [level, members] : by_level) {
    ElasticityLevel l;
    l.level = level;
    l.runs = static_cast<int>(members.size());
    for (const auto* p : members) {
      l.mean_x += p->x;
      l.mean_y += p->y;
    }
    l.mean_x /= l.runs;
    l.mean_y /= l.runs;
    fit.levels.push_back(l);
  }
  std::sort(fit.levels.begin(), fit.levels.end(),
            [](const ElasticityLevel& a, const ElasticityLevel& b) { return a.mean_x < b.mean_x; });
  check(fit.levels.size() >= 2, "elasticity: needs runs at 2 or more budgets (or step counts), got ",
        fit.levels.size());
  for (size_t i = 0; i + 1 < fit.levels.size(); ++i) {
    ElasticityRange range{fit.levels[i], fit.levels[i + 1], {}};
    std::vector<double> x, y;
    for (const auto& p : points)
      if (p.level == range.low.level || p.level == range.high.level) {
        x.push_back(p.x);
        y.push_back(p.y);
      }
    range.fit = fit_line(x, y);
    fit.ranges.push_back(range);
  }
  fit.points = std::move(points);
  return fit;
}

SpeedupEffect speedup_effect(const ElasticityFit& fit, double speedup_percent, double operating_x,
                             double confidence) {
  check(speedup_percent > -100, "speed-up must be above -100%, got ", speedup_percent, "%");
  check(!fit.ranges.empty(), "elasticity: no ranges to use");
  SpeedupEffect effect;
  effect.speedup_percent = speedup_percent;
  effect.log_gain = std::log1p(speedup_percent / 100.0);
  size_t index = fit.ranges.size() - 1;
  for (size_t i = 0; i < fit.ranges.size(); ++i)
    if (operating_x < fit.ranges[i].high.mean_x) {
      index = i;
      break;
    }
  const ElasticityRange& range = fit.ranges[index];
  effect.range_index = index;
  double shifted = operating_x + effect.log_gain;
  effect.beyond_range = operating_x < range.low.mean_x || shifted > range.high.mean_x ||
                        shifted < range.low.mean_x;
  effect.delta = range.fit.slope * effect.log_gain;
  if (std::isfinite(range.fit.slope_standard_error)) {
    double se = range.fit.slope_standard_error * std::fabs(effect.log_gain);
    double t = student_t_quantile(0.5 + confidence / 2.0, range.fit.df());
    effect.standard_error = se;
    effect.low = effect.delta - t * se;
    effect.high = effect.delta + t * se;
  }
  return effect;
}

}  // namespace ct::lab
