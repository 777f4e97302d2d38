#include "train/train_step.h"

#include "backend/parallel/shard_plan.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fault_point.h"

namespace ct {

namespace {

std::vector<int64_t> gradient_bytes(const GPT& model) {
  std::vector<int64_t> bytes;
  for (const Parameter& p : model.parameters()) bytes.push_back(static_cast<int64_t>(p.grad.tensor().bytes()));
  return bytes;
}

}  // namespace

GradientBuckets::GradientBuckets(const std::vector<int64_t>& param_bytes, int64_t bucket_bytes) {
  const int n = static_cast<int>(param_bytes.size());
  const std::vector<int64_t> ready_order_bytes(param_bytes.rbegin(), param_bytes.rend());
  for (const GradientBucket& b : plan_buckets(ready_order_bytes, bucket_bytes)) {
    std::vector<int> params;
    for (int position : b.params) params.push_back(n - 1 - position);
    buckets_.push_back(std::move(params));
  }
}

std::vector<std::vector<int>> GradientBuckets::complete_from(size_t first) {
  std::vector<std::vector<int>> complete;
  // a bucket is complete when its last parameter in ready order (its smallest index) is final
  while (next_ < buckets_.size() && static_cast<size_t>(buckets_[next_].back()) >= first)
    complete.push_back(buckets_[next_++]);
  return complete;
}

TrainStep::TrainStep(GPT& model, Optimizer& optimizer, ProcessGroup* processes, int64_t micro_steps, int64_t rows,
                     int64_t seq_len, bool graphs)
    : model_(model),
      optimizer_(optimizer),
      processes_(processes),
      micro_steps_(micro_steps),
      rows_(rows),
      seq_len_(seq_len),
      graphs_(graphs),
      inputs_(static_cast<size_t>(micro_steps)),
      targets_(static_cast<size_t>(micro_steps)),
      buckets_(gradient_bytes(model), kBucketBytes) {
  check(micro_steps > 0 && rows > 0 && seq_len > 0, "TrainStep: expected positive micro-steps, rows and length");
  check(model.backend().world_size() == (processes ? processes->size() : 1), "TrainStep: the backend's ",
        model.backend().world_size(), " process(es) are not the job's ", processes ? processes->size() : 1);
  check(micro_steps + optimizer.gradient_slots() <= Backend::kValueSlots, "TrainStep: ", micro_steps,
        " micro-batches and ", optimizer.gradient_slots(), " parameters need more than the backend's ",
        Backend::kValueSlots, " value slots");
  drop_recordings();
}

TrainStep::~TrainStep() { drop_recordings(); }

void TrainStep::drop_recordings() noexcept {
  Backend& be = model_.backend();
  if (!be.supports_graphs()) return;
  try {
    for (const char* region : {"forward_backward", "optimizer"}) be.reset_graph(region);
  } catch (...) {
    // reset_graph refuses only a region that is open, which an exception unwinding through this
    // destructor may leave; the backend abandons such a region itself (op_failed).
  }
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
  const int world = be.world_size();
  const bool reduce = be.reduces_gradients();
  // Data parallel: the last micro-batch's backward begins each bucket's reduction once it is final.
  std::vector<Parameter>& params = model_.parameters();
  buckets_.reset();
  const GPT::GradientsReady reduce_ready = [&](size_t first) {
    for (const std::vector<int>& bucket : buckets_.complete_from(first)) {
      std::vector<Tensor> grads;
      for (int i : bucket) grads.push_back(params[static_cast<size_t>(i)].grad.tensor());
      be.all_reduce_begin(grads, 1.0 / static_cast<double>(world));
    }
  };
  for (int64_t m = 0; m < micro_steps_; ++m) {
    // slot m: the sum of micro-batch m's losses
    valid[static_cast<size_t>(m)] = model_.forward_queued(inputs_[static_cast<size_t>(m)].data(),
                                                          targets_[static_cast<size_t>(m)].data(), rows_, seq_len_,
                                                          static_cast<int>(m), false);
    const bool last = m + 1 == micro_steps_;
    if (last) fault_point("train_step.last_backward");  // the data-parallel tests kill a process here
    model_.backward(1.0 / static_cast<double>(micro_steps_), reduce && last ? reduce_ready : GPT::GradientsReady());
  }
  // The wait is measured outside graph regions (where the host cannot wait): from the end of this
  // process's backward pass to the end of the reduction.
  Stopwatch reduction_wait;
  double waited = 0.0;
  if (reduce && !regions) {
    be.synchronize();
    reduction_wait.restart();
    be.all_reduce_end();
    be.synchronize();
    waited = reduction_wait.seconds();
  } else if (reduce) {
    be.all_reduce_end();
  }
  const int first_gradient_slot = static_cast<int>(micro_steps_);
  optimizer_.queue_gradient_norms(first_gradient_slot);
  if (regions) be.end_graph();
  const std::vector<double> values = be.read_value_slots(first_gradient_slot + optimizer_.gradient_slots());
  StepMeasurement result;
  // this process's micro-batch m is the step's micro-batch m * world + rank (data/loader.h)
  result.micro_losses.assign(static_cast<size_t>(micro_steps_ * world), 0.0);
  for (int64_t m = 0; m < micro_steps_; ++m) {
    const int64_t n = valid[static_cast<size_t>(m)];
    result.micro_losses[static_cast<size_t>(m * world + be.rank())] =
        n > 0 ? values[static_cast<size_t>(m)] / static_cast<double>(n) : 0.0;
  }
  if (world > 1) {
    reduction_wait.restart();
    processes_->all_reduce_sum(result.micro_losses);  // x + 0: each loss exactly as its process had it
    waited += reduction_wait.seconds();
  }
  result.reduction_wait_seconds = waited;
  result.gradients = optimizer_.gradient_check_from(values, first_gradient_slot);
  return result;
}

void TrainStep::apply(const StepSchedule& at, double grad_norm) {
  Backend& be = model_.backend();
  const bool regions = as_region("optimizer");
  if (regions) be.begin_graph("optimizer");
  optimizer_.step(at, grad_norm);
  if (regions) be.end_graph();
}

}  // namespace ct
