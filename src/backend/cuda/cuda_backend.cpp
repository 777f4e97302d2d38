// The CUDA backend: construction, identity, memory, host transfers, elementwise ops, reductions
// and value slots. The products and attention are in cuda_ops.cpp, the optimizer's ops in cuda_optim.cpp,
// the row-wise and elementwise model ops in cuda_<op>.cu beside their kernels.
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_limits.h"
#include "backend/cuda/cudnn_attention.h"
#include "backend/cuda/nccl_comm.h"
#include "backend/parallel/launch.h"
#include "util/machine_gpus.h"

namespace ct::cuda {

namespace {

constexpr size_t kAllocationAlignment = 256;

std::string error_bits_text(int bits) {
  std::string text;
  if (bits & kErrorTokenOutOfRange) text += "a token id outside [0, vocab) reached the embedding";
  if (bits & kErrorTargetOutOfRange) text += std::string(text.empty() ? "" : "; ") + "a target >= vocab reached the cross-entropy";
  return text.empty() ? str("unknown device error bits ", bits) : text;
}

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options) {
  // every GPU this backend is built for (sm_90a) has bf16 tensor cores, so "auto" is bf16
  matmul_bf16_ = options.matmul_precision != MatmulPrecision::f32;
  matmul_precision_reason_ = options.matmul_precision == MatmulPrecision::automatic
                                 ? "auto: bf16, the GPU's tensor cores take bf16 operands"
                                 : str(matmul_precision_name(options.matmul_precision), ": as asked");
  fp8_ = options.fp8;
  const LaunchEnvironment env = options.data_parallel ? launch_environment_from_process() : LaunchEnvironment();
  world_size_ = env.world_size;
  rank_ = env.rank;

  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  check(status == cudaSuccess && count > 0, "cuda backend: no CUDA device (",
        status == cudaSuccess ? "none found" : cudaGetErrorString(status), ")");
  visible_devices_ = count;
  device_ = env.distributed() ? env.local_rank : options.device;
  check(device_ >= 0 && device_ < count, "cuda backend: device ", device_, " does not exist (", count, " found",
        env.distributed() ? "; the device is the process's local rank" : "", ")");
  CT_CUDA_CHECK(cudaSetDevice(device_));
  CT_CUDA_CHECK(cudaGetDeviceProperties(&properties_, device_));
  check(properties_.major >= 8, "cuda backend: ", properties_.name, " has compute capability ", properties_.major, ".",
        properties_.minor, "; the kernels need 8.0 or newer");
  CT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CT_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
  CT_CUDA_CHECK(cudaEventCreateWithFlags(&comm_ready_, cudaEventDisableTiming));
  CT_CUDA_CHECK(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));

  CT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&error_word_), sizeof(int)));
  CT_CUDA_CHECK(cudaMemset(error_word_, 0, sizeof(int)));
  CT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&error_word_host_), sizeof(int), cudaHostAllocDefault));
  CT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&value_slots_), sizeof(double) * kValueSlots));
  CT_CUDA_CHECK(cudaMemset(value_slots_, 0, sizeof(double) * kValueSlots));
  CT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&value_slots_host_), sizeof(double) * kValueSlots,
                              cudaHostAllocDefault));
  CT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&reduce_result_), sizeof(double)));
  CT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&reduce_result_host_), sizeof(double), cudaHostAllocDefault));

  // One tiny kernel now: a binary built for another architecture fails here, with a clear message.
  launch_fill(reduce_result_, DType::f64, 1, scalar(0.0), stream_);
  const cudaError_t probe = cudaStreamSynchronize(stream_);
  check(probe == cudaSuccess, "cuda backend: the kernels do not run on ", properties_.name, " (sm_", properties_.major,
        properties_.minor, "): ", cudaGetErrorString(probe), ". They were built for CLOCKTRAIN_CUDA_GENCODE (default "
        "sm_90a); rebuild with the GPU's architecture");

  gemm_ = std::make_unique<LtGemm>();
  // auto: clocktrain's own flash kernels, the measured path (docs/cuda.md, "Attention")
  attention_ = options.attention == AttentionKernels::automatic ? AttentionKernels::flash : options.attention;
  // Before any graph region: opening the library and making the handle are not stream work.
  if (attention_ == AttentionKernels::cudnn) cudnn_attention_ = std::make_unique<CudnnAttention>(stream_);
  // NCCL for several processes; for one, only when asked (CLOCKTRAIN_NCCL_ONE_RANK=1, training only): a
  // communicator of one rank, so that the device check runs the data-parallel path on one GPU
  // (docs/cuda.md "Checking on a GPU").
  const char* one_rank = std::getenv("CLOCKTRAIN_NCCL_ONE_RANK");
  if (env.distributed() || (options.data_parallel && one_rank && std::string(one_rank) == "1"))
    nccl_ = std::make_unique<NcclComm>(env);
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  cudaStreamSynchronize(comm_stream_);
  while (!region_states_.empty()) destroy_region_state(region_states_.begin()->first);
  nccl_.reset();
  cudnn_attention_.reset();
  gemm_.reset();
  for (auto& [name, buffer] : scratch_) cudaFree(buffer.data);
  for (void* p : retired_scratch_) cudaFree(p);
  for (auto& [base, bytes] : allocations_) cudaFree(const_cast<char*>(base));
  cudaFree(error_word_);
  cudaFreeHost(error_word_host_);
  cudaFree(value_slots_);
  cudaFreeHost(value_slots_host_);
  cudaFree(reduce_result_);
  cudaFreeHost(reduce_result_host_);
  cudaEventDestroy(comm_ready_);
  cudaEventDestroy(comm_done_);
  cudaStreamDestroy(comm_stream_);
  cudaStreamDestroy(stream_);
}

