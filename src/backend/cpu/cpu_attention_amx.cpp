// Causal attention on bf16 operands with AMX tiles: flash-style, on 64 x 64 tiles of scores, never a
// T x T matrix. The math (online softmax forward; backward with P recomputed from lse and
// D_i = dout_i . out_i) is cpu_attention.cpp's; this file is about the data layout.
//
// AMX multiplies C[16 x 16] (f32) += A[16 x 32] (bf16, row-major) B[32 x 16] (bf16), where B must be
// in "VNNI" layout: row p of the tile holds, for each of the 16 columns n, the pair
// (B[2p][n], B[2p+1][n]) as one 32-bit word. tile_gemm() below computes C[M x N] (+)= A B with
// 2 x 2 blocks of C tiles (8 tile registers: 4 of C, 2 of A, 2 of B). Every product of attention is
// arranged so that its A operand is row-major and its B operand is pre-packed in VNNI layout:
//
//   forward, per (batch, head, block of 64 queries), over key blocks:
//     S   = Q K^T      A = Q rows                B = K "pairs over columns" (the 32-bit transpose of K)
//     O  += P V        A = P (bf16, from S)      B = V "pairs over rows"
//   backward, per (batch, kv head), over key blocks (outer) and query blocks (inner), in the
//   transposed orientation so that dK and dV accumulate in one f32 tile per key block:
//     S^T  = K Q^T     A = K rows                B = Q pairs over columns
//     dP^T = V dO^T    A = V rows                B = dO pairs over columns
//     P^T = exp(scale S^T - lse),  dS^T = scale P^T (dP^T - D)          (f32, AVX-512, masked)
//     dV  += P^T dO    A = P^T (bf16)            B = dO pairs over rows
//     dK  += dS^T Q    A = dS^T (bf16)           B = Q pairs over rows
//     dQ^T += K^T dS   A = K^T (16-bit transpose of K)   B = dS^T pairs over rows (packed from the tile)
//   and dQ = (dQ^T)^T at the end. Packing costs O(T D) per head against O(T^2 D) for the products.
//
// Every buffer is padded to a multiple of 64 rows with zeros, and masked entries of P and dS are
// exactly 0, so padding never reaches a result. Parallel tasks: (batch, head, query block) forward,
// (batch, kv head) backward (each owns its dk, dv rows and the dq rows of its query heads): every
// output is written by one task in a fixed order, so results are the same on every run.
#include "backend/cpu/cpu_attention_amx.h"

#include "backend/cpu/amx.h"
#include "backend/cpu/simd_math.h"
#include "backend/cpu/transpose.h"
#include "backend/cpu/work_array.h"
#include "util/error.h"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(CLOCKTRAIN_SIMD_AVX512)
#define CLOCKTRAIN_AMX_ATTENTION 1
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#endif

namespace ct {

#ifdef CLOCKTRAIN_AMX_ATTENTION

namespace {

constexpr int64_t kTile = 64;  // queries and keys per block of scores

int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// Each thread's work arrays (work_array.h; fresh ones per call were ~7% of the kernels' samples).
struct ForwardWork {
  std::vector<uint32_t> kt, vv;  // the calling thread's: K and V packed for every (batch, kv head)
  std::vector<uint16_t> q_block, probs;
  std::vector<float> scores, acc;
};

struct BackwardWork {
  std::vector<uint16_t> k_rows, v_rows, k_t, pt, dst;
  std::vector<uint32_t> qt, qv, dot, dov, dsv;
  std::vector<float> delta, lse_h, dq_t, st, dpt, dk_acc, dv_acc, dq_rows;
};

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Every tile register: 16 rows of 64 bytes (16 f32 or 32 bf16). Once per thread and parallel region.
void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
}

// C[M x N] (f32, row stride ldc) = (accumulate ? C : 0) + A[M x K] B, with A bf16 row-major (row stride
// lda elements) and B in VNNI layout (bv[K/2][N] 32-bit words, row stride ldb words).
// M, N and K are multiples of 32.
void tile_gemm(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* bv, int64_t ldb, int64_t m,
               int64_t n, int64_t k, bool accumulate) {
  const int64_t c_stride = ldc * 4, a_stride = lda * 2, b_stride = ldb * 4;
  for (int64_t i = 0; i < m; i += 32)
    for (int64_t j = 0; j < n; j += 32) {
      float* c00 = c + i * ldc + j;
      float* c10 = c00 + 16 * ldc;
      if (accumulate) {
        _tile_loadd(0, c00, c_stride);
        _tile_loadd(1, c00 + 16, c_stride);
        _tile_loadd(2, c10, c_stride);
        _tile_loadd(3, c10 + 16, c_stride);
      } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      }
      for (int64_t kk = 0; kk < k; kk += 32) {
        _tile_loadd(4, a + i * lda + kk, a_stride);
        _tile_loadd(5, a + (i + 16) * lda + kk, a_stride);
        _tile_loadd(6, bv + (kk / 2) * ldb + j, b_stride);
        _tile_loadd(7, bv + (kk / 2) * ldb + j + 16, b_stride);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, c00, c_stride);
      _tile_stored(1, c00 + 16, c_stride);
      _tile_stored(2, c10, c_stride);
      _tile_stored(3, c10 + 16, c_stride);
    }
}

