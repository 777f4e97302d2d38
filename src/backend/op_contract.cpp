// The contract of Backend's ops (op_contract.h): each op's rules, written once for every backend.
// Backend's public ops (backend.cpp) run these before any kernel.
#include "backend/op_contract.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <tuple>
#include <utility>

#include "backend/backend.h"
#include "util/error.h"

namespace ct {

// ---- the checks ------------------------------------------------------------------------------------------

void check_not_empty(const char* op, const char* arg, const Tensor& t) {
  check(!t.empty(), op, ": ", arg, " is an empty tensor (no memory)");
}

void check_dtype(const char* op, const char* arg, const Tensor& t, DType expected) {
  check_not_empty(op, arg, t);
  check(t.dtype == expected, op, ": ", arg, " must be ", dtype_name(expected), ", got ", dtype_name(t.dtype));
}

void check_same_dtype(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref) {
  check_not_empty(op, arg, t);
  check(t.dtype == ref.dtype, op, ": ", arg, " has dtype ", dtype_name(t.dtype), " but ", ref_arg, " has ",
        dtype_name(ref.dtype), " (they must match)");
}

void check_shape(const char* op, const char* arg, const Tensor& t, const Shape& expected) {
  check(t.shape == expected, op, ": ", arg, " has shape ", t.shape.to_string(), ", expected ", expected.to_string());
}

void check_ndim(const char* op, const char* arg, const Tensor& t, int ndim) {
  check(t.shape.ndim == ndim, op, ": ", arg, " must be ", ndim, "-D, got shape ", t.shape.to_string());
}

void check_numel(const char* op, const char* arg, const Tensor& t, int64_t expected) {
  check(t.numel() == expected, op, ": ", arg, " has ", t.numel(), " elements (shape ", t.shape.to_string(),
        "), expected ", expected);
}

namespace {
int64_t last_dim(const Tensor& t) { return t.shape.ndim ? t.shape[t.shape.ndim - 1] : 0; }
}  // namespace

void check_same_rows(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref) {
  check(t.numel() == ref.numel() && last_dim(t) == last_dim(ref), op, ": ", arg, " has shape ", t.shape.to_string(),
        " but ", ref_arg, " has shape ", ref.shape.to_string(), " (expected the same rows)");
}

DType check_compute_dtype(const char* op, const char* arg, const Tensor& t) {
  check_not_empty(op, arg, t);
  check(t.dtype != DType::i32, op, ": ", arg, " has dtype i32; expected f32, bf16 or f64");
  return t.dtype == DType::f64 ? DType::f64 : DType::f32;
}

void check_storage_dtype(const char* op, const char* arg, const Tensor& t, DType compute) {
  check_not_empty(op, arg, t);
  if (compute == DType::f64) {
    check(t.dtype == DType::f64, op, ": ", arg, " must be f64 like the other tensors, got ", dtype_name(t.dtype));
  } else {
    check(t.dtype == DType::f32 || t.dtype == DType::bf16, op, ": ", arg, " must be f32 or bf16, got ",
          dtype_name(t.dtype));
  }
}

void check_side_dtype(const char* op, const char* arg, const Tensor& t, DType compute) {
  check_not_empty(op, arg, t);
  check(t.dtype == DType::f32 || t.dtype == compute, op, ": ", arg, " must be f32",
        compute == DType::f64 ? " or f64" : "", ", got ", dtype_name(t.dtype));
}

void refuse_dtype(const char* op, const char* arg, const Tensor& t, const char* what) {
  fail(op, ": ", arg, " has dtype ", dtype_name(t.dtype), "; ", what);
}

RowShape rows_of(const Tensor& t) {
  const int64_t width = last_dim(t);
  return {width > 0 ? t.numel() / width : 0, width};
}

GemmShape gemm_shape(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  return {transpose_a ? a.shape[1] : a.shape[0], transpose_b ? b.shape[0] : b.shape[1],
          transpose_a ? a.shape[0] : a.shape[1]};
}

namespace op_contract {

namespace {

bool is_float(DType d) { return d == DType::f32 || d == DType::f64 || d == DType::bf16; }

// Conversions: between any float dtypes; i32 only to i32.
void check_convertible(const char* op, DType to, DType from) {
  check(to == from || (is_float(to) && is_float(from)), op, ": cannot convert ", dtype_name(from), " to ",
        dtype_name(to), " (i32 converts only to i32)");
}

}  // namespace

// ---- memory and elementwise ------------------------------------------------------------------------------

// upload / download: a tensor with memory, a host pointer (null only for no elements), and a
// convertible pair of dtypes.
void upload(const Tensor& dst, const void* host, DType host_dtype) {
  check_not_empty("upload", "dst", dst);
  check(host != nullptr || dst.numel() == 0, "upload: host pointer is null");
  check_convertible("upload", dst.dtype, host_dtype);
}

void download(void* host, DType host_dtype, const Tensor& src) {
  check_not_empty("download", "src", src);
  check(host != nullptr || src.numel() == 0, "download: host pointer is null");
  check_convertible("download", host_dtype, src.dtype);
}

// fill: any dtype; into i32 only an integer value that i32 holds.
void fill(const Tensor& x, double value) {
  check_not_empty("fill", "x", x);
  if (x.dtype == DType::i32)
    check(value >= INT32_MIN && value <= INT32_MAX && value == std::floor(value), "fill: value ", value,
          " is not an i32 integer");
}

// copy: the same element count (any shapes), convertible dtypes.
void copy(const Tensor& dst, const Tensor& src) {
  check_not_empty("copy", "dst", dst);
  check_not_empty("copy", "src", src);
  check_numel("copy", "dst", dst, src.numel());
  check_convertible("copy", dst.dtype, src.dtype);
}

// axpby: float y; x of y's dtype and element count.
void axpby(const Tensor& y, double, const Tensor& x, double) {
  check_compute_dtype("axpby", "y", y);
  check_same_dtype("axpby", "x", x, "y", y);
  check_numel("axpby", "x", x, y.numel());
}

// scale, sum, sum_squares: a float tensor.
void scale(const Tensor& x, double) { check_compute_dtype("scale", "x", x); }
void sum(const Tensor& x) { check_compute_dtype("sum", "x", x); }
void sum_squares(const Tensor& x) { check_compute_dtype("sum_squares", "x", x); }

namespace {

// sum_to_slot, sum_squares_to_slot: a slot of the value table, a float tensor.
void check_value_slot(const char* op, int slot, const Tensor& x) {
  check(slot >= 0 && slot < Backend::kValueSlots, op, ": slot ", slot, " is outside [0, ", Backend::kValueSlots, ")");
  check_compute_dtype(op, "x", x);
}

}  // namespace

void sum_to_slot(int slot, const Tensor& x, bool) { check_value_slot("sum_to_slot", slot, x); }
void sum_squares_to_slot(int slot, const Tensor& x, bool) { check_value_slot("sum_squares_to_slot", slot, x); }

// ---- gemm ------------------------------------------------------------------------------------------------

// a, b, c 2-D; b of a's dtype; c f32 or bf16 with bf16 operands, else of the operands' dtype; the
// inner dimensions of op(a) and op(b) agree; c is [M, N] and aliases neither operand.
GemmShape gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b) {
  const char* op = "gemm";
  check_compute_dtype(op, "a", a);
  check_same_dtype(op, "b", b, "a", a);
  check_not_empty(op, "c", c);
  if (a.dtype == DType::bf16) {
    check(c.dtype == DType::f32 || c.dtype == DType::bf16, op, ": with bf16 a and b, c must be f32 or bf16, got ",
          dtype_name(c.dtype));
  } else {
    check(c.dtype == a.dtype, op, ": ", dtype_name(a.dtype), " operands need an ", dtype_name(a.dtype), " c, got ",
          dtype_name(c.dtype));
  }
  check_ndim(op, "a", a, 2);
  check_ndim(op, "b", b, 2);
  check_ndim(op, "c", c, 2);
  const GemmShape s = gemm_shape(a, b, transpose_a, transpose_b);
  const int64_t b_rows = transpose_b ? b.shape[1] : b.shape[0];
  check(b_rows == s.k, op, ": inner dimensions differ: op(a) is [", s.m, ", ", s.k, "] (a ", a.shape.to_string(),
        transpose_a ? " transposed" : "", ") but op(b) is [", b_rows, ", ", s.n, "] (b ", b.shape.to_string(),
        transpose_b ? " transposed" : "", ")");
  check_shape(op, "c", c, Shape{s.m, s.n});
  check(c.data != a.data && c.data != b.data, op, ": c must not alias a or b");
  return s;
}

// ---- the model's ops -------------------------------------------------------------------------------------

// embedding_forward: a float 2-D table [V, C]; out stored for the table's path with N * C elements;
// i32 tokens (their range, [0, V), is checked where the ids are read: on the host by the CPU
// backend, on the device by the CUDA backend).
void embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table) {
  const char* op = "embedding_forward";
  const DType compute = check_compute_dtype(op, "table", table);
  check_storage_dtype(op, "out", out, compute);
  check_ndim(op, "table", table, 2);
  check_dtype(op, "tokens", tokens, DType::i32);
  check_numel(op, "out", out, tokens.numel() * table.shape[1]);
}

