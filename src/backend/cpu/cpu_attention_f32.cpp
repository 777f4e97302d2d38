// Causal attention in f32, every product on f32_tile_gemm.h's register blocks: A read in place
// through strides, B read in place where it is row-major and packed into panels of 16 columns where
// it is a transpose. The math (softmax forward; backward with P recomputed from lse and
// D_i = dout_i . out_i) is cpu_attention.cpp's.
//
//   forward, per (batch, head, block of 64 queries), over all the keys the block sees at once:
//     S = scale Q K^T       A = Q rows in place           B = K^T panels (packed once per call)
//     P = exp(S - rowmax S), masked; lse = rowmax + log(rowsum P)
//     O = P V / rowsum P    A = P                         B = V rows in place
//   backward, per (batch, kv head), over blocks of 64 keys, each against every query that sees it, in
//   the transposed orientation so that dK and dV sum over all those queries in registers:
//     S^T  = scale K Q^T    A = K rows in place           B = Q^T panels (packed per head)
//     dP^T = V dO^T         A = V rows in place           B = dO^T panels (packed per head)
//     P^T = exp(S^T - lse), dS^T = scale P^T (dP^T - D)    (masked entries exactly 0)
//     dV (+)= P^T dO        A = P^T                       B = dO rows in place
//     dK (+)= dS^T Q        A = dS^T                      B = Q rows in place
//     dQ  += dS K           A = dS^T read transposed      B = K rows in place
//   Packing costs O(T D) per head against O(T^2 D) for the products.
//
// The causal mask saves work as well as hiding it: each block of rows of a product computes only
// the columns (whole panels of 16) and the terms its rows can see, so a diagonal block of scores costs
// about half of a full one. Masked entries of P, P^T and dS^T are written as exact zeros, so terms a
// block computes past a row's own last visible key add nothing.
//
// Parallel tasks: (batch, head, query block) forward, (batch, kv head) backward, which owns its dk,
// dv rows and the dq rows of its query heads: every output is written by one task in a fixed order,
// and every element of a product sums its terms in order, so results are the same on every run and
// for every thread count.
#include "backend/cpu/cpu_attention_f32.h"

#include "backend/cpu/f32_tile_gemm.h"

#ifdef CLOCKTRAIN_F32_TILES

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/vector_math.h"
#include "backend/cpu/work_array.h"

#endif

#include "util/error.h"

namespace ct {

#ifdef CLOCKTRAIN_F32_TILES

namespace {

using f32_tiles::BlockRange;
using f32_tiles::kPanel;
using f32_tiles::pack_columns_into_panels;
using f32_tiles::panel_floats;
using f32_tiles::panels_of;
using f32_tiles::product;
using f32_tiles::rows_of;

constexpr int64_t kBlock = 64;  // queries per forward task, keys per backward step

int64_t panels(int64_t columns) { return (columns + kPanel - 1) / kPanel; }

// Each thread's work arrays (work_array.h), kept between calls.
struct ForwardWork {
  std::vector<float> kt;  // the calling thread's: K^T panels of every (batch, kv head)
  std::vector<float> scores, acc;
};

struct BackwardWork {
  std::vector<float> qt, dot, delta, st, dpt;
};

}  // namespace

bool f32_attention_built() { return true; }
bool f32_tiles_on_avx512() { return f32_tiles::wide_blocks(); }

void f32_attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                           const AttentionDims& s, float scale) {
  const int64_t D = s.head_dim, Tk = s.key_len, heads_kv = s.batch * s.kv_heads;
  const bool parallel = s.work() > kMinParallelElements;
  // K^T: B of S (terms: D, columns: keys)
  const int64_t kt_panel = panel_floats(D), kt_size = panels(Tk) * kt_panel;
  static thread_local ForwardWork shared;
  float* kt = work_array(shared.kt, heads_kv * kt_size);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t bg = 0; bg < heads_kv; ++bg) {
    const int64_t b = bg / s.kv_heads, g = bg % s.kv_heads;
    pack_columns_into_panels(k + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, kt + bg * kt_size, kt_panel);
  }
  const int64_t s_stride = spread_stride(Tk, 4);
