#pragma once
// The training optimizer of docs/model.md: Muon for the layers' matrices and AdamW for wte and lm_head,
// after global gradient-norm clipping. One call per optimizer step:
//
//   GradientCheck g = optimizer.check_gradients();   // norm, first non-finite tensor
//   if (g.finite()) optimizer.step(schedule_at(schedule, progress), g.norm);
//
// The state (momentum buffers, Adam moments, the step count) can be listed for a checkpoint and
// restored exactly.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/gpt.h"
#include "optim/adamw.h"
#include "optim/config.h"
#include "optim/muon.h"
#include "optim/schedule.h"

namespace ct {

struct GradientCheck {
  double norm = 0.0;               // sqrt of the sum over every gradient element of g^2 (in double)
  std::string first_nonfinite;     // the first parameter (in model order) whose gradient is NaN/Inf
  int64_t nonfinite_tensors = 0;   // how many parameters' gradients are
  bool finite() const { return first_nonfinite.empty(); }
};

class Optimizer {
 public:
  Optimizer(GPT& model, const OptimizerConfig& config);

  // Per-tensor sums of squares of the gradients: their total gives the norm, a non-finite one names
  // the first bad tensor. One wait for all of them (value slots, backend.h).
  GradientCheck check_gradients();
  // The same in two halves, for a step that reads every host value after one wait: queue the sums of
  // squares into value slots first_slot .. first_slot + parameter_count - 1, then read them.
  void queue_gradient_norms(int first_slot);
  GradientCheck gradient_check_from(const std::vector<double>& slot_values, int first_slot) const;
  int gradient_slots() const { return static_cast<int>(static_cast<const GPT&>(*model_).parameters().size()); }
  // Clips the gradients to config.grad_clip by the global norm (torch's clip_grad_norm_: scale by
  // clip / (norm + 1e-6) when that is below 1), then one Muon and one AdamW step with the schedule's
  // lr_factor. Muon's momentum follows steps_taken() and, with optimizer.muon_momentum_final, the
  // schedule's warmdown_position; its cautious weight decay (optimizer.muon_weight_decay) the progress
  // (optim/schedule.h); Adam's bias correction follows steps_taken().
  // Ends by refreshing the model's matmul compute copies of the weights (GPT::refresh_compute_weights).
  // On a backend with graph regions the clipping scale is applied on every step (a factor of 1 when no
  // clipping is due), so that the sequence of ops never changes.
  void step(const StepSchedule& at, double grad_norm);

  int64_t steps_taken() const { return steps_taken_; }
  void set_steps_taken(int64_t steps) { steps_taken_ = steps; }
  const OptimizerConfig& config() const { return config_; }
  // Every state tensor with a stable name (f32).
  std::vector<std::pair<std::string, const Buffer*>> state() const;
  // Sharded (config.sharded with several processes): each process holds the state of the
  // parameters it owns only. gather_state() sends each owner's state to every process (a collective:
  // every process calls it), so that a checkpoint written by rank 0 holds all of it. Otherwise a no-op.
  bool sharded() const { return !muon_owner_.empty(); }
  void gather_state();
  // Learning rate of each AdamW parameter before the schedule's factor (for logs and tests).
  double adamw_lr(const std::string& param_name) const;

 private:
  GPT* model_;
  OptimizerConfig config_;
  Muon muon_;
  AdamW adamw_;
  int64_t steps_taken_ = 0;
  // Sharded: the process that owns each Muon matrix and each AdamW group (empty when not sharded),
  // and whether it is this one.
  std::vector<int> muon_owner_, adamw_owner_;
  std::vector<bool> muon_owned_, adamw_owned_;
};

}  // namespace ct