// ---- packing (x: `rows` rows of `cols` bf16, row stride x_stride elements) -----------------------

// out[rows_pad x cols], row-major, zero rows past `rows`.
void copy_rows(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint16_t* out, int64_t rows_pad) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(out + r * cols, x + r * x_stride, static_cast<size_t>(cols) * 2);
  std::memset(out + rows * cols, 0, static_cast<size_t>((rows_pad - rows) * cols) * 2);
}

// VNNI of X as the B operand of a product over X's rows: out[p][c] = (x[2p][c], x[2p+1][c]),
// p < rows_pad / 2.
void pack_pairs_over_rows(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint32_t* out,
                          int64_t rows_pad) {
  for (int64_t p = 0; p < rows_pad / 2; ++p) {
    const int64_t r0 = 2 * p, r1 = 2 * p + 1;
    const uint16_t* x0 = r0 < rows ? x + r0 * x_stride : nullptr;
    const uint16_t* x1 = r1 < rows ? x + r1 * x_stride : nullptr;
    uint32_t* o = out + p * cols;
    for (int64_t c = 0; c < cols; ++c)
      o[c] = (x0 ? uint32_t{x0[c]} : 0u) | (x1 ? uint32_t{x1[c]} << 16 : 0u);
  }
}

// VNNI of X^T as the B operand of a product over X's columns: out[p][r] = (x[r][2p], x[r][2p+1]),
// i.e. the 32-bit transpose of X (x_stride even); r < rows_pad (zero past `rows`), row stride
// rows_pad words.
void pack_pairs_over_columns(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint32_t* out,
                             int64_t rows_pad) {
  const int64_t pairs = cols / 2;
  transpose_32bit(x, x_stride / 2, rows, pairs, out, rows_pad);
  for (int64_t p = 0; p < pairs; ++p) std::fill(out + p * rows_pad + rows, out + (p + 1) * rows_pad, 0u);
}

// out[c][r] = x[r][c]: [cols x rows_pad], zero past `rows`.
void transpose_bf16(const uint16_t* x, int64_t x_stride, int64_t rows, int64_t cols, uint16_t* out,
                    int64_t rows_pad) {
  transpose_blocked(rows, cols, out, rows_pad, [&](int64_t r, int64_t c) { return x[r * x_stride + c]; });
  for (int64_t c = 0; c < cols; ++c) std::fill(out + c * rows_pad + rows, out + (c + 1) * rows_pad, uint16_t{0});
}

// sum_d a[d] b[d] over n bf16 values (n a multiple of 16), in f32.
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m512 total = _mm512_setzero_ps();
  for (int64_t d = 0; d < n; d += 16) total = _mm512_fmadd_ps(simd::load_bf16(a + d), simd::load_bf16(b + d), total);
  return _mm512_reduce_add_ps(total);
}

// Lanes [0, count) of a 16-lane vector starting at lane `first` (count clipped to [0, 16]).
__mmask16 lanes_below(int64_t count) {
  if (count <= 0) return 0;
  if (count >= 16) return 0xffff;
  return static_cast<__mmask16>((1u << count) - 1u);
}

void store_row(float* dst, const float* src, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void store_row(uint16_t* dst, const float* src, int64_t n) {  // n a multiple of 16
  for (int64_t i = 0; i < n; i += 16) simd::store_bf16(dst + i, _mm512_loadu_ps(src + i));
}

struct Layout {
  AttentionDims d;
  int64_t group() const { return d.heads / d.kv_heads; }
  int64_t key_offset() const { return d.key_len - d.query_len; }
  int64_t q_stride() const { return d.heads * d.head_dim; }
  int64_t kv_stride() const { return d.kv_heads * d.head_dim; }
  int64_t q_row(int64_t b, int64_t t, int64_t h) const { return ((b * d.query_len + t) * d.heads + h) * d.head_dim; }
  int64_t kv_row(int64_t b, int64_t t, int64_t g) const {
    return ((b * d.key_len + t) * d.kv_heads + g) * d.head_dim;
  }
  int64_t lse_row(int64_t b, int64_t h) const { return (b * d.heads + h) * d.query_len; }
};

}  // namespace

