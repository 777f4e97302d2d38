#pragma once
// One optimizer step's device work, shared by the trainer and the throughput bench: zero the
// gradients, forward and backward over the micro-batches, the gradient check, the optimizer step.
//
// The host waits once per step: the micro-batches' loss sums and every gradient's sum of squares go
// to value slots (backend.h) and are read together. With `graphs` on a backend that records graph
// regions (cuda), the forward/backward part and the optimizer part are regions "forward_backward"
// and "optimizer": recorded on the second step (the first runs eagerly: allocations, cuBLASLt
// heuristics, kernel set-up), replayed on every later step with that step's tokens, learning rate
// and momentum. Backends without graphs run the same calls eagerly (the CPU backend's results are
// the same as calling forward / check_gradients / step directly).
#include <cstdint>
#include <functional>
#include <vector>

#include "model/gpt.h"
#include "optim/optimizer.h"

namespace ct {

struct StepMeasurement {
  std::vector<double> micro_losses;  // mean loss of each micro-batch (0 when it had no target >= 0)
  GradientCheck gradients;
};

class TrainStep {
 public:
  // Micro-batches of `rows` sequences of `seq_len` tokens, `micro_steps` of them per step.
  TrainStep(GPT& model, Optimizer& optimizer, int64_t micro_steps, int64_t rows, int64_t seq_len, bool graphs);

  // next_batch(inputs, targets) fills one micro-batch (rows * seq_len ids each); it is called
  // micro_steps times before any device work is queued.
  using BatchSource = std::function<void(std::vector<int32_t>& inputs, std::vector<int32_t>& targets)>;
  StepMeasurement forward_backward(const BatchSource& next_batch);
  // Clipping, Muon and AdamW with the schedule's factor (Optimizer::step), after forward_backward.
  void apply(double lr_factor, double grad_norm);
  bool uses_graphs() const;

 private:
  bool regions_now() const;
  GPT& model_;
  Optimizer& optimizer_;
  int64_t micro_steps_, rows_, seq_len_;
  bool graphs_;
  int64_t steps_ = 0;  // forward_backward calls so far
  std::vector<std::vector<int32_t>> inputs_, targets_;
};

}  // namespace ct