// embedding_backward: an accumulator table dtable_acc [V, C] in f32 or f64 (never bf16); dout stored
// for its path with N * C elements; i32 tokens.
void embedding_backward(const Tensor& dtable_acc, const Tensor& dout, const Tensor& tokens) {
  const char* op = "embedding_backward";
  check_not_empty(op, "dtable_acc", dtable_acc);
  check(dtable_acc.dtype == DType::f32 || dtable_acc.dtype == DType::f64, op,
        ": dtable_acc must be f32 or f64 (an accumulator), got ", dtype_name(dtable_acc.dtype));
  check_storage_dtype(op, "dout", dout, dtable_acc.dtype);
  check_ndim(op, "dtable_acc", dtable_acc, 2);
  check_dtype(op, "tokens", tokens, DType::i32);
  check_numel(op, "dout", dout, tokens.numel() * dtable_acc.shape[1]);
}

namespace {

using Named = std::pair<const char*, const Tensor&>;

// `main` float; each of `others` stored for its path, with main's rows. Returns the compute dtype.
DType check_rows_alike(const char* op, const char* main_arg, const Tensor& main, std::initializer_list<Named> others) {
  const DType compute = check_compute_dtype(op, main_arg, main);
  for (const auto& [name, t] : others) check_storage_dtype(op, name, t, compute);
  for (const auto& [name, t] : others) check_same_rows(op, name, t, main_arg, main);
  return compute;
}

}  // namespace

