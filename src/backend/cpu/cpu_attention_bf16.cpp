// Causal attention on bf16 operands, by blocks of 64 queries (forward) or 64 keys (backward) against
// every position the block sees: a [64 x T] slice of scores per thread, never a T x T matrix. The
// math (softmax forward; backward with P recomputed from lse and D_i = dout_i . out_i) is
// cpu_attention.cpp's; this file is about the data layout. Every product is vnni_gemm(): on AMX tiles
// where this process may use them (amx.h), else on AVX512-BF16's vdpbf16ps (bf16_dot_gemm.h, AMD
// Zen 4 and other CPUs without AMX). Both read the same operands; their sums differ only in order.
//
// AMX multiplies C[16 x 16] (f32) += A[16 x 32] (bf16, row-major) B[32 x 16] (bf16), where B must be
// in "VNNI" layout: row p of the tile holds, for each of the 16 columns n, the pair
// (B[2p][n], B[2p+1][n]) as one 32-bit word. vnni_gemm() below computes C[M x N] (+)= A B, on AMX with
// 2 x 2 blocks of C tiles (8 tile registers: 4 of C, 2 of A, 2 of B), the C tiles kept in registers
// over the whole K: loading and storing accumulators costs as much as a short product, so every
// product below runs over as long a K as the data allows. Every product is arranged so that its A
// operand is row-major and its B operand is pre-packed in VNNI layout:
//
//   forward, per (batch, head, block of 64 queries), over all the keys the block sees at once:
//     S  = Q K^T      A = Q rows                B = K "pairs over columns" (the 32-bit transpose of K)
//     P  = exp(scale S - scale rowmax(S)), masked; lse = scale rowmax + log(rowsum P)
//     O  = P V / rowsum P     A = P (bf16)      B = V "pairs over rows"
//   backward, per (batch, kv head), over key blocks, each against every query that sees it, in the
//   transposed orientation so that dK and dV accumulate in tile registers over all those queries:
//     S^T  = K Q^T     A = K rows                B = Q pairs over columns
//     dP^T = V dO^T    A = V rows                B = dO pairs over columns
//     P^T = exp(scale S^T - lse),  dS^T = scale P^T (dP^T - D)          (f32, AVX-512, masked)
//     dV   = P^T dO    A = P^T (bf16)            B = dO pairs over rows
//     dK   = dS^T Q    A = dS^T (bf16)           B = Q pairs over rows
//     dQ^T += K^T dS   A = K^T (16-bit transpose of K)   B = dS^T pairs over rows, two key blocks at once
//   and dQ = (dQ^T)^T at the end. Packing costs O(T D) per head against O(T^2 D) for the products.
//
// Every buffer is padded to a multiple of 64 rows with zeros, and masked entries of P and dS are
// exactly 0, so padding never reaches a result. Parallel tasks: (batch, head, query block) forward,
// (batch, kv head) backward (each owns its dk, dv rows and the dq rows of its query heads): every
// output is written by one task in a fixed order, so results are the same on every run.
#include "backend/cpu/cpu_attention_bf16.h"

#include "backend/cpu/amx.h"
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/bf16_dot_gemm.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/kernel_switch.h"
#include "backend/cpu/simd_math.h"
#include "backend/cpu/transpose.h"
#include "backend/cpu/vnni_pack.h"
#include "backend/cpu/work_array.h"
#include "util/error.h"

#ifdef CLOCKTRAIN_BF16_DOT

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#endif

