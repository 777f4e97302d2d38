// Backend's public ops (backend.h): each checks its call against the op's contract (op_contract.h),
// opens its timing scope (op_timing.h), then calls the backend's kernel (do_<op>); a failure on the
// way out reaches the backend's op_failed() hook (graph regions). Then the defaults of the optional
// capabilities: value slots computed at once, one-process data parallelism.
#include "backend/backend.h"

#include <exception>

#include "backend/op_contract.h"
#include "backend/op_timing.h"
#include "util/enum_names.h"
#include "util/error.h"

namespace ct {

namespace {

constexpr MatmulPrecision kMatmulPrecisions[] = {MatmulPrecision::automatic, MatmulPrecision::f32,
                                                 MatmulPrecision::bf16};
constexpr AttentionKernels kAttentionKernels[] = {AttentionKernels::automatic, AttentionKernels::flash,
                                                  AttentionKernels::cudnn, AttentionKernels::reference};

}  // namespace

const char* matmul_precision_name(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::automatic: return "auto";
    case MatmulPrecision::f32: return "f32";
    case MatmulPrecision::bf16: return "bf16";
  }
  return "?";
}

MatmulPrecision parse_matmul_precision(const std::string& text, const std::string& where) {
  return parse_enum(kMatmulPrecisions, matmul_precision_name, text, where);
}

std::string matmul_precision_choices() { return enum_choices(kMatmulPrecisions, matmul_precision_name); }

const char* attention_kernels_name(AttentionKernels kernels) {
  switch (kernels) {
    case AttentionKernels::automatic: return "auto";
    case AttentionKernels::flash: return "flash";
    case AttentionKernels::cudnn: return "cudnn";
    case AttentionKernels::reference: return "reference";
  }
  return "?";
}

AttentionKernels parse_attention_kernels(const std::string& text, const std::string& where) {
  return parse_enum(kAttentionKernels, attention_kernels_name, text, where);
}

std::string attention_kernels_choices() { return enum_choices(kAttentionKernels, attention_kernels_name); }

// ---- the public ops -------------------------------------------------------------------------------

// Calls the backend's op_failed() when the op it frames throws (a contract error or a kernel's).
class Backend::OpFrame {
 public:
  explicit OpFrame(Backend& backend) : backend_(backend), exceptions_(std::uncaught_exceptions()) {}
  ~OpFrame() {
    if (std::uncaught_exceptions() > exceptions_) backend_.op_failed();
  }
  OpFrame(const OpFrame&) = delete;
  OpFrame& operator=(const OpFrame&) = delete;

 private:
  Backend& backend_;
  int exceptions_;
};

namespace {

// "gemm bf16 [M x N x K] NT": the op_timing key of one product's shape (op(a) is [M, K]).
std::string gemm_timing_key(DType dtype, const GemmShape& s, bool transpose_a, bool transpose_b) {
  return str("gemm ", dtype_name(dtype), " [", s.m, " x ", s.n, " x ", s.k, "] ", transpose_a ? "T" : "N",
             transpose_b ? "T" : "N");
}

}  // namespace

void Backend::check_kernel_dtype(const char* op, const char* arg, const Tensor& t) const {
  (void)op, (void)arg, (void)t;
}

// The public ops of ops.def's bodies `timed`, `untimed`, `timed_any_dtype` and `untimed_any_dtype`:
// one body, `timing_scope` and `kernel_dtype` each a statement or nothing ((void)0) per kind.
#define CT_OP(Ret, name, params, args, main, kernel, body) CT_BACKEND_OP_BODY_##body(Ret, name, params, args, main)
#define CT_BACKEND_OP_BODY(Ret, name, params, args, timing_scope, kernel_dtype) \
  Ret Backend::name params {                                              \
    timing_scope;                                                         \
    const OpFrame frame(*this);                                           \
    kernel_dtype;                                                         \
    op_contract::name args;                                               \
    return do_##name args;                                                \
  }
#define CT_BACKEND_OP_TIMING(name) const op_timing::Scope timing(#name)
#define CT_BACKEND_OP_KERNEL_DTYPE(name, main) check_kernel_dtype(#name, #main, main)
#define CT_BACKEND_OP_BODY_timed(Ret, name, params, args, main) \
  CT_BACKEND_OP_BODY(Ret, name, params, args, CT_BACKEND_OP_TIMING(name), CT_BACKEND_OP_KERNEL_DTYPE(name, main))
#define CT_BACKEND_OP_BODY_untimed(Ret, name, params, args, main) \
  CT_BACKEND_OP_BODY(Ret, name, params, args, (void)0, CT_BACKEND_OP_KERNEL_DTYPE(name, main))
#define CT_BACKEND_OP_BODY_timed_any_dtype(Ret, name, params, args, main) \
  CT_BACKEND_OP_BODY(Ret, name, params, args, CT_BACKEND_OP_TIMING(name), (void)0)
