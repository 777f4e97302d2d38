// Causal attention against a full-softmax reference: forward, lse, backward by finite differences,
// grouped-query heads, the KV-cache path (Tq < Tk), f32 against f64 and determinism. f32 runs on the
// AVX2 FMA tile kernels where the build has them (cpu_attention_f32.cpp) and on tiles through the GEMM
// library with CLOCKTRAIN_CPU_F32_ATTENTION=0; both are compared with f64 and with each other.
#include <cstdlib>

#include "backend_test_support.h"
#include "util/threads.h"

namespace ct::test {
namespace {

struct AttentionCase {
  int64_t batch, query_len, key_len, heads, kv_heads, head_dim;
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }
  Shape q_shape() const { return Shape{batch, query_len, heads, head_dim}; }
  Shape kv_shape() const { return Shape{batch, key_len, kv_heads, head_dim}; }
  int64_t q_numel() const { return q_shape().numel(); }
  int64_t kv_numel() const { return kv_shape().numel(); }
};

// Full softmax over the visible keys of each query, in double; also returns the lse.
Values naive_attention(const AttentionCase& a, const Values& q, const Values& k, const Values& v, Values* lse = nullptr) {
  Values out(static_cast<size_t>(a.q_numel()), 0.0);
  if (lse) lse->assign(static_cast<size_t>(a.batch * a.heads * a.query_len), 0.0);
  const int64_t d = a.head_dim, group = a.heads / a.kv_heads;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t i = 0; i < a.query_len; ++i) {
        const int64_t visible = a.key_len - a.query_len + i + 1;
        const size_t qi = static_cast<size_t>(((b * a.query_len + i) * a.heads + h) * d);
        Values scores(static_cast<size_t>(visible));
        double max_score = -INFINITY;
        for (int64_t j = 0; j < visible; ++j) {
          const size_t kj = static_cast<size_t>(((b * a.key_len + j) * a.kv_heads + h / group) * d);
          double s = 0;
          for (int64_t e = 0; e < d; ++e) s += q[qi + e] * k[kj + e];
          scores[j] = s * a.scale();
          max_score = std::max(max_score, scores[j]);
        }
        double total = 0;
        for (double s : scores) total += std::exp(s - max_score);
        for (int64_t j = 0; j < visible; ++j) {
          const size_t vj = static_cast<size_t>(((b * a.key_len + j) * a.kv_heads + h / group) * d);
          double p = std::exp(scores[j] - max_score) / total;
          for (int64_t e = 0; e < d; ++e) out[qi + e] += p * v[vj + e];
        }
        if (lse) (*lse)[static_cast<size_t>((b * a.heads + h) * a.query_len + i)] = max_score + std::log(total);
      }
  return out;
}

struct AttentionRun {
  Values out, lse, dq, dk, dv;
};

AttentionRun run_attention(DType dtype, const AttentionCase& a, const Values& q, const Values& k, const Values& v,
                           const Values& dout) {
  Buffer qb = make_buffer(a.q_shape(), dtype, q), kb = make_buffer(a.kv_shape(), dtype, k),
         vb = make_buffer(a.kv_shape(), dtype, v), out(cpu(), a.q_shape(), dtype),
         lse(cpu(), Shape{a.batch, a.heads, a.query_len}, dtype);
  cpu().attention_forward(out, lse, qb, kb, vb, a.scale());
  Buffer doutb = make_buffer(a.q_shape(), dtype, dout), dq(cpu(), a.q_shape(), dtype), dk(cpu(), a.kv_shape(), dtype),
         dv(cpu(), a.kv_shape(), dtype);
  for (const Tensor& t : {dq.tensor(), dk.tensor(), dv.tensor()}) cpu().fill(t, 99.0);  // must be overwritten
  cpu().attention_backward(dq, dk, dv, doutb, out, lse, qb, kb, vb, a.scale());
  return {read(out), read(lse), read(dq), read(dk), read(dv)};
}

