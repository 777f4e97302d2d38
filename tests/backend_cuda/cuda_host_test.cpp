// Host-side parts of the CUDA backend, run in CI without a GPU: the row-major -> cuBLASLt operand
// mapping (checked by evaluating cuBLASLt's column-major contract on the host), fp8 scaling and
// encoding, the argument checks (the op contract of every backend, backend/op_contract.h, then the
// CUDA kernels' own limits, cuda_limits.h), the graph-region bookkeeping, and which shapes cuDNN's
// attention takes and how it fails where it cannot start.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cuda/cuda_limits.h"
#include "backend/cuda/cuda_gemm.h"
#include "backend/cuda/cudnn_attention.h"
#include "backend/cuda/fp8.h"
#include "backend/cuda/graph_recorder.h"
#include "test_support.h"
#include "util/error.h"

namespace ct::cuda {
namespace {

// ---- the gemm operand mapping ------------------------------------------------------------------------

// What cuBLASLt computes, written from its documented contract: D = op(A) op(B), column-major,
// element (i, j) of a stored matrix at ptr[i + j * ld]; op = transpose when the flag is set.
std::vector<double> column_major_product(const LtOperands& o, const std::vector<double>& lt_a,
                                         const std::vector<double>& lt_b) {
  std::vector<double> d(static_cast<size_t>(o.m * o.n), 0.0);
  auto a_at = [&](int64_t i, int64_t p) {  // op(A)[i, p]
    return o.transa ? lt_a[static_cast<size_t>(p + i * o.lda)] : lt_a[static_cast<size_t>(i + p * o.lda)];
  };
  auto b_at = [&](int64_t p, int64_t j) {  // op(B)[p, j]
    return o.transb ? lt_b[static_cast<size_t>(j + p * o.ldb)] : lt_b[static_cast<size_t>(p + j * o.ldb)];
  };
  for (int64_t i = 0; i < o.m; ++i)
    for (int64_t j = 0; j < o.n; ++j) {
      double total = 0;
      for (int64_t p = 0; p < o.k; ++p) total += a_at(i, p) * b_at(p, j);
      d[static_cast<size_t>(i + j * o.ldc)] = total;
    }
  return d;
}

TEST(CudaGemmMapping, ColumnMajorCallComputesTheRowMajorProduct) {
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  const int64_t M = 5, N = 7, K = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
      std::vector<double> a(static_cast<size_t>(a_rows * a_cols)), b(static_cast<size_t>(b_rows * b_cols));
      for (double& v : a) v = normal(rng);
      for (double& v : b) v = normal(rng);
      const LtOperands o = lt_operands(a_rows, a_cols, b_rows, b_cols, ta, tb);
      EXPECT_EQ(o.m, N);
      EXPECT_EQ(o.n, M);
      EXPECT_EQ(o.k, K);
      EXPECT_EQ(o.a_rows * o.a_cols, b_rows * b_cols);
      EXPECT_EQ(o.b_rows * o.b_cols, a_rows * a_cols);
      // cuBLASLt's A is our b, its B our a, its D (column-major [N, M], ld N) our row-major c.
      const std::vector<double> d = column_major_product(o, b, a);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double expected = 0;
          for (int64_t p = 0; p < K; ++p) {
            const double av = ta ? a[static_cast<size_t>(p * a_cols + i)] : a[static_cast<size_t>(i * a_cols + p)];
            const double bv = tb ? b[static_cast<size_t>(j * b_cols + p)] : b[static_cast<size_t>(p * b_cols + j)];
            expected += av * bv;
          }
          EXPECT_NEAR(d[static_cast<size_t>(i * N + j)], expected, 1e-12) << ta << tb << " at " << i << "," << j;
        }
    }
}

TEST(CudaGemmMapping, LinearLayerIsTheTnLayoutThatFp8Needs) {
  // y = x W^T: gemm(x [M, K], W [N, K], transpose_b) must reach cuBLASLt as A transposed, B not.
  const LtOperands o = lt_operands(64, 640, 2560, 640, false, true);
  EXPECT_TRUE(o.transa);
  EXPECT_FALSE(o.transb);
  EXPECT_EQ(o.lda, 640);
  EXPECT_EQ(o.ldb, 640);
}

