#pragma once
// Matrix products through cuBLASLt, in backend.h's row-major convention.
//
// Row-major C [M, N] = op(A) op(B) is, read column-major, C^T = op(B)^T op(A)^T: cuBLASLt is called
// with its "A" = our B and its "B" = our A, m = N, n = M (see lt_operands()). Every distinct
// problem (shapes, transposes, dtypes, alignment) gets a plan once: descriptors plus the
// heuristic's first algorithm; later calls reuse it, so the heuristics run before the clock starts
// (warm-up) and never inside a recorded graph region.
//
// Precision: bf16 operands with f32 accumulation (C/D bf16 or f32); f32 operands in true f32
// (CUBLAS_COMPUTE_32F) or rounded to bf16 inside the product (CUBLAS_COMPUTE_32F_FAST_16BF, the
// backend's matmul_precision "bf16"); fp8 e4m3 operands (already quantised, with device pointers
// to their dequantisation scales) for linear_forward_fp8.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "backend/tensor.h"

namespace ct::cuda {

// How a row-major product maps onto cuBLASLt's column-major operands (pure arithmetic, tested on the host).
struct LtOperands {
  int64_t m, n, k;              // cuBLASLt's problem: D [m, n] column-major = opA [m, k] x opB [k, n]
  bool transa, transb;          // cuBLASLt's op flags
  int64_t a_rows, a_cols, lda;  // stored shape of cuBLASLt's A (our b), column-major
  int64_t b_rows, b_cols, ldb;  // stored shape of cuBLASLt's B (our a)
  int64_t ldc;                  // = N
};
// a: [a_rows, a_cols] row-major, b likewise; c = op(a) op(b) with c [M, N].
LtOperands lt_operands(int64_t a_rows, int64_t a_cols, int64_t b_rows, int64_t b_cols, bool transpose_a,
                       bool transpose_b);

enum class GemmOperand : uint8_t { f32, bf16, fp8_e4m3 };

struct GemmCall {
  const void* a;
  const void* b;
  void* c;                     // the output D (and the input C unless c_in is set)
  const void* c_in = nullptr;  // the input C of beta * C when it is not the output (same layout)
  int64_t a_rows, a_cols, b_rows, b_cols;
  bool transpose_a, transpose_b;
  GemmOperand operands;  // dtype of a and b
  DType c_dtype;         // f32 or bf16
  double alpha = 1.0, beta = 0.0;
  bool f32_fast_bf16 = false;          // f32 operands rounded to bf16 inside the product
  const float* a_scale = nullptr;      // fp8: device pointers to the dequantisation scales of a and b
  const float* b_scale = nullptr;
};

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void run(const GemmCall& call, cudaStream_t stream);
  size_t workspace_bytes() const { return workspace_bytes_; }
  int64_t plans() const { return static_cast<int64_t>(plans_.size()); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  // Everything a plan depends on: shapes, transposes, dtypes, alignments, fp8 scale addresses.
  struct Key {
    int64_t a_rows, a_cols, b_rows, b_cols;
    uint32_t flags;  // transposes, operand and c dtypes, fast-bf16
    uint32_t alignments;
    uintptr_t a_scale, b_scale;
    bool operator==(const Key& o) const {
      return a_rows == o.a_rows && a_cols == o.a_cols && b_rows == o.b_rows && b_cols == o.b_cols && flags == o.flags &&
             alignments == o.alignments && a_scale == o.a_scale && b_scale == o.b_scale;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  Plan& plan_for(const GemmCall& call, const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::unordered_map<Key, Plan, KeyHash> plans_;
};

}  // namespace ct::cuda
