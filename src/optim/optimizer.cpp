#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "backend/parallel/shard_plan.h"
#include "optim/schedule.h"
#include "util/error.h"

namespace ct {

namespace {
std::vector<Parameter*> matrices_of(GPT& model) {
  std::vector<Parameter*> out;
  for (Parameter& p : model.parameters())
    if (p.spec.group == ParamGroup::matrix) out.push_back(&p);
  return out;
}

std::vector<AdamW::Group> adam_groups_of(GPT& model, const OptimizerConfig& c) {
  check(c.adamw_lr_reference_width > 0, "optimizer: adamw_lr_reference_width must be positive");
  // AdamW learning rates scale as 1/sqrt(width), tuned at the reference width (nanochat).
  const double width_scale = std::pow(static_cast<double>(model.config().n_embd) / c.adamw_lr_reference_width, -0.5);
  // A group's own beta2 or weight decay where the recipe gives one (>= 0), else the shared value.
  const auto own = [](double group_value, double shared) { return group_value >= 0 ? group_value : shared; };
  std::vector<AdamW::Group> out;
  for (Parameter& p : model.parameters()) {
    switch (p.spec.group) {
      case ParamGroup::embedding:
        out.push_back({&p, c.embedding_lr * width_scale, c.adam_beta1, own(c.embedding_adam_beta2, c.adam_beta2),
                       own(c.embedding_weight_decay, c.weight_decay)});
        break;
      case ParamGroup::lm_head:
        out.push_back({&p, c.unembedding_lr * width_scale, c.adam_beta1, own(c.unembedding_adam_beta2, c.adam_beta2),
                       own(c.unembedding_weight_decay, c.weight_decay)});
        break;
      case ParamGroup::resid_scalars:
        out.push_back({&p, c.resid_scalar_lr, c.adam_beta1, c.adam_beta2, c.resid_scalar_weight_decay});
        break;
      case ParamGroup::x0_scalars:
        out.push_back({&p, c.x0_scalar_lr, c.x0_scalar_beta1, c.adam_beta2, 0.0});
        break;
      case ParamGroup::matrix: break;  // Muon's
    }
  }
  return out;
}
}  // namespace

Optimizer::Optimizer(GPT& model, const OptimizerConfig& config)
    : model_(&model),
      config_(config),
      muon_(model.backend(), matrices_of(model), config),
      adamw_(model.backend(), adam_groups_of(model, config), config) {
  const Backend& be = model.backend();
  if (!config.sharded || be.world_size() == 1) return;
  // Muon's matrices balanced by Newton-Schulz's cost, AdamW's parameters by size (an elementwise
  // update), each set over every process (backend/parallel/shard_plan.h).
  std::vector<double> ns_costs, sizes;
  for (const Parameter* p : matrices_of(model)) ns_costs.push_back(newton_schulz_cost(p->spec.shape[0], p->spec.shape[1]));
  for (const AdamW::Group& g : adamw_.groups()) sizes.push_back(static_cast<double>(g.param->spec.shape.numel()));
  muon_owner_ = assign_owners(ns_costs, be.world_size());
  adamw_owner_ = assign_owners(sizes, be.world_size());
  for (int owner : muon_owner_) muon_owned_.push_back(owner == be.rank());
  for (int owner : adamw_owner_) adamw_owned_.push_back(owner == be.rank());
}

GradientCheck Optimizer::check_gradients() {
  constexpr int kFirstSlot = 0;
  queue_gradient_norms(kFirstSlot);
  return gradient_check_from(model_->backend().read_value_slots(kFirstSlot + gradient_slots()), kFirstSlot);
}

void Optimizer::queue_gradient_norms(int first_slot) {
  int slot = first_slot;
  const GPT& model = *model_;  // const access: reading gradients leaves the weights' compute copies current
  for (const Parameter& p : model.parameters()) model_->backend().sum_squares_to_slot(slot++, p.grad, false);
}

GradientCheck Optimizer::gradient_check_from(const std::vector<double>& slot_values, int first_slot) const {
  check(first_slot >= 0 && static_cast<size_t>(first_slot + gradient_slots()) <= slot_values.size(),
        "optimizer: ", slot_values.size(), " slot values cannot hold the gradient norms from slot ", first_slot);
  GradientCheck result;
  double total = 0.0;
  size_t slot = static_cast<size_t>(first_slot);
  for (const Parameter& p : static_cast<const GPT&>(*model_).parameters()) {
    const double sq = slot_values[slot++];
    if (!std::isfinite(sq)) {
      if (result.first_nonfinite.empty()) result.first_nonfinite = p.spec.name;
      ++result.nonfinite_tensors;
    }
    total += sq;
  }
  result.norm = std::sqrt(total);
  return result;
}

void Optimizer::step(const StepSchedule& at, double grad_norm) {
  check(std::isfinite(grad_norm), "optimizer: refusing a step with a non-finite gradient norm");
  if (config_.grad_clip > 0) {
    const double coef = config_.grad_clip / (grad_norm + 1e-6);
    // With graph regions the op sequence must not depend on the data: scale by min(1, coef) always.
    const bool fixed_sequence = model_->backend().supports_graphs();
    if (coef < 1.0 || fixed_sequence)
      for (Parameter& p : model_->parameters()) model_->backend().scale(p.grad, std::min(coef, 1.0));
  }
  muon_.step(at.lr_factor, muon_momentum_at(config_, steps_taken_, at.warmdown_position),
             muon_weight_decay_at(config_, at.progress), muon_owned_);
  adamw_.step(at.lr_factor, steps_taken_ + 1, adamw_owned_);
  if (sharded()) {  // each owner's new weights to every process
    std::vector<Tensor> values;
    std::vector<int> roots;
    const std::vector<Parameter*> matrices = matrices_of(*model_);
    for (size_t i = 0; i < matrices.size(); ++i) {
      values.push_back(matrices[i]->value.tensor());
      roots.push_back(muon_owner_[i]);
    }
    for (size_t i = 0; i < adamw_.groups().size(); ++i) {
      values.push_back(adamw_.groups()[i].param->value.tensor());
      roots.push_back(adamw_owner_[i]);
    }
    model_->backend().broadcast(values, roots);
  }
  // the matmul copies of the weights, now: the same ops every step (inside the optimizer's graph region)
  model_->refresh_compute_weights();
  ++steps_taken_;
}

std::vector<std::pair<std::string, const Buffer*>> Optimizer::state() const {
  auto out = muon_.state();
  for (auto& s : adamw_.state()) out.push_back(s);
  return out;
}

void Optimizer::gather_state() {
  if (!sharded()) return;
  // state(): Muon's momentum per matrix, then AdamW's two moments per group
  std::vector<Tensor> tensors;
  std::vector<int> roots;
  const auto all = state();
  size_t k = 0;
  for (int owner : muon_owner_) {
    tensors.push_back(all[k++].second->tensor());
    roots.push_back(owner);
  }
  for (int owner : adamw_owner_)
    for (int moment = 0; moment < 2; ++moment) {
      tensors.push_back(all[k++].second->tensor());
      roots.push_back(owner);
    }
  model_->backend().broadcast(tensors, roots);
}

double Optimizer::adamw_lr(const std::string& param_name) const {
  for (const AdamW::Group& g : adamw_.groups())
    if (g.param->spec.name == param_name) return g.lr;
  fail("optimizer: '", param_name, "' is not an AdamW parameter");
}

}  // namespace ct
