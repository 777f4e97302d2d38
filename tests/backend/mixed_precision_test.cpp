// The bf16 path of the CPU backend against its f64 reference, op by op: bf16 matmuls (oneDNN; the
// cases of clocktrain's own AMX and dot-product GEMMs are in own_bf16_gemm_test.cpp), the mixed-storage elementwise ops, the fused cross-entropy
// (and its SIMD kernel), and attention on bf16 operands (AMX tiles when the machine grants them,
// else f32 on copies). Each result is compared with f64 arithmetic on the same bf16-rounded inputs,
// within what bf16 rounding of the outputs and of the kernels' internal operands allows; and each bf16
// kernel must give the same bits on every run.
#include <cmath>
#include <cstring>

#include "backend/cpu/amx.h"
#include "backend/cpu/bf16.h"
#include "backend/cpu/cpu_attention_bf16.h"
#include "backend_test_support.h"
#include "bf16_engine_support.h"

namespace ct::test {
namespace {

constexpr double kBf16Epsilon = 1.0 / 256;  // 2^-8: one bf16 rounding is at most half of this

// The values as bf16 would hold them (each rounded to nearest even), in f64.
Values rounded_to_bf16(const Values& values) {
  Values out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = bf16_to_float(double_to_bf16(values[i]));
  return out;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
  std::vector<uint16_t> bits(t.bytes() / 2);
  std::memcpy(bits.data(), t.data, t.bytes());
  return bits;
}

TEST(Bf16Gemm, EveryTransposeCaseMatchesF64OnRoundedInputs) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  const int64_t m = 37, n = 45, k = 70;  // not multiples of any block size
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (DType c_dtype : {DType::f32, DType::bf16}) {
        const Values a = rounded_to_bf16(random_values(static_cast<size_t>(m * k), 1));
        const Values b = rounded_to_bf16(random_values(static_cast<size_t>(k * n), 2));
        const Values c0 = random_values(static_cast<size_t>(m * n), 3);
        const double alpha = 0.75, beta = c_dtype == DType::f32 ? 1.0 : 0.0;
        Buffer ab = make_buffer(ta ? Shape{k, m} : Shape{m, k}, DType::bf16, a);
        Buffer bb = make_buffer(tb ? Shape{n, k} : Shape{k, n}, DType::bf16, b);
        Buffer cb = make_buffer(Shape{m, n}, c_dtype, c0);
        const Values c_start = read(cb);
        cpu().gemm(ab, bb, cb, ta, tb, alpha, beta);
        const Values expected = naive_gemm(a, b, c_start, m, n, k, ta, tb, alpha, beta);
        // f32 accumulation of exact products: ~k ulps of f32; a bf16 c adds one rounding
        const double tolerance = c_dtype == DType::f32 ? 1e-5 : kBf16Epsilon;
        EXPECT_LT(relative_error(read(cb), expected), tolerance) << "ta=" << ta << " tb=" << tb << " c "
                                                                   << dtype_name(c_dtype);
      }
}

TEST(Bf16Gemm, SameBitsOnEveryCallAndErrors) {
  CT_SKIP_WITHOUT_BF16_ENGINE();
  const int64_t m = 256, n = 96, k = 512;
  Buffer a = make_buffer(Shape{k, m}, DType::bf16, random_values(static_cast<size_t>(m * k), 4));
  Buffer b = make_buffer(Shape{k, n}, DType::bf16, random_values(static_cast<size_t>(k * n), 5));
  Buffer c1(cpu(), Shape{m, n}, DType::f32), c2(cpu(), Shape{m, n}, DType::f32);
  cpu().gemm(a, b, c1, true, false, 0.5, 0.0);  // a weight-gradient shape: a long reduction
  cpu().gemm(a, b, c2, true, false, 0.5, 0.0);
  EXPECT_EQ(read(c1), read(c2));
  Buffer f(cpu(), Shape{k, n}, DType::f32), cb(cpu(), Shape{m, n}, DType::bf16), c64(cpu(), Shape{m, n}, DType::f64);
  expect_error([&] { cpu().gemm(a, f, c1, true, false); }, {"gemm", "b", "f32", "bf16"});
  expect_error([&] { cpu().gemm(a, b, c64, true, false); }, {"gemm", "c", "f64"});
  expect_error([&] { cpu().gemm(a, b, cb, true, false, 1.0, 1.0); }, {"gemm", "beta"});
}

// ---- elementwise ops with bf16 storage ------------------------------------------------------------

TEST(MixedStorage, RmsnormRopeAndRelu2MatchF32WithinOneRounding) {
  const int64_t B = 2, T = 5, H = 2, D = 8, rows = B * T * H;
  const Values x = random_values(static_cast<size_t>(rows * D), 11, 2.0);
  const Values dy = random_values(x.size(), 12);
  Buffer x32 = make_buffer(Shape{rows, D}, DType::f32, x), dy32 = make_buffer(Shape{rows, D}, DType::f32, dy);
  Buffer dy16 = make_buffer(Shape{rows, D}, DType::bf16, dy);
  Buffer rstd(cpu(), Shape{rows}, DType::f32);
  // rmsnorm: y in f32 and in bf16, and the backward through each
  Buffer y32(cpu(), Shape{rows, D}, DType::f32), y16(cpu(), Shape{rows, D}, DType::bf16);
  cpu().rmsnorm_forward(y32, rstd, x32, 1e-6);
  cpu().rmsnorm_forward(y16, rstd, x32, 1e-6);
  EXPECT_EQ(read(y16), rounded_to_bf16(read(y32)));  // the same f32 value, rounded once
  Buffer dx_a(cpu(), Shape{rows, D}, DType::f32), dx_b(cpu(), Shape{rows, D}, DType::f32);
  cpu().rmsnorm_backward(dx_a, dy32, y32, rstd);
  cpu().rmsnorm_backward(dx_b, dy16, y16, rstd);
  EXPECT_LT(relative_error(read(dx_b), read(dx_a)), 4 * kBf16Epsilon);
  // rope + QK norm
  std::vector<double> angles(static_cast<size_t>(T * D / 2));
  Values cos_v(angles.size()), sin_v(angles.size());
  for (size_t i = 0; i < angles.size(); ++i) cos_v[i] = std::cos(0.1 * i), sin_v[i] = std::sin(0.1 * i);
  Buffer cos_b = make_buffer(Shape{T, D / 2}, DType::f32, cos_v), sin_b = make_buffer(Shape{T, D / 2}, DType::f32, sin_v);
  const Shape qs{B, T, H, D};
  Buffer ry32(cpu(), qs, DType::f32), ry16(cpu(), qs, DType::bf16);
  cpu().rope_qknorm_forward(ry32, rstd, x32.tensor().reshaped(qs), cos_b, sin_b, 0, 1e-6);
  cpu().rope_qknorm_forward(ry16, rstd, x32.tensor().reshaped(qs), cos_b, sin_b, 0, 1e-6);
  EXPECT_LT(relative_error(read(ry16), read(ry32)), kBf16Epsilon);
  Buffer rdx32(cpu(), qs, DType::f32), rdx16(cpu(), qs, DType::bf16);
  cpu().rope_qknorm_backward(rdx32, dy32.tensor().reshaped(qs), ry32, rstd, cos_b, sin_b, 0);
  cpu().rope_qknorm_backward(rdx16, dy16.tensor().reshaped(qs), ry16, rstd, cos_b, sin_b, 0);
  EXPECT_LT(relative_error(read(rdx16), read(rdx32)), 4 * kBf16Epsilon);
  // relu^2
  Buffer x16 = make_buffer(Shape{rows, D}, DType::bf16, x);
  Buffer a32(cpu(), Shape{rows, D}, DType::f32), a16(cpu(), Shape{rows, D}, DType::bf16);
  cpu().relu2_forward(a32, x16);
  cpu().relu2_forward(a16, x16);
  EXPECT_EQ(read(a16), rounded_to_bf16(read(a32)));
  Buffer g16(cpu(), Shape{rows, D}, DType::bf16), g32(cpu(), Shape{rows, D}, DType::f32);
  cpu().relu2_backward(g16, dy16, x16);
  cpu().relu2_backward(g32, dy16, x16);
  EXPECT_EQ(read(g16), rounded_to_bf16(read(g32)));
  // the accumulators stay f32
  expect_error([&] { cpu().rmsnorm_backward(y16, dy32, y32, rstd); }, {"rmsnorm_backward", "dx_acc", "bf16"});
  Buffer x64 = make_buffer(Shape{rows, D}, DType::f64, x);
  expect_error([&] { cpu().relu2_forward(a16, x64); }, {"relu2_forward", "y", "f64"});
}

// ---- fused cross-entropy -----------------------------------------------------------------------------

struct FusedRun {
  Values losses, dlogits;
};

FusedRun run_fused(DType logits_dtype, DType dlogits_dtype, const Values& logits, const std::vector<int32_t>& targets,
                   int64_t vocab, double cap, double loss_scale, bool in_place) {
  const int64_t rows = static_cast<int64_t>(targets.size());
  Buffer lb = make_buffer(Shape{rows, vocab}, logits_dtype, logits), tb = make_tokens(Shape{rows}, targets);
  Buffer losses(cpu(), Shape{rows}, logits_dtype == DType::f64 ? DType::f64 : DType::f32);
  if (in_place) {
    cpu().softcap_cross_entropy_fused(losses, lb, lb, tb, cap, loss_scale);
    return {read(losses), read(lb)};
  }
  Buffer d(cpu(), Shape{rows, vocab}, dlogits_dtype);
  cpu().fill(d, 7.0);
  cpu().softcap_cross_entropy_fused(losses, d, lb, tb, cap, loss_scale);
  return {read(losses), read(d)};
}

TEST(FusedCrossEntropy, MatchesTheSeparateOpsInF64AndF32) {
  const std::vector<int32_t> targets = {3, -1, 0, 200, 77, 150, -2, 9};
  const double loss_scale = 0.125;
  for (int64_t vocab : {int64_t{201}, int64_t{256}})  // a tail of 9 lanes, and none
    for (double cap : {15.0, 0.0}) {  // the fast path (f32 with a cap) and the portable one
      const Values logits = random_values(targets.size() * static_cast<size_t>(vocab), 21, 10.0);
      // reference: the f64 separate ops
      const int64_t rows = static_cast<int64_t>(targets.size());
      Buffer lb = make_buffer(Shape{rows, vocab}, DType::f64, logits), tb = make_tokens(Shape{rows}, targets);
      Buffer ref_losses(cpu(), Shape{rows}, DType::f64), ref_d(cpu(), Shape{rows, vocab}, DType::f64);
      cpu().softcap_cross_entropy_forward(ref_losses, Tensor{}, lb, tb, cap);
      cpu().softcap_cross_entropy_backward(ref_d, lb, tb, cap, loss_scale);
      const Values want_losses = read(ref_losses), want_d = read(ref_d);
      const FusedRun f64 = run_fused(DType::f64, DType::f64, logits, targets, vocab, cap, loss_scale, false);
      EXPECT_LT(relative_error(f64.losses, want_losses), 1e-13);
      EXPECT_LT(relative_error(f64.dlogits, want_d), 1e-13);
      for (bool in_place : {false, true}) {
        const FusedRun f32 = run_fused(DType::f32, DType::f32, logits, targets, vocab, cap, loss_scale, in_place);
        EXPECT_LT(relative_error(f32.losses, want_losses), 2e-6) << "vocab " << vocab << " cap " << cap;
        EXPECT_LT(relative_error(f32.dlogits, want_d), 2e-6) << "vocab " << vocab << " cap " << cap;
      }
      const FusedRun bf16 = run_fused(DType::f32, DType::bf16, logits, targets, vocab, cap, loss_scale, false);
      EXPECT_LT(relative_error(bf16.losses, want_losses), 2e-6);
      EXPECT_LT(relative_error(bf16.dlogits, want_d), kBf16Epsilon);
      for (int64_t j = 0; j < vocab; ++j) EXPECT_EQ(bf16.dlogits[static_cast<size_t>(vocab + j)], 0.0);  // ignored row
      EXPECT_EQ(bf16.losses[1], 0.0);
    }
}

TEST(FusedCrossEntropy, Bf16LogitsGiveTheBitsOfTheSameValuesInF32) {
  // A bf16 logit widens to f32 exactly, so bf16 logits must give exactly what the same values give
  // in f32: on the fast path (cap 15) and the portable one (cap 0), with dlogits written apart or
  // over the logits (the training step's layout).
  const std::vector<int32_t> targets = {3, -1, 0, 200, 77, 150, -2, 9};
  for (int64_t vocab : {int64_t{201}, int64_t{256}})
    for (double cap : {15.0, 0.0}) {
      SCOPED_TRACE(testing::Message() << "vocab " << vocab << " cap " << cap);
      const Values logits = rounded_to_bf16(random_values(targets.size() * static_cast<size_t>(vocab), 22, 10.0));
      const FusedRun want = run_fused(DType::f32, DType::bf16, logits, targets, vocab, cap, 0.125, false);
      for (bool in_place : {false, true}) {
        const FusedRun got = run_fused(DType::bf16, DType::bf16, logits, targets, vocab, cap, 0.125, in_place);
        EXPECT_EQ(got.losses, want.losses) << "in place " << in_place;
        EXPECT_EQ(got.dlogits, want.dlogits) << "in place " << in_place;
      }
    }
}

// ---- attention on bf16 operands ------------------------------------------------------------------------

struct AttentionShape {
  int64_t batch, query_len, key_len, heads, kv_heads, head_dim;
  Shape q() const { return Shape{batch, query_len, heads, head_dim}; }
  Shape kv() const { return Shape{batch, key_len, kv_heads, head_dim}; }
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }
};

