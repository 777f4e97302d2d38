// Data parallelism on the CUDA backend (backend.h): NCCL collectives on a second stream, so that a
// gradient reduction overlaps the backward pass queued after it on the main stream.
//   all_reduce_begin: main stream -> event -> the comm stream waits, sums (NCCL), scales
//   all_reduce_end:   the main stream waits for the comm stream's last event
// Both run inside graph regions too (NCCL supports stream capture; the events become graph edges).
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_limits.h"
#include "backend/cuda/nccl_comm.h"

namespace ct::cuda {

void CudaBackend::all_reduce_begin(const std::vector<Tensor>& tensors, double factor) {
  OpScope scope(this);
  const char* op = "all_reduce_begin";
  Signature signature;
  for (const Tensor& t : tensors) {
    check_compute_dtype(op, "tensor", t);  // f32 or bf16: the contract's float dtypes less the cuda's limits
    check_cuda_dtype(op, "tensor", t);
    signature.tensor(t);
  }
  if (!nccl_) {
    // one process without a communicator: the sum is the tensor itself
    if (factor != 1.0)
      for (const Tensor& t : tensors) scale(t, factor);
    return;
  }
  OpCall call = graph_call(op, signature, {}, {factor});
  if (!call.launch) return;
  CT_CUDA_CHECK(cudaEventRecord(comm_ready_, stream_));
  CT_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, comm_ready_, 0));
  nccl_->all_reduce_sum(tensors, comm_stream_);
  for (const Tensor& t : tensors) launch_scale(t.data, t.dtype, call.scalar(0), t.numel(), comm_stream_);
  CT_CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_));
  comm_pending_ = true;
}

void CudaBackend::all_reduce_end() {
  OpScope scope(this);
  if (!nccl_) return;
  OpCall call = graph_call("all_reduce_end", Signature(), {});
  if (!call.launch || !comm_pending_) return;
  CT_CUDA_CHECK(cudaStreamWaitEvent(stream_, comm_done_, 0));
  if (!recorder_.active()) comm_pending_ = false;
}

void CudaBackend::broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) {
  OpScope scope(this);
  const char* op = "broadcast";
  check(tensors.size() == roots.size(), op, ": ", tensors.size(), " tensors but ", roots.size(), " roots");
  Signature signature;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_not_empty(op, "tensor", tensors[i]);
    check(roots[i] >= 0 && roots[i] < world_size_, op, ": root ", roots[i], " is outside [0, ", world_size_, ")");
    signature.tensor(tensors[i]).integer(roots[i]);
  }
  if (!nccl_) return;
  OpCall call = graph_call(op, signature, {});
  if (!call.launch) return;
  nccl_->broadcast(tensors, roots, stream_);  // on the main stream: later ops need the values
}

}  // namespace ct::cuda
