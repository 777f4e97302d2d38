#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ct {

double lr_factor(const ScheduleConfig& s, double progress) {
  const double p = std::clamp(progress, 0.0, 1.0);
  if (s.warmup_fraction > 0 && p < s.warmup_fraction) return p / s.warmup_fraction;
  if (s.warmdown_fraction <= 0 || p <= 1.0 - s.warmdown_fraction) return 1.0;
  const double remaining = (1.0 - p) / s.warmdown_fraction;  // 1 at the warmdown's start, 0 at the end
  return remaining + (1.0 - remaining) * s.final_lr_fraction;
}

double warmdown_position(const ScheduleConfig& s, double progress) {
  if (s.warmdown_fraction <= 0) return 0.0;
  const double p = std::clamp(progress, 0.0, 1.0);
  return std::clamp((p - (1.0 - s.warmdown_fraction)) / s.warmdown_fraction, 0.0, 1.0);
}

StepSchedule schedule_at(const ScheduleConfig& s, double progress) {
  const double p = std::clamp(progress, 0.0, 1.0);
  return {lr_factor(s, p), warmdown_position(s, p), p};
}

double muon_weight_decay_at(const OptimizerConfig& c, double progress) {
  const double p = std::clamp(progress, 0.0, 1.0);
  return c.muon_weight_decay * (1.0 + std::cos(std::numbers::pi * p)) / 2.0;
}

double muon_momentum_at(const OptimizerConfig& c, int64_t steps_taken, double warmdown_position) {
  if (c.muon_momentum_warmup_steps > 0 && steps_taken < c.muon_momentum_warmup_steps) {
    const double frac = static_cast<double>(steps_taken) / static_cast<double>(c.muon_momentum_warmup_steps);
    return (1.0 - frac) * c.muon_momentum_start + frac * c.muon_momentum;
  }
  if (c.muon_momentum_final <= 0 || warmdown_position <= 0) return c.muon_momentum;
  return c.muon_momentum + (c.muon_momentum_final - c.muon_momentum) * std::min(warmdown_position, 1.0);
}

}  // namespace ct