// ---- fp8 ------------------------------------------------------------------------------------------

TEST(Fp8, ScaleIsTheLargestPowerOfTwoThatFits) {
  for (float amax : {1e-6f, 0.001f, 0.3f, 1.0f, 3.5f, 448.0f, 449.0f, 1000.0f, 65504.0f, 1e20f}) {
    const float s = fp8_e4m3_scale(amax);
    int exponent = 0;
    EXPECT_EQ(std::frexp(s, &exponent), 0.5f) << "power of two, amax " << amax;
    EXPECT_LE(amax * s, kFp8E4m3Max) << amax;
    EXPECT_GT(amax * s * 2.0f, kFp8E4m3Max) << "the next power of two would overflow, amax " << amax;
  }
  EXPECT_EQ(fp8_e4m3_scale(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_scale(NAN)));  // a non-finite amax poisons the product (fp8.h)
  EXPECT_TRUE(std::isnan(fp8_e4m3_scale(INFINITY)));
  EXPECT_EQ(fp8_e4m3_scale(-1.0f), 1.0f);
}

// The amax kernel's reduction on the host: each of 32 lanes folds its elements with amax_combine, then
// the lanes are folded pairwise as the warp shuffle does (offsets 16, 8, 4, 2, 1). A NaN or an Inf in
// any lane must reach the scale, and the scale must then make the quantised tensor NaN, not 448.
float amax_as_the_kernel_reduces(const std::vector<float>& x) {
  float lane[32];
  for (int l = 0; l < 32; ++l) {
    lane[l] = 0.0f;
    for (size_t i = static_cast<size_t>(l); i < x.size(); i += 32) lane[l] = amax_combine(lane[l], std::fabs(x[i]));
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    float next[32];
    for (int l = 0; l < 32; ++l) next[l] = amax_combine(lane[l], lane[l ^ offset]);
    std::copy(next, next + 32, lane);
  }
  return lane[0];
}

TEST(Fp8, NanAndInfReachTheScaleAndPoisonTheQuantisedTensor) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.001f * static_cast<float>(i) - 0.3f;
  EXPECT_EQ(amax_as_the_kernel_reduces(x), std::fabs(x.back()));
  for (size_t at : {size_t{0}, size_t{17}, size_t{999}}) {  // first lane, a middle lane, the last element
    for (float bad : {NAN, -NAN, INFINITY, -INFINITY}) {
      std::vector<float> y = x;
      y[at] = bad;
      const float amax = amax_as_the_kernel_reduces(y);
      if (std::isnan(bad)) EXPECT_TRUE(std::isnan(amax)) << at;
      else EXPECT_EQ(amax, INFINITY) << at;
      const float s = fp8_e4m3_scale(amax);
      EXPECT_TRUE(std::isnan(s)) << at;
      // the quantisation kernel stores e4m3(x * s): NaN for every element, the Inf's too
      EXPECT_EQ(float_to_e4m3_reference(y[at] * s) & 0x7f, 0x7f) << at;
      EXPECT_EQ(float_to_e4m3_reference(x[5] * s) & 0x7f, 0x7f) << at;
    }
  }
  // fmaxf, which the warp reduction used before, drops the NaN: the case this guards against
  EXPECT_EQ(std::fmax(NAN, 2.0f), 2.0f);
  EXPECT_TRUE(std::isnan(amax_combine(NAN, 2.0f)) && std::isnan(amax_combine(2.0f, NAN)));
}

