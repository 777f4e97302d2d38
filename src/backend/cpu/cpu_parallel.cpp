// The CPU backend's data-parallel ops: host memory is the device memory, so the gradients are
// reduced in place by the process group's worker thread while the backward pass goes on
// (backend/parallel/process_group.h). The backend's ops run on the calling thread, so "every later
// op waits" (all_reduce_end) is the caller's wait.
#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

namespace {

void check_reducible(const Tensor& t, const char* op) {
  check(t.dtype == DType::f32 || t.dtype == DType::f64, op, ": the CPU backend reduces f32 or f64 tensors, got ",
        dtype_name(t.dtype));
}

}  // namespace

void CpuBackend::all_reduce_begin(const std::vector<Tensor>& tensors, double factor) {
  for (const Tensor& t : tensors) check_reducible(t, "all_reduce_begin");
  if (!group_) {
    Backend::all_reduce_begin(tensors, factor);
    return;
  }
  for (const Tensor& t : tensors) {
    if (t.dtype == DType::f32)
      group_->all_reduce_sum_async(static_cast<float*>(t.data), t.numel(), factor);
    else
      group_->all_reduce_sum_async(static_cast<double*>(t.data), t.numel(), factor);
  }
}

void CpuBackend::all_reduce_end() {
  if (group_) group_->wait();
}

void CpuBackend::broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) {
  if (!group_) {
    Backend::broadcast(tensors, roots);
    return;
  }
  check(tensors.size() == roots.size(), "broadcast: ", tensors.size(), " tensors but ", roots.size(), " roots");
  for (size_t i = 0; i < tensors.size(); ++i)
    group_->broadcast(tensors[i].data, tensors[i].numel() * static_cast<int64_t>(dtype_size(tensors[i].dtype)),
                      roots[i]);
}

}  // namespace ct
