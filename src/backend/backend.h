#pragma once
// The op interface between the model and a device (docs/architecture.md): the model is written once as
// explicit forward and backward passes over these ops; a backend (cpu/, cuda/) implements them.
//
// Conventions
// - All tensors are row-major and live in the backend's memory. N = number of token positions
//   (B*T), C = model width, H / Hkv = query / key-value heads, D = head_dim, V = vocab.
// - Backward ops ACCUMULATE into gradient outputs (g += ...) where the argument is named `d..._acc`,
//   and OVERWRITE where it is named `d..._out`. Accumulation is what residual streams and gradient
//   accumulation across micro-batches need; callers zero with fill() when starting fresh.
// - Ops are asynchronous on devices that queue work; anything that returns a host value
//   (sum, sum_squares, download) waits for the work queued before it.
// - A backend supports the dtypes it documents; an unsupported combination is a ct::Error that names
//   the op and the dtypes, never a silent conversion.
//
// One contract for every backend: the ops (listed once, in ops.def) are not virtual. Each checks its
// arguments against the op's contract (op_contract.h: dtypes, ranks, shapes, aliasing, scalar
// ranges, the same rules and messages on every backend), opens the op's timing scope (op_timing.h)
// and reports a failure to the backend's graph region (op_failed), then calls the backend's kernel:
// the protected virtual do_<op> of the same arguments (backend.cpp). A kernel sees only calls the contract accepts; a
// backend states which dtypes its kernels compute in (check_kernel_dtype) and refuses in its kernel
// what else it lacks (a head_dim above its limit, say).
#include <memory>
#include <string>
#include <vector>

#include "backend/tensor.h"

namespace ct {

// The precision of matmul operands (docs/train.md, "Mixed precision"): f32 (the reference), bf16
// (operands rounded to bf16, f32 accumulation), or automatic: the backend takes bf16 where its device
// has a bf16 engine and f32 elsewhere, and says which and why (Backend::matmul_precision_reason).
enum class MatmulPrecision { automatic, f32, bf16 };

const char* matmul_precision_name(MatmulPrecision precision);  // "auto", "f32", "bf16"
// The inverse of matmul_precision_name; anything else is a ct::Error naming `where` and the value.
MatmulPrecision parse_matmul_precision(const std::string& text, const std::string& where);
std::string matmul_precision_choices();  // the names, as errors list them: "auto", "f32" or "bf16"

// Which kernels serve attention (the recipe's backend.attention). automatic ("auto"): the backend's
// own choice (CPU: by the CPU level, docs/cpu.md; CUDA: clocktrain's flash kernels). flash, cudnn and
// reference name the CUDA backend's three paths (docs/cuda.md, "Attention"); another backend refuses them.
enum class AttentionKernels { automatic, flash, cudnn, reference };

const char* attention_kernels_name(AttentionKernels kernels);  // "auto", "flash", "cudnn", "reference"
// The inverse of attention_kernels_name; anything else is a ct::Error naming `where` and the value.
AttentionKernels parse_attention_kernels(const std::string& text, const std::string& where);
std::string attention_kernels_choices();  // "auto", "flash", "cudnn" or "reference"

class Backend {
 public:
  virtual ~Backend() = default;

  // ---- identity -------------------------------------------------------------------------------
  virtual std::string name() const = 0;                // "cpu", "cuda"
  virtual std::string device_description() const = 0;  // e.g. "2 cores of Intel Xeon (avx512_bf16)"
  virtual int device_count() const { return 1; }        // devices or cores this backend drives
  // Devices of this kind the machine offers this process (CPU: the cores it may run on; CUDA: the GPUs
  // visible), for the gate's full_machine check: a run uses every one, or it is not eligible.
  virtual int devices_present() const { return device_count(); }
  // Where devices_present() came from, in words, for the gate's evidence ("" when it says nothing
  // more than the count: the CPU's count has its own, util/threads.h machine_cpus).
  virtual std::string devices_present_how() const { return ""; }
  // The device's theoretical peak in the matmul precision in use, FLOP/s: the ceiling MFU divides by,
  // which no step can exceed (CPU: cores x FLOP per cycle x clock, cpu/cpu_peak.h; GPU: the data
  // sheet's dense figure); 0 when unknown.
  virtual double peak_flops() const { return 0.0; }
  // The fastest matmul rate measured on this device in that precision (a probe on first use),
  // FLOP/s: what the GEMM library reaches, shown beside MFU; 0 when not measured.
  virtual double matmul_ceiling_flops() const { return 0.0; }
  // The precision the matmuls run in (never automatic: a backend resolves "auto" when it is
  // created) and why, in words, for the start line and result.json.
  virtual MatmulPrecision matmul_precision() const { return MatmulPrecision::f32; }
  virtual std::string matmul_precision_reason() const { return "f32: the backend's only precision"; }

  // ---- memory ---------------------------------------------------------------------------------
  // Zero-initialised memory of the given shape and dtype.
  virtual Tensor allocate(const Shape& shape, DType dtype) = 0;
  virtual void release(Tensor& tensor) = 0;
  virtual void synchronize() {}