TEST(Fp8, EncoderRoundTripsEveryCode) {
  for (int code = 0; code < 256; ++code) {
    const float value = e4m3_to_float_reference(static_cast<uint8_t>(code));
    if (std::isnan(value)) {
      EXPECT_TRUE((code & 0x7f) == 0x7f) << code;
      continue;
    }
    const uint8_t back = float_to_e4m3_reference(value);
    if (value == 0.0f) {
      EXPECT_EQ(back & 0x7f, 0) << code;
    } else {
      EXPECT_EQ(back, code) << "value " << value;
    }
  }
  EXPECT_EQ(e4m3_to_float_reference(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float_reference(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_float_reference(0x08), std::ldexp(1.0f, -6));  // smallest normal
}

TEST(Fp8, EncoderRoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(e4m3_to_float_reference(float_to_e4m3_reference(1.0625f)), 1.0f);    // tie between 1 and 1.125 -> even (1)
  EXPECT_EQ(e4m3_to_float_reference(float_to_e4m3_reference(1.1875f)), 1.25f);   // tie between 1.125 and 1.25 -> 1.25
  EXPECT_EQ(e4m3_to_float_reference(float_to_e4m3_reference(1.07f)), 1.125f);
  EXPECT_EQ(e4m3_to_float_reference(float_to_e4m3_reference(460.0f)), 448.0f);
  EXPECT_EQ(e4m3_to_float_reference(float_to_e4m3_reference(1e30f)), 448.0f);
  EXPECT_EQ(e4m3_to_float_reference(float_to_e4m3_reference(-1e30f)), -448.0f);
  EXPECT_EQ(e4m3_to_float_reference(float_to_e4m3_reference(std::ldexp(1.0f, -12))), 0.0f);  // below half a subnormal
  EXPECT_TRUE(std::isnan(e4m3_to_float_reference(float_to_e4m3_reference(NAN))));
  // relative error of a scaled value stays within half an ulp (2^-4)
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-448.0f, 448.0f);
  for (int i = 0; i < 10000; ++i) {
    const float x = uniform(rng);
    if (std::fabs(x) < 0.02f) continue;  // subnormals have absolute, not relative, spacing
    const float back = e4m3_to_float_reference(float_to_e4m3_reference(x));
    EXPECT_LE(std::fabs(back - x), std::fabs(x) * 0.0625f + 1e-7f) << x;
  }
}

// ---- argument checks -----------------------------------------------------------------------------------

Tensor fake(Shape shape, DType dtype, uintptr_t address = 0x10000) {
  Tensor t;
  t.data = reinterpret_cast<void*>(address);
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

using ct::test::error_of;

// What a call to the CUDA backend's op goes through before its kernel runs: the kernels' dtypes
// (CudaBackend::check_kernel_dtype), the op's contract (Backend's public op), the kernel's own
// limits; then the sizes the kernel works on.
GemmShape check_gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b) {
  check_cuda_dtype("gemm", "a", a);
  return op_contract::gemm(a, b, c, transpose_a, transpose_b);
}

AttentionDims check_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                      const Tensor& v) {
  check_cuda_dtype("attention_forward", "q", q);
  op_contract::attention_forward(out, lse, q, k, v, 1.0);
  const AttentionDims d = attention_dims(q, k);
  check_head_dim("attention_forward", d.head_dim, q);
  return d;
}

AttentionDims check_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                       const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                       const Tensor& v) {
  check_cuda_dtype("attention_backward", "q", q);
  op_contract::attention_backward(dq, dk, dv, dout, out, lse, q, k, v, 1.0);
  const AttentionDims d = attention_dims(q, k);
  check_head_dim("attention_backward", d.head_dim, q);
  return d;
}

RowShape check_rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x) {
  check_cuda_dtype("rmsnorm_forward", "x", x);
  op_contract::rmsnorm_forward(y, rstd, x, 1e-6);
  return rows_of(x);
}

RowShape check_rmsnorm_backward(const Tensor& dx, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  check_cuda_dtype("rmsnorm_backward", "y", y);
  op_contract::rmsnorm_backward(dx, dy, y, rstd);
  return rows_of(y);
}

struct RopeShape {
  int64_t batch, time, heads, head_dim;
};

// rope_qknorm_forward with x and its output y
RopeShape check_rope_qknorm(const char* op, const Tensor& x, const Tensor& y, const Tensor& rstd, const Tensor& cos,
                            const Tensor& sin, int64_t pos_offset) {
  check_cuda_dtype(op, "x", x);
  op_contract::rope_qknorm_forward(y, rstd, x, cos, sin, pos_offset, 1e-6);
  check_head_dim(op, x.shape[3], x);
  return {x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
}

RowShape check_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                     const Tensor& targets, double softcap) {
  check_cuda_dtype("softcap_cross_entropy_forward", "logits", logits);
  op_contract::softcap_cross_entropy_forward(losses, argmax, logits, targets, softcap);
  return rows_of(logits);
}

