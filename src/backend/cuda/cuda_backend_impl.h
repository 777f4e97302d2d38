#pragma once
// The CUDA backend's class, shared by its host files: cuda_backend.cpp (identity, memory,
// transfers, elementwise ops, value slots), cuda_ops.cpp (the model's ops), cuda_optim.cpp
// (optimizer updates, Newton-Schulz), cuda_graphs.cpp (graph regions), cuda_parallel.cpp (NCCL).
#include <cuda_runtime_api.h>

#include <exception>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_gemm.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/graph_recorder.h"

namespace ct::cuda {

class NcclComm;        // nccl_comm.h
class CudnnAttention;  // cudnn_attention.h

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string device_description() const override;
  int device_count() const override { return 1; }
  int devices_present() const override { return machine_devices().first; }
  std::string devices_present_how() const override { return machine_devices().second; }
  double peak_flops() const override;

  Tensor allocate(const Shape& shape, DType dtype) override;
  void release(Tensor& tensor) override;
  void synchronize() override;

  std::vector<double> read_value_slots(int count) override;

  bool supports_graphs() const override { return true; }
  // matmul_precision bf16: the model stores matmul operands in bf16 (gpt.h's mixed precision).
  MatmulPrecision matmul_precision() const override {
    return matmul_bf16_ ? MatmulPrecision::bf16 : MatmulPrecision::f32;
  }
  std::string matmul_precision_reason() const override { return matmul_precision_reason_; }
  void begin_graph(const std::string& name) override;
  void end_graph() override;
  void reset_graph(const std::string& name) override;

  int world_size() const override { return world_size_; }
  // NCCL whenever a communicator was made: several processes, or one under CLOCKTRAIN_NCCL_ONE_RANK=1
  bool reduces_gradients() const override { return nccl_ != nullptr; }
  int rank() const override { return rank_; }
  void all_reduce_begin(const std::vector<Tensor>& tensors, double factor) override;
  void all_reduce_end() override;
  void broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) override;

  int64_t memory_in_use_bytes() const override;

  // For tests and benchmarks.
  cudaStream_t stream() const { return stream_; }

 protected:
  // Backend's public ops call these once the op contract holds (op_contract.h); the kernels' own
  // limits are cuda_limits.h.
  void check_kernel_dtype(const char* op, const char* arg, const Tensor& t) const override;
  // A failed op inside a recording abandons the region (as OpScope does for the ops below).
  void op_failed() noexcept override;

