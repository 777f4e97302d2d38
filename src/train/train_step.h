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
//
// Data parallel (backend.world_size() = W > 1; docs/parallel.md): each process runs its own
// micro-batches (the loader gives rank r the r-th of every W consecutive ones of the step), scaled
// 1/(its micro-batches); the gradients are summed over the processes and scaled 1/W by
// Backend::all_reduce_begin in buckets of kBucketBytes, each begun during the last micro-batch's
// backward pass as soon as its parameters' gradients are final (GPT::backward's `ready`), so the
// reduction overlaps the rest of the pass; all_reduce_end comes before the gradient check. The
// micro-batch losses are then gathered over the job's processes (ProcessGroup), so every process sees the
// step's M losses in the order one process would have run them, and the same gradients: every
// process applies the same update. With one micro-batch per process and W = 2 the gradients are
// bitwise those of one process running both (a + b, and powers-of-two scales, commute with rounding).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/parallel/process_group.h"
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
  // Mean loss of each micro-batch of the step, over every process (0 when it had no target >= 0):
  // micro_steps x world_size of them, in the order one process would run them.
  std::vector<double> micro_losses;
  GradientCheck gradients;
  // Data parallel: seconds this process waited for the gradient reduction after its backward pass
  // (the part the pass did not hide) and for the losses' gathering; 0 with one process.
  double reduction_wait_seconds = 0.0;
};

// The gradient buckets of a data-parallel step: parameters in the order backward finishes them
// (reverse index order), grouped by plan_buckets (backend/parallel/shard_plan.h).
class GradientBuckets {
 public:
  GradientBuckets(const std::vector<int64_t>& param_bytes, int64_t bucket_bytes);
  void reset() { next_ = 0; }  // a new backward pass
  // The buckets that became complete now that the parameters from index `first` on are final (and
  // were not returned before): each bucket's parameter indices, in the order backward finishes them.
  std::vector<std::vector<int>> complete_from(size_t first);
  size_t bucket_count() const { return buckets_.size(); }

 private:
  std::vector<std::vector<int>> buckets_;
  size_t next_ = 0;  // buckets returned so far
};

class TrainStep {
 public:
  // Gradient reductions are begun in buckets of about this many bytes (PyTorch DDP's 25 MB).
  static constexpr int64_t kBucketBytes = int64_t{25} << 20;

  // Micro-batches of `rows` sequences of `seq_len` tokens, `micro_steps` of them per step and process.
  // The backend's regions "forward_backward" and "optimizer" belong to one TrainStep at a time:
  // constructing one drops what an earlier one recorded there (its model may still be alive, so
  // no release() dropped it, and a replay of another model's recording is a mismatch), and the
  // destructor drops this one's.
  // `processes`: the job's processes (process_group.h) that the losses are gathered over; null alone.
  TrainStep(GPT& model, Optimizer& optimizer, ProcessGroup* processes, int64_t micro_steps, int64_t rows,
            int64_t seq_len, bool graphs);
  ~TrainStep();
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  // next_batch(inputs, targets) fills one micro-batch (rows * seq_len ids each); it is called
  // micro_steps times before any device work is queued.
  using BatchSource = std::function<void(std::vector<int32_t>& inputs, std::vector<int32_t>& targets)>;
  StepMeasurement forward_backward(const BatchSource& next_batch);
  // Clipping, Muon and AdamW at the step's place in the schedule (Optimizer::step), after
  // forward_backward.
  void apply(const StepSchedule& at, double grad_norm);
  bool uses_graphs() const;

 private:
  // Whether this call of `region` runs as a recorded region (uses_graphs() and RegionSchedule).
  bool as_region(const char* region);
  // reset_graph of both regions on backends that record them.
  void drop_recordings() noexcept;
  GPT& model_;
  Optimizer& optimizer_;
  ProcessGroup* processes_;
  int64_t micro_steps_, rows_, seq_len_;
  bool graphs_;
  RegionSchedule schedule_;
  std::vector<std::vector<int32_t>> inputs_, targets_;
  GradientBuckets buckets_;
};

}  // namespace ct
