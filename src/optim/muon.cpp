#include "optim/muon.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ct {

namespace {

// Elements [offset, offset + shape.numel()) of a 1-D buffer, seen with `shape` (range-checked).
Tensor slice(const Buffer& buffer, int64_t offset, const Shape& shape) {
  return buffer.tensor().rows(offset, offset + shape.numel()).reshaped(shape);
}

// The scratch holds at least this many elements, so that cpu-small's 24 matrices (3.1 M elements)
// go to the backend's newton_schulz_many in one call.
constexpr int64_t kMinScratchElements = int64_t{1} << 22;

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
    const int64_t scratch = std::max(largest, kMinScratchElements);
    update_scratch_ = Buffer(backend, {scratch}, DType::f32);
    ortho_scratch_ = Buffer(backend, {scratch}, DType::f32);
  }
}

// In groups of consecutive matrices that fit the scratch: every momentum, then one newton_schulz_many
// over the group, then every update. Per matrix this is the order of docs/model.md; the grouping only
// lets the backend orthogonalise several matrices at once.
void Muon::step(double lr_factor, double momentum, double weight_decay, const std::vector<bool>& owned) {
  const int64_t capacity = update_scratch_.tensor().empty() ? 0 : update_scratch_.tensor().numel();
  std::vector<size_t> mine;  // the matrices this process updates
  for (size_t i = 0; i < params_.size(); ++i)
    if (owned.empty() || owned[i]) mine.push_back(i);
  for (size_t begin = 0; begin < mine.size();) {
    std::vector<Tensor> updates, orthogonal;
    size_t end = begin;
    for (int64_t used = 0; end < mine.size(); ++end) {
      const Shape& shape = params_[mine[end]]->spec.shape;
      if (end > begin && used + shape.numel() > capacity) break;
      updates.push_back(slice(update_scratch_, used, shape));
      orthogonal.push_back(slice(ortho_scratch_, used, shape));
      used += shape.numel();
    }
    // buf = mu buf + (1-mu) g;  u = (1-mu) g + mu buf  (Nesterov)
    for (size_t k = begin; k < end; ++k)
      backend_->muon_momentum(updates[k - begin], momentum_[mine[k]], params_[mine[k]]->grad, momentum);
    backend_->newton_schulz_many(orthogonal, updates, config_.muon_ns_steps, config_.muon_ns_a, config_.muon_ns_b,
                                 config_.muon_ns_c);
    for (size_t k = begin; k < end; ++k) {
      const Shape& shape = params_[mine[k]]->spec.shape;
      const double rows = static_cast<double>(shape[0]), cols = static_cast<double>(shape[1]);
      const double lr = config_.matrix_lr * lr_factor * std::sqrt(std::max(1.0, rows / cols));
      if (config_.muon_weight_decay > 0)
        backend_->muon_update(params_[mine[k]]->value, orthogonal[k - begin], lr, weight_decay);
      else
        backend_->axpby(params_[mine[k]]->value, -lr, orthogonal[k - begin], 1.0);
    }
    begin = end;
  }
}

std::vector<std::pair<std::string, const Buffer*>> Muon::state() const {
  std::vector<std::pair<std::string, const Buffer*>> out;
  for (size_t i = 0; i < params_.size(); ++i) out.emplace_back("muon.momentum/" + params_[i]->spec.name, &momentum_[i]);
  return out;
}

}  // namespace ct
