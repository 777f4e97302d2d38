// Device tests (skipped without a GPU): causal attention forward and backward against the CPU
// backend, for the reference kernels (f32 at 1e-4, bf16 at 1e-2), the tensor-core flash kernels
// (bf16, head_dim 64 and 128) and cuDNN's fused attention (CLOCKTRAIN_CUDA_ATTENTION=cudnn; skipped
// with the reason in a build without it), with lengths that are not multiples of the tiles,
// grouped-query heads and more keys than queries; plus determinism and the baseline's shape.
#include <algorithm>
#include <cmath>

#include "cuda_test_support.h"

namespace ct::test {
namespace {

struct AttentionCase {
  int64_t B, Tq, Tk, H, Hkv, D;
};

void check_attention(Backend& gpu, const AttentionCase& c, DType dtype, bool backward, uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "B " << c.B << " Tq " << c.Tq << " Tk " << c.Tk << " H " << c.H << " Hkv " << c.Hkv
                                  << " D " << c.D << " " << dtype_name(dtype));
  const Shape q_shape{c.B, c.Tq, c.H, c.D}, kv_shape{c.B, c.Tk, c.Hkv, c.D}, lse_shape{c.B, c.H, c.Tq};
  auto input = [&](const Shape& s, uint64_t k) {
    Values v = random_values(static_cast<size_t>(s.numel()), seed + k, 1.5);
    return dtype == DType::bf16 ? round_to_bf16(v) : v;
  };
  const Values q = input(q_shape, 0), k = input(kv_shape, 1), v = input(kv_shape, 2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
  Buffer cq = make(cpu(), q_shape, DType::f32, q), ck = make(cpu(), kv_shape, DType::f32, k), cv = make(cpu(), kv_shape, DType::f32, v);
  Buffer co(cpu(), q_shape, DType::f32), clse(cpu(), lse_shape, DType::f32);
  Buffer gq = make(gpu, q_shape, dtype, q), gk = make(gpu, kv_shape, dtype, k), gv = make(gpu, kv_shape, dtype, v);
  Buffer go = poisoned(gpu, q_shape, dtype), glse = poisoned(gpu, lse_shape, DType::f32);
  cpu().attention_forward(co, clse, cq, ck, cv, scale);
  gpu.attention_forward(go, glse, gq, gk, gv, scale);
  const double tol = tolerance_for(dtype);
  CT_EXPECT_CLOSE(read(gpu, go), read(cpu(), co), tol);
  CT_EXPECT_CLOSE(read(gpu, glse), read(cpu(), clse), 1e-4);
  if (!backward) return;
  const Values dout = input(q_shape, 3);
  // both sides differentiate the same (GPU) output, so the comparison isolates the backward pass
  Buffer cdo = make(cpu(), q_shape, DType::f32, dout), cout = make(cpu(), q_shape, DType::f32, read(gpu, go));
  Buffer clse2 = make(cpu(), lse_shape, DType::f32, read(gpu, glse));
  Buffer cdq(cpu(), q_shape, DType::f32), cdk(cpu(), kv_shape, DType::f32), cdv(cpu(), kv_shape, DType::f32);
  Buffer gdo = make(gpu, q_shape, dtype, dout);
  Buffer gdq = poisoned(gpu, q_shape, dtype), gdk = poisoned(gpu, kv_shape, dtype), gdv = poisoned(gpu, kv_shape, dtype);
  cpu().attention_backward(cdq, cdk, cdv, cdo, cout, clse2, cq, ck, cv, scale);
  gpu.attention_backward(gdq, gdk, gdv, gdo, go, glse, gq, gk, gv, scale);
  // bf16 gradients go through bf16 products of bf16-rounded probabilities: a little looser
  const double grad_tol = dtype == DType::bf16 ? 2e-2 : 1e-4;
  CT_EXPECT_CLOSE(read(gpu, gdv), read(cpu(), cdv), grad_tol);
  if (c.Tk > 1) {
    CT_EXPECT_CLOSE(read(gpu, gdq), read(cpu(), cdq), grad_tol);
    CT_EXPECT_CLOSE(read(gpu, gdk), read(cpu(), cdk), grad_tol);
    return;
  }
  // One key: every softmax is the constant 1, so dq = dk = 0 in exact arithmetic (dS = P (dP - D)
  // with dP = D) and each backend returns its own rounding of zero (the H200 gave 8.5e-7 in bf16
  // where the CPU gave exact zeros): no relative measure applies. Bound the noise by dv's size.
  auto largest = [](const Values& values) {
    double m = 0;
    for (double x : values) m = std::max(m, std::isfinite(x) ? std::abs(x) : INFINITY);
    return m;
  };
  const double bound = grad_tol * largest(read(cpu(), cdv));
  EXPECT_LT(largest(read(gpu, gdq)), bound) << "dq of a single key must be zero up to rounding";
  EXPECT_LT(largest(read(gpu, gdk)), bound) << "dk of a single key must be zero up to rounding";
}

const AttentionCase kTrainingCases[] = {
    {1, 1, 1, 1, 1, 64},    {2, 77, 77, 4, 2, 64},  {1, 200, 200, 2, 2, 128},
    {2, 130, 130, 4, 1, 128}, {1, 64, 64, 1, 1, 32}, {1, 50, 50, 3, 3, 80},
};

TEST(CudaAttention, ReferenceKernelsInF32) {
  CT_REQUIRE_CUDA();
  uint64_t seed = 200;
  for (const AttentionCase& c : kTrainingCases) check_attention(*cuda(), c, DType::f32, true, seed += 10);
  check_attention(*cuda(), {2, 40, 100, 4, 2, 64}, DType::f32, false, 290);  // KV-cache shape: Tk > Tq
}

TEST(CudaAttention, ReferenceKernelsInBf16) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda({"f32", false, "reference"});
  uint64_t seed = 300;
  for (const AttentionCase& c : kTrainingCases) check_attention(gpu, c, DType::bf16, true, seed += 10);
}

TEST(CudaAttention, FlashKernelsInBf16) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  uint64_t seed = 400;
  for (const AttentionCase& c : kTrainingCases) check_attention(gpu, c, DType::bf16, true, seed += 10);
  check_attention(gpu, {2, 40, 100, 4, 2, 64}, DType::bf16, false, 490);
  check_attention(gpu, {1, 3, 131, 2, 1, 128}, DType::bf16, false, 491);
}

