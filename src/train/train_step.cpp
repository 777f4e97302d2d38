#include "train/train_step.h"

#include "util/error.h"

namespace ct {

TrainStep::TrainStep(GPT& model, Optimizer& optimizer, int64_t micro_steps, int64_t rows, int64_t seq_len, bool graphs)
    : model_(model),
      optimizer_(optimizer),
      micro_steps_(micro_steps),
      rows_(rows),
      seq_len_(seq_len),
      graphs_(graphs),
      inputs_(static_cast<size_t>(micro_steps)),
      targets_(static_cast<size_t>(micro_steps)) {
  check(micro_steps > 0 && rows > 0 && seq_len > 0, "TrainStep: expected positive micro-steps, rows and length");
  check(micro_steps + optimizer.gradient_slots() <= Backend::kValueSlots, "TrainStep: ", micro_steps,
        " micro-batches and ", optimizer.gradient_slots(), " parameters need more than the backend's ",
        Backend::kValueSlots, " value slots");
}

bool TrainStep::uses_graphs() const { return graphs_ && model_.backend().supports_graphs(); }

bool RegionSchedule::record(const std::string& region) { return calls_[region]++ > 0; }

bool TrainStep::as_region(const char* region) {
  const bool later_call = schedule_.record(region);  // counted whether or not graphs are on
  return uses_graphs() && later_call;
}

StepMeasurement TrainStep::forward_backward(const BatchSource& next_batch) {
  Backend& be = model_.backend();
  for (int64_t m = 0; m < micro_steps_; ++m) {
    next_batch(inputs_[static_cast<size_t>(m)], targets_[static_cast<size_t>(m)]);
    check(static_cast<int64_t>(inputs_[static_cast<size_t>(m)].size()) == rows_ * seq_len_ &&
              inputs_[static_cast<size_t>(m)].size() == targets_[static_cast<size_t>(m)].size(),
          "TrainStep: a micro-batch must hold ", rows_ * seq_len_, " inputs and targets");
  }
  const bool regions = as_region("forward_backward");
  std::vector<int64_t> valid(static_cast<size_t>(micro_steps_));
  if (regions) be.begin_graph("forward_backward");
  model_.zero_grad();
  for (int64_t m = 0; m < micro_steps_; ++m) {
    // slot m: the sum of micro-batch m's losses
    valid[static_cast<size_t>(m)] = model_.forward_queued(inputs_[static_cast<size_t>(m)].data(),
                                                          targets_[static_cast<size_t>(m)].data(), rows_, seq_len_,
                                                          static_cast<int>(m), false);
    model_.backward(1.0 / static_cast<double>(micro_steps_));
  }
  const int first_gradient_slot = static_cast<int>(micro_steps_);
  optimizer_.queue_gradient_norms(first_gradient_slot);
  if (regions) be.end_graph();
  const std::vector<double> values = be.read_value_slots(first_gradient_slot + optimizer_.gradient_slots());
  StepMeasurement result;
  for (int64_t m = 0; m < micro_steps_; ++m) {
    const int64_t n = valid[static_cast<size_t>(m)];
    result.micro_losses.push_back(n > 0 ? values[static_cast<size_t>(m)] / static_cast<double>(n) : 0.0);
  }
  result.gradients = optimizer_.gradient_check_from(values, first_gradient_slot);
  return result;
}

void TrainStep::apply(double lr_factor, double grad_norm) {
  Backend& be = model_.backend();
  const bool regions = as_region("optimizer");
  if (regions) be.begin_graph("optimizer");
  optimizer_.step(lr_factor, grad_norm);
  if (regions) be.end_graph();
}

}  // namespace ct