RowShape check_cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                                      double softcap) {
  check_cuda_dtype("softcap_cross_entropy_backward", "logits", logits);
  op_contract::softcap_cross_entropy_backward(dlogits, logits, targets, softcap, 1.0);
  return rows_of(logits);
}

void check_embedding_backward(const Tensor& dtable, const Tensor& dout, const Tensor& tokens) {
  check_cuda_dtype("embedding_backward", "dtable_acc", dtable);
  op_contract::embedding_backward(dtable, dout, tokens);
}

TEST(CudaChecks, GemmShapesAndDtypes) {
  const GemmShape s = check_gemm(fake({4, 3}, DType::bf16, 0x1000), fake({5, 3}, DType::bf16, 0x2000),
                                 fake({4, 5}, DType::f32, 0x3000), false, true);
  EXPECT_EQ(s.m, 4);
  EXPECT_EQ(s.n, 5);
  EXPECT_EQ(s.k, 3);
  EXPECT_NE(error_of([] { check_gemm(fake({4, 3}, DType::f32), fake({4, 3}, DType::f32, 0x2000), fake({4, 4}, DType::f32, 0x3000), false, false); })
                .find("inner dimensions differ"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_gemm(fake({4, 3}, DType::f32), fake({3, 4}, DType::bf16, 0x2000), fake({4, 4}, DType::f32, 0x3000), false, false); })
                .find("b has dtype bf16 but a has f32"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_gemm(fake({4, 3}, DType::f32), fake({3, 4}, DType::f32, 0x2000), fake({4, 4}, DType::bf16, 0x3000), false, false); })
                .find("f32 operands need an f32 c"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_gemm(fake({4, 3}, DType::f64), fake({3, 4}, DType::f64, 0x2000), fake({4, 4}, DType::f64, 0x3000), false, false); })
                .find("f32 or bf16"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_gemm(fake({4, 4}, DType::f32), fake({4, 4}, DType::f32, 0x2000), fake({4, 4}, DType::f32), false, false); })
                .find("alias"),
            std::string::npos);
  EXPECT_TRUE(fp8_shapes_supported({64, 2560, 640}));
  EXPECT_FALSE(fp8_shapes_supported({64, 2560, 641}));
}

TEST(CudaChecks, AttentionShapes) {
  const AttentionDims d = check_attention_forward(fake({2, 8, 4, 64}, DType::bf16, 0x1000), fake({2, 4, 8}, DType::f32, 0x2000),
                                                  fake({2, 8, 4, 64}, DType::bf16, 0x3000), fake({2, 12, 2, 64}, DType::bf16, 0x4000),
                                                  fake({2, 12, 2, 64}, DType::bf16, 0x5000));
  EXPECT_EQ(d.key_len, 12);
  EXPECT_EQ(d.kv_heads, 2);
  EXPECT_NE(error_of([] {
              check_attention_forward(fake({1, 8, 3, 64}, DType::bf16), fake({1, 3, 8}, DType::f32), fake({1, 8, 3, 64}, DType::bf16),
                                      fake({1, 8, 2, 64}, DType::bf16), fake({1, 8, 2, 64}, DType::bf16));
            }).find("multiple of kv heads"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_attention_forward(fake({1, 8, 2, 64}, DType::bf16), fake({1, 2, 8}, DType::f32), fake({1, 8, 2, 64}, DType::bf16),
                                      fake({1, 4, 2, 64}, DType::bf16), fake({1, 4, 2, 64}, DType::bf16));
            }).find("at least as many as queries"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_attention_forward(fake({1, 8, 2, 64}, DType::bf16), fake({1, 2, 8}, DType::bf16), fake({1, 8, 2, 64}, DType::bf16),
                                      fake({1, 8, 2, 64}, DType::bf16), fake({1, 8, 2, 64}, DType::bf16));
            }).find("lse must be f32"),
            std::string::npos);
}

// ---- cuDNN attention (cudnn_attention.h) ---------------------------------------------------------------