#pragma omp parallel if (parallel)
  {
    static thread_local ForwardWork work;
    float* scores = work_array(work.scores, kBlock * s_stride);
    float* acc = work_array(work.acc, kBlock * D);
    float inv_sum[kBlock];
    for_each_query_block(s, kBlock, [&](const QueryBlock& block) {
      const int64_t b = block.batch, h = block.head, g = block.kv_head, bg = b * s.kv_heads + g;
      const int64_t i0 = block.first, queries = block.count, key_end = block.key_end;
      // S = scale Q K^T, each block of rows over the keys its last query sees
      product(scores, s_stride, q + s.q_row(b, i0, h), s.q_stride(), 1, panels_of(kt + bg * kt_size, kt_panel),
              queries, key_end, scale, false,
              [&](int64_t, int64_t last) { return BlockRange{0, s.visible(i0 + last), 0, D}; });
      for (int64_t r = 0; r < queries; ++r) {
        float* row = scores + r * s_stride;
        const int64_t visible = s.visible(i0 + r);
        const float row_max = max_of(row, visible);
        for (int64_t j = 0; j < visible; ++j) row[j] -= row_max;
        exp_in_place(row, visible);  // the unnormalised probabilities
        const float sum = sum_of(row, visible);
        std::fill(row + visible, row + key_end, 0.0f);  // masked: exact zeros for O's terms
        inv_sum[r] = 1.0f / sum;
        lse[s.lse_row(b, h) + i0 + r] = row_max + std::log(sum);
      }
      // O = P V, each block of rows over the keys its last query sees
      product(acc, D, scores, s_stride, 1, rows_of(v + s.kv_row(b, 0, g), s.kv_stride()), queries, D, 1.0f, false,
              [&](int64_t, int64_t last) { return BlockRange{0, D, 0, s.visible(i0 + last)}; });
      for (int64_t r = 0; r < queries; ++r) {
        float* out_row = out + s.q_row(b, i0 + r, h);
        for (int64_t d = 0; d < D; ++d) out_row[d] = acc[r * D + d] * inv_sum[r];
      }
    });
  }
}

