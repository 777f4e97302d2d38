#pragma once
// AdamW (docs/model.md) with bias correction, each parameter with its own base learning rate, betas and
// weight decay (the recipe's shared ones unless a group overrides them, frontier.md 2.5):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   p -= lr * lr_factor * (wd p + (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps))
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "model/parameters.h"
#include "optim/config.h"

namespace ct {

class AdamW {
 public:
  struct Group {
    Parameter* param;
    double lr;  // before the schedule's factor
    double beta1, beta2, weight_decay;
  };
  AdamW(Backend& backend, std::vector<Group> groups, const OptimizerConfig& config);
  // One update; step is 1-based (the bias correction's t). With `owned` (one flag per group), of
  // the owned groups only (a sharded optimizer).
  void step(double lr_factor, int64_t step, const std::vector<bool>& owned = {});
  const std::vector<Group>& groups() const { return groups_; }
  // "adamw.exp_avg/<name>" and "adamw.exp_avg_sq/<name>" for checkpoints.
  std::vector<std::pair<std::string, const Buffer*>> state() const;

 private:
  Backend* backend_;
  std::vector<Group> groups_;
  OptimizerConfig config_;
  std::vector<Buffer> exp_avg_, exp_avg_sq_;
};

}  // namespace ct