TEST(CudnnAttention, TakesBf16WithAsManyQueriesAsKeys) {
  const bool built = CudnnAttention::built();
  EXPECT_EQ(CudnnAttention::supports(DType::bf16, {1, 1024, 1024, 5, 5, 128}), built);  // the baseline
  EXPECT_EQ(CudnnAttention::supports(DType::bf16, {4, 77, 77, 6, 2, 64}), built);       // grouped heads
  EXPECT_EQ(CudnnAttention::supports(DType::bf16, {1, 1, 1, 1, 1, 8}), built);
  EXPECT_FALSE(CudnnAttention::supports(DType::f32, {1, 1024, 1024, 5, 5, 128}));
  EXPECT_FALSE(CudnnAttention::supports(DType::bf16, {2, 40, 100, 4, 2, 64}));  // KV cache: Tk > Tq
  EXPECT_FALSE(CudnnAttention::supports(DType::bf16, {1, 64, 64, 2, 2, 132}));  // not a multiple of 8
  EXPECT_FALSE(CudnnAttention::supports(DType::bf16, {1, 64, 64, 2, 2, 136}));  // over 128
  EXPECT_FALSE(CudnnAttention::supports(DType::bf16, {1, 64, 64, 5, 2, 64}));   // heads not a multiple of kv heads
}

// The graphs the backend would plan, checked against the cuDNN frontend's rules for Hopper on the
// host; and a GPU those rules refuse (compute capability 7.5: cuDNN's bf16 attention needs 8.0),
// to see that they can.
TEST(CudnnAttention, GraphsPassTheFrontendsChecksForHopper) {
  if (!CudnnAttention::built()) GTEST_SKIP() << "built without the cuDNN frontend (scripts/install-cudnn-frontend.sh)";
  const AttentionDims shapes[] = {{64, 1024, 1024, 5, 5, 128}, {4, 77, 77, 6, 2, 64}, {1, 50, 50, 3, 3, 80}};
  for (const AttentionDims& d : shapes) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim));
    const std::string error = error_of([&] { CudnnAttention::check_graphs(d, scale, 90); });
    if (error.find("cannot open libcudnn") != std::string::npos) GTEST_SKIP() << error;
    EXPECT_EQ(error, "") << "B " << d.batch << " T " << d.query_len << " H " << d.heads << " D " << d.head_dim;
  }
  const std::string refused = error_of([] { CudnnAttention::check_graphs({1, 64, 64, 2, 2, 64}, 0.125, 75); });
  EXPECT_NE(refused.find("forward: validate failed for B 1, T 64, H 2, Hkv 2, D 64"), std::string::npos) << refused;
  EXPECT_NE(refused.find("SM80"), std::string::npos) << refused;
}

// Without a GPU (CI): a build without the path, a missing libcudnn.so.9 or a cudnnCreate that finds
// no device each end in a ct::Error that names the choice, never in a crash or a foreign exception.
TEST(CudnnAttention, StartingWithoutADeviceIsAClearError) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) GTEST_SKIP() << "a GPU is present";
  const std::string error = error_of([] { CudnnAttention attention(nullptr); });
  EXPECT_NE(error.find("attention \"cudnn\": "), std::string::npos) << error;
  if (!CudnnAttention::built()) EXPECT_NE(error.find("install-cudnn-frontend.sh"), std::string::npos) << error;
}

TEST(CudaChecks, NormsRopeCrossEntropyEmbedding) {
  EXPECT_EQ(check_rmsnorm_forward(fake({6, 10}, DType::bf16), fake({6}, DType::f32), fake({2, 3, 10}, DType::f32)).rows, 6);
  EXPECT_NE(error_of([] { check_rmsnorm_forward(fake({6, 10}, DType::f32), fake({5}, DType::f32), fake({6, 10}, DType::f32)); })
                .find("rstd has 5 elements"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_rope_qknorm("rope_qknorm_forward", fake({1, 4, 2, 7}, DType::f32), fake({1, 4, 2, 7}, DType::f32),
                                fake({8}, DType::f32), fake({16, 3}, DType::f32), fake({16, 3}, DType::f32), 0);
            }).find("head_dim must be even"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_rope_qknorm("rope_qknorm_forward", fake({1, 4, 2, 8}, DType::f32), fake({1, 4, 2, 8}, DType::f32),
                                fake({8}, DType::f32), fake({6, 4}, DType::f32), fake({6, 4}, DType::f32), 3);
            }).find("pos_offset + T = 7"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_cross_entropy_backward(fake({4, 10}, DType::bf16), fake({4, 10}, DType::f32), fake({4}, DType::i32), 15.0);
            }).find("may alias logits only when both have the same dtype"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_cross_entropy_forward(fake({4}, DType::f32), Tensor{}, fake({4, 10}, DType::f32), fake({4}, DType::i32), -1.0);
            }).find("softcap must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_embedding_backward(fake({10, 4}, DType::bf16), fake({3, 4}, DType::bf16), fake({3}, DType::i32)); })
                .find("dtable_acc must be f32"),
            std::string::npos);
}