struct AttentionResult {
  Values out, lse, dq, dk, dv;
};

AttentionResult run_attention(const AttentionShape& a, DType dtype, DType grad_dtype, const Values& q, const Values& k,
                              const Values& v, const Values& dout, std::vector<uint16_t>* out_bits = nullptr) {
  const DType side = dtype == DType::f64 ? DType::f64 : DType::f32;
  Buffer qb = make_buffer(a.q(), dtype, q), kb = make_buffer(a.kv(), dtype, k), vb = make_buffer(a.kv(), dtype, v);
  Buffer out(cpu(), a.q(), dtype), lse(cpu(), Shape{a.batch, a.heads, a.query_len}, side);
  cpu().attention_forward(out, lse, qb, kb, vb, a.scale());
  if (out_bits) *out_bits = bits_of(out);
  if (a.query_len != a.key_len) return {read(out), read(lse), {}, {}, {}};
  Buffer db = make_buffer(a.q(), dtype, dout);
  Buffer dq(cpu(), a.q(), grad_dtype), dk(cpu(), a.kv(), grad_dtype), dv(cpu(), a.kv(), grad_dtype);
  for (const Tensor& t : {dq.tensor(), dk.tensor(), dv.tensor()}) cpu().fill(t, 99.0);  // must be overwritten
  cpu().attention_backward(dq, dk, dv, db, out, lse, qb, kb, vb, a.scale());
  return {read(out), read(lse), read(dq), read(dk), read(dv)};
}