std::pair<int, std::string> CudaBackend::machine_devices() const {
  if (!machine_devices_) {
    const MachineGpus machine = machine_gpus();
    std::string how = machine.count > 0 ? machine.how
                                         : str("cudaGetDeviceCount: ", visible_devices_, "; ", machine.how);
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
      how += str("; this process sees ", visible_devices_, " (CUDA_VISIBLE_DEVICES=", visible, ")");
    machine_devices_.emplace(std::max(machine.count, visible_devices_), how);
  }
  return *machine_devices_;
}

std::string CudaBackend::device_description() const {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  return str(properties_.name, " (sm_", properties_.major, properties_.minor, ", ", properties_.multiProcessorCount,
             " SMs, ", properties_.totalGlobalMem >> 30, " GiB), driver ", driver / 1000, ".", (driver % 1000) / 10,
             ", runtime ", runtime / 1000, ".", (runtime % 1000) / 10, "; matmuls: cuBLASLt ",
             matmul_bf16_ ? "bf16" : "f32", fp8_ ? " + fp8 linear" : "", "; attention: ",
             attention_ == AttentionKernels::flash ? "flash (bf16, head_dim 64/128)"
             : attention_ == AttentionKernels::cudnn
                 ? str(cudnn_attention_->version(), " (bf16, as many queries as keys), else flash")
                 : "reference",
             nccl_ ? str("; rank ", rank_, " of ", world_size_, " (NCCL ", nccl_->version(), ")") : "");
}

// Dense matmul peaks of the data sheets (SXM parts): what MFU divides by. 0 when unknown.
void CudaBackend::check_kernel_dtype(const char* op, const char* arg, const Tensor& t) const {
  check_cuda_dtype(op, arg, t);
}

double CudaBackend::peak_flops() const {
  const std::string name = properties_.name;
  const bool hopper = name.find("H100") != std::string::npos || name.find("H200") != std::string::npos;
  if (!hopper) return 0.0;
  return matmul_bf16_ ? 989.4e12 : 66.9e12;
}

// ---- memory -----------------------------------------------------------------------------------------

Tensor CudaBackend::allocate(const Shape& shape, DType dtype) {
  check_no_region("allocate");
  check(shape.ndim >= 1, "allocate: a tensor needs at least one dimension");
  for (int i = 0; i < shape.ndim; ++i) check(shape[i] >= 0, "allocate: negative dimension in ", shape.to_string());
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  const size_t bytes = std::max<size_t>(t.bytes(), 1);
  const size_t rounded = (bytes + kAllocationAlignment - 1) / kAllocationAlignment * kAllocationAlignment;
  const cudaError_t status = cudaMalloc(&t.data, rounded);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    fail("allocate: out of device memory for ", shape.to_string(), " ", dtype_name(dtype), " (", rounded, " bytes; ",
         free_bytes >> 20, " MiB free of ", total_bytes >> 20, ")");
  }
  CT_CUDA_CHECK(cudaMemsetAsync(t.data, 0, rounded, stream_));
  allocations_[static_cast<const char*>(t.data)] = rounded;
  allocated_bytes_ += static_cast<int64_t>(rounded);
  return t;
}

