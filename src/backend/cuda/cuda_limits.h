#pragma once
// The CUDA backend's own limits, beyond the op contract that Backend's public ops check for every
// backend (backend/op_contract.h): what its kernels cannot compute. Host-only functions (no device
// needed, so the unit tests run them in CI); each error names the op and the argument.
#include <cstdint>

#include "backend/cuda/cuda_kernels.h"
#include "backend/op_contract.h"
#include "backend/tensor.h"

namespace ct::cuda {

// The dtypes the kernels compute in, checked on an op's main tensor (Backend::check_kernel_dtype):
// f32 or bf16, never f64; the optimizer updates (adamw_update, muon_momentum, muon_update) f32 only.
void check_cuda_dtype(const char* op, const char* arg, const Tensor& t);
// The rope and attention kernels hold a head in shared memory: head_dim <= 256.
void check_head_dim(const char* op, int64_t head_dim, const Tensor& t);
// A kernel that reads and writes one dtype (relu2's): `arg` in `ref`'s dtype.
void check_one_dtype(const char* op, const char* arg, const Tensor& t, const char* ref_arg, const Tensor& ref);

// The sizes of attention's kernels, from q [B, Tq, H, D] and k [B, Tk, Hkv, D].
AttentionDims attention_dims(const Tensor& q, const Tensor& k);
// linear_forward_fp8's extra rule: every dimension a multiple of 16 (cuBLASLt's fp8 kernels); other
// shapes run as gemm().
bool fp8_shapes_supported(const GemmShape& shape);

}  // namespace ct::cuda
