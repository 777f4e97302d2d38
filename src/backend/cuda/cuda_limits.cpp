#include "backend/cuda/cuda_limits.h"

#include <cstring>

#include "util/error.h"

namespace ct::cuda {

void check_cuda_dtype(const char* op, const char* arg, const Tensor& t) {
  if (std::strcmp(op, "adamw_update") == 0 || std::strcmp(op, "muon_momentum") == 0 ||
      std::strcmp(op, "muon_update") == 0 || std::strcmp(op, "residual_mix_forward") == 0 ||
      std::strcmp(op, "residual_mix_backward") == 0) {
    if (t.dtype != DType::i32) check_dtype(op, arg, t, DType::f32);  // (i32: the contract's message)
    return;
  }
  if (t.dtype == DType::f64) refuse_dtype(op, arg, t, "the cuda backend computes this op on f32 or bf16 tensors");
}

void check_head_dim(const char* op, int64_t head_dim, const Tensor& t) {
  check(head_dim <= 256, op, ": head_dim ", head_dim, " is above the cuda backend's limit of 256 (",
        t.shape.to_string(), ")");
}

void check_one_dtype(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref) {
  check(t.dtype == ref.dtype, op, ": ", arg, " has dtype ", dtype_name(t.dtype), " but ", ref_arg, " has ",
        dtype_name(ref.dtype), " (the cuda backend's kernel takes one dtype)");
}

AttentionDims attention_dims(const Tensor& q, const Tensor& k) {
  return {q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]};
}

bool fp8_shapes_supported(const GemmShape& shape) {
  return shape.m % 16 == 0 && shape.n % 16 == 0 && shape.k % 16 == 0 && shape.m > 0 && shape.n > 0 && shape.k > 0;
}

}  // namespace ct::cuda
