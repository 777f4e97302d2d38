#include "optim/muon.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ct {

namespace {
Tensor first_elements(const Buffer& buffer, const Shape& shape) {
  Tensor t = buffer.tensor();
  t.shape = shape;
  return t;
}
}  // namespace

Muon::Muon(Backend& backend, std::vector<Parameter*> params, const OptimizerConfig& config)
    : backend_(&backend), params_(std::move(params)), config_(config) {
  int64_t largest = 0;
  for (Parameter* p : params_) {
    check(p->spec.shape.ndim == 2, "Muon: parameter ", p->spec.name, " is not a matrix");
    check(p->value.dtype() == DType::f32, "Muon: parameter ", p->spec.name, " must be f32, got ",
          dtype_name(p->value.dtype()));
    momentum_.emplace_back(backend, p->spec.shape, DType::f32);
    largest = std::max(largest, p->spec.shape.numel());
  }
  if (largest > 0) {
    update_scratch_ = Buffer(backend, {largest}, DType::f32);
    ortho_scratch_ = Buffer(backend, {largest}, DType::f32);
  }
}

void Muon::step(double lr_factor, double momentum) {
  for (size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = *params_[i];
    const Tensor u = first_elements(update_scratch_, p.spec.shape);
    const Tensor x = first_elements(ortho_scratch_, p.spec.shape);
    // buf = mu buf + (1-mu) g;  u = (1-mu) g + mu buf  (Nesterov)
    backend_->muon_momentum(u, momentum_[i], p.grad, momentum);
    backend_->newton_schulz(x, u, config_.muon_ns_steps, config_.muon_ns_a, config_.muon_ns_b, config_.muon_ns_c);
    const double rows = static_cast<double>(p.spec.shape[0]), cols = static_cast<double>(p.spec.shape[1]);
    const double lr = config_.matrix_lr * lr_factor * std::sqrt(std::max(1.0, rows / cols));
    backend_->axpby(p.value, -lr, x, 1.0);
  }
}

std::vector<std::pair<std::string, const Buffer*>> Muon::state() const {
  std::vector<std::pair<std::string, const Buffer*>> out;
  for (size_t i = 0; i < params_.size(); ++i) out.emplace_back("muon.momentum/" + params_[i]->spec.name, &momentum_[i]);
  return out;
}

}  // namespace ct
