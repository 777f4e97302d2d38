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

// Host transfers and the value slots are not timed (the ops they wait for are).
void Backend::upload(const Tensor& dst, const void* host, DType host_dtype) {
  const OpFrame frame(*this);
  op_contract::upload(dst, host, host_dtype);
  do_upload(dst, host, host_dtype);
}

void Backend::download(void* host, DType host_dtype, const Tensor& src) {
  const OpFrame frame(*this);
  op_contract::download(host, host_dtype, src);
  do_download(host, host_dtype, src);
}

void Backend::fill(const Tensor& x, double value) {
  const op_timing::Scope timing("fill");
  const OpFrame frame(*this);
  op_contract::fill(x, value);
  do_fill(x, value);
}

void Backend::copy(const Tensor& dst, const Tensor& src) {
  const op_timing::Scope timing("copy");
  const OpFrame frame(*this);
  op_contract::copy(dst, src);
  do_copy(dst, src);
}

void Backend::axpby(const Tensor& y, double alpha, const Tensor& x, double beta) {
  const op_timing::Scope timing("axpby");
  const OpFrame frame(*this);
  check_kernel_dtype("axpby", "y", y);
  op_contract::axpby(y, x);
  do_axpby(y, alpha, x, beta);
}

void Backend::scale(const Tensor& x, double factor) {
  const op_timing::Scope timing("scale");
  const OpFrame frame(*this);
  check_kernel_dtype("scale", "x", x);
  op_contract::float_tensor("scale", x);
  do_scale(x, factor);
}

double Backend::sum(const Tensor& x) {
  const op_timing::Scope timing("sum");
  const OpFrame frame(*this);
  check_kernel_dtype("sum", "x", x);
  op_contract::float_tensor("sum", x);
  return do_sum(x);
}

double Backend::sum_squares(const Tensor& x) {
  const op_timing::Scope timing("sum_squares");
  const OpFrame frame(*this);
  check_kernel_dtype("sum_squares", "x", x);
  op_contract::float_tensor("sum_squares", x);
  return do_sum_squares(x);
}

void Backend::sum_to_slot(int slot, const Tensor& x, bool accumulate) {
  const OpFrame frame(*this);
  check_kernel_dtype("sum_to_slot", "x", x);
  op_contract::value_slot("sum_to_slot", slot, x);
  do_sum_to_slot(slot, x, accumulate);
}

void Backend::sum_squares_to_slot(int slot, const Tensor& x, bool accumulate) {
  const OpFrame frame(*this);
  check_kernel_dtype("sum_squares_to_slot", "x", x);
  op_contract::value_slot("sum_squares_to_slot", slot, x);
  do_sum_squares_to_slot(slot, x, accumulate);
}

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

void Backend::embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table) {
  const op_timing::Scope timing("embedding_forward");
  const OpFrame frame(*this);
  check_kernel_dtype("embedding_forward", "table", table);
  op_contract::embedding_forward(out, tokens, table);
  do_embedding_forward(out, tokens, table);
}

void Backend::embedding_backward(const Tensor& dtable_acc, const Tensor& dout, const Tensor& tokens) {
  const op_timing::Scope timing("embedding_backward");
  const OpFrame frame(*this);
  check_kernel_dtype("embedding_backward", "dtable_acc", dtable_acc);
  op_contract::embedding_backward(dtable_acc, dout, tokens);
  do_embedding_backward(dtable_acc, dout, tokens);
}

void Backend::rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, double eps) {
  const op_timing::Scope timing("rmsnorm_forward");
  const OpFrame frame(*this);
  check_kernel_dtype("rmsnorm_forward", "x", x);
  op_contract::rmsnorm_forward(y, rstd, x);
  do_rmsnorm_forward(y, rstd, x, eps);
}

void Backend::rmsnorm_backward(const Tensor& dx_acc, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  const op_timing::Scope timing("rmsnorm_backward");
  const OpFrame frame(*this);
  check_kernel_dtype("rmsnorm_backward", "y", y);
  op_contract::rmsnorm_backward(dx_acc, dy, y, rstd);
  do_rmsnorm_backward(dx_acc, dy, y, rstd);
}

void Backend::rope_qknorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& cos,
                                  const Tensor& sin, int64_t pos_offset, double eps) {
  const op_timing::Scope timing("rope_qknorm_forward");
  const OpFrame frame(*this);
  check_kernel_dtype("rope_qknorm_forward", "x", x);
  op_contract::rope_qknorm_forward(y, rstd, x, cos, sin, pos_offset);
  do_rope_qknorm_forward(y, rstd, x, cos, sin, pos_offset, eps);
}