// The model's mixed precision (gpt.h): bf16 operands, f32 dq and dk, bf16 dv. The kernels write bf16
// and the backend widens into the f32 tensors, so the gradients equal the all-bf16 ones exactly.
TEST(CudaAttention, F32GradientsOfBf16OperandsEqualTheBf16Gradients) {
  CT_REQUIRE_CUDA();
  for (const char* path : {"flash", "reference", "cudnn"}) {
    SCOPED_TRACE(path);
    Backend* backend = cuda({"f32", false, path});
    if (!backend) {
      EXPECT_STREQ(path, "cudnn") << cuda_skip_reason();  // only cuDNN may be missing from a build
      continue;
    }
    Backend& gpu = *backend;
    const Shape q_shape{2, 130, 4, 128}, kv_shape{2, 130, 2, 128}, lse_shape{2, 4, 130};
    Buffer q = make(gpu, q_shape, DType::bf16, round_to_bf16(random_values(q_shape.numel(), 600, 1.5)));
    Buffer k = make(gpu, kv_shape, DType::bf16, round_to_bf16(random_values(kv_shape.numel(), 601, 1.5)));
    Buffer v = make(gpu, kv_shape, DType::bf16, round_to_bf16(random_values(kv_shape.numel(), 602, 1.5)));
    Buffer dout = make(gpu, q_shape, DType::bf16, round_to_bf16(random_values(q_shape.numel(), 603)));
    Buffer out(gpu, q_shape, DType::bf16), lse(gpu, lse_shape, DType::f32);
    const double scale = 1.0 / std::sqrt(128.0);
    gpu.attention_forward(out, lse, q, k, v, scale);
    Buffer dq16 = poisoned(gpu, q_shape, DType::bf16), dk16 = poisoned(gpu, kv_shape, DType::bf16);
    Buffer dv16 = poisoned(gpu, kv_shape, DType::bf16);
    gpu.attention_backward(dq16, dk16, dv16, dout, out, lse, q, k, v, scale);
    Buffer dq32 = poisoned(gpu, q_shape, DType::f32), dk32 = poisoned(gpu, kv_shape, DType::f32);
    Buffer dv = poisoned(gpu, kv_shape, DType::bf16);
    gpu.attention_backward(dq32, dk32, dv, dout, out, lse, q, k, v, scale);
    EXPECT_EQ(read(gpu, dq32), read(gpu, dq16));
    EXPECT_EQ(read(gpu, dk32), read(gpu, dk16));
    EXPECT_EQ(read(gpu, dv), read(gpu, dv16));
  }
}