void expect_bf16_attention_matches_f64(const AttentionShape& a) {
  SCOPED_TRACE(testing::Message() << "B=" << a.batch << " Tq=" << a.query_len << " Tk=" << a.key_len << " H="
                                  << a.heads << " Hkv=" << a.kv_heads << " D=" << a.head_dim);
  const Values q = rounded_to_bf16(random_values(static_cast<size_t>(a.q().numel()), 31, 2.0));
  const Values k = rounded_to_bf16(random_values(static_cast<size_t>(a.kv().numel()), 32, 2.0));
  const Values v = rounded_to_bf16(random_values(static_cast<size_t>(a.kv().numel()), 33));
  const Values dout = rounded_to_bf16(random_values(static_cast<size_t>(a.q().numel()), 34));
  // the f64 reference takes the attention output the bf16 forward produced (it is what backward reads)
  const AttentionResult want = run_attention(a, DType::f64, DType::f64, q, k, v, dout);
  for (DType grad_dtype : {DType::f32, DType::bf16}) {
    std::vector<uint16_t> bits1, bits2;
    const AttentionResult got = run_attention(a, DType::bf16, grad_dtype, q, k, v, dout, &bits1);
    // P is rounded to bf16 before P V, dS before dS K and dS^T Q: a few bf16 roundings deep
    EXPECT_LT(relative_error(got.out, want.out), 2 * kBf16Epsilon);
    EXPECT_LT(relative_error(got.lse, want.lse), 1e-5);
    if (a.query_len == a.key_len) {
      EXPECT_LT(relative_error(got.dq, want.dq), 4 * kBf16Epsilon);
      EXPECT_LT(relative_error(got.dk, want.dk), 4 * kBf16Epsilon);
      EXPECT_LT(relative_error(got.dv, want.dv), 4 * kBf16Epsilon);
    }
    const AttentionResult again = run_attention(a, DType::bf16, grad_dtype, q, k, v, dout, &bits2);
    EXPECT_EQ(bits1, bits2);
    EXPECT_EQ(got.dq, again.dq);
    EXPECT_EQ(got.dk, again.dk);
    EXPECT_EQ(got.dv, again.dv);
  }
}

