#pragma once
// bf16 matrix products on AMX tiles, for the forward and input-gradient products of a model's
// training step: op(A) = A (row-major), K at most 1024, every dimension a multiple of 32. Same
// contract as bf16_gemm_row_major (onednn_matmul.h), which calls this when amx_gemm_handles():
//
//   C[M,N] = alpha A op(B) + beta C     (row-major; bf16 A and B, f32 accumulation, f32 or bf16 C)
//
// Why not oneDNN's kernels for these: cpu-small's products have K or N = 256, and oneDNN 2.6's AMX
// kernels run them well below their rate on a large square product. Here B is packed once per call
// into VNNI panels of 16 columns (for a weight matrix, at most a few MB), each thread owns whole
// 32-row blocks of C, and a 32 x 32 block of C stays in four tile registers over all of K while its
// A rows (32 x K) stay in L1-L2 and a ~1 MB pass of B's panels in L2 (gemm_bench compares the two,
// docs/performance.md). Products over a longer K (weight gradients over the tokens, A transposed;
// lm_head's input gradient over the vocabulary) ran no faster here than in oneDNN, which keeps them.
//
// Summation order: each C element is the tile products' sum over K in a fixed order, computed by one
// thread: the same bits on every call and for any thread count.
#include <cstdint>

namespace ct {

constexpr int64_t kAmxGemmMaxK = 1024;

// True when this build and process can run the AMX GEMM (amx_usable()), A is not transposed, m, n, k
// are positive multiples of 32 with k <= kAmxGemmMaxK, and the environment variable
// CLOCKTRAIN_CPU_AMX_GEMM is not "0" (which sends every bf16 product to oneDNN, for comparisons).
bool amx_gemm_handles(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);

// The product above; requires amx_gemm_handles(). Called inside an OpenMP parallel region it runs on
// the calling thread alone (as oneDNN's primitives do), else on OpenMP's threads.
void amx_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c, bool c_bf16,
                   int64_t ldc);

}  // namespace ct