void CudaBackend::release(Tensor& tensor) {
  check_no_region("release");
  if (tensor.data) {
    auto found = allocations_.find(static_cast<const char*>(tensor.data));
    check(found != allocations_.end(), "release: ", tensor.shape.to_string(), " is not an allocation of this backend");
    // A recorded region that uses this memory can no longer be replayed.
    for (const std::string& region : recorder_.regions_using(tensor.data)) reset_graph(region);
    allocated_bytes_ -= static_cast<int64_t>(found->second);
    allocations_.erase(found);
    CT_CUDA_CHECK(cudaFree(tensor.data));
  }
  tensor = {};
}

const void* CudaBackend::allocation_of(const void* p) const {
  if (!p) return nullptr;
  const char* address = static_cast<const char*>(p);
  auto found = allocations_.lower_bound(address);  // descending keys: the largest base <= address
  if (found == allocations_.end() || address >= found->first + found->second) return nullptr;
  return found->first;
}

void* CudaBackend::scratch(const std::string& name, size_t bytes) {
  ScratchBuffer& buffer = scratch_[name];
  if (buffer.bytes >= bytes && buffer.data) return buffer.data;
  const size_t rounded = std::max<size_t>((bytes + kAllocationAlignment - 1) / kAllocationAlignment * kAllocationAlignment,
                                          kAllocationAlignment);
  if (buffer.data) retired_scratch_.push_back(buffer.data);  // a recorded graph may still use it
  const cudaError_t status = cudaMalloc(&buffer.data, rounded);
  if (status != cudaSuccess) {
    cudaGetLastError();
    buffer = {};
    fail("cuda backend: out of device memory for the scratch buffer '", name, "' (", rounded, " bytes)");
  }
  buffer.bytes = rounded;
  scratch_bytes_ += static_cast<int64_t>(rounded);
  return buffer.data;
}

int64_t CudaBackend::memory_in_use_bytes() const {
  return allocated_bytes_ + scratch_bytes_ + static_cast<int64_t>(gemm_ ? gemm_->workspace_bytes() : 0) +
         static_cast<int64_t>(sizeof(double) * kValueSlots);
}

void CudaBackend::wait_and_check(const char* op) {
  CT_CUDA_CHECK(cudaMemcpyAsync(error_word_host_, error_word_, sizeof(int), cudaMemcpyDeviceToHost, stream_));
  const cudaError_t status = cudaStreamSynchronize(stream_);
  if (status != cudaSuccess) fail(op, ": a CUDA kernel failed: ", cudaGetErrorName(status), ": ", cudaGetErrorString(status));
  if (comm_pending_) {
    const cudaError_t comm_status = cudaStreamSynchronize(comm_stream_);
    if (comm_status != cudaSuccess) fail(op, ": a collective failed: ", cudaGetErrorString(comm_status));
  }
  const int bits = *error_word_host_;
  if (bits != 0) {
    *error_word_host_ = 0;
    CT_CUDA_CHECK(cudaMemsetAsync(error_word_, 0, sizeof(int), stream_));
    CT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    fail(op, ": bad input detected on the device: ", error_bits_text(bits));
  }
}

void CudaBackend::synchronize() {
  check_no_region("synchronize");
  wait_and_check("synchronize");
}

// ---- host transfers -----------------------------------------------------------------------------------

void CudaBackend::do_upload(const Tensor& dst, const void* host, DType host_dtype) {
  const char* op = "upload";
  const int64_t n = dst.numel();
  const size_t host_bytes = static_cast<size_t>(n) * dtype_size(host_dtype);
  if (n == 0) return;
  void* source = const_cast<void*>(host);
  if (recorder_.active()) {
    // Inside a region the recording copies from a pinned buffer that each call refills.
    OpCall call = graph_call(op, Signature().tensor(dst).integer(static_cast<int64_t>(host_dtype)), {dst}, {},
                             host_bytes);
    std::memcpy(call.upload_staging, host, host_bytes);
    if (!call.launch) return;
    source = call.upload_staging;
  }
  if (host_dtype == dst.dtype) {
    CT_CUDA_CHECK(cudaMemcpyAsync(dst.data, source, host_bytes, cudaMemcpyHostToDevice, stream_));
  } else {
    void* staging = scratch("upload", host_bytes);
    CT_CUDA_CHECK(cudaMemcpyAsync(staging, source, host_bytes, cudaMemcpyHostToDevice, stream_));
    launch_convert(dst.data, dst.dtype, staging, host_dtype, n, stream_);
  }
  // (cudaMemcpyAsync from pageable memory returns once the bytes are staged: the caller may reuse host)
}