// Central differences of w . naive_attention on `count` elements of one input (every element when
// count covers it), compared with the analytic gradient.
void expect_attention_gradient(const AttentionCase& a, Values q, Values k, Values v, const Values& w, int which,
                               const Values& analytic, size_t count) {
  Values& x = which == 0 ? q : which == 1 ? k : v;
  const double h = 1e-6;
  std::mt19937_64 rng(1000 + which);
  double max_diff = 0, max_ref = 1e-30;
  for (size_t n = 0; n < std::min(count, x.size()); ++n) {
    size_t i = count >= x.size() ? n : static_cast<size_t>(rng() % x.size());
    double saved = x[i];
    x[i] = saved + h;
    double plus = dot(w, naive_attention(a, q, k, v));
    x[i] = saved - h;
    double minus = dot(w, naive_attention(a, q, k, v));
    x[i] = saved;
    double numeric = (plus - minus) / (2 * h);
    max_diff = std::max(max_diff, std::abs(numeric - analytic[i]));
    max_ref = std::max(max_ref, std::abs(numeric));
  }
  EXPECT_LT(max_diff / max_ref, 1e-6) << "input " << "qkv"[which];
}

void check_case(const AttentionCase& a, size_t fd_count, uint64_t seed) {
  Values q = random_values(a.q_numel(), seed), k = random_values(a.kv_numel(), seed + 1),
         v = random_values(a.kv_numel(), seed + 2), w = random_values(a.q_numel(), seed + 3);
  AttentionRun r = run_attention(DType::f64, a, q, k, v, w);
  Values expected_lse;
  EXPECT_LT(relative_error(r.out, naive_attention(a, q, k, v, &expected_lse)), 1e-13);
  EXPECT_LT(relative_error(r.lse, expected_lse), 1e-13);
  expect_attention_gradient(a, q, k, v, w, 0, r.dq, fd_count);
  expect_attention_gradient(a, q, k, v, w, 1, r.dk, fd_count);
  expect_attention_gradient(a, q, k, v, w, 2, r.dv, fd_count);

  AttentionRun single = run_attention(DType::f32, a, q, k, v, w);
  EXPECT_LT(relative_error(single.out, r.out), 1e-5);
  EXPECT_LT(relative_error(single.lse, r.lse), 1e-5);
  EXPECT_LT(relative_error(single.dq, r.dq), 1e-5);
  EXPECT_LT(relative_error(single.dk, r.dk), 1e-5);
  EXPECT_LT(relative_error(single.dv, r.dv), 1e-5);
}

TEST(Attention, SmallCaseEveryGradientElement) { check_case({1, 9, 9, 2, 2, 4}, SIZE_MAX, 80); }

TEST(Attention, GroupedQueryHeadsAcrossBlocks) {
  // 70 positions cross the 32-query and 64-key blocks; 4 query heads share 2 kv heads.
  check_case({2, 70, 70, 4, 2, 8}, 40, 90);
}

TEST(Attention, KvCacheQueriesSeeTheWholePrefix) {
  check_case({1, 3, 11, 4, 1, 6}, SIZE_MAX, 100);  // Tq < Tk, backward included

  // The last rows of a full computation equal a call with only those queries.
  AttentionCase full{2, 75, 75, 4, 2, 8}, tail{2, 5, 75, 4, 2, 8};
  Values q = random_values(full.q_numel(), 110), k = random_values(full.kv_numel(), 111),
         v = random_values(full.kv_numel(), 112);
  Values q_tail;
  for (int64_t b = 0; b < full.batch; ++b) {
    auto begin = q.begin() + static_cast<ptrdiff_t>((b * full.query_len + full.query_len - tail.query_len) * 4 * 8);
    q_tail.insert(q_tail.end(), begin, begin + tail.query_len * 4 * 8);
  }
  for (DType dtype : {DType::f64, DType::f32}) {
    AttentionRun all = run_attention(dtype, full, q, k, v, Values(full.q_numel(), 0.0));
    AttentionRun last = run_attention(dtype, tail, q_tail, k, v, Values(tail.q_numel(), 0.0));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t e = 0; e < 4 * 8; ++e)
          EXPECT_NEAR(last.out[static_cast<size_t>((b * 5 + i) * 32 + e)],
                      all.out[static_cast<size_t>((b * 75 + 70 + i) * 32 + e)], 1e-6);
    for (int64_t bh = 0; bh < 2 * 4; ++bh)
      for (int64_t i = 0; i < 5; ++i)
        EXPECT_NEAR(last.lse[static_cast<size_t>(bh * 5 + i)], all.lse[static_cast<size_t>(bh * 75 + 70 + i)], 1e-6);
  }
}