#include "backend/kernel_overrides.inc"
  // The optional kernels the CUDA backend overrides: fp8 products, value slots on the device.
  void do_linear_forward_fp8(const Tensor& x, const Tensor& w, const Tensor& y, double beta) override;
  void do_sum_to_slot(int slot, const Tensor& x, bool accumulate) override;
  void do_sum_squares_to_slot(int slot, const Tensor& x, bool accumulate) override;

 private:
  // ---- graph regions (cuda_graphs.cpp) ----------------------------------------------------------------
  // What an op does with a call: launch or not, and where its scalars (and upload) live.
  struct OpCall {
    bool launch = true;
    ScalarArg scalars[8];
    void* upload_staging = nullptr;  // pinned host buffer whose contents the recording copies from
    ScalarArg scalar(int i) const { return scalars[i]; }
  };
  // Every op calls this once after validating its arguments. `tensors` are what it touches.
  OpCall graph_call(const char* op, const Signature& signature, std::initializer_list<Tensor> tensors,
                    std::initializer_list<double> scalars = {}, size_t upload_bytes = 0);
  // Ends a capture that failed half way (an error inside an op while recording).
  void abandon_region();
  // A host read or an allocation inside a region: abandons the region, then fails.
  void check_no_region(const char* op);
  // The CUDA side of one region: its graph, scalar table (device copy and pinned host source),
  // upload buffers, and the event of its last launch.
  struct RegionState {
    cudaGraphExec_t exec = nullptr;
    double* scalars_device = nullptr;
    double* scalars_host = nullptr;  // pinned
    std::vector<void*> staging;      // pinned, one per upload call
    cudaEvent_t done = nullptr;
    bool launched = false;
  };
  void destroy_region_state(const std::string& name);

  // Abandons the open recording when an op throws (declared first thing in the ops that Backend's
  // public ops do not frame: the data-parallel ones; the others reach op_failed()).
  class OpScope {
   public:
    explicit OpScope(CudaBackend* backend) : backend_(backend), exceptions_(std::uncaught_exceptions()) {}
    ~OpScope() {
      if (std::uncaught_exceptions() > exceptions_ && backend_->recorder_.active()) backend_->abandon_region();
    }

   private:
    CudaBackend* backend_;
    int exceptions_;
  };

  // ---- memory -------------------------------------------------------------------------------------------
  // The base of the allocation holding `p` (nullptr when it is not ours, e.g. a host view).
  const void* allocation_of(const void* p) const;
  // A grow-only scratch buffer, by name. Growing keeps the old memory alive (a recorded graph may
  // still use it) until the backend goes.
  void* scratch(const std::string& name, size_t bytes);
  // Waits for the stream, then turns the device error word into a ct::Error.
  void wait_and_check(const char* op);
  double reduce_now(const char* op, const Tensor& x, bool squares);
  void reduce_to_slot(const char* op, int slot, const Tensor& x, bool accumulate, bool squares);

  int device_ = 0;
  cudaDeviceProp properties_{};
  cudaStream_t stream_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;
  std::unique_ptr<LtGemm> gemm_;
  bool matmul_bf16_ = false;  // f32 gemms rounded to bf16 inside the product; Newton-Schulz in bf16
  std::string matmul_precision_reason_;
  // Every GPU the driver lists (util/machine_gpus.h), not only those CUDA_VISIBLE_DEVICES leaves this
  // process: the gate's full_machine check compares the devices a job uses with these.
  // Asked on first use (the gate's check), not at every backend's creation: NVML or nvidia-smi.
  std::pair<int, std::string> machine_devices() const;
  int visible_devices_ = 0;  // cudaGetDeviceCount at creation: what CUDA_VISIBLE_DEVICES leaves
  mutable std::optional<std::pair<int, std::string>> machine_devices_;
  bool fp8_ = false;
  // Which kernels serve attention (BackendOptions::attention, auto resolved to flash): clocktrain's
  // tensor-core flash kernels where they apply; cuDNN's fused attention where it applies (flash,
  // then reference, elsewhere); or the reference kernels everywhere.
  AttentionKernels attention_ = AttentionKernels::flash;
  std::unique_ptr<CudnnAttention> cudnn_attention_;  // when attention_ is cudnn

  std::map<const char*, size_t, std::greater<>> allocations_;  // base -> bytes (descending: lower_bound finds the base)
  int64_t allocated_bytes_ = 0;
  struct ScratchBuffer {
    void* data = nullptr;
    size_t bytes = 0;
  };
  std::map<std::string, ScratchBuffer> scratch_;
  std::vector<void*> retired_scratch_;
  int64_t scratch_bytes_ = 0;

  int* error_word_ = nullptr;       // device
  int* error_word_host_ = nullptr;  // pinned
  double* value_slots_ = nullptr;   // device [kValueSlots]
  double* value_slots_host_ = nullptr;  // pinned
  double* reduce_result_ = nullptr;     // device, one double for sum()/sum_squares()
  double* reduce_result_host_ = nullptr;

  GraphRecorder recorder_;
  std::map<std::string, std::unique_ptr<RegionState>> region_states_;
  bool capturing_ = false;

  int world_size_ = 1, rank_ = 0;
  std::unique_ptr<NcclComm> nccl_;
  cudaEvent_t comm_ready_ = nullptr, comm_done_ = nullptr;
  bool comm_pending_ = false;
};

}  // namespace ct::cuda