namespace ct {

#ifdef CLOCKTRAIN_BF16_DOT

namespace {

using vnni::pack_pairs_over_columns;
using vnni::pack_pairs_over_rows;
using vnni::transpose_bf16;

constexpr int64_t kTile = 64;  // queries and keys per block of scores

// Each thread's work arrays (work_array.h; fresh ones per call were ~7% of the kernels' samples).
struct ForwardWork {
  std::vector<uint32_t> kt, vv;  // the calling thread's: K and V packed for every (batch, kv head)
  std::vector<uint16_t> q_block, probs;
  std::vector<float> scores, acc;
};

struct BackwardWork {
  std::vector<uint16_t> k_rows, v_rows, k_t, pt, dst;
  std::vector<uint32_t> k_pairs, qt, qv, dot, dov, dsv;
  std::vector<float> delta, lse_h, dq_t, st, dpt, dk_acc, dv_acc, dq_rows;
};

// The products run on AMX tiles when amx_usable() (false in builds without AMX), else on vdpbf16ps.
// Each thread, before its first and after its last product of a kernel call (other code, oneDNN's
// kernels among it, configures the tiles its own way in between).
void start_products() {
#ifdef CLOCKTRAIN_AMX_TILES
  if (amx_usable()) amx::configure_tiles();
#endif
}

void end_products() {
#ifdef CLOCKTRAIN_AMX_TILES
  if (amx_usable()) _tile_release();
#endif
}

// C[M x N] (f32, row stride ldc) = (accumulate ? C : 0) + A[M x K] B, with A bf16 row-major (row stride
// lda elements) and B in VNNI layout (bv[K/2][N] 32-bit words, row stride ldb words).
// M, N and K are multiples of 32.
void vnni_gemm(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* bv, int64_t ldb, int64_t m,
               int64_t n, int64_t k, bool accumulate) {
#ifdef CLOCKTRAIN_AMX_TILES
  if (amx_usable()) {
    for (int64_t i = 0; i < m; i += 32)
      for (int64_t j = 0; j < n; j += 32) {
        float* block = c + i * ldc + j;
        if (accumulate)
          amx::load_block(block, ldc);
        else
          amx::zero_block();
        amx::accumulate_block(a + i * lda, lda, bv + j, bv + j + 16, ldb, k);
        amx::store_block(block, ldc);
      }
    return;
  }
#endif
  bf16_dot_gemm(c, ldc, a, lda, bv, ldb, m, n, k, accumulate);
}

// ---- packing (x: `rows` rows of `cols` bf16, row stride x_stride elements) -----------------------

// out[rows_pad x cols], row-major, zero rows past `rows`.
void copy_rows(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint16_t* out, int64_t rows_pad) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(out + r * cols, x + r * x_stride, static_cast<size_t>(cols) * 2);
  std::memset(out + rows * cols, 0, static_cast<size_t>((rows_pad - rows) * cols) * 2);
}

// sum_d a[d] b[d] over n bf16 values (n a multiple of 16), in f32.
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m512 total = _mm512_setzero_ps();
  for (int64_t d = 0; d < n; d += 16) total = _mm512_fmadd_ps(simd::load_bf16(a + d), simd::load_bf16(b + d), total);
  return _mm512_reduce_add_ps(total);
}

void store_row(float* dst, const float* src, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void store_row(uint16_t* dst, const float* src, int64_t n) {  // n a multiple of 16
  for (int64_t i = 0; i < n; i += 16) simd::store_bf16(dst + i, _mm512_loadu_ps(src + i));
}

}  // namespace

bool bf16_attention_supported(int64_t head_dim) {
  static const bool usable =
      !switched_off("CLOCKTRAIN_CPU_BF16_ATTENTION") && cpu_level_at_least(CpuLevel::avx512_bf16);
  return usable && head_dim > 0 && head_dim % 32 == 0;
}

std::string bf16_attention_engine() { return amx_usable() ? "AMX tiles" : "AVX512-BF16 dot products"; }