void CudaBackend::do_download(void* host, DType host_dtype, const Tensor& src) {
  const char* op = "download";
  check_no_region(op);
  const int64_t n = src.numel();
  if (n == 0) return;
  const size_t host_bytes = static_cast<size_t>(n) * dtype_size(host_dtype);
  const void* source = src.data;
  if (host_dtype != src.dtype) {
    void* converted = scratch("download", host_bytes);
    launch_convert(converted, host_dtype, src.data, src.dtype, n, stream_);
    source = converted;
  }
  CT_CUDA_CHECK(cudaMemcpyAsync(host, source, host_bytes, cudaMemcpyDeviceToHost, stream_));
  wait_and_check(op);
}

// ---- elementwise ------------------------------------------------------------------------------------------

void CudaBackend::do_fill(const Tensor& x, double value) {
  OpCall call = graph_call("fill", Signature().tensor(x), {x}, {value});
  if (!call.launch) return;
  launch_fill(x.data, x.dtype, x.numel(), call.scalar(0), stream_);
}

void CudaBackend::do_copy(const Tensor& dst, const Tensor& src) {
  const char* op = "copy";
  OpCall call = graph_call(op, Signature().tensor(dst).tensor(src), {dst, src});
  if (!call.launch || src.numel() == 0) return;
  if (dst.dtype == src.dtype) {
    CT_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.bytes(), cudaMemcpyDeviceToDevice, stream_));
  } else {
    launch_convert(dst.data, dst.dtype, src.data, src.dtype, src.numel(), stream_);
  }
}

void CudaBackend::do_axpby(const Tensor& y, double alpha, const Tensor& x, double beta) {
  const char* op = "axpby";
  OpCall call = graph_call(op, Signature().tensor(y).tensor(x), {y, x}, {alpha, beta});
  if (!call.launch) return;
  launch_axpby(y.data, y.dtype, call.scalar(0), x.data, call.scalar(1), y.numel(), stream_);
}

void CudaBackend::do_scale(const Tensor& x, double factor) {
  OpCall call = graph_call("scale", Signature().tensor(x), {x}, {factor});
  if (!call.launch) return;
  launch_scale(x.data, x.dtype, call.scalar(0), x.numel(), stream_);
}

// ---- reductions and value slots ------------------------------------------------------------------------

double CudaBackend::reduce_now(const char* op, const Tensor& x, bool squares) {
  check_no_region(op);
  const int64_t n = x.numel();
  auto* partials = static_cast<double*>(scratch("reduce_partials", sizeof(double) * reduce_partials_count(n)));
  launch_reduce(reduce_result_, false, squares, x.data, x.dtype, n, partials, stream_);
  CT_CUDA_CHECK(cudaMemcpyAsync(reduce_result_host_, reduce_result_, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  wait_and_check(op);
  return *reduce_result_host_;
}

double CudaBackend::do_sum(const Tensor& x) { return reduce_now("sum", x, false); }
double CudaBackend::do_sum_squares(const Tensor& x) { return reduce_now("sum_squares", x, true); }

void CudaBackend::reduce_to_slot(const char* op, int slot, const Tensor& x, bool accumulate, bool squares) {
  OpCall call = graph_call(op, Signature().tensor(x).integer(slot).integer(accumulate), {x});
  if (!call.launch) return;
  const int64_t n = x.numel();
  auto* partials = static_cast<double*>(scratch("reduce_partials", sizeof(double) * reduce_partials_count(n)));
  launch_reduce(value_slots_ + slot, accumulate, squares, x.data, x.dtype, n, partials, stream_);
}

void CudaBackend::do_sum_to_slot(int slot, const Tensor& x, bool accumulate) {
  reduce_to_slot("sum_to_slot", slot, x, accumulate, false);
}

void CudaBackend::do_sum_squares_to_slot(int slot, const Tensor& x, bool accumulate) {
  reduce_to_slot("sum_squares_to_slot", slot, x, accumulate, true);
}

std::vector<double> CudaBackend::read_value_slots(int count) {
  check_no_region("read_value_slots");
  check(count >= 0 && count <= kValueSlots, "read_value_slots: count ", count, " is outside [0, ", kValueSlots, "]");
  if (count > 0)
    CT_CUDA_CHECK(cudaMemcpyAsync(value_slots_host_, value_slots_, sizeof(double) * static_cast<size_t>(count),
                                  cudaMemcpyDeviceToHost, stream_));
  wait_and_check("read_value_slots");
  return {value_slots_host_, value_slots_host_ + count};
}

}  // namespace ct::cuda

namespace ct {

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

}  // namespace ct
