#include "optim/adamw.h"

#include "util/error.h"

namespace ct {

AdamW::AdamW(Backend& backend, std::vector<Group> groups, const OptimizerConfig& config)
    : backend_(&backend), groups_(std::move(groups)), config_(config) {
  for (const Group& g : groups_) {
    check(g.param->value.dtype() == DType::f32, "AdamW: parameter ", g.param->spec.name, " must be f32, got ",
          dtype_name(g.param->value.dtype()));
    exp_avg_.emplace_back(backend, g.param->spec.shape, DType::f32);
    exp_avg_sq_.emplace_back(backend, g.param->spec.shape, DType::f32);
  }
}

void AdamW::step(double lr_factor, int64_t step, const std::vector<bool>& owned) {
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (!owned.empty() && !owned[i]) continue;
    Parameter& p = *groups_[i].param;
    backend_->adamw_update(p.value, p.grad, exp_avg_[i], exp_avg_sq_[i], groups_[i].lr * lr_factor, groups_[i].beta1,
                           groups_[i].beta2, config_.adam_eps, groups_[i].weight_decay, step);
  }
}

std::vector<std::pair<std::string, const Buffer*>> AdamW::state() const {
  std::vector<std::pair<std::string, const Buffer*>> out;
  for (size_t i = 0; i < groups_.size(); ++i) {
    out.emplace_back("adamw.exp_avg/" + groups_[i].param->spec.name, &exp_avg_[i]);
    out.emplace_back("adamw.exp_avg_sq/" + groups_[i].param->spec.name, &exp_avg_sq_[i]);
  }
  return out;
}

}  // namespace ct