void bf16_attention_forward(uint16_t* out, float* lse, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                            const AttentionDims& dims, float scale) {
  const AttentionDims& s = dims;
  const int64_t D = dims.head_dim, Tk = dims.key_len;
  const int64_t tk_pad = round_up(Tk, kTile), heads_kv = dims.batch * dims.kv_heads;
  const int64_t kt_stride = spread_stride(tk_pad, 4);  // words per row of packed K
  const int64_t kt_size = D / 2 * kt_stride, vv_size = tk_pad / 2 * D;
  // K and V of every (batch, kv head), packed once and shared by all query blocks.
  static thread_local ForwardWork shared;
  uint32_t* kt = work_array(shared.kt, heads_kv * kt_size);
  uint32_t* vv = work_array(shared.vv, heads_kv * vv_size);
#pragma omp parallel for schedule(static)
  for (int64_t bg = 0; bg < heads_kv; ++bg) {
    const int64_t b = bg / dims.kv_heads, g = bg % dims.kv_heads;
    pack_pairs_over_columns(k + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, kt + bg * kt_size, kt_stride);
    pack_pairs_over_rows(v + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, vv + bg * vv_size, tk_pad);
  }
  const __m512 scale_v = _mm512_set1_ps(scale);
#pragma omp parallel
  {
    start_products();
    static thread_local ForwardWork work;
    uint16_t* q_block = work_array(work.q_block, kTile * D);
    uint16_t* probs = work_array(work.probs, kTile * spread_stride(tk_pad, 2));
    float* scores = work_array(work.scores, kTile * spread_stride(tk_pad, 4));
    float* acc = work_array(work.acc, kTile * D);
    float inv_sum[kTile];
    for_each_query_block(s, kTile, [&](const QueryBlock& block) {
      const int64_t b = block.batch, h = block.head, bg = b * dims.kv_heads + block.kv_head;
      const int64_t i0 = block.first, queries = block.count, key_end = block.key_end;
      const int64_t keys_pad = round_up(key_end, 32);  // <= tk_pad: K, V are padded
      const int64_t s_stride = spread_stride(keys_pad, 4), p_stride = spread_stride(keys_pad, 2);
      copy_rows(q + s.q_row(b, i0, h), s.q_stride(), queries, D, q_block, kTile);
      // S = Q K^T over every key the block sees, [64 x keys_pad]
      vnni_gemm(scores, s_stride, q_block, D, kt + bg * kt_size, kt_stride, kTile, keys_pad, D, false);
      for (int64_t r = 0; r < kTile; ++r) {
        uint16_t* p_row = probs + r * p_stride;
        const int64_t visible = r < queries ? std::min(s.key_offset() + i0 + r + 1, Tk) : 0;
        if (visible <= 0) {  // padding rows: P = 0 keeps their output rows (never stored) finite
          std::fill(p_row, p_row + keys_pad, uint16_t{0});
          inv_sum[r] = 0.0f;
          continue;
        }
        const float* s_row = scores + r * s_stride;
        __m512 max_v = _mm512_set1_ps(-INFINITY);
        for (int64_t c = 0; c < keys_pad; c += 16)
          max_v = _mm512_mask_max_ps(max_v, simd::first_lanes_of_16(visible - c), max_v, _mm512_loadu_ps(s_row + c));
        // p = exp(scale (s - max)): the row's exact max, so no rescaling of earlier blocks
        const float row_max = _mm512_reduce_max_ps(max_v);
        const __m512 shift = _mm512_set1_ps(scale * row_max);
        __m512 total = _mm512_setzero_ps();
        for (int64_t c = 0; c < keys_pad; c += 16) {
          const __m512 x = _mm512_fmsub_ps(_mm512_loadu_ps(s_row + c), scale_v, shift);
          const __m512 p = _mm512_maskz_mov_ps(simd::first_lanes_of_16(visible - c), simd::exp(x));
          total = _mm512_add_ps(total, p);
          simd::store_bf16_flushing(p_row + c, p);
        }
        const float sum = _mm512_reduce_add_ps(total);
        inv_sum[r] = 1.0f / sum;
        lse[s.lse_row(b, h) + i0 + r] = scale * row_max + std::log(sum);
      }
      // O = P V, the accumulators kept in tile registers over all the keys
      vnni_gemm(acc, D, probs, p_stride, vv + bg * vv_size, D, kTile, D, keys_pad, false);
      for (int64_t r = 0; r < queries; ++r) {
        uint16_t* out_row = out + s.q_row(b, i0 + r, h);
        const __m512 inv = _mm512_set1_ps(inv_sum[r]);
        for (int64_t d = 0; d < D; d += 16)
          simd::store_bf16(out_row + d, _mm512_mul_ps(_mm512_loadu_ps(acc + r * D + d), inv));
      }
    });
    end_products();
  }
}