bool amx_attention_supported(int64_t head_dim) { return amx_usable() && head_dim > 0 && head_dim % 32 == 0; }

void amx_attention_forward(uint16_t* out, float* lse, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                           const AttentionDims& dims, float scale) {
  const Layout s{dims};
  const int64_t D = dims.head_dim, Tq = dims.query_len, Tk = dims.key_len;
  const int64_t tk_pad = round_up(Tk, kTile), heads_kv = dims.batch * dims.kv_heads;
  const int64_t kt_size = D / 2 * tk_pad, vv_size = tk_pad / 2 * D;
  // K and V of every (batch, kv head), packed once and shared by all query blocks.
  static thread_local ForwardWork shared;
  uint32_t* kt = work_array(shared.kt, heads_kv * kt_size);
  uint32_t* vv = work_array(shared.vv, heads_kv * vv_size);
#pragma omp parallel for schedule(static)
  for (int64_t bg = 0; bg < heads_kv; ++bg) {
    const int64_t b = bg / dims.kv_heads, g = bg % dims.kv_heads;
    pack_pairs_over_columns(k + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, kt + bg * kt_size, tk_pad);
    pack_pairs_over_rows(v + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, vv + bg * vv_size, tk_pad);
  }
  const int64_t query_blocks = (Tq + kTile - 1) / kTile;
  const __m512 scale_v = _mm512_set1_ps(scale);
#pragma omp parallel
  {
    configure_tiles();
    static thread_local ForwardWork work;
    uint16_t* q_block = work_array(work.q_block, kTile * D);
    uint16_t* probs = work_array(work.probs, kTile * kTile);
    float* scores = work_array(work.scores, kTile * kTile);
    float* acc = work_array(work.acc, kTile * D);
    float running_max[kTile], running_sum[kTile];
#pragma omp for collapse(3) schedule(dynamic)
    for (int64_t b = 0; b < dims.batch; ++b)
      for (int64_t h = 0; h < dims.heads; ++h)
        for (int64_t block = 0; block < query_blocks; ++block) {
          const int64_t bg = b * dims.kv_heads + h / s.group();
          const int64_t i0 = block * kTile, queries = std::min(Tq - i0, kTile);
          const int64_t key_end = std::min(Tk, s.key_offset() + i0 + queries);  // keys the last query sees
          copy_rows(q + s.q_row(b, i0, h), s.q_stride(), queries, D, q_block, kTile);
          std::fill(acc, acc + kTile * D, 0.0f);
          std::fill(probs, probs + kTile * kTile, uint16_t{0});  // rows past `queries` stay 0
          std::fill(running_max, running_max + kTile, -INFINITY);
          std::fill(running_sum, running_sum + kTile, 0.0f);
          for (int64_t j0 = 0; j0 < key_end; j0 += kTile) {
            // S = Q K^T for keys j0 .. j0 + 63
            tile_gemm(scores, kTile, q_block, D, kt + bg * kt_size + j0, tk_pad, kTile, kTile, D, false);
            for (int64_t r = 0; r < queries; ++r) {
              const int64_t visible = std::min(s.key_offset() + i0 + r + 1, Tk) - j0;  // keys of this block it sees
              uint16_t* p_row = probs + r * kTile;
              if (visible <= 0) {
                std::fill(p_row, p_row + kTile, uint16_t{0});
                continue;
              }
              __m512 x[4];
              __mmask16 mask[4];
              float block_max = -INFINITY;
              for (int c = 0; c < 4; ++c) {
                mask[c] = lanes_below(visible - 16 * c);
                x[c] = _mm512_mul_ps(_mm512_loadu_ps(scores + r * kTile + 16 * c), scale_v);
                if (mask[c]) block_max = std::max(block_max, _mm512_mask_reduce_max_ps(mask[c], x[c]));
              }
              const float new_max = std::max(running_max[r], block_max);
              const float correction = std::exp(running_max[r] - new_max);  // 0 on the row's first block
              const __m512 shift = _mm512_set1_ps(new_max);
              __m512 total = _mm512_setzero_ps();
              for (int c = 0; c < 4; ++c) {
                const __m512 p = _mm512_maskz_mov_ps(mask[c], simd::exp(_mm512_sub_ps(x[c], shift)));
                total = _mm512_add_ps(total, p);
                simd::store_bf16(p_row + 16 * c, p);
              }
              running_sum[r] = running_sum[r] * correction + _mm512_reduce_add_ps(total);
              running_max[r] = new_max;
              if (correction != 1.0f) {
                float* acc_row = acc + r * D;
                const __m512 corr = _mm512_set1_ps(correction);
                for (int64_t d = 0; d < D; d += 16)
                  _mm512_storeu_ps(acc_row + d, _mm512_mul_ps(_mm512_loadu_ps(acc_row + d), corr));
              }
            }
            // O += P V
            tile_gemm(acc, D, probs, kTile, vv + bg * vv_size + (j0 / 2) * D, D, kTile, D, kTile, true);
          }
          for (int64_t r = 0; r < queries; ++r) {
            uint16_t* out_row = out + s.q_row(b, i0 + r, h);
            const __m512 inv_sum = _mm512_set1_ps(1.0f / running_sum[r]);
            for (int64_t d = 0; d < D; d += 16)
              simd::store_bf16(out_row + d, _mm512_mul_ps(_mm512_loadu_ps(acc + r * D + d), inv_sum));
            lse[s.lse_row(b, h) + i0 + r] = running_max[r] + std::log(running_sum[r]);
          }
        }
    _tile_release();
  }
}