// rmsnorm: x (y in the backward) float; the other main tensors stored for its path with the same rows;
// rstd a side tensor of one value per row.
void rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, double) {
  const char* op = "rmsnorm_forward";
  const DType compute = check_rows_alike(op, "x", x, {{"y", y}});
  check_side_dtype(op, "rstd", rstd, compute);
  check_numel(op, "rstd", rstd, rows_of(x).rows);
}

void rmsnorm_backward(const Tensor& dx_acc, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  const char* op = "rmsnorm_backward";
  const DType compute = check_rows_alike(op, "y", y, {{"dy", dy}, {"dx_acc", dx_acc}});
  check_side_dtype(op, "rstd", rstd, compute);
  check_numel(op, "rstd", rstd, rows_of(y).rows);
}

namespace {

// rope_qknorm's rules on x [B, T, H, D] (y in the backward): 4-D, D even; rstd one side value per
// (b, t, h); cos and sin side tensors [T_max, D/2] with T_max >= pos_offset + T; pos_offset >= 0.
void check_rope(const char* op, const Tensor& x, const Tensor& rstd, const Tensor& cos, const Tensor& sin,
                int64_t pos_offset, DType compute) {
  check_ndim(op, "x", x, 4);
  const int64_t time = x.shape[1], head_dim = x.shape[3];
  check(head_dim % 2 == 0, op, ": head_dim must be even, got ", head_dim, " (x ", x.shape.to_string(), ")");
  check_side_dtype(op, "rstd", rstd, compute);
  check_numel(op, "rstd", rstd, x.shape[0] * time * x.shape[2]);
  check(pos_offset >= 0, op, ": pos_offset must be >= 0, got ", pos_offset);
  for (const auto& [name, table] : {std::pair<const char*, const Tensor&>{"cos", cos}, {"sin", sin}}) {
    check_side_dtype(op, name, table, compute);
    check_ndim(op, name, table, 2);
    check(table.shape[1] == head_dim / 2, op, ": ", name, " has shape ", table.shape.to_string(), ", expected [T_max, ",
          head_dim / 2, "] for head_dim ", head_dim);
    check(table.shape[0] >= pos_offset + time, op, ": ", name, " has ", table.shape[0],
          " positions but pos_offset + T = ", pos_offset + time);
  }
}

}  // namespace

