#pragma once
// bf16 matrix products on AVX512-BF16's vdpbf16ps, for CPUs with a bf16 engine but no AMX (AMD Zen 4
// and 5, Intel Cooper Lake): the same products and contract as the AMX GEMM (amx_gemm.h), which
// bf16_gemm_row_major (onednn_matmul.h) sends here when dot_gemm_handles():
//
//   C[M,N] = alpha A op(B) + beta C     (row-major; bf16 A and B, f32 accumulation, f32 or bf16 C)
//
// Why not oneDNN's kernels for these: oneDNN 2.6's AVX512-BF16 matmul runs cpu-small's forward and
// input-gradient products at 72-82% of a Zen 5's bf16 peak, where one core's register block below
// runs at ~95% (gemm_bench compares the two, docs/performance.md). B is packed once per call into
// VNNI panels of 16 columns (vnni::pack_panels), each thread owns whole 32-row blocks of C, and a
// block of 6 rows x 64 columns of C stays in 24 zmm accumulators over all of K (bf16_dot_gemm.h's
// register block): per pair of K, 4 loads of B and 6 broadcasts of A's pairs feed 24 vdpbf16ps.
// B's 64 columns (at most 512 KB) stay in L1-L2 while the thread's rows of A go by.
//
// Summation order: each C element sums its K/2 pair products in order, on one thread: the same bits
// on every call and for any thread count.
#include <cstdint>

namespace ct {

constexpr int64_t kDotGemmMaxK = 4096;

// True when this build and process can run the dot-product GEMM (the CPU level is avx512_bf16 or
// above, the build has AVX512-BF16), A is not transposed, m, n, k are positive multiples of 32 with
// k <= kDotGemmMaxK, and the environment variable CLOCKTRAIN_CPU_DOT_GEMM is not "0" (which sends
// these products to oneDNN, for comparisons).
bool dot_gemm_handles(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);

// The product above; requires dot_gemm_handles(). Called inside an OpenMP parallel region it runs on
// the calling thread alone, else on OpenMP's threads.
void dot_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c, bool c_bf16,
                   int64_t ldc);

}  // namespace ct
