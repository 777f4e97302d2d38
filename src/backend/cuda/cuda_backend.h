#pragma once
// The CUDA backend: every op of backend.h on one NVIDIA GPU (docs/cuda.md).
//
// Dtypes
// - Kernels compute in f32 on f32 or bf16 storage; matmuls go through cuBLASLt (bf16 operands with
//   f32 accumulation, f32 operands in true f32 or, with matmul_precision "bf16", rounded to bf16
//   inside the product; fp8 e4m3 for linear_forward_fp8 when BackendOptions::fp8 is on).
// - Mixed dtypes where mixed precision needs them: gemm's c may be f32 with bf16 a and b; rmsnorm's
//   y (and rmsnorm_backward's dx) may differ from x (dy, y); embedding reads an f32 or bf16 table
//   into f32 or bf16 rows and accumulates bf16 or f32 rows into an f32 table; cross-entropy reads
//   f32 or bf16 logits and writes f32 or bf16 dlogits (in place only when the dtypes match);
//   copy converts between f32, bf16 and f64. The optimizer ops and the residual mix take f32 only.
// - f64 tensors can be allocated, filled, copied, uploaded and downloaded; compute ops reject them.
// - Side tensors (rstd, lse, losses, cos, sin) are f32; tokens, targets and argmax i32.
// - Token ids and targets are range-checked on the device: a bad id sets an error word that the
//   next wait (synchronize, sum, download, read_value_slots) turns into a ct::Error.
// Determinism: no float atomics; reductions add in a fixed order; embedding_backward sorts
// positions by token (stable) and adds each row's positions in order; attention's backward
// computes dK/dV and dQ in separate passes. Same inputs, same bits.
// Attention: tensor-core flash kernels for bf16 with head_dim 64 or 128; otherwise (f32, other
// head_dims) the reference kernels. BackendOptions::attention (the recipe's backend.attention)
// "reference" forces the latter; "cudnn" puts cuDNN's fused attention first where it applies
// (cudnn_attention.h; written, not yet run on a GPU).
// Graph regions, value slots and data parallelism: backend.h and docs/cuda.md.
#include <memory>

#include "backend/backend.h"

namespace ct {

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace ct
