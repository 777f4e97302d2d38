#pragma once
// The CPU backend's class and the helpers its op files share: the CPU's own limits beyond the op
// contract (op_contract.h), dispatch over the compute dtype (f32 or f64), and "side" tensors (rstd,
// lse, losses, cos, sin) that may be stored in f32 while the computation runs in f64.
//
// Each op lives in its own file (cpu_<op>.cpp) with its forward and backward kernels next to each
// other, the math in a comment, and the CpuBackend method (do_<op>) that calls them once Backend's
// public op has checked the contract. Kernels never throw: every check happens before a parallel
// region starts.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/op_contract.h"
#include "backend/cpu/cpu_peak.h"
#include "backend/cpu/gemm_library.h"
#include "backend/parallel/process_group.h"
#include "util/error.h"
#include "util/threads.h"

namespace ct {

// (Not final: the host-device backend, host_device/, is this backend with device collectives of its own.)
class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);

  std::string name() const override { return "cpu"; }
  std::string device_description() const override;
  int device_count() const override { return threads_; }
  int devices_present() const override { return available_cores(); }
  double peak_flops() const override;
  double matmul_ceiling_flops() const override;
  MatmulPrecision matmul_precision() const override {
    return matmul_bf16_ ? MatmulPrecision::bf16 : MatmulPrecision::f32;
  }
  std::string matmul_precision_reason() const override { return matmul_precision_reason_; }

  Tensor allocate(const Shape& shape, DType dtype) override;
  void release(Tensor& tensor) override;

 protected:
  // Kernels of f32 and f64 only (no bf16 kernel): the elementwise ops, embedding, the separate
  // cross-entropy ops and the optimizer updates; everything else takes the contract's dtypes.
  void check_kernel_dtype(const char* op, const char* arg, const Tensor& t) const override;

#include "backend/kernel_overrides.inc"
  // The optional kernels the CPU does better than the default: the cross-entropy's one pass over the
  // logits, one Newton-Schulz matrix per thread.
  void do_softcap_cross_entropy_fused(const Tensor& losses, const Tensor& dlogits_out, const Tensor& logits,
                                      const Tensor& targets, double softcap, double loss_scale) override;
  void do_newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps, double a,
                             double b, double c) override;

 public:
  // Data parallel over Open MPI (cpu_parallel.cpp; backend/parallel/process_group.h).
  int world_size() const override { return group_ ? group_->size() : 1; }
  int rank() const override { return group_ ? group_->rank() : 0; }
  void all_reduce_begin(const std::vector<Tensor>& tensors, double factor) override;
  void all_reduce_end() override;
  void broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) override;

 private:
  ProcessGroup* group_ = nullptr;  // null: one process
  int threads_ = 1;
  GemmLibraries gemm_libraries_ = GemmLibraries::all(GemmLibrary::openblas);  // f32, by transpose case
  bool matmul_bf16_ = false;  // matmul_precision bf16: the model stores matmul operands in bf16
  // f32 attention on clocktrain's register blocks (cpu_attention_f32.h: AVX2 FMA, or AVX-512 at that
  // level): built, the CPU level is avx2 or above, and CLOCKTRAIN_CPU_F32_ATTENTION is not "0" (which
  // sends it to the GEMM-library tiles)
  bool f32_attention_tiles_ = false;
  std::string matmul_precision_reason_;
  CpuPeak peak_;
  mutable double matmul_ceiling_cache_ = -1.0;
};

// Loops over fewer elements than this run on one thread: starting a parallel region costs more than
// it saves (and on a loaded machine, much more).
constexpr int64_t kMinParallelElements = 1 << 15;

// ---- the CPU's own limits, beyond the contract (op_contract.h has the checks) ---------------------

// Every token id in [0, vocab) (targets: negative ids are allowed and mean "ignored").
void check_token_range(const char* op, const char* arg, const Tensor& ids, int64_t vocab, bool allow_negative);

// Calls fn(float{}) or fn(double{}) for the compute dtype.
template <typename Fn>
void dispatch_float(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) {
    fn(double{});
  } else {
    fn(float{});
  }
}

// A side tensor seen as T values: the tensor's own memory when its dtype is T, otherwise a
// converted copy (load() for inputs; store() writes the copy back for outputs). The side tensors
// are one value per row or per position, so the copy costs nothing next to the op itself.
template <typename T>
class SideValues {
 public:
  explicit SideValues(const Tensor& t) : tensor_(t) {
    if (!same_dtype()) copy_.resize(static_cast<size_t>(t.numel()));
  }
  T* data() { return same_dtype() ? tensor_.as<T>() : copy_.data(); }
  void load() {
    if (same_dtype()) return;
    const float* src = tensor_.as<float>();
    for (size_t i = 0; i < copy_.size(); ++i) copy_[i] = static_cast<T>(src[i]);
  }
  void store() {
    if (same_dtype()) return;
    float* dst = tensor_.as<float>();
    for (size_t i = 0; i < copy_.size(); ++i) dst[i] = static_cast<float>(copy_[i]);
  }

 private:
  bool same_dtype() const { return tensor_.dtype == (sizeof(T) == 8 ? DType::f64 : DType::f32); }
  Tensor tensor_;
  std::vector<T> copy_;
};

}  // namespace ct
