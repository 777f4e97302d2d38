#include "backend/cuda/cuda_gemm.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "util/error.h"

namespace ct::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // what cuBLAS asks for on Hopper

void check_lt(cublasStatus_t status, const char* call, const std::string& problem) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("cuBLASLt error ", static_cast<int>(status), " (", cublasLtGetStatusName(status), ") in ", call, " for ",
         problem);
}

cudaDataType_t operand_type(GemmOperand operand) {
  switch (operand) {
    case GemmOperand::f32: return CUDA_R_32F;
    case GemmOperand::bf16: return CUDA_R_16BF;
    case GemmOperand::fp8_e4m3: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_32F;
}

const char* operand_name(GemmOperand operand) {
  switch (operand) {
    case GemmOperand::f32: return "f32";
    case GemmOperand::bf16: return "bf16";
    case GemmOperand::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

// Largest power of two (up to 256) dividing the address: cuBLASLt's algorithms assume alignments.
int alignment_of(const void* p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  int alignment = 1;
  while (alignment < 256 && address % (2 * alignment) == 0) alignment *= 2;
  return alignment;
}

}  // namespace

LtOperands lt_operands(int64_t a_rows, int64_t a_cols, int64_t b_rows, int64_t b_cols, bool transpose_a,
                       bool transpose_b) {
  LtOperands o{};
  const int64_t M = transpose_a ? a_cols : a_rows, K = transpose_a ? a_rows : a_cols;
  const int64_t N = transpose_b ? b_rows : b_cols;
  o.m = N;
  o.n = M;
  o.k = K;
  // Our b, row-major [b_rows, b_cols], is column-major [b_cols, b_rows] with ld b_cols.
  o.transa = transpose_b;
  o.a_rows = b_cols;
  o.a_cols = b_rows;
  o.lda = b_cols;
  // Our a likewise.
  o.transb = transpose_a;
  o.b_rows = a_cols;
  o.b_cols = a_rows;
  o.ldb = a_cols;
  o.ldc = N;
  return o;
}

LtGemm::LtGemm() {
  check_lt(cublasLtCreate(&handle_), "cublasLtCreate", "the handle");
  CT_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
  workspace_bytes_ = kWorkspaceBytes;
}

LtGemm::~LtGemm() {
  for (auto& [key, plan] : plans_) {
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.c);
    cublasLtMatmulDescDestroy(plan.desc);
  }
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

size_t LtGemm::KeyHash::operator()(const Key& k) const {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t v : {static_cast<uint64_t>(k.a_rows), static_cast<uint64_t>(k.a_cols), static_cast<uint64_t>(k.b_rows),
                     static_cast<uint64_t>(k.b_cols), static_cast<uint64_t>(k.flags), static_cast<uint64_t>(k.alignments),
                     static_cast<uint64_t>(k.a_scale), static_cast<uint64_t>(k.b_scale)})
    h = (h ^ v) * 1099511628211ull;
  return static_cast<size_t>(h);
}

LtGemm::Plan& LtGemm::plan_for(const GemmCall& call, const Key& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second;
  const LtOperands o = lt_operands(call.a_rows, call.a_cols, call.b_rows, call.b_cols, call.transpose_a,
                                   call.transpose_b);
  const std::string problem = str("gemm [", o.n, " x ", o.k, "] x [", o.k, " x ", o.m, "] (", operand_name(call.operands),
                                  " -> ", dtype_name(call.c_dtype), ")");
  Plan plan;
  const cublasComputeType_t compute = call.operands == GemmOperand::f32 && call.f32_fast_bf16
                                          ? CUBLAS_COMPUTE_32F_FAST_16BF
                                          : CUBLAS_COMPUTE_32F;
  check_lt(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate", problem);
  const cublasOperation_t transa = o.transa ? CUBLAS_OP_T : CUBLAS_OP_N, transb = o.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)),
           "CUBLASLT_MATMUL_DESC_TRANSA", problem);
  check_lt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)),
           "CUBLASLT_MATMUL_DESC_TRANSB", problem);
  if (call.operands == GemmOperand::fp8_e4m3) {
    check(alignment_of(call.a_scale) >= 16 && alignment_of(call.b_scale) >= 16, "cuBLASLt needs 16-byte aligned fp8 "
          "scale pointers (it refuses others with CUBLAS_STATUS_NOT_SUPPORTED) for ", problem);
    // Our b is cuBLASLt's A: its scale is b_scale.
    check_lt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &call.b_scale,
                                            sizeof(call.b_scale)),
             "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER", problem);
    check_lt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &call.a_scale,
                                            sizeof(call.a_scale)),
             "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER", problem);
  }
  const cudaDataType_t ab_type = operand_type(call.operands);
  const cudaDataType_t c_type = call.c_dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  check_lt(cublasLtMatrixLayoutCreate(&plan.a, ab_type, static_cast<uint64_t>(o.a_rows), static_cast<uint64_t>(o.a_cols),
                                      o.lda),
           "cublasLtMatrixLayoutCreate(A)", problem);
  check_lt(cublasLtMatrixLayoutCreate(&plan.b, ab_type, static_cast<uint64_t>(o.b_rows), static_cast<uint64_t>(o.b_cols),
                                      o.ldb),
           "cublasLtMatrixLayoutCreate(B)", problem);
  check_lt(cublasLtMatrixLayoutCreate(&plan.c, c_type, static_cast<uint64_t>(o.m), static_cast<uint64_t>(o.n), o.ldc),
           "cublasLtMatrixLayoutCreate(C)", problem);

  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate", problem);
  const uint64_t workspace = workspace_bytes_;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof(workspace));
  const uint32_t align_a = static_cast<uint32_t>(alignment_of(call.b)), align_b = static_cast<uint32_t>(alignment_of(call.a));
  const uint32_t align_c =
      static_cast<uint32_t>(std::min(alignment_of(call.c), alignment_of(call.c_in ? call.c_in : call.c)));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c));
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.a, plan.b, plan.c, plan.c,
                                                                preference, 1, &result, &found_count);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found_count == 0) {
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.c);
    cublasLtMatmulDescDestroy(plan.desc);
    fail("cuBLASLt has no algorithm for ", problem, " (status ", cublasLtGetStatusName(status),
         "; fp8 needs every dimension a multiple of 16)");
  }
  plan.algo = result.algo;
  return plans_.emplace(key, plan).first->second;
}

