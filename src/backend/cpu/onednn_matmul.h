#pragma once
// bf16 matrix products: bf16 A and B, f32 accumulation, an f32 or bf16 C. A model's forward and
// most input-gradient products (A not transposed, dimensions multiples of 32) run on clocktrain's own
// GEMMs: where the process may use AMX (amx.h), the AMX GEMM's (amx_gemm.h, K <= 1024), else the
// AVX512-BF16 dot-product GEMM's (dot_gemm.h, K <= 4096). The rest go through oneDNN's matmul
// primitive, which on this project's machines runs on AMX tiles (brg:avx512_core_amx_bf16) when the
// process may use AMX, else on AVX512_BF16 dot products (brg:avx512_core_bf16).
//
//   C[M,N] = alpha op(A) op(B) + beta C          (row-major, op(X) = X^T when the flag is set)
//
// oneDNN picks and JIT-compiles a kernel when a primitive is created (~0.1-1 ms), so primitives are
// built once per (shape, transposes, leading dimensions, dtypes, beta) and cached for the life of the
// process: a training step reuses the same few dozen. beta is part of the primitive (a "sum" post-op),
// which is fine because callers use beta 0 or 1. alpha != 1 is applied after the product, in one pass
// over C (oneDNN 2.6 would run a scaled matmul on a slower non-AMX kernel).
//
// Thread use: the primitive runs on OpenMP's threads (Debian's libdnnl uses the OpenMP runtime), the
// same pool as every other kernel; called from inside a parallel region it runs on the calling thread.
// For a fixed thread count a primitive computes the same bits on every call (clocktrain's GEMMs: for any
// thread count).
#include <cstdint>
#include <string>

namespace ct {

// Which code runs the bf16 products, for the backend's description: "clocktrain's AMX GEMM (K <= 1024)
// and oneDNN (the rest)", the same for the AVX512-BF16 GEMM, or "oneDNN".
std::string bf16_gemm_description();

// c_bf16: C holds bf16 (rounded to nearest even once, after the f32 accumulation), else f32.
void bf16_gemm_row_major(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                         const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c,
                         bool c_bf16, int64_t ldc);

}  // namespace ct