// rope_qknorm_forward: x float; y stored for its path, of x's shape; then check_rope.
void rope_qknorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& cos, const Tensor& sin,
                         int64_t pos_offset, double) {
  const char* op = "rope_qknorm_forward";
  const DType compute = check_compute_dtype(op, "x", x);
  check_storage_dtype(op, "y", y, compute);
  check_shape(op, "y", y, x.shape);
  check_rope(op, x, rstd, cos, sin, pos_offset, compute);
}

// rope_qknorm_backward: y float; dy and dx_out stored for its path, of y's shape; then check_rope.
void rope_qknorm_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& y, const Tensor& rstd,
                          const Tensor& cos, const Tensor& sin, int64_t pos_offset) {
  const char* op = "rope_qknorm_backward";
  const DType compute = check_compute_dtype(op, "y", y);
  check_storage_dtype(op, "dy", dy, compute);
  check_storage_dtype(op, "dx_out", dx_out, compute);
  check_shape(op, "dy", dy, y.shape);
  check_shape(op, "dx_out", dx_out, y.shape);
  check_rope(op, y, rstd, cos, sin, pos_offset, compute);
}

namespace {

// Attention's operands: q [B, Tq, H, D] float; k, v [B, Tk, Hkv, D] of q's dtype, v of k's shape;
// H a multiple of Hkv; Tk >= Tq; lse a side tensor of B * H * Tq values. Returns the compute dtype.
DType check_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lse) {
  const DType compute = check_compute_dtype(op, "q", q);
  check_ndim(op, "q", q, 4);
  check_ndim(op, "k", k, 4);
  check_same_dtype(op, "k", k, "q", q);
  check_same_dtype(op, "v", v, "q", q);
  check_shape(op, "v", v, k.shape);
  const int64_t batch = q.shape[0], query_len = q.shape[1], key_len = k.shape[1], heads = q.shape[2],
                kv_heads = k.shape[2];
  check(k.shape[0] == batch && k.shape[3] == q.shape[3], op, ": k ", k.shape.to_string(), " does not match q ",
        q.shape.to_string(), " in batch or head_dim");
  check(kv_heads > 0 && heads % kv_heads == 0, op, ": query heads (", heads, ") must be a multiple of kv heads (",
        kv_heads, ")");
  check(key_len >= query_len, op, ": keys (", key_len, ") must be at least as many as queries (", query_len, ")");
  check_side_dtype(op, "lse", lse, compute);
  check_numel(op, "lse", lse, batch * heads * query_len);
  return compute;
}

}  // namespace

// attention_forward: check_attention; out of q's dtype and shape.
void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       double) {
  const char* op = "attention_forward";
  check_attention(op, q, k, v, lse);
  check_same_dtype(op, "out", out, "q", q);
  check_shape(op, "out", out, q.shape);
}

// attention_backward: check_attention; dout and out of q's dtype and shape; the gradients of q's
// shape (dq) or k's (dk, dv), in q's dtype, or f32 or bf16 when q is bf16 (mixed precision).
void attention_backward(const Tensor& dq_out, const Tensor& dk_out, const Tensor& dv_out, const Tensor& dout,
                        const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                        double) {
  const char* op = "attention_backward";
  check_attention(op, q, k, v, lse);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"dout", dout}, {"out", out}}) {
    check_same_dtype(op, name, t, "q", q);
    check_shape(op, name, t, q.shape);
  }
  for (const auto& [name, t, shape] :
       {std::tuple<const char*, const Tensor&, const Shape&>{"dq_out", dq_out, q.shape}, {"dk_out", dk_out, k.shape},
        {"dv_out", dv_out, k.shape}}) {
    if (q.dtype == DType::bf16) {
      check_storage_dtype(op, name, t, DType::f32);
    } else {
      check_same_dtype(op, name, t, "q", q);
    }
    check_shape(op, name, t, shape);
  }
}

