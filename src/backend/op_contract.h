#pragma once
// The contract of Backend's ops (backend.h), written once for every backend: what a call must
// satisfy (dtypes, ranks, shapes, aliasing, scalar ranges). Backend's public ops call these checks
// before they reach a backend's kernels, so every backend refuses a bad call with the same message;
// op_contract.cpp states the rules, op by op.
//
// The dtype model, shared by the CPU and CUDA backends:
// - Float tensors are f32, bf16 or f64. An op computes on the f64 path when its main tensor is f64
//   (every main tensor of the call is then f64) and on the f32 path otherwise, where each main
//   tensor is stored in f32 or bf16 as the op's rules allow (mixed precision).
// - Side tensors (rmsnorm/rope rstd, attention lse, cross-entropy losses, rope cos/sin) are f32, or
//   f64 on the f64 path. tokens, targets and argmax are i32.
// - What the contract accepts is what some backend computes. A backend without a kernel for an
//   accepted combination refuses it in its kernel, naming the op, the tensor and its own limits
//   (the CPU computes the elementwise and optimizer ops in f32 or f64, the CUDA backend never f64;
//   cpu_backend.h and cuda_backend.h list them).
//
// Every message starts with the op's name, then names the argument.
#include <cstdint>
#include <vector>

#include "backend/tensor.h"

namespace ct {

// ---- the checks the rules are written with (kernels use them for their own limits) -----------------

void check_not_empty(const char* op, const char* arg, const Tensor& t);
void check_dtype(const char* op, const char* arg, const Tensor& t, DType expected);
void check_same_dtype(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref);
void check_shape(const char* op, const char* arg, const Tensor& t, const Shape& expected);
void check_ndim(const char* op, const char* arg, const Tensor& t, int ndim);
void check_numel(const char* op, const char* arg, const Tensor& t, int64_t expected);
// Same element count and same last dimension (the same rows, whatever the leading dimensions).
void check_same_rows(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref);
// A float tensor (f32, bf16 or f64); returns the compute dtype: f64 for f64, f32 for f32 or bf16.
DType check_compute_dtype(const char* op, const char* arg, const Tensor& t);
// A main tensor stored in f32 or bf16 on the f32 path, or in f64 on the f64 path.
void check_storage_dtype(const char* op, const char* arg, const Tensor& t, DType compute);
// A side tensor: f32, or f64 on the f64 path.
void check_side_dtype(const char* op, const char* arg, const Tensor& t, DType compute);
// A dtype a kernel cannot compute in: `what` says what it takes ("the cpu backend computes this op
// in f32 or f64 only").
void refuse_dtype(const char* op, const char* arg, const Tensor& t, const char* what);

// The sizes an op's kernel works on (computed from checked arguments).
struct RowShape {
  int64_t rows, width;  // a tensor viewed as [rows, width] over its last dimension
};
RowShape rows_of(const Tensor& t);
struct GemmShape {
  int64_t m, n, k;
};
GemmShape gemm_shape(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b);

// ---- the ops' contracts (backend.h's conventions; op_contract.cpp gives each rule) -----------------
namespace op_contract {

// op_contract::<op>(the op's arguments) for each op of ops.def but the `by_hand` ones, declared here
// from the list.
#define CT_OP(Ret, name, params, args, main, kernel, body) CT_OP_CONTRACT_##body(name, params)
#define CT_OP_CONTRACT_timed(name, params) void name params;
#define CT_OP_CONTRACT_untimed(name, params) void name params;
#define CT_OP_CONTRACT_timed_any_dtype(name, params) void name params;
#define CT_OP_CONTRACT_untimed_any_dtype(name, params) void name params;
#define CT_OP_CONTRACT_by_hand(name, params)
#include "backend/ops.def"
#undef CT_OP
#undef CT_OP_CONTRACT_timed
#undef CT_OP_CONTRACT_untimed
#undef CT_OP_CONTRACT_timed_any_dtype
#undef CT_OP_CONTRACT_untimed_any_dtype
#undef CT_OP_CONTRACT_by_hand

// The `by_hand` ops' contracts. gemm returns the product's sizes (its timing key); linear_forward_fp8
// has gemm's contract with transpose_b.
GemmShape gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b);
void newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps);

}  // namespace op_contract
}  // namespace ct