void Backend::rope_qknorm_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& y, const Tensor& rstd,
                                   const Tensor& cos, const Tensor& sin, int64_t pos_offset) {
  const op_timing::Scope timing("rope_qknorm_backward");
  const OpFrame frame(*this);
  check_kernel_dtype("rope_qknorm_backward", "y", y);
  op_contract::rope_qknorm_backward(dx_out, dy, y, rstd, cos, sin, pos_offset);
  do_rope_qknorm_backward(dx_out, dy, y, rstd, cos, sin, pos_offset);
}

void Backend::attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                const Tensor& v, double scale) {
  const op_timing::Scope timing("attention_forward");
  const OpFrame frame(*this);
  check_kernel_dtype("attention_forward", "q", q);
  op_contract::attention_forward(out, lse, q, k, v);
  do_attention_forward(out, lse, q, k, v, scale);
}

void Backend::attention_backward(const Tensor& dq_out, const Tensor& dk_out, const Tensor& dv_out,
                                 const Tensor& dout, const Tensor& out, const Tensor& lse, const Tensor& q,
                                 const Tensor& k, const Tensor& v, double scale) {
  const op_timing::Scope timing("attention_backward");
  const OpFrame frame(*this);
  check_kernel_dtype("attention_backward", "q", q);
  op_contract::attention_backward(dq_out, dk_out, dv_out, dout, out, lse, q, k, v);
  do_attention_backward(dq_out, dk_out, dv_out, dout, out, lse, q, k, v, scale);
}

void Backend::relu2_forward(const Tensor& y, const Tensor& x) {
  const op_timing::Scope timing("relu2_forward");
  const OpFrame frame(*this);
  check_kernel_dtype("relu2_forward", "x", x);
  op_contract::relu2_forward(y, x);
  do_relu2_forward(y, x);
}

void Backend::relu2_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& x) {
  const op_timing::Scope timing("relu2_backward");
  const OpFrame frame(*this);
  check_kernel_dtype("relu2_backward", "x", x);
  op_contract::relu2_backward(dx_out, dy, x);
  do_relu2_backward(dx_out, dy, x);
}

void Backend::softcap_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                            const Tensor& targets, double softcap) {
  const op_timing::Scope timing("softcap_cross_entropy_forward");
  const OpFrame frame(*this);
  check_kernel_dtype("softcap_cross_entropy_forward", "logits", logits);
  op_contract::cross_entropy_forward(losses, argmax, logits, targets, softcap);
  do_softcap_cross_entropy_forward(losses, argmax, logits, targets, softcap);
}

void Backend::softcap_cross_entropy_backward(const Tensor& dlogits_out, const Tensor& logits, const Tensor& targets,
                                             double softcap, double loss_scale) {
  const op_timing::Scope timing("softcap_cross_entropy_backward");
  const OpFrame frame(*this);
  check_kernel_dtype("softcap_cross_entropy_backward", "logits", logits);
  op_contract::cross_entropy_backward(dlogits_out, logits, targets, softcap);
  do_softcap_cross_entropy_backward(dlogits_out, logits, targets, softcap, loss_scale);
}

void Backend::softcap_cross_entropy_fused(const Tensor& losses, const Tensor& dlogits_out, const Tensor& logits,
                                          const Tensor& targets, double softcap, double loss_scale) {
  const op_timing::Scope timing("softcap_cross_entropy_fused");
  const OpFrame frame(*this);
  check_kernel_dtype("softcap_cross_entropy_fused", "logits", logits);
  op_contract::cross_entropy_fused(losses, dlogits_out, logits, targets, softcap);
  do_softcap_cross_entropy_fused(losses, dlogits_out, logits, targets, softcap, loss_scale);
}

void Backend::adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, double lr,
                           double beta1, double beta2, double eps, double weight_decay, int64_t step) {
  const op_timing::Scope timing("adamw_update");
  const OpFrame frame(*this);
  check_kernel_dtype("adamw_update", "param", param);
  op_contract::adamw_update(param, grad, m, v, beta1, beta2, step);
  do_adamw_update(param, grad, m, v, lr, beta1, beta2, eps, weight_decay, step);
}

void Backend::muon_momentum(const Tensor& u_out, const Tensor& buf, const Tensor& grad, double mu) {
  const op_timing::Scope timing("muon_momentum");
  const OpFrame frame(*this);
  check_kernel_dtype("muon_momentum", "grad", grad);
  op_contract::muon_momentum(u_out, buf, grad);
  do_muon_momentum(u_out, buf, grad, mu);
}

void Backend::newton_schulz(const Tensor& x_out, const Tensor& g, int steps, double a, double b, double c) {
  const op_timing::Scope timing("newton_schulz");
  const OpFrame frame(*this);
  check_kernel_dtype("newton_schulz", "g", g);
  op_contract::newton_schulz("newton_schulz", x_out, g, steps);
  do_newton_schulz(x_out, g, steps, a, b, c);
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
