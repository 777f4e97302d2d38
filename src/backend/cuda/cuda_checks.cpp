#include "backend/cuda/cuda_checks.h"

#include <cmath>
#include <tuple>
#include <utility>

#include "util/error.h"

namespace ct::cuda {

void check_present(const char* op, const char* arg, const Tensor& t) {
  check(!t.empty(), op, ": ", arg, " is an empty tensor (no memory)");
}

void check_compute_dtype(const char* op, const char* arg, const Tensor& t) {
  check_present(op, arg, t);
  check(t.dtype == DType::f32 || t.dtype == DType::bf16, op, ": ", arg, " has dtype ", dtype_name(t.dtype),
        "; the cuda backend computes this op on f32 or bf16 tensors");
}

void check_exact_dtype(const char* op, const char* arg, const Tensor& t, DType expected) {
  check_present(op, arg, t);
  check(t.dtype == expected, op, ": ", arg, " must be ", dtype_name(expected), ", got ", dtype_name(t.dtype));
}

void check_matching_dtype(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref) {
  check_present(op, arg, t);
  check(t.dtype == ref.dtype, op, ": ", arg, " has dtype ", dtype_name(t.dtype), " but ", ref_arg, " has ",
        dtype_name(ref.dtype), " (they must match)");
}

void check_exact_shape(const char* op, const char* arg, const Tensor& t, const Shape& expected) {
  check(t.shape == expected, op, ": ", arg, " has shape ", t.shape.to_string(), ", expected ", expected.to_string());
}

void check_element_count(const char* op, const char* arg, const Tensor& t, int64_t expected) {
  check(t.numel() == expected, op, ": ", arg, " has ", t.numel(), " elements (shape ", t.shape.to_string(),
        "), expected ", expected);
}

void check_rank(const char* op, const char* arg, const Tensor& t, int ndim) {
  check(t.shape.ndim == ndim, op, ": ", arg, " must be ", ndim, "-D, got shape ", t.shape.to_string());
}

namespace {

int64_t last_dim(const Tensor& t) { return t.shape.ndim ? t.shape[t.shape.ndim - 1] : 0; }

void check_same_rows(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref) {
  check(t.numel() == ref.numel() && last_dim(t) == last_dim(ref), op, ": ", arg, " has shape ", t.shape.to_string(),
        " but ", ref_arg, " has shape ", ref.shape.to_string(), " (expected the same rows)");
}

RowShape rows_of(const Tensor& t) {
  const int64_t width = last_dim(t);
  return {width > 0 ? t.numel() / width : 0, width};
}

}  // namespace

RowShape check_rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x) {
  const char* op = "rmsnorm_forward";
  check_compute_dtype(op, "x", x);
  check_compute_dtype(op, "y", y);
  check_same_rows(op, "y", y, "x", x);
  const RowShape s = rows_of(x);
  check_exact_dtype(op, "rstd", rstd, DType::f32);
  check_element_count(op, "rstd", rstd, s.rows);
  return s;
}

RowShape check_rmsnorm_backward(const Tensor& dx, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  const char* op = "rmsnorm_backward";
  check_compute_dtype(op, "y", y);
  check_compute_dtype(op, "dy", dy);  // dx_acc, dy and y each f32 or bf16
  check_compute_dtype(op, "dx_acc", dx);
  check_same_rows(op, "dy", dy, "y", y);
  check_same_rows(op, "dx_acc", dx, "y", y);
  const RowShape s = rows_of(y);
  check_exact_dtype(op, "rstd", rstd, DType::f32);
  check_element_count(op, "rstd", rstd, s.rows);
  return s;
}