TEST(Attention, HeadDimsAcrossPanelsAndKeyBlocks) {
  // head_dim 40: two whole panels of 16 columns and a partial one; 150 positions: two whole blocks
  // of 64 and a partial one, blocks of 6 rows that end mid-panel; 2 query heads per kv head.
  check_case({1, 150, 150, 4, 2, 40}, 24, 140);
  check_case({2, 7, 150, 2, 1, 40}, 24, 150);  // Tq < Tk, a partial block of queries
}

// A backend whose f32 attention runs where CLOCKTRAIN_CPU_F32_ATTENTION and CLOCKTRAIN_CPU_GEMM say.
std::unique_ptr<Backend> backend_with(const char* f32_attention, const char* gemm) {
  ::setenv("CLOCKTRAIN_CPU_F32_ATTENTION", f32_attention, 1);
  if (gemm) ::setenv("CLOCKTRAIN_CPU_GEMM", gemm, 1);
  std::unique_ptr<Backend> backend = create_backend(BackendOptions());
  ::unsetenv("CLOCKTRAIN_CPU_F32_ATTENTION");
  ::unsetenv("CLOCKTRAIN_CPU_GEMM");
  return backend;
}

AttentionRun run_attention_on(Backend& be, const AttentionCase& a, const Values& q, const Values& k, const Values& v,
                              const Values& dout) {
  Buffer qb(be, a.q_shape(), DType::f32), kb(be, a.kv_shape(), DType::f32), vb(be, a.kv_shape(), DType::f32),
      doutb(be, a.q_shape(), DType::f32), out(be, a.q_shape(), DType::f32),
      lse(be, Shape{a.batch, a.heads, a.query_len}, DType::f32), dq(be, a.q_shape(), DType::f32),
      dk(be, a.kv_shape(), DType::f32), dv(be, a.kv_shape(), DType::f32);
  be.upload(qb, q.data(), DType::f64);
  be.upload(kb, k.data(), DType::f64);
  be.upload(vb, v.data(), DType::f64);
  be.upload(doutb, dout.data(), DType::f64);
  be.attention_forward(out, lse, qb, kb, vb, a.scale());
  be.attention_backward(dq, dk, dv, doutb, out, lse, qb, kb, vb, a.scale());
  auto read_from = [&](const Tensor& t) {
    Values values(static_cast<size_t>(t.numel()));
    be.download(values.data(), DType::f64, t);
    return values;
  };
  return {read_from(out), read_from(lse), read_from(dq), read_from(dk), read_from(dv)};
}

void expect_same_attention(const AttentionRun& got, const AttentionRun& expected) {
  EXPECT_LT(relative_error(got.out, expected.out), 1e-5);
  EXPECT_LT(relative_error(got.lse, expected.lse), 1e-5);
  EXPECT_LT(relative_error(got.dq, expected.dq), 1e-5);
  EXPECT_LT(relative_error(got.dk, expected.dk), 1e-5);
  EXPECT_LT(relative_error(got.dv, expected.dv), 1e-5);
}