void amx_attention_backward(void* dq, bool dq_bf16, void* dk, bool dk_bf16, void* dv, bool dv_bf16,
                            const uint16_t* dout, const uint16_t* out, const float* lse, const uint16_t* q,
                            const uint16_t* k, const uint16_t* v, const AttentionDims& dims, float scale) {
  const Layout s{dims};
  const int64_t D = dims.head_dim, Tq = dims.query_len, Tk = dims.key_len, G = s.group();
  const int64_t tq_pad = round_up(Tq, kTile), tk_pad = round_up(Tk, kTile);
  const int64_t per_head_words = D / 2 * tq_pad;  // each of qt, qv, dot, dov (32-bit words)
  const __m512 scale_v = _mm512_set1_ps(scale);
  // the lane index 0..15 of a 16-query chunk, for the causal mask
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
#pragma omp parallel
  {
    configure_tiles();
    static thread_local BackwardWork work;
    uint16_t* k_rows = work_array(work.k_rows, tk_pad * D);
    uint16_t* v_rows = work_array(work.v_rows, tk_pad * D);
    uint16_t* k_t = work_array(work.k_t, tk_pad * D);
    uint32_t* qt = work_array(work.qt, G * per_head_words);
    uint32_t* qv = work_array(work.qv, G * per_head_words);
    uint32_t* dot = work_array(work.dot, G * per_head_words);
    uint32_t* dov = work_array(work.dov, G * per_head_words);
    float* delta = work_array(work.delta, G * tq_pad);
    float* lse_h = work_array(work.lse_h, G * tq_pad);
    const int64_t dq_t_size = G * D * tq_pad;
    float* dq_t = work_array(work.dq_t, dq_t_size);
    float* st = work_array(work.st, kTile * kTile);
    float* dpt = work_array(work.dpt, kTile * kTile);
    float* dk_acc = work_array(work.dk_acc, kTile * D);
    float* dv_acc = work_array(work.dv_acc, kTile * D);
    float* dq_rows = work_array(work.dq_rows, tq_pad * D);
    uint16_t* pt = work_array(work.pt, kTile * kTile);
    uint16_t* dst = work_array(work.dst, kTile * kTile);
    uint32_t* dsv = work_array(work.dsv, kTile / 2 * kTile);
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < dims.batch; ++b)
      for (int64_t g = 0; g < dims.kv_heads; ++g) {
        copy_rows(k + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, k_rows, tk_pad);
        copy_rows(v + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, v_rows, tk_pad);
        transpose_bf16(k + s.kv_row(b, 0, g), s.kv_stride(), Tk, D, k_t, tk_pad);
        for (int64_t hg = 0; hg < G; ++hg) {
          const int64_t h = g * G + hg;
          const uint16_t* q_h = q + s.q_row(b, 0, h);
          const uint16_t* do_h = dout + s.q_row(b, 0, h);
          pack_pairs_over_columns(q_h, s.q_stride(), Tq, D, qt + hg * per_head_words, tq_pad);
          pack_pairs_over_rows(q_h, s.q_stride(), Tq, D, qv + hg * per_head_words, tq_pad);
          pack_pairs_over_columns(do_h, s.q_stride(), Tq, D, dot + hg * per_head_words, tq_pad);
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
          std::fill(dk_acc, dk_acc + kTile * D, 0.0f);
          std::fill(dv_acc, dv_acc + kTile * D, 0.0f);
          const int64_t first_query = std::max<int64_t>(0, j0 - s.key_offset()) / kTile * kTile;
          for (int64_t hg = 0; hg < G; ++hg) {
            const float* delta_h = delta + hg * tq_pad;
            const float* lse_row = lse_h + hg * tq_pad;
            for (int64_t i0 = first_query; i0 < Tq; i0 += kTile) {
              // S^T = K Q^T and dP^T = V dO^T for keys j0.., queries i0..
              tile_gemm(st, kTile, k_rows + j0 * D, D, qt + hg * per_head_words + i0, tq_pad, kTile, kTile, D, false);
              tile_gemm(dpt, kTile, v_rows + j0 * D, D, dot + hg * per_head_words + i0, tq_pad, kTile, kTile, D, false);
              __m512 lse_v[4], delta_v[4];
              for (int c = 0; c < 4; ++c) {
                lse_v[c] = _mm512_loadu_ps(lse_row + i0 + 16 * c);
                delta_v[c] = _mm512_loadu_ps(delta_h + i0 + 16 * c);
              }
              for (int64_t r = 0; r < kTile; r += 2) {
                __m512 ds_pair[2][4];
                for (int64_t rr = 0; rr < 2; ++rr) {
                  const int64_t row = r + rr, j = j0 + row;
                  for (int c = 0; c < 4; ++c) {
                    // query i = i0 + 16c + lane is visible to key j when key_offset + i >= j, i < Tq, j < Tk
                    const int64_t i_base = i0 + 16 * c;
                    __mmask16 mask = 0;
                    if (j < Tk) {
                      mask = lanes_below(Tq - i_base) &
                             _mm512_cmpge_epi32_mask(lane, _mm512_set1_epi32(static_cast<int>(j - s.key_offset() - i_base)));
                    }
                    const __m512 x = _mm512_fmsub_ps(_mm512_loadu_ps(st + row * kTile + 16 * c), scale_v, lse_v[c]);
                    const __m512 p = _mm512_maskz_mov_ps(mask, simd::exp(x));
                    const __m512 dp = _mm512_sub_ps(_mm512_loadu_ps(dpt + row * kTile + 16 * c), delta_v[c]);
                    const __m512 ds = _mm512_mul_ps(_mm512_mul_ps(p, dp), scale_v);
                    simd::store_bf16(pt + row * kTile + 16 * c, p);
                    simd::store_bf16(dst + row * kTile + 16 * c, ds);
                    ds_pair[rr][c] = ds;
                  }
                }
                // dS^T rows r and r+1 interleaved: the VNNI B operand of dQ^T += K^T dS
                for (int c = 0; c < 4; ++c) {
                  const __m512i lo = _mm512_cvtepu16_epi32(simd::round_to_bf16(ds_pair[0][c]));
                  const __m512i hi = _mm512_cvtepu16_epi32(simd::round_to_bf16(ds_pair[1][c]));
                  _mm512_storeu_si512(dsv + (r / 2) * kTile + 16 * c, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
                }
              }
              tile_gemm(dv_acc, D, pt, kTile, dov + hg * per_head_words + (i0 / 2) * D, D, kTile, D, kTile, true);
              tile_gemm(dk_acc, D, dst, kTile, qv + hg * per_head_words + (i0 / 2) * D, D, kTile, D, kTile, true);
              tile_gemm(dq_t + hg * D * tq_pad + i0, tq_pad, k_t + j0, tk_pad, dsv, kTile, D, kTile, kTile, true);
            }
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
          const float* dqt_h = dq_t + hg * D * tq_pad;
          transpose_32bit(dqt_h, tq_pad, D, Tq, dq_rows, D);
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
    _tile_release();
  }
}

#else

bool amx_attention_supported(int64_t) { return false; }

void amx_attention_forward(uint16_t*, float*, const uint16_t*, const uint16_t*, const uint16_t*, const AttentionDims&,
                           float) {
  fail("attention_forward: the AMX kernels are not built (needs -march=native on an AMX CPU)");
}

void amx_attention_backward(void*, bool, void*, bool, void*, bool, const uint16_t*, const uint16_t*, const float*,
                            const uint16_t*, const uint16_t*, const uint16_t*, const AttentionDims&, float) {
  fail("attention_backward: the AMX kernels are not built (needs -march=native on an AMX CPU)");
}

#endif

}  // namespace ct