void f32_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                            const float* q, const float* k, const float* v, const AttentionDims& s, float scale) {
  const int64_t D = s.head_dim, Tq = s.query_len, Tk = s.key_len, G = s.group();
  // Per query head: Q^T and dO^T, B of S^T and dP^T (terms D, columns queries).
  const int64_t t_panel = panel_floats(D), t_size = panels(Tq) * t_panel;
  const int64_t st_stride = spread_stride(Tq, 4);
#pragma omp parallel if (s.work() > kMinParallelElements)
  {
    static thread_local BackwardWork work;
    float* qt = work_array(work.qt, G * t_size);
    float* dot_t = work_array(work.dot, G * t_size);
    float* delta = work_array(work.delta, G * Tq);
    float* st = work_array(work.st, kBlock * st_stride);   // S^T, then P^T, of one block of keys
    float* dpt = work_array(work.dpt, kBlock * st_stride);  // dP^T, then dS^T
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t g = 0; g < s.kv_heads; ++g) {
        for (int64_t hg = 0; hg < G; ++hg) {
          const int64_t h = g * G + hg;
          const float* q_h = q + s.q_row(b, 0, h);
          const float* do_h = dout + s.q_row(b, 0, h);
          pack_columns_into_panels(q_h, s.q_stride(), Tq, D, qt + hg * t_size, t_panel);
          pack_columns_into_panels(do_h, s.q_stride(), Tq, D, dot_t + hg * t_size, t_panel);
          for (int64_t i = 0; i < Tq; ++i) {
            delta[hg * Tq + i] = dot_of(do_h + i * s.q_stride(), out + s.q_row(b, i, h), D);
            std::fill(dq + s.q_row(b, i, h), dq + s.q_row(b, i, h) + D, 0.0f);
          }
        }
        for (int64_t j0 = 0; j0 < Tk; j0 += kBlock) {
          const int64_t keys = std::min(Tk - j0, kBlock);
          // the queries that see a key of this block: i0 (the first, rounded down to a panel) .. Tq
          const int64_t i0 = std::max<int64_t>(0, j0 - s.key_offset()) / kPanel * kPanel, width = Tq - i0;
          // the first column (query - i0) that key j0 + r sees
          auto first_seen = [&](int64_t r) { return std::max<int64_t>(0, j0 + r - s.key_offset() - i0); };
          const float* k_block = k + s.kv_row(b, j0, g);
          const float* v_block = v + s.kv_row(b, j0, g);
          for (int64_t hg = 0; hg < G; ++hg) {
            const int64_t h = g * G + hg;
            const float* lse_h = lse + s.lse_row(b, h) + i0;
            const float* delta_h = delta + hg * Tq + i0;
            // S^T and dP^T: each block of key rows from the first query its first row sees
            auto seen = [&](int64_t first, int64_t) { return BlockRange{first_seen(first), width, 0, D}; };
            const int64_t first_panel = i0 / kPanel * t_panel;  // of query i0 in Q^T and dO^T
            product(st, st_stride, k_block, s.kv_stride(), 1, panels_of(qt + hg * t_size + first_panel, t_panel), keys,
                    width, scale, false, seen);
            product(dpt, st_stride, v_block, s.kv_stride(), 1, panels_of(dot_t + hg * t_size + first_panel, t_panel),
                    keys, width, 1.0f, false, seen);
            for (int64_t r = 0; r < keys; ++r) {
              float* p = st + r * st_stride;
              float* ds = dpt + r * st_stride;
              const int64_t first = first_seen(r);
              std::fill(p, p + first, 0.0f);
              std::fill(ds, ds + first, 0.0f);
              for (int64_t c = first; c < width; ++c) p[c] -= lse_h[c];
              exp_in_place(p + first, width - first);
              for (int64_t c = first; c < width; ++c) ds[c] = scale * p[c] * (ds[c] - delta_h[c]);
            }
            // dV (+)= P^T dO and dK (+)= dS^T Q: each block of key rows over the queries its first row sees
            auto seeing = [&](int64_t first, int64_t) { return BlockRange{0, D, first_seen(first), width}; };
            float* dv_block = dv + s.kv_row(b, j0, g);
            float* dk_block = dk + s.kv_row(b, j0, g);
            product(dv_block, s.kv_stride(), st, st_stride, 1, rows_of(dout + s.q_row(b, i0, h), s.q_stride()), keys, D,
                    1.0f, hg > 0, seeing);
            product(dk_block, s.kv_stride(), dpt, st_stride, 1, rows_of(q + s.q_row(b, i0, h), s.q_stride()), keys, D,
                    1.0f, hg > 0, seeing);
            // dQ += dS K: each block of query rows over the keys of this block its last row sees
            product(dq + s.q_row(b, i0, h), s.q_stride(), dpt, 1, st_stride, rows_of(k_block, s.kv_stride()), width, D,
                    1.0f, true, [&](int64_t, int64_t last) {
                      return BlockRange{0, D, 0, std::min(keys, s.visible(i0 + last) - j0)};
                    });
          }
        }
      }
  }
}

#else

bool f32_attention_built() { return false; }
bool f32_tiles_on_avx512() { return false; }

void f32_attention_forward(float*, float*, const float*, const float*, const float*, const AttentionDims&, float) {
  fail("attention_forward: the f32 tile kernels are not built (they need AVX2 and FMA, -march=native)");
}

void f32_attention_backward(float*, float*, float*, const float*, const float*, const float*, const float*,
                            const float*, const float*, const AttentionDims&, float) {
  fail("attention_backward: the f32 tile kernels are not built (they need AVX2 and FMA, -march=native)");
}

#endif

}  // namespace ct