void LtGemm::run(const GemmCall& call, cudaStream_t stream) {
  const int align_c = std::min(alignment_of(call.c), alignment_of(call.c_in ? call.c_in : call.c));
  const Key key{call.a_rows,
                call.a_cols,
                call.b_rows,
                call.b_cols,
                static_cast<uint32_t>(call.transpose_a) | static_cast<uint32_t>(call.transpose_b) << 1 |
                    static_cast<uint32_t>(call.operands) << 2 | static_cast<uint32_t>(call.c_dtype) << 4 |
                    static_cast<uint32_t>(call.f32_fast_bf16) << 8,
                static_cast<uint32_t>(alignment_of(call.a)) | static_cast<uint32_t>(alignment_of(call.b)) << 10 |
                    static_cast<uint32_t>(align_c) << 20,
                reinterpret_cast<uintptr_t>(call.a_scale),
                reinterpret_cast<uintptr_t>(call.b_scale)};
  Plan& plan = plan_for(call, key);
  const float alpha = static_cast<float>(call.alpha), beta = static_cast<float>(call.beta);
  const void* c_in = call.c_in ? call.c_in : call.c;
  const cublasStatus_t status = cublasLtMatmul(handle_, plan.desc, &alpha, call.b, plan.a, call.a, plan.b, &beta, c_in,
                                               plan.c, call.c, plan.c, &plan.algo, workspace_, workspace_bytes_, stream);
  if (status != CUBLAS_STATUS_SUCCESS)
    check_lt(status, "cublasLtMatmul",
             str("[", call.a_rows, " x ", call.a_cols, "]", call.transpose_a ? "^T" : "", " x [", call.b_rows, " x ",
                 call.b_cols, "]", call.transpose_b ? "^T" : "", " (", operand_name(call.operands), " -> ",
                 dtype_name(call.c_dtype), ")"));
}

}  // namespace ct::cuda
