#pragma once
// The CPU backend: the reference implementation of backend.h, multithreaded with OpenMP.
//
// Each op's forward and backward sit next to each other in src/backend/cpu/cpu_<op>.cpp with the
// math in a comment; the CUDA backend is tested against these.
//
// Dtypes
// - Compute ops run in f32 or f64 (kernels are written once, as templates). All "main" tensors of
//   one call (activations, weights, gradients, logits) share that dtype; bf16 is taken only where
//   "Mixed precision" below says, and rejected elsewhere with a ct::Error naming the op.
// - Side tensors (rmsnorm/rope rstd, attention lse, cross-entropy losses, rope cos/sin) are f32,
//   or f64 when the compute dtype is f64. Keeping them in f64 makes float64 finite-difference
//   checks exact to ~1e-10; storing them in f32 while computing in f64 is allowed too.
// - tokens, targets and argmax are i32. allocate/upload/download/copy/fill handle every dtype,
//   bf16 included (conversions round to nearest even); i32 converts only to i32.
// - softcap_cross_entropy: softcap 0 means no cap (z = logits).
// - axpby with beta == 0 overwrites y (stale NaNs in y do not survive), as BLAS does.
//
// Threads: BackendOptions::threads sets OpenMP's thread count for the whole process (0 = every
// available core). Kernels parallelise over rows, heads or (batch, head) pairs; every output element
// is written by one thread in a fixed order, and reductions (sum, sum_squares) add fixed blocks in
// order, so results are identical from run to run (and for sum/sum_squares, for any thread count).
//
// GEMM: f32 through oneDNN or OpenBLAS by transpose case (gemm_library.h; CLOCKTRAIN_CPU_GEMM
// overrides), f64 through OpenBLAS's dgemm.
//
// CPU levels (cpu_level.h, docs/cpu.md): the kernels and libraries follow the CPU level in use (the
// CPU's own, or lower with CLOCKTRAIN_CPU_MAX_ISA).
//
// Mixed precision: BackendOptions::matmul_precision f32 (default, the reference), bf16, or automatic
// (bf16 where the CPU level has a bf16 engine, avx512_bf16 or amx; f32 below). bf16 at a level without
// one is an error naming the CPU, its level and flags, raised when the backend is created. With
// bf16, matmul_operand_dtype() is bf16 and the model stores every matmul operand in bf16 (gpt.h):
// gemm takes bf16 A and B with an f32 or bf16 C (oneDNN's matmul primitive, AMX tiles when the
// kernel grants them, amx.h; f32 accumulation); attention takes bf16 q, k, v, out (AMX kernels for
// head_dim a multiple of 32, else the f32 kernels on widened copies) with f32 or bf16 gradients;
// rmsnorm, rope_qknorm, relu2 and the fused cross-entropy read and write bf16 where the model stores
// it and compute in f32. f32 tensors are accepted everywhere as before.
//
// Argument checks: Backend's public ops check the op contract (backend/op_contract.h) before these
// kernels run; on top of it the CPU has no bf16 kernel for axpby, scale, sum, sum_squares, the value
// slots, embedding, the separate cross-entropy ops, the optimizer updates, Newton-Schulz and the
// residual mix, and it accumulates rmsnorm_backward's dx_acc in f32 or f64 only.
//
// Op timing: with op_timing::set_enabled(true) every public op records its wall-clock time
// (backend/op_timing.h, opened by Backend's public ops; train_throughput_bench --profile-ops 1
// prints the table).
//
// peak_flops(): the theoretical peak of the threads' cores in the matmul precision (cpu_peak.h: the
// clock is measured when the first backend is created, ~40 ms). matmul_ceiling_flops(): measured on first
// use (a few 1536^3 GEMMs in the matmul precision through GemmRate, backend/gemm_peak.h, ~0.3 s on
// 2 cores; 512^3 ones where a 1536^3 call would pass a second: an emulator) and cached.
#include <memory>

#include "backend/backend.h"

namespace ct {

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

}  // namespace ct