// The dtype combinations of the model's mixed precision (gpt.h; docs/cuda.md "Dtypes"): accepted;
// the combinations no kernel takes: refused with the tensor's name.
TEST(CudaChecks, MixedPrecisionCombinationsOfTheModel) {
  EXPECT_EQ(check_rmsnorm_backward(fake({6, 10}, DType::f32), fake({6, 10}, DType::f32, 0x2000),
                                   fake({6, 10}, DType::bf16, 0x3000), fake({6}, DType::f32, 0x4000))
                .rows,
            6);
  EXPECT_EQ(check_rope_qknorm("rope_qknorm_forward", fake({1, 4, 2, 8}, DType::f32), fake({1, 4, 2, 8}, DType::bf16, 0x2000),
                              fake({8}, DType::f32, 0x3000), fake({6, 4}, DType::f32, 0x4000), fake({6, 4}, DType::f32, 0x5000), 0)
                .heads,
            2);
  EXPECT_NE(error_of([] {
              check_rope_qknorm("rope_qknorm_forward", fake({1, 4, 2, 8}, DType::f32), fake({1, 4, 2, 8}, DType::f64, 0x2000),
                                fake({8}, DType::f32, 0x3000), fake({6, 4}, DType::f32, 0x4000), fake({6, 4}, DType::f32, 0x5000), 0);
            }).find("y must be f32 or bf16"),  // (the output, named as backend.h names it)
            std::string::npos);
  const Shape q{1, 8, 2, 64}, kv{1, 8, 1, 64}, lse{1, 2, 8};
  const AttentionDims d = check_attention_backward(
      fake(q, DType::f32, 0x1000), fake(kv, DType::f32, 0x2000), fake(kv, DType::bf16, 0x3000), fake(q, DType::bf16, 0x4000),
      fake(q, DType::bf16, 0x5000), fake(lse, DType::f32, 0x6000), fake(q, DType::bf16, 0x7000), fake(kv, DType::bf16, 0x8000),
      fake(kv, DType::bf16, 0x9000));
  EXPECT_EQ(d.kv_heads, 1);
  // f32 operands take f32 gradients only
  EXPECT_NE(error_of([&] {
              check_attention_backward(fake(q, DType::bf16, 0x1000), fake(kv, DType::f32, 0x2000), fake(kv, DType::f32, 0x3000),
                                       fake(q, DType::f32, 0x4000), fake(q, DType::f32, 0x5000), fake(lse, DType::f32, 0x6000),
                                       fake(q, DType::f32, 0x7000), fake(kv, DType::f32, 0x8000), fake(kv, DType::f32, 0x9000));
            }).find("dq_out"),
            std::string::npos);
}

// ---- graph regions ---------------------------------------------------------------------------------------

Tensor at(uintptr_t address, Shape shape = {4}) { return fake(shape, DType::f32, address); }