  // ---- the ops: ops.def lists each one, its signature and what it computes ---------------------
  // Each public op checks the call against the op's contract (op_contract.h), then calls the
  // backend's kernel do_<op> (backend.cpp).
#define CT_OP(Ret, name, params, args, main, kernel, body) CT_BACKEND_PUBLIC_OP_##body(Ret, name, params)
#define CT_BACKEND_PUBLIC_OP_timed(Ret, name, params) Ret name params;
#define CT_BACKEND_PUBLIC_OP_untimed(Ret, name, params) Ret name params;
#define CT_BACKEND_PUBLIC_OP_timed_any_dtype(Ret, name, params) Ret name params;
#define CT_BACKEND_PUBLIC_OP_untimed_any_dtype(Ret, name, params) Ret name params;
#define CT_BACKEND_PUBLIC_OP_by_hand(Ret, name, params)
#include "backend/ops.def"
#undef CT_OP
#undef CT_BACKEND_PUBLIC_OP_timed
#undef CT_BACKEND_PUBLIC_OP_untimed
#undef CT_BACKEND_PUBLIC_OP_timed_any_dtype
#undef CT_BACKEND_PUBLIC_OP_untimed_any_dtype
#undef CT_BACKEND_PUBLIC_OP_by_hand
  // The ops written by hand (ops.def's `by_hand`), with their default arguments.
  void gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
            double alpha = 1.0, double beta = 0.0);
  void linear_forward_fp8(const Tensor& x, const Tensor& w, const Tensor& y, double beta = 0.0);
  void newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps,
                          double a, double b, double c);

  // ---- mixed precision ------------------------------------------------------------------------------
  // The dtype in which the model should hand gemm its operands: the activations that feed a matmul
  // are stored in it where they are produced, and each weight matrix gets a compute copy in it,
  // refreshed once per optimizer step (master weights, gradients and optimizer state stay f32).
  // bf16 when matmul_precision() is bf16, else f32; the CPU backend documents which ops then take
  // bf16 tensors (cpu/cpu_backend.h).
  DType matmul_operand_dtype() const {
    return matmul_precision() == MatmulPrecision::bf16 ? DType::bf16 : DType::f32;
  }

  // ---- value slots: host values without waiting --------------------------------------------------
  // sum_to_slot and sum_squares_to_slot (ops.def) write into slot `slot` of the backend's value
  // table (0 <= slot < kValueSlots). The slots live with the device, so these queue like any op;
  // read_value_slots(count) waits for the work queued before it and returns slots [0, count). This
  // is how a training step gets its loss and its gradient norm with one wait (and how a graph region,
  // below, returns values). The default computes at once through sum() / sum_squares().
  static constexpr int kValueSlots = 4096;
  virtual std::vector<double> read_value_slots(int count);

  // ---- graph regions: record a fixed sequence of ops once, replay it cheaply ---------------------
  // Between begin_graph(name) and end_graph():
  // - the first time (recording) the backend records the ops and runs them at end_graph();
  // - later (replaying) the calls must be the same ops on the same tensors (same memory, shapes,
  //   dtypes and non-scalar arguments) in the same order; the backend takes only their "scalar"
  //   arguments and uploaded host data, and end_graph() runs the recording with them. Scalar
  //   arguments are: fill's value, axpby's alpha and beta, scale's factor, every argument of
  //   adamw_update and muon_momentum after the tensors, and softcap_cross_entropy_backward's
  //   loss_scale. Every other number (eps, softcap, attention scale, gemm's alpha and beta,
  //   Newton-Schulz's coefficients) is part of the recording: a different value is a mismatch.
  // - a mismatch is a ct::Error that names the region and the call; reset_graph(name) drops a
  //   recording (after the caller reallocated buffers, say) so that the next begin records anew.
  // - nothing inside a region may return a host value: sum(), sum_squares(), download(),
  //   read_value_slots() and synchronize() are errors there (use the value slots).
  // supports_graphs() is false by default: the markers are then ignored and every op runs at once,
  // so code written with regions runs unchanged on every backend.
  virtual bool supports_graphs() const { return false; }
  virtual void begin_graph(const std::string& name) { (void)name; }
  virtual void end_graph() {}
  virtual void reset_graph(const std::string& name) { (void)name; }

  // ---- data parallel: one process per device -----------------------------------------------------
  // world_size() processes train one model together (docs/cuda.md: launching); rank() is this one.
  // all_reduce_begin queues, for each tensor (f32 or bf16), x = factor * (sum of x over every
  // process), in place; backends that can overlap it with the ops queued after it (the rest of the
  // backward pass). all_reduce_end() makes every later op wait for the reductions begun so far.
  // broadcast(tensors, roots) copies tensors[i] from process roots[i] to every process (how a
  // parameter updated by the process that owns its optimizer shard reaches the others).
  // The host collectives (sums of doubles: losses, the agreed clock, fingerprints) are not the
  // backend's: the run holds the job's process group for them (backend/parallel/process_group.h).
  // Defaults, for one process: all_reduce_begin only scales by factor, broadcast has nothing to copy;
  // with world_size() > 1 they are errors, so a backend that trains data-parallel overrides all four
  // (check_serves_the_job refuses the others when launched as several processes).
  virtual int world_size() const { return 1; }
  virtual int rank() const { return 0; }
  // Whether the training step reduces its gradients through all_reduce_begin/_end: with several
  // processes, and on a backend that takes its device collectives with one process too (the CUDA
  // backend under CLOCKTRAIN_NCCL_ONE_RANK=1: a communicator of one rank, for the device check).
  virtual bool reduces_gradients() const { return world_size() > 1; }
  virtual void all_reduce_begin(const std::vector<Tensor>& tensors, double factor);
  virtual void all_reduce_end() {}
  virtual void broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots);

  // ---- memory ---------------------------------------------------------------------------------------
  // Bytes of device memory this backend holds (its allocations and workspaces); 0 when unknown.
  virtual int64_t memory_in_use_bytes() const { return 0; }

 protected:
  // ---- what a backend implements: the kernels behind the public ops ------------------------------
  // Each is called by the public op of the same name once the contract holds (backend.cpp): every
  // `required` kernel of ops.def is pure (backend/kernel_overrides.inc declares them all in a
  // backend's class); an `optional` one has the default documented with its op.
