#pragma once
// Schedules. progress is step / steps in a run by steps, and training-clock seconds / budget in a
// timed run (docs/harness.md), so the warmdown ends where the run does.
#include <cstdint>

#include "optim/config.h"

namespace ct {

// The learning-rate factor of ScheduleConfig at `progress` (clamped to [0, 1]).
double lr_factor(const ScheduleConfig& schedule, double progress);

// How far `progress` is into the lr warmdown: 0 up to its start, 1 at its end (progress 1).
double warmdown_position(const ScheduleConfig& schedule, double progress);

// Where an optimizer step falls in its run's schedule: what Optimizer::step reads of it.
struct StepSchedule {
  double lr_factor = 1.0;          // lr_factor(schedule, progress)
  double warmdown_position = 0.0;  // warmdown_position(schedule, progress)
  double progress = 0.0;           // in [0, 1]
};
StepSchedule schedule_at(const ScheduleConfig& schedule, double progress);

// lambda_t of Muon's cautious weight decay at `progress` (clamped to [0, 1]): muon_weight_decay times
// (1 + cos(pi progress)) / 2, a cosine from lambda_0 to 0 over the run (frontier.md 2.4).
double muon_weight_decay_at(const OptimizerConfig& config, double progress);

// Muon's momentum for the optimizer step that follows `steps_taken` earlier steps at
// `warmdown_position` (above): linear from muon_momentum_start to muon_momentum over
// muon_momentum_warmup_steps (nanochat's warm-up, which wins while it lasts); then muon_momentum, or,
// with muon_momentum_final set, linear from muon_momentum to it over the warmdown.
double muon_momentum_at(const OptimizerConfig& config, int64_t steps_taken, double warmdown_position = 0.0);

}  // namespace ct