TEST(Attention, TileKernelsMatchGemmLibraryTiles) {
  std::unique_ptr<Backend> tiles = backend_with("1", nullptr), library = backend_with("0", nullptr);
  EXPECT_NE(library->device_description().find("f32 attention: tiles through the f32 GEMM"), std::string::npos)
      << library->device_description();
#ifdef __AVX2__
  EXPECT_NE(tiles->device_description().find("f32 attention: register blocks"), std::string::npos)
      << tiles->device_description();
#endif
  for (const AttentionCase& a : {AttentionCase{2, 130, 130, 4, 2, 24}, AttentionCase{1, 3, 70, 2, 2, 16}}) {
    Values q = random_values(a.q_numel(), 150), k = random_values(a.kv_numel(), 151),
           v = random_values(a.kv_numel(), 152), dout = random_values(a.q_numel(), 153);
    expect_same_attention(run_attention_on(*tiles, a, q, k, v, dout), run_attention_on(*library, a, q, k, v, dout));
  }
}

TEST(Attention, DeterministicAcrossRunsAndThreadCounts) {
  AttentionCase a{3, 80, 80, 4, 4, 16};
  Values q = random_values(a.q_numel(), 120), k = random_values(a.kv_numel(), 121),
         v = random_values(a.kv_numel(), 122), w = random_values(a.q_numel(), 123);
  AttentionRun first = run_attention(DType::f32, a, q, k, v, w);
  AttentionRun second = run_attention(DType::f32, a, q, k, v, w);
  int saved = thread_count();
  set_thread_count(1);
  AttentionRun one_thread = run_attention(DType::f32, a, q, k, v, w);
  set_thread_count(saved);
  for (const AttentionRun* other : {&second, &one_thread}) {
    EXPECT_EQ(first.out, other->out);
    EXPECT_EQ(first.dq, other->dq);
    EXPECT_EQ(first.dk, other->dk);
    EXPECT_EQ(first.dv, other->dv);
  }
}

TEST(Attention, OneDnnTilesMatchOpenBlasTiles) {
  // With the tile kernels off, the tiles' products go through the f32 GEMM library; both libraries
  // must give the same attention.
  std::unique_ptr<Backend> onednn = backend_with("0", "onednn"), openblas = backend_with("0", "openblas");
  EXPECT_NE(onednn->device_description().find("f32 GEMM: onednn"), std::string::npos) << onednn->device_description();
  AttentionCase a{2, 100, 100, 2, 1, 16};
  Values q = random_values(a.q_numel(), 130), k = random_values(a.kv_numel(), 131), v = random_values(a.kv_numel(), 132);
  expect_same_attention(run_attention_on(*onednn, a, q, k, v, q), run_attention_on(*openblas, a, q, k, v, q));
}

TEST(Attention, RejectsBadShapes) {
  Buffer q(cpu(), Shape{1, 4, 3, 8}, DType::f32), k(cpu(), Shape{1, 4, 2, 8}, DType::f32),
      out(cpu(), Shape{1, 4, 3, 8}, DType::f32), lse(cpu(), Shape{1, 3, 4}, DType::f32);
  expect_error([&] { cpu().attention_forward(out, lse, q, k, k, 1.0); }, {"attention_forward", "multiple", "kv heads"});
  Buffer q2(cpu(), Shape{1, 6, 2, 8}, DType::f32), out2(cpu(), Shape{1, 6, 2, 8}, DType::f32),
      lse2(cpu(), Shape{1, 2, 6}, DType::f32);
  expect_error([&] { cpu().attention_forward(out2, lse2, q2, k, k, 1.0); }, {"attention_forward", "at least"});
  Buffer q3(cpu(), Shape{1, 4, 2, 8}, DType::f32), small_lse(cpu(), Shape{1, 2, 3}, DType::f32);
  expect_error([&] { cpu().attention_forward(q3, small_lse, q3, k, k, 1.0); }, {"attention_forward", "lse"});
  Buffer k64(cpu(), Shape{1, 4, 2, 8}, DType::f64);
  expect_error([&] { cpu().attention_forward(q3, lse, q3, k64, k64, 1.0); }, {"attention_forward", "k", "f64"});
}

}  // namespace
}  // namespace ct::test