// relu2: x float; y (dy, dx_out) stored for its path with the same rows.
void relu2_forward(const Tensor& y, const Tensor& x) { check_rows_alike("relu2_forward", "x", x, {{"y", y}}); }

void relu2_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& x) {
  check_rows_alike("relu2_backward", "x", x, {{"dy", dy}, {"dx_out", dx_out}});
}

namespace {

// The residual mix's scalars: one element each, of the residual's dtype.
void check_mix_scalars(const char* op, const char* ref_name, const Tensor& ref,
                       std::initializer_list<std::pair<const char*, const Tensor*>> scalars) {
  for (const auto& [name, t] : scalars) {
    check_same_dtype(op, name, *t, ref_name, ref);
    check_numel(op, name, *t, 1);
  }
}

}  // namespace

// residual_mix_forward: float x; x0 (and x_saved_out unless empty) of its dtype and shape; r, a scalars.
void residual_mix_forward(const Tensor& x, const Tensor& x_saved_out, const Tensor& x0, const Tensor& r,
                          const Tensor& a) {
  const char* op = "residual_mix_forward";
  check_compute_dtype(op, "x", x);
  check_same_dtype(op, "x0", x0, "x", x);
  check_shape(op, "x0", x0, x.shape);
  if (!x_saved_out.empty()) {
    check_same_dtype(op, "x_saved_out", x_saved_out, "x", x);
    check_shape(op, "x_saved_out", x_saved_out, x.shape);
  }
  check_mix_scalars(op, "x", x, {{"r", &r}, {"a", &a}});
}

// residual_mix_backward: float x_saved; dx, dx0_acc, x0 of its dtype and shape; r, a, dr_acc, da_acc scalars.
void residual_mix_backward(const Tensor& dx, const Tensor& dx0_acc, const Tensor& dr_acc, const Tensor& da_acc,
                           const Tensor& x_saved, const Tensor& x0, const Tensor& r, const Tensor& a) {
  const char* op = "residual_mix_backward";
  check_compute_dtype(op, "x_saved", x_saved);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"dx", &dx}, {"dx0_acc", &dx0_acc}, {"x0", &x0}}) {
    check_same_dtype(op, name, *t, "x_saved", x_saved);
    check_shape(op, name, *t, x_saved.shape);
  }
  check_mix_scalars(op, "x_saved", x_saved, {{"r", &r}, {"a", &a}, {"dr_acc", &dr_acc}, {"da_acc", &da_acc}});
}

namespace {

// Cross-entropy's logits [..., V]: float with V > 0; i32 targets, one per row (the ids' range,
// [-inf, V), is checked where they are read); softcap >= 0 and finite (0: no cap). Returns the rows.
int64_t check_cross_entropy(const char* op, const Tensor& logits, const Tensor& targets, double softcap) {
  check_compute_dtype(op, "logits", logits);
  check(logits.shape.ndim >= 1, op, ": logits has no dimensions");
  const RowShape s = rows_of(logits);
  check(s.width > 0, op, ": logits has an empty last dimension, shape ", logits.shape.to_string());
  check_dtype(op, "targets", targets, DType::i32);
  check_numel(op, "targets", targets, s.rows);
  check(softcap >= 0 && std::isfinite(softcap), op, ": softcap must be >= 0 (0 = no cap), got ", softcap);
  return s.rows;
}

// dlogits_out: stored for the logits' path, the same rows; it may alias logits only with their dtype.
void check_dlogits(const char* op, const Tensor& dlogits_out, const Tensor& logits) {
  check_storage_dtype(op, "dlogits_out", dlogits_out, logits.dtype == DType::f64 ? DType::f64 : DType::f32);
  check_same_rows(op, "dlogits_out", dlogits_out, "logits", logits);
  check(dlogits_out.data != logits.data || dlogits_out.dtype == logits.dtype, op,
        ": dlogits_out may alias logits only when both have the same dtype (got ", dtype_name(dlogits_out.dtype),
        " and ", dtype_name(logits.dtype), ")");
}

void check_losses(const char* op, const Tensor& losses, const Tensor& logits, int64_t rows) {
  check_side_dtype(op, "losses", losses, logits.dtype == DType::f64 ? DType::f64 : DType::f32);
  check_numel(op, "losses", losses, rows);
}

}  // namespace