#define CT_BACKEND_OP_BODY_untimed_any_dtype(Ret, name, params, args, main) \
  CT_BACKEND_OP_BODY(Ret, name, params, args, (void)0, (void)0)
#define CT_BACKEND_OP_BODY_by_hand(Ret, name, params, args, main)
#include "backend/ops.def"
#undef CT_OP
#undef CT_BACKEND_OP_BODY
#undef CT_BACKEND_OP_TIMING
#undef CT_BACKEND_OP_KERNEL_DTYPE
#undef CT_BACKEND_OP_BODY_timed
#undef CT_BACKEND_OP_BODY_untimed
#undef CT_BACKEND_OP_BODY_timed_any_dtype
#undef CT_BACKEND_OP_BODY_untimed_any_dtype
#undef CT_BACKEND_OP_BODY_by_hand

// gemm is timed by its shape, known once the contract holds.
void Backend::gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
                   double alpha, double beta) {
  const OpFrame frame(*this);
  check_kernel_dtype("gemm", "a", a);
  const GemmShape s = op_contract::gemm(a, b, c, transpose_a, transpose_b);
  const op_timing::Scope timing("gemm", [&] { return gemm_timing_key(a.dtype, s, transpose_a, transpose_b); });
  do_gemm(a, b, c, transpose_a, transpose_b, alpha, beta);
}

// Not timed as such: its product is (as gemm, or the fp8 kernel's parts).
void Backend::linear_forward_fp8(const Tensor& x, const Tensor& w, const Tensor& y, double beta) {
  const OpFrame frame(*this);
  check_kernel_dtype("gemm", "a", x);
  op_contract::gemm(x, w, y, false, true);
  do_linear_forward_fp8(x, w, y, beta);
}

void Backend::newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps,
                                 double a, double b, double c) {
  const op_timing::Scope timing("newton_schulz_many");
  const OpFrame frame(*this);
  for (const Tensor& g : gs) check_kernel_dtype("newton_schulz_many", "g", g);
  op_contract::newton_schulz_many(x_outs, gs, steps);
  do_newton_schulz_many(x_outs, gs, steps, a, b, c);
}

// ---- the defaults of the optional kernels ------------------------------------------------------------

void Backend::do_softcap_cross_entropy_fused(const Tensor& losses, const Tensor& dlogits_out, const Tensor& logits,
                                             const Tensor& targets, double softcap, double loss_scale) {
  softcap_cross_entropy_forward(losses, Tensor{}, logits, targets, softcap);
  softcap_cross_entropy_backward(dlogits_out, logits, targets, softcap, loss_scale);
}

void Backend::do_linear_forward_fp8(const Tensor& x, const Tensor& w, const Tensor& y, double beta) {
  gemm(x, w, y, false, true, 1.0, beta);
}

namespace {

// The default value slots: `value` into slot `slot` of `slots` (allocated on first use).
void store_in_slot(std::vector<double>& slots, int slot, double value, bool accumulate) {
  if (slots.empty()) slots.assign(Backend::kValueSlots, 0.0);
  double& s = slots[static_cast<size_t>(slot)];
  s = accumulate ? s + value : value;
}

}  // namespace

void Backend::do_sum_to_slot(int slot, const Tensor& x, bool accumulate) {
  store_in_slot(default_value_slots_, slot, sum(x), accumulate);
}

void Backend::do_sum_squares_to_slot(int slot, const Tensor& x, bool accumulate) {
  store_in_slot(default_value_slots_, slot, sum_squares(x), accumulate);
}

std::vector<double> Backend::read_value_slots(int count) {
  check(count >= 0 && count <= kValueSlots, "read_value_slots: count ", count, " is outside [0, ", kValueSlots, "]");
  synchronize();
  if (default_value_slots_.empty()) default_value_slots_.assign(kValueSlots, 0.0);
  return {default_value_slots_.begin(), default_value_slots_.begin() + count};
}

void Backend::do_newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps,
                                    double a, double b, double c) {
  for (size_t i = 0; i < gs.size(); ++i) newton_schulz(x_outs[i], gs[i], steps, a, b, c);
}

void Backend::all_reduce_begin(const std::vector<Tensor>& tensors, double factor) {
  check(world_size() == 1, "all_reduce_begin: backend '", name(), "' has no collectives of its own for ", world_size(),
        " processes");
  if (factor == 1.0) return;
  for (const Tensor& t : tensors) scale(t, factor);
}

void Backend::broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) {
  check(world_size() == 1, "broadcast: backend '", name(), "' has no collectives of its own for ", world_size(),
        " processes");
  check(tensors.size() == roots.size(), "broadcast: ", tensors.size(), " tensors but ", roots.size(), " roots");
  for (int root : roots) check(root == 0, "broadcast: root ", root, " does not exist (one process)");
}

}  // namespace ct
