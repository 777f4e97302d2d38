#pragma once
// One optimizer step's device work, shared by the trainer and the throughput bench: zero the
// gradients, forward and backward over the micro-batches, the gradient check, the optimizer step.
//
// The host waits once per step: the micro-batches' loss sums and every gradient's sum of squares go
// to value slots (backend.h) and are read together. With `graphs` on a backend that records graph
// regions (cuda), the forward/backward part and the optimizer part are regions "forward_backward"
// and "optimizer": each recorded on its second call (its first runs eagerly: allocations, cuBLASLt
// heuristics, kernel set-up; RegionSchedule), replayed on every later one with that step's tokens,
// learning rate and momentum. Backends without graphs run the same calls eagerly (the CPU backend's results are
// the same as calling forward / check_gradients / step directly).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "optim/optimizer.h"

namespace ct {

// When a graph region may be recorded: never on its own first call, which runs eagerly (allocations,
// cuBLASLt's heuristic queries and workspace cudaMalloc must not happen under stream capture), and
// on every later one. Each region counts its own calls: the optimizer's first call comes after the
// first forward_backward, and must run eagerly all the same.
class RegionSchedule {
 public:
  // Counts a call of `region` and says whether it may run as a recorded region.
  bool record(const std::string& region);

 private:
  std::map<std::string, int64_t> calls_;
};

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
  // Whether this call of `region` runs as a recorded region (uses_graphs() and RegionSchedule).
  bool as_region(const char* region);
  GPT& model_;
  Optimizer& optimizer_;
  int64_t micro_steps_, rows_, seq_len_;
  bool graphs_;
  RegionSchedule schedule_;
  std::vector<std::vector<int32_t>> inputs_, targets_;
};

}  // namespace ct