#define CT_OP(Ret, name, params, args, main, kernel, body) CT_BACKEND_KERNEL_##kernel(Ret, do_##name, params)
#define CT_BACKEND_KERNEL_required(Ret, function, params) virtual Ret function params = 0;
#define CT_BACKEND_KERNEL_optional(Ret, function, params) virtual Ret function params;
#include "backend/ops.def"
#undef CT_OP
#undef CT_BACKEND_KERNEL_required
#undef CT_BACKEND_KERNEL_optional

  // The dtypes this backend's kernels compute `op` in, checked on the op's main tensor (`arg`: gemm's
  // a, rmsnorm's x, adamw's param, ...) just before its contract: an accepted dtype that the backend
  // has no kernel for is refused here, with a message naming the op, the tensor and the backend's
  // limit. The default takes everything the contract does.
  virtual void check_kernel_dtype(const char* op, const char* arg, const Tensor& t) const;
  // Called when a public op throws (a contract error or a kernel's), before the error leaves the op:
  // a backend that records graph regions abandons the recording there. The default does nothing.
  virtual void op_failed() noexcept {}

 private:
  class OpFrame;  // the failure hook of one public op (backend.cpp)
  std::vector<double> default_value_slots_;  // storage of the default value-slot methods
};

// Owns one allocation of a backend; movable, not copyable.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend& backend, const Shape& shape, DType dtype)
      : backend_(&backend), tensor_(backend.allocate(shape, dtype)) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept : backend_(other.backend_), tensor_(other.tensor_) { other.tensor_ = {}; }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      backend_ = other.backend_;
      tensor_ = other.tensor_;
      other.tensor_ = {};
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const Tensor& tensor() const { return tensor_; }
  operator const Tensor&() const { return tensor_; }  // NOLINT: a Buffer is used where a Tensor is
  const Shape& shape() const { return tensor_.shape; }
  DType dtype() const { return tensor_.dtype; }
  void reset() {
    if (backend_ && !tensor_.empty()) backend_->release(tensor_);
    tensor_ = {};
  }

 private:
  Backend* backend_ = nullptr;
  Tensor tensor_;
};

struct BackendOptions {
  std::string name = "cpu";  // "cpu" or "cuda"
  int threads = 0;           // CPU: 0 = every available core
  int device = 0;            // CUDA: device ordinal
  MatmulPrecision matmul_precision = MatmulPrecision::f32;
  bool fp8 = false;  // CUDA: linear_forward_fp8 runs in fp8 (e4m3, per-tensor scales); others ignore it
  AttentionKernels attention = AttentionKernels::automatic;  // CUDA: any; others: automatic only
  // Join the launcher's processes (mpirun, torchrun: backend/parallel/launch.h) as one data-parallel
  // job. Only training does (create_recipe_backend); an evaluator or a sampler is one process even
  // when started inside such a job, e.g. as `clocktrain run`'s child.
  bool data_parallel = false;
};

// Creates a backend by name; a clear error when it is not built in or cannot start, or, with
// data_parallel, when it is not the process of the job that the launcher started (check_serves_the_job).
std::unique_ptr<Backend> create_backend(const BackendOptions& options);
struct LaunchEnvironment;
// A backend joins the launcher's job only as the rank and world size the launcher gave: one that trains
// in one process only (world_size() 1) is refused when several were launched, naming both.
void check_serves_the_job(const Backend& backend, const LaunchEnvironment& env);
std::vector<std::string> available_backends();

}  // namespace ct