// forward: check_cross_entropy; losses a side tensor per row; argmax (optional) i32 per row.
void softcap_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                   const Tensor& targets, double softcap) {
  const char* op = "softcap_cross_entropy_forward";
  const int64_t rows = check_cross_entropy(op, logits, targets, softcap);
  check_losses(op, losses, logits, rows);
  if (!argmax.empty()) {
    check_dtype(op, "argmax", argmax, DType::i32);
    check_numel(op, "argmax", argmax, rows);
  }
}

// backward: check_cross_entropy; check_dlogits.
void softcap_cross_entropy_backward(const Tensor& dlogits_out, const Tensor& logits, const Tensor& targets,
                                    double softcap, double) {
  const char* op = "softcap_cross_entropy_backward";
  check_cross_entropy(op, logits, targets, softcap);
  check_dlogits(op, dlogits_out, logits);
}

// fused: both.
void softcap_cross_entropy_fused(const Tensor& losses, const Tensor& dlogits_out, const Tensor& logits,
                                 const Tensor& targets, double softcap, double) {
  const char* op = "softcap_cross_entropy_fused";
  const int64_t rows = check_cross_entropy(op, logits, targets, softcap);
  check_dlogits(op, dlogits_out, logits);
  check_losses(op, losses, logits, rows);
}

// ---- optimizer updates -----------------------------------------------------------------------------------

// adamw_update: float param; grad, m, v of its dtype and element count; step >= 1; betas in [0, 1).
void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, double, double beta1,
                  double beta2, double, double, int64_t step) {
  const char* op = "adamw_update";
  check_compute_dtype(op, "param", param);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"grad", grad}, {"m", m}, {"v", v}}) {
    check_same_dtype(op, name, t, "param", param);
    check_numel(op, name, t, param.numel());
  }
  check(step >= 1, op, ": step is 1-based, got ", step);
  check(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, op, ": betas must lie in [0, 1), got (", beta1, ", ",
        beta2, ")");
}

// muon_momentum: float grad; u_out and buf of its dtype and element count.
void muon_momentum(const Tensor& u_out, const Tensor& buf, const Tensor& grad, double) {
  const char* op = "muon_momentum";
  check_compute_dtype(op, "grad", grad);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"u_out", u_out}, {"buf", buf}}) {
    check_same_dtype(op, name, t, "grad", grad);
    check_numel(op, name, t, grad.numel());
  }
}

// muon_update: float param; u of its dtype and element count.
void muon_update(const Tensor& param, const Tensor& u, double, double) {
  check_compute_dtype("muon_update", "param", param);
  check_same_dtype("muon_update", "u", u, "param", param);
  check_numel("muon_update", "u", u, param.numel());
}

namespace {

// newton_schulz: float 2-D g; x_out of its dtype and shape; steps >= 0.
void check_newton_schulz(const char* op, const Tensor& x_out, const Tensor& g, int steps) {
  check_compute_dtype(op, "g", g);
  check_same_dtype(op, "x_out", x_out, "g", g);
  check_ndim(op, "g", g, 2);
  check_shape(op, "x_out", x_out, g.shape);
  check(steps >= 0, op, ": steps must be >= 0, got ", steps);
}

}  // namespace

void newton_schulz(const Tensor& x_out, const Tensor& g, int steps, double, double, double) {
  check_newton_schulz("newton_schulz", x_out, g, steps);
}

// newton_schulz_many: as many outputs as inputs, each pair as newton_schulz's.
void newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps) {
  const char* op = "newton_schulz_many";
  check(x_outs.size() == gs.size(), op, ": ", x_outs.size(), " outputs but ", gs.size(), " inputs");
  for (size_t i = 0; i < gs.size(); ++i) check_newton_schulz(op, x_outs[i], gs[i], steps);
}

}  // namespace op_contract
}  // namespace ct