TEST(CudaAttention, FlashKernelsAtTheBaselineShape) {
  CT_REQUIRE_CUDA();
  check_attention(*cuda(), {1, 1024, 1024, 5, 5, 128}, DType::bf16, true, 500);
}

void expect_deterministic_backward(Backend& gpu) {
  const Shape shape{2, 300, 4, 128};
  Buffer q = make(gpu, shape, DType::bf16, random_values(shape.numel(), 600)), k = make(gpu, shape, DType::bf16, random_values(shape.numel(), 601));
  Buffer v = make(gpu, shape, DType::bf16, random_values(shape.numel(), 602)), dout = make(gpu, shape, DType::bf16, random_values(shape.numel(), 603));
  Buffer out(gpu, shape, DType::bf16), lse(gpu, Shape{2, 4, 300}, DType::f32);
  gpu.attention_forward(out, lse, q, k, v, 0.088);
  Values first[3];
  for (int run = 0; run < 2; ++run) {
    Buffer dq(gpu, shape, DType::bf16), dk(gpu, shape, DType::bf16), dv(gpu, shape, DType::bf16);
    gpu.attention_backward(dq, dk, dv, dout, out, lse, q, k, v, 0.088);
    const Values now[3] = {read(gpu, dq), read(gpu, dk), read(gpu, dv)};
    for (int i = 0; i < 3; ++i) {
      if (run == 0) first[i] = now[i];
      else EXPECT_EQ(now[i], first[i]) << "gradient " << i;
    }
  }
}

TEST(CudaAttention, BackwardIsDeterministic) {
  CT_REQUIRE_CUDA();
  expect_deterministic_backward(*cuda());
}

// ---- cuDNN (CLOCKTRAIN_CUDA_ATTENTION=cudnn) ----------------------------------------------------------

#define CT_REQUIRE_CUDNN_BACKEND(gpu)                                                              \
  CT_REQUIRE_CUDA();                                                                               \
  Backend* gpu##_ptr = cuda({"f32", false, "cudnn"});                                              \
  if (!gpu##_ptr) GTEST_SKIP() << "no cuDNN attention: " << cuda_skip_reason();                    \
  Backend& gpu = *gpu##_ptr

TEST(CudaAttention, CudnnInBf16) {
  CT_REQUIRE_CUDNN_BACKEND(gpu);
  EXPECT_NE(gpu.device_description().find("attention: cuDNN"), std::string::npos) << gpu.device_description();
  uint64_t seed = 700;
  // every training case is cuDNN's (bf16, Tq = Tk, head_dim a multiple of 8, grouped heads included)
  for (const AttentionCase& c : kTrainingCases) check_attention(gpu, c, DType::bf16, true, seed += 10);
  check_attention(gpu, {1, 1024, 1024, 5, 5, 128}, DType::bf16, true, 790);  // the baseline's shape
  check_attention(gpu, {4, 1024, 1024, 6, 2, 64}, DType::bf16, true, 791);
  // KV-cache shapes (Tk > Tq) are not cuDNN's: the flash kernels take them, in the same backend
  check_attention(gpu, {2, 40, 100, 4, 2, 64}, DType::bf16, false, 792);
  // f32 is not cuDNN's either: the reference kernels take it
  check_attention(gpu, {2, 77, 77, 4, 2, 64}, DType::f32, true, 793);
}

TEST(CudaAttention, CudnnBackwardIsDeterministic) {
  CT_REQUIRE_CUDNN_BACKEND(gpu);
  expect_deterministic_backward(gpu);
}

}  // namespace
}  // namespace ct::test