TEST(Bf16Attention, TiledKernelsMatchF64) {
  // The bf16 kernels (head_dim a multiple of 32) on AMX tiles when granted, else on AVX512-BF16 dot
  // products (CLOCKTRAIN_CPU_AMX=0 picks them on an AMX machine); other head dims and builds: the f32
  // kernels on copies. All must pass.
  std::printf("bf16 attention: %s (%s)\n",
              bf16_attention_supported(64) ? bf16_attention_engine().c_str() : "f32 fallback", amx_status().c_str());
  expect_bf16_attention_matches_f64({2, 100, 100, 4, 2, 64});   // GQA, T not a multiple of 64
  expect_bf16_attention_matches_f64({1, 64, 64, 2, 2, 128});    // one full block, head_dim 128
  expect_bf16_attention_matches_f64({1, 130, 130, 1, 1, 32});   // three blocks, the last of 2 rows
  expect_bf16_attention_matches_f64({1, 257, 257, 2, 2, 128});  // five key blocks: two pairs and one alone
  expect_bf16_attention_matches_f64({2, 5, 77, 2, 1, 32});      // the KV-cache path: Tq < Tk (forward)
  expect_bf16_attention_matches_f64({1, 20, 20, 2, 2, 16});     // head_dim 16: never AMX
  // The AMX kernels keep their work arrays between calls (each thread's, sized by the largest call so
  // far): a shape after larger ones finds them holding stale values, which must not matter.
  expect_bf16_attention_matches_f64({1, 300, 300, 2, 1, 64});
  expect_bf16_attention_matches_f64({2, 100, 100, 4, 2, 64});
}

}  // namespace
}  // namespace ct::test