RopeShape check_rope_qknorm(const char* op, const Tensor& x, const Tensor& other, const Tensor& rstd,
                            const Tensor& cos, const Tensor& sin, int64_t pos_offset) {
  check_compute_dtype(op, "x", x);
  check_rank(op, "x", x, 4);
  check_compute_dtype(op, "output", other);  // x and the other tensor each f32 or bf16
  check_exact_shape(op, "output", other, x.shape);
  RopeShape s{x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
  check(s.head_dim % 2 == 0, op, ": head_dim must be even, got ", s.head_dim, " (x ", x.shape.to_string(), ")");
  check(s.head_dim <= 256, op, ": head_dim ", s.head_dim, " is above the cuda backend's limit of 256");
  check_exact_dtype(op, "rstd", rstd, DType::f32);
  check_element_count(op, "rstd", rstd, s.rows());
  check(pos_offset >= 0, op, ": pos_offset must be >= 0, got ", pos_offset);
  for (const auto& [name, table] : {std::pair<const char*, const Tensor&>{"cos", cos}, {"sin", sin}}) {
    check_exact_dtype(op, name, table, DType::f32);
    check_rank(op, name, table, 2);
    check(table.shape[1] == s.head_dim / 2, op, ": ", name, " has shape ", table.shape.to_string(),
          ", expected [T_max, ", s.head_dim / 2, "] for head_dim ", s.head_dim);
    check(table.shape[0] >= pos_offset + s.time, op, ": ", name, " has ", table.shape[0],
          " positions but pos_offset + T = ", pos_offset + s.time);
  }
  return s;
}

namespace {

AttentionDims check_attention_common(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& lse) {
  check_compute_dtype(op, "q", q);
  check_rank(op, "q", q, 4);
  check_rank(op, "k", k, 4);
  check_matching_dtype(op, "k", k, "q", q);
  check_matching_dtype(op, "v", v, "q", q);
  check_exact_shape(op, "v", v, k.shape);
  AttentionDims d{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]};
  check(k.shape[0] == d.batch && k.shape[3] == d.head_dim, op, ": k ", k.shape.to_string(), " does not match q ",
        q.shape.to_string(), " in batch or head_dim");
  check(d.kv_heads > 0 && d.heads % d.kv_heads == 0, op, ": query heads (", d.heads,
        ") must be a multiple of kv heads (", d.kv_heads, ")");
  check(d.key_len >= d.query_len, op, ": keys (", d.key_len, ") must be at least as many as queries (", d.query_len,
        ")");
  check(d.head_dim <= 256, op, ": head_dim ", d.head_dim, " is above the cuda backend's limit of 256");
  check_exact_dtype(op, "lse", lse, DType::f32);
  check_element_count(op, "lse", lse, d.batch * d.heads * d.query_len);
  return d;
}

}  // namespace

AttentionDims check_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                      const Tensor& v) {
  const char* op = "attention_forward";
  AttentionDims d = check_attention_common(op, q, k, v, lse);
  check_matching_dtype(op, "out", out, "q", q);
  check_exact_shape(op, "out", out, q.shape);
  return d;
}

AttentionDims check_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                       const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                       const Tensor& v) {
  const char* op = "attention_backward";
  AttentionDims d = check_attention_common(op, q, k, v, lse);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"dout", dout}, {"out", out}}) {
    check_matching_dtype(op, name, t, "q", q);
    check_exact_shape(op, name, t, q.shape);
  }
  // the gradients: q's dtype, or f32 with bf16 operands (the model's mixed precision)
  for (const auto& [name, t, shape] : {std::tuple<const char*, const Tensor&, const Shape&>{"dq_out", dq, q.shape},
                                       {"dk_out", dk, k.shape}, {"dv_out", dv, k.shape}}) {
    if (q.dtype == DType::bf16 && t.dtype == DType::f32) {
      check_exact_dtype(op, name, t, DType::f32);
    } else {
      check_matching_dtype(op, name, t, "q", q);
    }
    check_exact_shape(op, name, t, shape);
  }
  return d;
}

namespace {

RowShape check_cross_entropy_common(const char* op, const Tensor& logits, const Tensor& targets, double softcap) {
  check_compute_dtype(op, "logits", logits);
  check(logits.shape.ndim >= 1, op, ": logits has no dimensions");
  const RowShape s = rows_of(logits);
  check(s.width > 0, op, ": logits has an empty last dimension, shape ", logits.shape.to_string());
  check_exact_dtype(op, "targets", targets, DType::i32);
  check_element_count(op, "targets", targets, s.rows);
  check(softcap >= 0 && std::isfinite(softcap), op, ": softcap must be >= 0 (0 = no cap), got ", softcap);
  return s;
}

}  // namespace

