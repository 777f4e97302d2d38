// The CPU backend: identity, memory, host transfers and the CPU's own limits beyond the op contract.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "backend/cpu/amx.h"
#include "backend/cpu/cpu_attention_bf16.h"
#include "backend/cpu/cpu_attention_f32.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_cross_entropy_fast.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/kernel_switch.h"
#include "backend/cpu/onednn_matmul.h"
#include "backend/gemm_peak.h"
#include "backend/parallel/launch.h"
#include "util/threads.h"

namespace ct {

namespace {

constexpr size_t kAlignmentBytes = 64;  // one cache line, one AVX-512 register

// What runs bf16 products at the CPU level in use, in words (for the precision's reason).
std::string bf16_engine_name() {
  return amx_usable() ? "AMX-BF16 tiles" : "AVX512-BF16 dot products";
}

}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options) {
  check(options.threads >= 0, "cpu backend: threads must be >= 0 (0 = every core), got ", options.threads);
  check(options.attention == AttentionKernels::automatic, "cpu backend: attention \"",
        attention_kernels_name(options.attention), "\" names one of the cuda backend's kernels; the cpu backend "
        "chooses its attention kernels by the CPU level (\"auto\", docs/cpu.md)");
  // First: the level limits the libraries below before they start (cpu_level.h).
  const bool bf16_engine = bf16_engine_available();
  threads_ = set_thread_count(options.threads);
  gemm_libraries_ = default_gemm_libraries();
  openblas_set_threads(threads_);  // loads OpenBLAS now, so a missing library fails at creation
  if (gemm_libraries_.uses(GemmLibrary::blis)) blis_set_threads(threads_);  // BLIS runs one thread unless told
  amx_usable();  // asks the kernel for AMX tile data once, before any kernel needs it (amx.h)
  f32_attention_tiles_ = f32_attention_built() && cpu_level_at_least(CpuLevel::avx2) &&
                         !switched_off("CLOCKTRAIN_CPU_F32_ATTENTION");
  switch (options.matmul_precision) {
    case MatmulPrecision::automatic:
      matmul_bf16_ = bf16_engine;
      matmul_precision_reason_ =
          bf16_engine ? str("auto: bf16, the CPU level ", cpu_level_description(), " has a bf16 engine (",
                            bf16_engine_name(), ")")
                      : str("auto: f32, the CPU level ", cpu_level_description(),
                            " has no bf16 engine (bf16 needs avx512_bf16 or amx_bf16)");
      break;
    case MatmulPrecision::f32:
      matmul_precision_reason_ = "f32: as asked";
      break;
    case MatmulPrecision::bf16:
      check(bf16_engine, "matmul_precision \"bf16\" needs a CPU with a bf16 engine (avx512_bf16 or amx_bf16), "
            "and this one has none at the level in use: ", cpu_info().model_name, ", level ", cpu_level_description(),
            ", flags ", cpu_info().flag_summary(), " (\"auto\" takes f32 here)");
      matmul_bf16_ = true;
      matmul_precision_reason_ = str("bf16: as asked (", bf16_engine_name(), ")");
      break;
  }
  peak_ = cpu_theoretical_peak(threads_);
  // Several processes: mpirun's (MPI) or torchrun's (Gloo): process_group.h. Other launchers (srun
  // without mpirun) are an error there, not one process training alone on every rank's rows.
  const LaunchEnvironment launch = options.data_parallel ? launch_environment_from_process() : LaunchEnvironment();
  if (launch.distributed()) {
    group_ = &ProcessGroup::world();
    check(group_->size() == launch.world_size && group_->rank() == launch.rank, "cpu backend: ",
          group_->library_version(), " says rank ", group_->rank(), " of ", group_->size(),
          ", the launcher's variables say ", launch.rank, " of ", launch.world_size);
  }
}

std::string CpuBackend::device_description() const {
  std::string description =
      str(threads_, " threads on ", cpu_info().model_name, " (CPU level ", cpu_level_description(), "); matmuls ",
          matmul_precision_name(matmul_precision()), "; f32 GEMM: ", gemm_libraries_description(gemm_libraries_),
          ", OpenBLAS core ", openblas_core_description());
  // (the attention engine named is the one for head dims that are multiples of 32: every recipe's)
  if (matmul_bf16_)
    description += str("; bf16 matmuls: ", bf16_gemm_description(), ", ", amx_status(), "; bf16 attention: ",
                       bf16_attention_supported(128) ? bf16_attention_engine() : "f32 kernels on copies");
  const char* f32_attention = !f32_attention_tiles_ ? "tiles through the f32 GEMM"
                              : f32_tiles_on_avx512() ? "register blocks (AVX-512)"
                                                      : "register blocks (AVX2 FMA)";
  description += str("; f32 attention: ", f32_attention);
  const int cross_entropy_lanes = fast_cross_entropy_lanes();
  description += cross_entropy_lanes == 16  ? "; cross-entropy: 16 lanes (AVX-512)"
                 : cross_entropy_lanes == 8 ? "; cross-entropy: 8 lanes (AVX2 FMA)"
                                            : "; cross-entropy: portable";
  description += "; peak " + peak_.describe(matmul_bf16_);
  if (group_) description += str("; rank ", group_->rank(), " of ", group_->size(), " (", group_->library_version(), ")");
  return description;
}