TEST(GraphRecorder, RecordsThenReplaysTheSameCalls) {
  GraphRecorder r;
  EXPECT_EQ(r.begin("step"), GraphRecorder::Mode::recording);
  auto s1 = r.on_call("axpby", Signature().tensor(at(0x100)).value(), 2, {reinterpret_cast<void*>(0x100)});
  auto s2 = r.on_call("upload", Signature().tensor(at(0x200)).value(), 0, {}, 64);
  auto s3 = r.on_call("adamw_update", Signature().tensor(at(0x300)).value(), 7, {});
  EXPECT_TRUE(s1.launch);
  EXPECT_EQ(s1.first_scalar, 0);
  EXPECT_EQ(s2.upload, 0);
  EXPECT_EQ(s3.first_scalar, 2);
  r.end();
  EXPECT_EQ(r.begin("step"), GraphRecorder::Mode::replaying);
  auto t1 = r.on_call("axpby", Signature().tensor(at(0x100)).value(), 2, {});
  auto t2 = r.on_call("upload", Signature().tensor(at(0x200)).value(), 0, {}, 64);
  auto t3 = r.on_call("adamw_update", Signature().tensor(at(0x300)).value(), 7, {});
  EXPECT_FALSE(t1.launch);
  EXPECT_EQ(t1.first_scalar, 0);
  EXPECT_EQ(t2.upload, 0);
  EXPECT_EQ(t3.first_scalar, 2);
  EXPECT_EQ(r.end().scalar_count, 9);
  EXPECT_EQ(r.regions_using(reinterpret_cast<void*>(0x100)), std::vector<std::string>{"step"});
  EXPECT_TRUE(r.regions_using(reinterpret_cast<void*>(0x999)).empty());
}

TEST(GraphRecorder, MismatchesAreErrorsNamingTheRegionAndCall) {
  GraphRecorder r;
  r.begin("opt");
  r.on_call("scale", Signature().tensor(at(0x100)).value(), 1, {});
  r.on_call("gemm", Signature().tensor(at(0x200)).real(1.0).value(), 0, {});
  r.end();
  r.begin("opt");
  EXPECT_NE(error_of([&] { r.on_call("axpby", Signature().tensor(at(0x100)).value(), 2, {}); })
                .find("graph region 'opt': call #1 is axpby but the recording has scale"),
            std::string::npos);
  r.abandon();
  r.begin("opt");
  r.on_call("scale", Signature().tensor(at(0x100)).value(), 1, {});
  EXPECT_NE(error_of([&] { r.on_call("gemm", Signature().tensor(at(0x200)).real(0.5).value(), 0, {}); })
                .find("call #2 is gemm with other tensors or arguments"),
            std::string::npos);
  r.abandon();
  r.begin("opt");
  r.on_call("scale", Signature().tensor(at(0x100)).value(), 1, {});
  EXPECT_NE(error_of([&] { r.end(); }).find("the replay made 1 calls but the recording has 2"), std::string::npos);
  EXPECT_TRUE(r.reset("opt"));
  EXPECT_EQ(r.begin("opt"), GraphRecorder::Mode::recording);  // records anew
  EXPECT_NE(error_of([&] { r.begin("other"); }).find("still open"), std::string::npos);
}

TEST(GraphRecorder, AbandonedRecordingIsForgotten) {
  GraphRecorder r;
  r.begin("x");
  r.on_call("fill", 1, 1, {});
  r.abandon();
  EXPECT_EQ(r.find("x"), nullptr);
  EXPECT_EQ(r.begin("x"), GraphRecorder::Mode::recording);
  EXPECT_EQ(r.mode(), GraphRecorder::Mode::recording);
}

TEST(GraphRecorder, ScalarCapacityIsEnforced) {
  GraphRecorder r;
  r.begin("big");
  EXPECT_NE(error_of([&] {
              for (int i = 0; i <= GraphRecorder::kScalarsPerRegion; ++i) r.on_call("fill", 1, 1, {});
            }).find("scalar arguments"),
            std::string::npos);
}

TEST(GraphRecorder, SignaturesSeeAddressesShapesDtypesAndValues) {
  const uint64_t base = Signature().tensor(fake({4, 8}, DType::f32, 0x100)).real(1.0).value();
  EXPECT_EQ(base, Signature().tensor(fake({4, 8}, DType::f32, 0x100)).real(1.0).value());
  EXPECT_NE(base, Signature().tensor(fake({4, 8}, DType::f32, 0x104)).real(1.0).value());
  EXPECT_NE(base, Signature().tensor(fake({8, 4}, DType::f32, 0x100)).real(1.0).value());
  EXPECT_NE(base, Signature().tensor(fake({4, 8}, DType::bf16, 0x100)).real(1.0).value());
  EXPECT_NE(base, Signature().tensor(fake({4, 8}, DType::f32, 0x100)).real(1.0000001).value());
}

}  // namespace
}  // namespace ct::cuda