void bf16_attention_backward(void* dq, bool dq_bf16, void* dk, bool dk_bf16, void* dv, bool dv_bf16,
                             const uint16_t* dout, const uint16_t* out, const float* lse, const uint16_t* q,
                             const uint16_t* k, const uint16_t* v, const AttentionDims& dims, float scale) {
  const AttentionDims& s = dims;
  const int64_t D = dims.head_dim, Tq = dims.query_len, Tk = dims.key_len, G = s.group();
  const int64_t tq_pad = round_up(Tq, kTile), tk_pad = round_up(Tk, kTile);
  // Row strides over all the queries: of 32-bit rows (Q and dO packed over columns, dQ^T, and the
  // largest S^T, dP^T and paired dS^T slices) and of 16-bit rows (the largest P^T and dS^T slices).
  const int64_t tq_words = spread_stride(tq_pad, 4), tq_halves = spread_stride(tq_pad, 2);
  const int64_t per_head_words = D / 2 * tq_words;  // each of qt, qv, dot, dov (32-bit words)
  const int64_t kt_stride = spread_stride(tk_pad, 2);
  const __m512 scale_v = _mm512_set1_ps(scale);
  // the lane index 0..15 of a 16-query chunk, for the causal mask
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
#pragma omp parallel
  {
    start_products();
    static thread_local BackwardWork work;
    uint16_t* k_rows = work_array(work.k_rows, tk_pad * D);
    uint16_t* v_rows = work_array(work.v_rows, tk_pad * D);
    uint16_t* k_t = work_array(work.k_t, kt_stride * D);
    uint32_t* k_pairs = work_array(work.k_pairs, D / 2 * tk_pad);
    uint32_t* qt = work_array(work.qt, G * per_head_words);
    uint32_t* qv = work_array(work.qv, G * per_head_words);
    uint32_t* dot = work_array(work.dot, G * per_head_words);
    uint32_t* dov = work_array(work.dov, G * per_head_words);
    float* delta = work_array(work.delta, G * tq_pad);
    float* lse_h = work_array(work.lse_h, G * tq_pad);
    const int64_t dq_t_size = G * D * tq_words;
    float* dq_t = work_array(work.dq_t, dq_t_size);
    // one key block's scores against every query that sees it: [64 x tq_pad] (rows: keys)
    float* st = work_array(work.st, kTile * tq_words);
    float* dpt = work_array(work.dpt, kTile * tq_words);
    float* dk_acc = work_array(work.dk_acc, kTile * D);
    float* dv_acc = work_array(work.dv_acc, kTile * D);
    float* dq_rows = work_array(work.dq_rows, tq_pad * D);
    uint16_t* pt = work_array(work.pt, kTile * tq_halves);
    uint16_t* dst = work_array(work.dst, kTile * tq_halves);
    // dS^T of two key blocks, each head's: dQ^T += K^T dS runs once per pair (128 keys), since every run
    // loads and stores its dQ^T accumulators
    const int64_t dsv_size = kTile * tq_words;
    uint32_t* dsv = work_array(work.dsv, G * dsv_size);
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < dims.batch; ++b)
      for (int64_t g = 0; g < dims.kv_heads; ++g) {
        copy_rows(k + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, k_rows, tk_pad);
        copy_rows(v + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, v_rows, tk_pad);
        transpose_bf16(k + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, k_t, kt_stride, k_pairs, tk_pad);
        for (int64_t hg = 0; hg < G; ++hg) {
          const int64_t h = g * G + hg;
          const uint16_t* q_h = q + s.q_row(b, 0, h);
          const uint16_t* do_h = dout + s.q_row(b, 0, h);
          pack_pairs_over_columns(q_h, s.q_stride(), Tq, D, qt + hg * per_head_words, tq_words);
          pack_pairs_over_rows(q_h, s.q_stride(), Tq, D, qv + hg * per_head_words, tq_pad);
          pack_pairs_over_columns(do_h, s.q_stride(), Tq, D, dot + hg * per_head_words, tq_words);
          pack_pairs_over_rows(do_h, s.q_stride(), Tq, D, dov + hg * per_head_words, tq_pad);
          float* delta_h = delta + hg * tq_pad;
          float* lse_row = lse_h + hg * tq_pad;
          for (int64_t i = 0; i < tq_pad; ++i) {
            delta_h[i] = i < Tq ? dot_bf16(out + s.q_row(b, i, h), do_h + i * s.q_stride(), D) : 0.0f;
            lse_row[i] = i < Tq ? lse[s.lse_row(b, h) + i] : 0.0f;
          }
        }
        std::fill(dq_t, dq_t + dq_t_size, 0.0f);
        for (int64_t j0 = 0; j0 < Tk; j0 += kTile) {
          const int64_t keys = std::min(Tk - j0, kTile);
          // the queries that see a key of this block: i0 .. tq_pad (a multiple of 64 wide)
          const int64_t i0 = std::max<int64_t>(0, j0 - s.key_offset()) / kTile * kTile, width = tq_pad - i0;
          const int64_t f32_stride = spread_stride(width, 4), bf16_stride = spread_stride(width, 2);
          // the pair of key blocks this one belongs to: dS^T rows of the second block go below the first's,
          // in the first block's columns (its queries are a superset), zero where the second sees none
          const int64_t half = (j0 / kTile) % 2, pair_j0 = j0 - half * kTile;
          const int64_t pair_i0 = std::max<int64_t>(0, pair_j0 - s.key_offset()) / kTile * kTile;
          const int64_t pair_width = tq_pad - pair_i0, pair_stride = spread_stride(pair_width, 4);
          const bool pair_done = half == 1 || j0 + kTile >= Tk;
          for (int64_t hg = 0; hg < G; ++hg) {
            uint32_t* dsv_h = dsv + hg * dsv_size + half * (kTile / 2) * pair_stride;  // this block's rows
            for (int64_t r = 0; r < kTile / 2; ++r)
              std::fill(dsv_h + r * pair_stride, dsv_h + r * pair_stride + (i0 - pair_i0), 0u);
            dsv_h += i0 - pair_i0;
            const float* delta_h = delta + hg * tq_pad + i0;
            const float* lse_row = lse_h + hg * tq_pad + i0;
            // S^T = K Q^T and dP^T = V dO^T for keys j0.., queries i0..
            vnni_gemm(st, f32_stride, k_rows + j0 * D, D, qt + hg * per_head_words + i0, tq_words, kTile, width, D,
                      false);
            vnni_gemm(dpt, f32_stride, v_rows + j0 * D, D, dot + hg * per_head_words + i0, tq_words, kTile, width, D,
                      false);
            for (int64_t r = 0; r < kTile; r += 2) {
              for (int64_t c = 0; c < width; c += 16) {
                __m256i ds_pair[2];  // dS^T of rows r and r + 1, rounded to bf16
                const __m512 lse_v = _mm512_loadu_ps(lse_row + c), delta_v = _mm512_loadu_ps(delta_h + c);
                for (int64_t rr = 0; rr < 2; ++rr) {
                  const int64_t row = r + rr, j = j0 + row, i_base = i0 + c;
                  // query i = i_base + lane is visible to key j when key_offset + i >= j, i < Tq, j < Tk
                  __mmask16 mask = 0;
                  if (j < Tk) {
                    const __m512i first_visible = _mm512_set1_epi32(static_cast<int>(j - s.key_offset() - i_base));
                    mask = simd::first_lanes_of_16(Tq - i_base) & _mm512_cmpge_epi32_mask(lane, first_visible);
                  }
                  const __m512 x = _mm512_fmsub_ps(_mm512_loadu_ps(st + row * f32_stride + c), scale_v, lse_v);
                  const __m512 p = _mm512_maskz_mov_ps(mask, simd::exp(x));
                  const __m512 dp = _mm512_sub_ps(_mm512_loadu_ps(dpt + row * f32_stride + c), delta_v);
                  const __m512 ds = _mm512_mul_ps(_mm512_mul_ps(p, dp), scale_v);
                  simd::store_bf16_flushing(pt + row * bf16_stride + c, p);
                  ds_pair[rr] = simd::round_to_bf16_flushing(ds);
                  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + row * bf16_stride + c), ds_pair[rr]);
                }
                // dS^T rows r and r+1 interleaved: the VNNI B operand of dQ^T += K^T dS
                const __m512i lo = _mm512_cvtepu16_epi32(ds_pair[0]);
                const __m512i hi = _mm512_cvtepu16_epi32(ds_pair[1]);
                _mm512_storeu_si512(dsv_h + (r / 2) * pair_stride + c, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
              }
            }
            // dV (+)= P^T dO and dK (+)= dS^T Q over all the queries at once (accumulators in tiles);
            // dQ^T += K^T dS over the pair's keys once both blocks are in
            const bool accumulate = hg > 0;
            vnni_gemm(dv_acc, D, pt, bf16_stride, dov + hg * per_head_words + (i0 / 2) * D, D, kTile, D, width,
                      accumulate);
            vnni_gemm(dk_acc, D, dst, bf16_stride, qv + hg * per_head_words + (i0 / 2) * D, D, kTile, D, width,
                      accumulate);
            if (pair_done)
              vnni_gemm(dq_t + hg * D * tq_words + pair_i0, tq_words, k_t + pair_j0, kt_stride, dsv + hg * dsv_size,
                        pair_stride, D, pair_width, (half + 1) * kTile, true);
          }
          for (int64_t row = 0; row < keys; ++row) {
            const int64_t at = s.kv_row(b, j0 + row, g);
            if (dk_bf16) {
              store_row(static_cast<uint16_t*>(dk) + at, dk_acc + row * D, D);
            } else {
              store_row(static_cast<float*>(dk) + at, dk_acc + row * D, D);
            }
            if (dv_bf16) {
              store_row(static_cast<uint16_t*>(dv) + at, dv_acc + row * D, D);
            } else {
              store_row(static_cast<float*>(dv) + at, dv_acc + row * D, D);
            }
          }
        }
        for (int64_t hg = 0; hg < G; ++hg) {
          const int64_t h = g * G + hg;
          const float* dqt_h = dq_t + hg * D * tq_words;
          transpose_32bit(dqt_h, tq_words, D, Tq, dq_rows, D);
          for (int64_t i = 0; i < Tq; ++i) {
            const int64_t at = s.q_row(b, i, h);
            if (dq_bf16) {
              store_row(static_cast<uint16_t*>(dq) + at, dq_rows + i * D, D);
            } else {
              store_row(static_cast<float*>(dq) + at, dq_rows + i * D, D);
            }
          }
        }
      }
    end_products();
  }
}

#else

bool bf16_attention_supported(int64_t) { return false; }

std::string bf16_attention_engine() { return "none (this build has neither AMX nor AVX512-BF16)"; }

void bf16_attention_forward(uint16_t*, float*, const uint16_t*, const uint16_t*, const uint16_t*, const AttentionDims&,
                            float) {
  fail("attention_forward: the bf16 kernels are not built (they need AVX512-BF16 or AMX, -march=native)");
}

void bf16_attention_backward(void*, bool, void*, bool, void*, bool, const uint16_t*, const uint16_t*, const float*,
                             const uint16_t*, const uint16_t*, const uint16_t*, const AttentionDims&, float) {
  fail("attention_backward: the bf16 kernels are not built (they need AVX512-BF16 or AMX, -march=native)");
}

#endif

}  // namespace ct