double CpuBackend::peak_flops() const { return matmul_bf16_ ? peak_.bf16_flops() : peak_.f32_flops(); }

// Measured once, on first use: the fastest of repeated 1536^3 GEMMs of the precision the model's
// matmuls use (f32 through the f32 library, or bf16 through oneDNN), timed by GemmRate (gemm_peak.h)
// through this backend's own gemm. A bf16 product on AMX takes only a few ms and its rate swings from
// run to run on the 2-vCPU development VM (520 to 1400 GFLOP/s measured at startup on an idle
// machine), so it repeats until ~0.3 s have been measured (4 to 63 calls after the warm-up).
// A 512^3 product is timed first: where one 1536^3 call would take over a second (an emulator), the
// ceiling is the small product's rate instead, measured the same way (matmul_ceiling_size, gemm_peak.h).
// No CPU that trains a model is that slow, so on hardware the figure is the 1536^3 one. This is a
// best-of on a shared machine, not a ceiling: a step can beat it (MFU divides by peak_flops()).
double CpuBackend::matmul_ceiling_flops() const {
  if (matmul_ceiling_cache_ >= 0) return matmul_ceiling_cache_;
  const DType dtype = matmul_bf16_ ? DType::bf16 : DType::f32;
  // (the measurement allocates and runs ops: it needs the backend, not only its description)
  CpuBackend& self = const_cast<CpuBackend&>(*this);
  constexpr int64_t look = kCeilingFirstLookSize;
  GemmRate first_look(self, look, look, look, dtype);
  const double look_seconds = 2.0 * look * look * look / first_look.best_of(1);
  const int64_t size = matmul_ceiling_size(look_seconds);
  if (size == look) {
    first_look.window(0.3, 63);
    matmul_ceiling_cache_ = first_look.best_call();
  } else {
    GemmRate rate(self, size, size, size, dtype);
    rate.window(0.3, 63);
    matmul_ceiling_cache_ = rate.best_call();
  }
  return matmul_ceiling_cache_;
}

// ---- memory ---------------------------------------------------------------------------------------

Tensor CpuBackend::allocate(const Shape& shape, DType dtype) {
  check(shape.ndim >= 1, "allocate: a tensor needs at least one dimension");
  for (int i = 0; i < shape.ndim; ++i) check(shape[i] >= 0, "allocate: negative dimension in ", shape.to_string());
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  size_t bytes = std::max<size_t>(t.bytes(), 1);
  size_t rounded = (bytes + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
  t.data = std::aligned_alloc(kAlignmentBytes, rounded);
  check(t.data != nullptr, "allocate: out of memory for ", shape.to_string(), " ", dtype_name(dtype), " (",
        rounded, " bytes)");
  std::memset(t.data, 0, rounded);
  return t;
}

void CpuBackend::release(Tensor& tensor) {
  std::free(tensor.data);
  tensor = {};
}

void CpuBackend::do_upload(const Tensor& dst, const void* host, DType host_dtype) {
  convert_elements("upload", dst.data, dst.dtype, host, host_dtype, dst.numel());
}

void CpuBackend::do_download(void* host, DType host_dtype, const Tensor& src) {
  convert_elements("download", host, host_dtype, src.data, src.dtype, src.numel());
}

// ---- the CPU's own limits ------------------------------------------------------------------------------

void CpuBackend::check_kernel_dtype(const char* op, const char* arg, const Tensor& t) const {
  if (t.dtype != DType::bf16) return;
  static const std::set<std::string> f32_and_f64_only = {
      "axpby", "scale", "sum", "sum_squares", "sum_to_slot", "sum_squares_to_slot", "embedding_forward",
      "embedding_backward", "softcap_cross_entropy_forward", "softcap_cross_entropy_backward", "adamw_update",
      "muon_momentum", "muon_update", "newton_schulz", "newton_schulz_many", "residual_mix_forward",
      "residual_mix_backward"};
  if (f32_and_f64_only.count(op)) refuse_dtype(op, arg, t, "the cpu backend computes this op in f32 or f64 only");
}

void check_token_range(const char* op, const char* arg, const Tensor& ids, int64_t vocab, bool allow_negative) {
  check_dtype(op, arg, ids, DType::i32);
  const int32_t* values = ids.as<int32_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    int32_t id = values[i];
    check(id < vocab && (id >= 0 || allow_negative), op, ": ", arg, "[", i, "] = ", id, " is outside [",
          allow_negative ? "-inf" : "0", ", ", vocab, ")");
  }
}

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace ct
