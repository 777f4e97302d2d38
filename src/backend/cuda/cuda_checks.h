#pragma once
// Argument checks of the CUDA backend's ops: host-only functions (no device needed, so the unit
// tests run them in CI). Each error names the op, the argument and what was expected. Each returns
// the sizes its kernel needs.
#include <cstdint>

#include "backend/cuda/cuda_kernels.h"
#include "backend/tensor.h"

namespace ct::cuda {

void check_present(const char* op, const char* arg, const Tensor& t);
// f32 or bf16 (the CUDA backend's compute dtypes).
void check_compute_dtype(const char* op, const char* arg, const Tensor& t);
void check_exact_dtype(const char* op, const char* arg, const Tensor& t, DType expected);
void check_matching_dtype(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref);
void check_exact_shape(const char* op, const char* arg, const Tensor& t, const Shape& expected);
void check_element_count(const char* op, const char* arg, const Tensor& t, int64_t expected);
void check_rank(const char* op, const char* arg, const Tensor& t, int ndim);

struct RowShape {
  int64_t rows, width;  // a tensor viewed as [rows, width] over its last dimension
};

RowShape check_rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x);
RowShape check_rmsnorm_backward(const Tensor& dx, const Tensor& dy, const Tensor& y, const Tensor& rstd);

struct RopeShape {
  int64_t batch, time, heads, head_dim;
  int64_t rows() const { return batch * time * heads; }
};
RopeShape check_rope_qknorm(const char* op, const Tensor& x, const Tensor& other, const Tensor& rstd,
                            const Tensor& cos, const Tensor& sin, int64_t pos_offset);

AttentionDims check_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                      const Tensor& v);
AttentionDims check_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                       const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                       const Tensor& v);

// rows x vocab of the logits
RowShape check_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                     const Tensor& targets, double softcap);
RowShape check_cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                                      double softcap);

struct EmbeddingShape {
  int64_t tokens, vocab, width;
};
EmbeddingShape check_embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table);
EmbeddingShape check_embedding_backward(const Tensor& dtable, const Tensor& dout, const Tensor& tokens);

struct GemmShape {
  int64_t m, n, k;
};
GemmShape check_gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b);
// linear_forward_fp8's extra rule: every dimension a multiple of 16 (cuBLASLt's fp8 kernels).
bool fp8_shapes_supported(const GemmShape& shape);

}  // namespace ct::cuda