RowShape check_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                     const Tensor& targets, double softcap) {
  const char* op = "softcap_cross_entropy_forward";
  const RowShape s = check_cross_entropy_common(op, logits, targets, softcap);
  check_exact_dtype(op, "losses", losses, DType::f32);
  check_element_count(op, "losses", losses, s.rows);
  if (!argmax.empty()) {
    check_exact_dtype(op, "argmax", argmax, DType::i32);
    check_element_count(op, "argmax", argmax, s.rows);
  }
  return s;
}

RowShape check_cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                                      double softcap) {
  const char* op = "softcap_cross_entropy_backward";
  const RowShape s = check_cross_entropy_common(op, logits, targets, softcap);
  check_compute_dtype(op, "dlogits_out", dlogits);
  check_same_rows(op, "dlogits_out", dlogits, "logits", logits);
  check(dlogits.data != logits.data || dlogits.dtype == logits.dtype, op,
        ": dlogits_out may alias logits only when both have the same dtype (got ", dtype_name(dlogits.dtype), " and ",
        dtype_name(logits.dtype), ")");
  return s;
}

EmbeddingShape check_embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table) {
  const char* op = "embedding_forward";
  check_compute_dtype(op, "table", table);
  check_compute_dtype(op, "out", out);
  check_rank(op, "table", table, 2);
  check_exact_dtype(op, "tokens", tokens, DType::i32);
  EmbeddingShape s{tokens.numel(), table.shape[0], table.shape[1]};
  check_element_count(op, "out", out, s.tokens * s.width);
  return s;
}

EmbeddingShape check_embedding_backward(const Tensor& dtable, const Tensor& dout, const Tensor& tokens) {
  const char* op = "embedding_backward";
  check_exact_dtype(op, "dtable_acc", dtable, DType::f32);
  check_compute_dtype(op, "dout", dout);
  check_rank(op, "dtable_acc", dtable, 2);
  check_exact_dtype(op, "tokens", tokens, DType::i32);
  EmbeddingShape s{tokens.numel(), dtable.shape[0], dtable.shape[1]};
  check_element_count(op, "dout", dout, s.tokens * s.width);
  return s;
}

GemmShape check_gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b) {
  const char* op = "gemm";
  check_compute_dtype(op, "a", a);
  check_matching_dtype(op, "b", b, "a", a);
  check_compute_dtype(op, "c", c);
  check(a.dtype == DType::bf16 || c.dtype == DType::f32, op, ": f32 operands need an f32 c, got ",
        dtype_name(c.dtype));
  check_rank(op, "a", a, 2);
  check_rank(op, "b", b, 2);
  check_rank(op, "c", c, 2);
  const int64_t m = transpose_a ? a.shape[1] : a.shape[0], k = transpose_a ? a.shape[0] : a.shape[1];
  const int64_t b_rows = transpose_b ? b.shape[1] : b.shape[0], n = transpose_b ? b.shape[0] : b.shape[1];
  check(b_rows == k, op, ": inner dimensions differ: op(a) is [", m, ", ", k, "] (a ", a.shape.to_string(),
        transpose_a ? " transposed" : "", ") but op(b) is [", b_rows, ", ", n, "] (b ", b.shape.to_string(),
        transpose_b ? " transposed" : "", ")");
  check_exact_shape(op, "c", c, Shape{m, n});
  check(c.data != a.data && c.data != b.data, op, ": c must not alias a or b");
  return {m, n, k};
}

bool fp8_shapes_supported(const GemmShape& shape) {
  return shape.m % 16 == 0 && shape.n % 16 == 0 && shape.k % 16 == 0 && shape.m > 0 && shape.n > 0 && shape.k > 0;
}

}  // namespace ct::cuda
