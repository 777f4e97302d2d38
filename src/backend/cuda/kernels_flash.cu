// Causal attention on the tensor cores (FlashAttention-2 style, mma.sync m16n8k16 bf16 -> f32):
// no T x T matrix in memory, bf16 inputs and outputs, f32 softmax and accumulators, head_dim 64 or
// 128. Same shapes and math as the reference kernels (kernels_attention.cu, which these are tested
// against): q, out [B, Tq, H, D]; k, v [B, Tk, Hkv, D]; lse, delta [B, H, Tq]; query i at absolute
// position Tk - Tq + i sees keys 0 .. Tk - Tq + i; query head h reads kv head h / (H / Hkv).
//
// Fragments of mma.m16n8k16 (g = lane / 4, t = lane % 4), two bf16 per 32-bit register, the lower
// column in the lower half:
//   A 16x16: a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B 16x8 (k x n): b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g)
//   C 16x8 f32: c0, c1 = (g, 2t), (g, 2t+1); c2, c3 = (g+8, 2t), (g+8, 2t+1)
// so the C fragments of two adjacent 8-column tiles are, packed to bf16, the A fragment of one
// 16-column step: a product's output feeds the next product without leaving registers.
// ldmatrix.x4 loads four 8x8 tiles (lanes 8i..8i+7 give the row addresses of tile i); thread T gets
// (row T/4, cols 2(T%4)..+1) of each, or with .trans (rows 2(T%4)..+1, col T/4).
//
// Forward (one block = 64 queries of one (b, h), 4 warps x 16 queries): key/value tiles of 64 rows
// stream through shared memory (cp.async, two stages); S = Q K^T, online softmax in base 2
// (s2 = scale log2(e) q.k), O += P V; at the end out = O / l and lse = ln 2 (m + log2 l).
// Backward, deterministic (no atomics), in two kernels after delta = rowsum(dout * out):
//   dK/dV: one block = 64 keys of one (b, kv head), 4 warps x 16 keys; query tiles of 32 rows of
//          every query head of the group stream through shared memory:
//          P^T = exp2(s2^T - lse2), dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q
//   dQ:    one block = 64 queries, 4 warps x 16 queries; key tiles of 32 rows stream through:
//          P = exp2(s2 - lse2), dP = dO V^T, dS = P (dP - delta), dQ += dS K
// dK and dQ are multiplied by the scale once, at the end.
#include "backend/cuda/cuda_common.cuh"

namespace ct::cuda {

namespace {

using u32 = uint32_t;

constexpr int kPad = 8;  // bf16 per row of padding: a row stride of D + 8 spreads ldmatrix rows over the banks
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Dims {
  int64_t batch, query_len, key_len, heads, kv_heads;
};

__device__ __forceinline__ u32 smem_address(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared, asynchronously; zero-filled when !valid (src is then not read).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(smem)), "l"(gmem),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], const bf16* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], const bf16* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem)));
}

// d += a b  (16x16 bf16 times 16x8 bf16, f32 accumulators)
__device__ __forceinline__ void mma(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ u32 pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<u32*>(&v);
}

__device__ __forceinline__ u32 load_u32(const bf16* p) { return *reinterpret_cast<const u32*>(p); }

// The A fragment of the 16x16 block (rows row0.., cols col0..) of a row-major matrix in global
// memory (row r at base + r * stride); rows >= rows_valid read as zero.
__device__ __forceinline__ void load_a_fragment(u32 (&a)[4], const bf16* base, int64_t stride, int64_t row0,
                                                int64_t rows_valid, int col0, int g, int t) {
  const int64_t r0 = row0 + g, r1 = row0 + g + 8;
  a[0] = r0 < rows_valid ? load_u32(base + r0 * stride + col0 + 2 * t) : 0u;
  a[1] = r1 < rows_valid ? load_u32(base + r1 * stride + col0 + 2 * t) : 0u;
  a[2] = r0 < rows_valid ? load_u32(base + r0 * stride + col0 + 8 + 2 * t) : 0u;
  a[3] = r1 < rows_valid ? load_u32(base + r1 * stride + col0 + 8 + 2 * t) : 0u;
}

// Rows [row0, row0 + ROWS) of a row-major bf16 matrix (row r at base + r * stride, D columns)
// into a shared tile [ROWS][D + kPad]; rows >= rows_valid are zero. Every thread of the block takes part.
template <int ROWS, int D>
__device__ __forceinline__ void load_tile_async(bf16* tile, const bf16* base, int64_t stride, int64_t row0,
                                                int64_t rows_valid) {
  constexpr int kChunksPerRow = D / 8;  // 16-byte chunks
  for (int c = threadIdx.x; c < ROWS * kChunksPerRow; c += blockDim.x) {
    const int r = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
    const int64_t row = row0 + r;
    const bool valid = row < rows_valid;
    cp_async16(tile + r * (D + kPad) + col, base + (valid ? row : 0) * stride + col, valid);
  }
}

// Address for ldmatrix_x4 of the B fragments of two adjacent 8-column tiles n0, n0+1 of a product
// X Y^T where Y's rows sit in shared memory (row n of the tile = column n of the product), at
// k-step kk (columns kk*16 .. kk*16+15 of Y): tiles (n0, k lo), (n0, k hi), (n0+1, k lo), (n0+1, k hi).
template <int STRIDE>
__device__ __forceinline__ const bf16* b_rows_address(const bf16* tile, int n0, int kk, int lane) {
  return tile + ((n0 + lane / 16) * 8 + lane % 8) * STRIDE + kk * 16 + ((lane / 8) % 2) * 8;
}
// Address for ldmatrix_x4_trans of the B fragments of a product P Y where Y[k][n] sits in shared
// memory row-major (rows = the k dimension): k-step kk (rows kk*16..), column tiles n0, n0+1.
template <int STRIDE>
__device__ __forceinline__ const bf16* b_trans_address(const bf16* tile, int n0, int kk, int lane) {
  return tile + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * STRIDE + (n0 + lane / 16) * 8;
}
// Address for ldmatrix_x4 of the A fragment of rows row0..row0+15, k-step kk, of a shared tile.
template <int STRIDE>
__device__ __forceinline__ const bf16* a_rows_address(const bf16* tile, int row0, int kk, int lane) {
  return tile + (row0 + lane % 8 + ((lane / 8) % 2) * 8) * STRIDE + kk * 16 + (lane / 16) * 8;
}

// ---- forward -----------------------------------------------------------------------------------------

constexpr int kForwardQueries = 64, kForwardKeys = 64;

template <int D>
__global__ void __launch_bounds__(128) flash_forward_kernel(bf16* out, float* lse, const bf16* q, const bf16* k,
                                                            const bf16* v, Dims s, float scale_log2) {
  constexpr int kStride = D + kPad, kTile = kForwardKeys * kStride;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  bf16* k_tiles = reinterpret_cast<bf16*>(shared_raw);  // [2][64][kStride]
  bf16* v_tiles = k_tiles + 2 * kTile;                  // [2][64][kStride]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t q_tile = gridDim.x - 1 - blockIdx.x;  // the longest (last) query tiles start first
  const int64_t h = blockIdx.y, b = blockIdx.z, kv_head = h / (s.heads / s.kv_heads);
  const int64_t q_stride = s.heads * D, kv_stride = s.kv_heads * D;
  const bf16* q_base = q + (b * s.query_len * s.heads + h) * D;
  const bf16* k_base = k + (b * s.key_len * s.kv_heads + kv_head) * D;
  const bf16* v_base = v + (b * s.key_len * s.kv_heads + kv_head) * D;
  const int64_t key_offset = s.key_len - s.query_len;
  const int64_t row0 = q_tile * kForwardQueries + warp * 16;
  const int64_t last_query = min(q_tile * kForwardQueries + kForwardQueries - 1, s.query_len - 1);
  const int64_t key_end = min(s.key_len, key_offset + last_query + 1);
  const int key_tiles = static_cast<int>((key_end + kForwardKeys - 1) / kForwardKeys);

  load_tile_async<kForwardKeys, D>(k_tiles, k_base, kv_stride, 0, s.key_len);
  load_tile_async<kForwardKeys, D>(v_tiles, v_base, kv_stride, 0, s.key_len);
  cp_async_commit();

  u32 qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) load_a_fragment(qf[kk], q_base, q_stride, row0, s.query_len, kk * 16, g, t);
  float o[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int j = 0; j < key_tiles; ++j) {
    if (j + 1 < key_tiles) {
      const int stage = (j + 1) & 1;
      load_tile_async<kForwardKeys, D>(k_tiles + stage * kTile, k_base, kv_stride, (j + 1) * int64_t(kForwardKeys),
                                       s.key_len);
      load_tile_async<kForwardKeys, D>(v_tiles + stage * kTile, v_base, kv_stride, (j + 1) * int64_t(kForwardKeys),
                                       s.key_len);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const bf16* kt = k_tiles + (j & 1) * kTile;
    const bf16* vt = v_tiles + (j & 1) * kTile;

    // S = Q K^T for 16 queries x 64 keys (8 column tiles)
    float sc[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int nt = 0; nt < 8; nt += 2) {
        u32 bk[4];
        ldmatrix_x4(bk, b_rows_address<kStride>(kt, nt, kk, lane));
        mma(sc[nt], qf[kk], bk[0], bk[1]);
        mma(sc[nt + 1], qf[kk], bk[2], bk[3]);
      }

    // scale to base 2, mask (future keys, keys past the end), online softmax
    const int64_t key0 = int64_t(j) * kForwardKeys;
    const bool need_mask = key0 + kForwardKeys - 1 > key_offset + row0 || key0 + kForwardKeys > s.key_len;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = sc[nt][e] * scale_log2;
        if (need_mask) {
          const int64_t key = key0 + nt * 8 + 2 * t + (e & 1), query = row0 + g + (e >= 2 ? 8 : 0);
          if (key > key_offset + query || key >= s.key_len) x = -INFINITY;
        }
        sc[nt][e] = x;
      }
    float row_max[2] = {m[0], m[1]};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      row_max[0] = fmaxf(row_max[0], fmaxf(sc[nt][0], sc[nt][1]));
      row_max[1] = fmaxf(row_max[1], fmaxf(sc[nt][2], sc[nt][3]));
    }
    float correction[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_max[r] = fmaxf(row_max[r], __shfl_xor_sync(0xffffffffu, row_max[r], 1));
      row_max[r] = fmaxf(row_max[r], __shfl_xor_sync(0xffffffffu, row_max[r], 2));
      correction[r] = exp2f(m[r] - row_max[r]);  // 0 on the first tile (m = -inf; key 0 is always visible)
      m[r] = row_max[r];
    }
    float row_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      sc[nt][0] = exp2f(sc[nt][0] - m[0]);
      sc[nt][1] = exp2f(sc[nt][1] - m[0]);
      sc[nt][2] = exp2f(sc[nt][2] - m[1]);
      sc[nt][3] = exp2f(sc[nt][3] - m[1]);
      row_sum[0] += sc[nt][0] + sc[nt][1];
      row_sum[1] += sc[nt][2] + sc[nt][3];
    }
    // l keeps this thread's columns only; the four threads of a row are added at the end
    l[0] = l[0] * correction[0] + row_sum[0];
    l[1] = l[1] * correction[1] + row_sum[1];
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      o[dn][0] *= correction[0];
      o[dn][1] *= correction[0];
      o[dn][2] *= correction[1];
      o[dn][3] *= correction[1];
    }

    // O += P V  (4 k-steps of 16 keys)
#pragma unroll
    for (int kk = 0; kk < kForwardKeys / 16; ++kk) {
      const u32 pa[4] = {pack_bf16(sc[2 * kk][0], sc[2 * kk][1]), pack_bf16(sc[2 * kk][2], sc[2 * kk][3]),
                         pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                         pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 8; dn += 2) {
        u32 bv[4];
        ldmatrix_x4_trans(bv, b_trans_address<kStride>(vt, dn, kk, lane));
        mma(o[dn], pa, bv[0], bv[1]);
        mma(o[dn + 1], pa, bv[2], bv[3]);
      }
    }
    __syncthreads();  // this stage is refilled by the next iteration's prefetch
  }

  float inv_l[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    inv_l[r] = 1.0f / l[r];
  }
  bf16* out_base = out + (b * s.query_len * s.heads + h) * D;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + g + 8 * r;
    if (row >= s.query_len) continue;
    bf16* out_row = out_base + row * q_stride;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn)
      *reinterpret_cast<u32*>(out_row + dn * 8 + 2 * t) = pack_bf16(o[dn][2 * r] * inv_l[r], o[dn][2 * r + 1] * inv_l[r]);
    if (t == 0) lse[(b * s.heads + h) * s.query_len + row] = (m[r] + log2f(l[r])) * kLn2;
  }
}

// ---- backward: dK, dV ------------------------------------------------------------------------------

constexpr int kDkvKeys = 64, kDkvQueries = 32;

template <int D>
__global__ void __launch_bounds__(128)
    flash_backward_dkdv_kernel(bf16* dk, bf16* dv, const bf16* dout, const float* lse, const float* delta,
                               const bf16* q, const bf16* k, const bf16* v, Dims s, float scale, float scale_log2) {
  constexpr int kStride = D + kPad, kKeyTile = kDkvKeys * kStride, kQueryTile = kDkvQueries * kStride;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  bf16* k_tile = reinterpret_cast<bf16*>(shared_raw);  // [64][kStride]
  bf16* v_tile = k_tile + kKeyTile;                    // [64][kStride]
  bf16* q_tiles = v_tile + kKeyTile;                   // [2][32][kStride]
  bf16* do_tiles = q_tiles + 2 * kQueryTile;           // [2][32][kStride]
  float* lse_tiles = reinterpret_cast<float*>(do_tiles + 2 * kQueryTile);  // [2][32], in base 2
  float* delta_tiles = lse_tiles + 2 * kDkvQueries;                         // [2][32]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t key0 = blockIdx.x * int64_t(kDkvKeys), kv_head = blockIdx.y, b = blockIdx.z;
  const int64_t group = s.heads / s.kv_heads, key_offset = s.key_len - s.query_len;
  const int64_t q_stride = s.heads * D, kv_stride = s.kv_heads * D;
  const bf16* k_base = k + (b * s.key_len * s.kv_heads + kv_head) * D;
  const bf16* v_base = v + (b * s.key_len * s.kv_heads + kv_head) * D;
  const int64_t warp_key0 = key0 + warp * 16;

  // query tiles that see a key of this block: queries i >= key0 - key_offset
  const int64_t first_query = key0 - key_offset > 0 ? key0 - key_offset : 0;
  const int64_t first_tile = first_query / kDkvQueries;
  const int64_t tiles_per_head = (s.query_len + kDkvQueries - 1) / kDkvQueries - first_tile;
  const int64_t iterations = tiles_per_head > 0 ? tiles_per_head * group : 0;

  auto load_query_tile = [&](int64_t it, int stage) {
    const int64_t h = kv_head * group + it / tiles_per_head, q0 = (first_tile + it % tiles_per_head) * kDkvQueries;
    const int64_t head_offset = (b * s.query_len * s.heads + h) * D;
    load_tile_async<kDkvQueries, D>(q_tiles + stage * kQueryTile, q + head_offset, q_stride, q0, s.query_len);
    load_tile_async<kDkvQueries, D>(do_tiles + stage * kQueryTile, dout + head_offset, q_stride, q0, s.query_len);
    for (int i = threadIdx.x; i < kDkvQueries; i += blockDim.x) {
      const int64_t query = q0 + i;
      const int64_t index = (b * s.heads + h) * s.query_len + query;
      lse_tiles[stage * kDkvQueries + i] = query < s.query_len ? lse[index] * kLog2e : 0.0f;
      delta_tiles[stage * kDkvQueries + i] = query < s.query_len ? delta[index] : 0.0f;
    }
  };

  load_tile_async<kDkvKeys, D>(k_tile, k_base, kv_stride, key0, s.key_len);
  load_tile_async<kDkvKeys, D>(v_tile, v_base, kv_stride, key0, s.key_len);
  if (iterations > 0) load_query_tile(0, 0);
  cp_async_commit();

  float dk_acc[D / 8][4], dv_acc[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; ++dn)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk_acc[dn][e] = dv_acc[dn][e] = 0.0f;

  for (int64_t it = 0; it < iterations; ++it) {
    const int stage = static_cast<int>(it & 1);
    if (it + 1 < iterations) load_query_tile(it + 1, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const bf16* qt = q_tiles + stage * kQueryTile;
    const bf16* dot = do_tiles + stage * kQueryTile;
    const float* lse_t = lse_tiles + stage * kDkvQueries;
    const float* delta_t = delta_tiles + stage * kDkvQueries;
    const int64_t q0 = (first_tile + it % tiles_per_head) * kDkvQueries;

    // S^T = K Q^T: 16 keys x 32 queries (4 column tiles)
    float st[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) st[nt][0] = st[nt][1] = st[nt][2] = st[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      u32 ka[4];
      ldmatrix_x4(ka, a_rows_address<kStride>(k_tile, warp * 16, kk, lane));
#pragma unroll
      for (int nt = 0; nt < 4; nt += 2) {
        u32 bq[4];
        ldmatrix_x4(bq, b_rows_address<kStride>(qt, nt, kk, lane));
        mma(st[nt], ka, bq[0], bq[1]);
        mma(st[nt + 1], ka, bq[2], bq[3]);
      }
    }
    // P^T = exp2(s2 - lse2), 0 where the query does not see the key or does not exist
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int local_query = nt * 8 + 2 * t + (e & 1);
        const int64_t query = q0 + local_query, key = warp_key0 + g + (e >= 2 ? 8 : 0);
        const bool visible = query < s.query_len && key <= key_offset + query;
        st[nt][e] = visible ? exp2f(st[nt][e] * scale_log2 - lse_t[local_query]) : 0.0f;
      }
    // dV += P^T dO  (2 k-steps of 16 queries)
#pragma unroll
    for (int kk = 0; kk < kDkvQueries / 16; ++kk) {
      const u32 pa[4] = {pack_bf16(st[2 * kk][0], st[2 * kk][1]), pack_bf16(st[2 * kk][2], st[2 * kk][3]),
                         pack_bf16(st[2 * kk + 1][0], st[2 * kk + 1][1]),
                         pack_bf16(st[2 * kk + 1][2], st[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 8; dn += 2) {
        u32 bo[4];
        ldmatrix_x4_trans(bo, b_trans_address<kStride>(dot, dn, kk, lane));
        mma(dv_acc[dn], pa, bo[0], bo[1]);
        mma(dv_acc[dn + 1], pa, bo[2], bo[3]);
      }
    }
    // dP^T = V dO^T
    float dpt[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) dpt[nt][0] = dpt[nt][1] = dpt[nt][2] = dpt[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      u32 va[4];
      ldmatrix_x4(va, a_rows_address<kStride>(v_tile, warp * 16, kk, lane));
#pragma unroll
      for (int nt = 0; nt < 4; nt += 2) {
        u32 bo[4];
        ldmatrix_x4(bo, b_rows_address<kStride>(dot, nt, kk, lane));
        mma(dpt[nt], va, bo[0], bo[1]);
        mma(dpt[nt + 1], va, bo[2], bo[3]);
      }
    }
    // dS^T = P^T (dP^T - delta)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) dpt[nt][e] = st[nt][e] * (dpt[nt][e] - delta_t[nt * 8 + 2 * t + (e & 1)]);
    // dK += dS^T Q
#pragma unroll
    for (int kk = 0; kk < kDkvQueries / 16; ++kk) {
      const u32 da[4] = {pack_bf16(dpt[2 * kk][0], dpt[2 * kk][1]), pack_bf16(dpt[2 * kk][2], dpt[2 * kk][3]),
                         pack_bf16(dpt[2 * kk + 1][0], dpt[2 * kk + 1][1]),
                         pack_bf16(dpt[2 * kk + 1][2], dpt[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 8; dn += 2) {
        u32 bq[4];
        ldmatrix_x4_trans(bq, b_trans_address<kStride>(qt, dn, kk, lane));
        mma(dk_acc[dn], da, bq[0], bq[1]);
        mma(dk_acc[dn + 1], da, bq[2], bq[3]);
      }
    }
    __syncthreads();  // this stage is refilled by the next iteration's prefetch
  }
  cp_async_wait<0>();

  bf16* dk_base = dk + (b * s.key_len * s.kv_heads + kv_head) * D;
  bf16* dv_base = dv + (b * s.key_len * s.kv_heads + kv_head) * D;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t key = warp_key0 + g + 8 * r;
    if (key >= s.key_len) continue;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      *reinterpret_cast<u32*>(dk_base + key * kv_stride + dn * 8 + 2 * t) =
          pack_bf16(dk_acc[dn][2 * r] * scale, dk_acc[dn][2 * r + 1] * scale);
      *reinterpret_cast<u32*>(dv_base + key * kv_stride + dn * 8 + 2 * t) =
          pack_bf16(dv_acc[dn][2 * r], dv_acc[dn][2 * r + 1]);
    }
  }
}

// ---- backward: dQ ------------------------------------------------------------------------------------

constexpr int kDqQueries = 64, kDqKeys = 32;

template <int D>
__global__ void __launch_bounds__(128)
    flash_backward_dq_kernel(bf16* dq, const bf16* dout, const float* lse, const float* delta, const bf16* q,
                             const bf16* k, const bf16* v, Dims s, float scale, float scale_log2) {
  constexpr int kStride = D + kPad, kTile = kDqKeys * kStride;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  bf16* k_tiles = reinterpret_cast<bf16*>(shared_raw);  // [2][32][kStride]
  bf16* v_tiles = k_tiles + 2 * kTile;                  // [2][32][kStride]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t q_tile = gridDim.x - 1 - blockIdx.x;
  const int64_t h = blockIdx.y, b = blockIdx.z, kv_head = h / (s.heads / s.kv_heads);
  const int64_t q_stride = s.heads * D, kv_stride = s.kv_heads * D;
  const int64_t head_offset = (b * s.query_len * s.heads + h) * D;
  const bf16* k_base = k + (b * s.key_len * s.kv_heads + kv_head) * D;
  const bf16* v_base = v + (b * s.key_len * s.kv_heads + kv_head) * D;
  const int64_t key_offset = s.key_len - s.query_len;
  const int64_t row0 = q_tile * kDqQueries + warp * 16;
  const int64_t last_query = min(q_tile * kDqQueries + kDqQueries - 1, s.query_len - 1);
  const int64_t key_end = min(s.key_len, key_offset + last_query + 1);
  const int key_tiles = static_cast<int>((key_end + kDqKeys - 1) / kDqKeys);

  load_tile_async<kDqKeys, D>(k_tiles, k_base, kv_stride, 0, s.key_len);
  load_tile_async<kDqKeys, D>(v_tiles, v_base, kv_stride, 0, s.key_len);
  cp_async_commit();

  u32 qf[D / 16][4], dof[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    load_a_fragment(qf[kk], q + head_offset, q_stride, row0, s.query_len, kk * 16, g, t);
    load_a_fragment(dof[kk], dout + head_offset, q_stride, row0, s.query_len, kk * 16, g, t);
  }
  float lse2[2], delta_row[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + g + 8 * r;
    const int64_t index = (b * s.heads + h) * s.query_len + row;
    lse2[r] = row < s.query_len ? lse[index] * kLog2e : 0.0f;
    delta_row[r] = row < s.query_len ? delta[index] : 0.0f;
  }
  float dq_acc[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; ++dn) dq_acc[dn][0] = dq_acc[dn][1] = dq_acc[dn][2] = dq_acc[dn][3] = 0.0f;

  for (int j = 0; j < key_tiles; ++j) {
    if (j + 1 < key_tiles) {
      const int stage = (j + 1) & 1;
      load_tile_async<kDqKeys, D>(k_tiles + stage * kTile, k_base, kv_stride, (j + 1) * int64_t(kDqKeys), s.key_len);
      load_tile_async<kDqKeys, D>(v_tiles + stage * kTile, v_base, kv_stride, (j + 1) * int64_t(kDqKeys), s.key_len);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const bf16* kt = k_tiles + (j & 1) * kTile;
    const bf16* vt = v_tiles + (j & 1) * kTile;

    // S = Q K^T and dP = dO V^T: 16 queries x 32 keys (4 column tiles)
    float sc[4][4], dp[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) sc[nt][e] = dp[nt][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int nt = 0; nt < 4; nt += 2) {
        u32 bk[4], bv[4];
        ldmatrix_x4(bk, b_rows_address<kStride>(kt, nt, kk, lane));
        mma(sc[nt], qf[kk], bk[0], bk[1]);
        mma(sc[nt + 1], qf[kk], bk[2], bk[3]);
        ldmatrix_x4(bv, b_rows_address<kStride>(vt, nt, kk, lane));
        mma(dp[nt], dof[kk], bv[0], bv[1]);
        mma(dp[nt + 1], dof[kk], bv[2], bv[3]);
      }
    // dS = P (dP - delta) with P = exp2(s2 - lse2), 0 where masked
    const int64_t key0 = int64_t(j) * kDqKeys;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >= 2 ? 1 : 0;
        const int64_t key = key0 + nt * 8 + 2 * t + (e & 1), query = row0 + g + 8 * r;
        const bool visible = query < s.query_len && key <= key_offset + query && key < s.key_len;
        const float p = visible ? exp2f(sc[nt][e] * scale_log2 - lse2[r]) : 0.0f;
        sc[nt][e] = p * (dp[nt][e] - delta_row[r]);
      }
    // dQ += dS K  (2 k-steps of 16 keys)
#pragma unroll
    for (int kk = 0; kk < kDqKeys / 16; ++kk) {
      const u32 da[4] = {pack_bf16(sc[2 * kk][0], sc[2 * kk][1]), pack_bf16(sc[2 * kk][2], sc[2 * kk][3]),
                         pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                         pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 8; dn += 2) {
        u32 bk[4];
        ldmatrix_x4_trans(bk, b_trans_address<kStride>(kt, dn, kk, lane));
        mma(dq_acc[dn], da, bk[0], bk[1]);
        mma(dq_acc[dn + 1], da, bk[2], bk[3]);
      }
    }
    __syncthreads();
  }
  cp_async_wait<0>();

  bf16* dq_base = dq + head_offset;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + g + 8 * r;
    if (row >= s.query_len) continue;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn)
      *reinterpret_cast<u32*>(dq_base + row * q_stride + dn * 8 + 2 * t) =
          pack_bf16(dq_acc[dn][2 * r] * scale, dq_acc[dn][2 * r + 1] * scale);
  }
}

// ---- launchers -------------------------------------------------------------------------------------

template <int D>
constexpr int forward_shared_bytes() {
  return 2 * 2 * kForwardKeys * (D + kPad) * 2;
}
template <int D>
constexpr int dkdv_shared_bytes() {
  return 2 * kDkvKeys * (D + kPad) * 2 + 2 * 2 * kDkvQueries * (D + kPad) * 2 + 2 * 2 * kDkvQueries * 4;
}
template <int D>
constexpr int dq_shared_bytes() {
  return 2 * 2 * kDqKeys * (D + kPad) * 2;
}

// Raises a kernel's dynamic shared-memory limit once per process (above 48 KB it must be asked for).
template <typename Kernel>
void allow_shared_bytes(Kernel kernel, int bytes, bool& done) {
  if (done) return;
  CT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done = true;
}

Dims dims_of(const AttentionDims& d) { return {d.batch, d.query_len, d.key_len, d.heads, d.kv_heads}; }

template <int D>
void forward(void* out, float* lse, const void* q, const void* k, const void* v, const AttentionDims& dims,
             double scale, cudaStream_t stream) {
  static bool configured = false;
  allow_shared_bytes(flash_forward_kernel<D>, forward_shared_bytes<D>(), configured);
  const dim3 grid(static_cast<unsigned>((dims.query_len + kForwardQueries - 1) / kForwardQueries),
                  static_cast<unsigned>(dims.heads), static_cast<unsigned>(dims.batch));
  flash_forward_kernel<D><<<grid, 128, forward_shared_bytes<D>(), stream>>>(
      static_cast<bf16*>(out), lse, static_cast<const bf16*>(q), static_cast<const bf16*>(k),
      static_cast<const bf16*>(v), dims_of(dims), static_cast<float>(scale) * kLog2e);
  CT_CUDA_CHECK_LAUNCH("attention_forward_flash");
}

template <int D>
void backward(void* dq, void* dk, void* dv, const void* dout, const float* lse, const void* q, const void* k,
              const void* v, const AttentionDims& dims, double scale, const float* delta, cudaStream_t stream) {
  static bool dkdv_configured = false, dq_configured = false;
  allow_shared_bytes(flash_backward_dkdv_kernel<D>, dkdv_shared_bytes<D>(), dkdv_configured);
  allow_shared_bytes(flash_backward_dq_kernel<D>, dq_shared_bytes<D>(), dq_configured);
  const float scale_f = static_cast<float>(scale);
  const dim3 key_grid(static_cast<unsigned>((dims.key_len + kDkvKeys - 1) / kDkvKeys),
                      static_cast<unsigned>(dims.kv_heads), static_cast<unsigned>(dims.batch));
  flash_backward_dkdv_kernel<D><<<key_grid, 128, dkdv_shared_bytes<D>(), stream>>>(
      static_cast<bf16*>(dk), static_cast<bf16*>(dv), static_cast<const bf16*>(dout), lse, delta,
      static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v), dims_of(dims), scale_f,
      scale_f * kLog2e);
  CT_CUDA_CHECK_LAUNCH("attention_backward_flash_dkdv");
  const dim3 query_grid(static_cast<unsigned>((dims.query_len + kDqQueries - 1) / kDqQueries),
                        static_cast<unsigned>(dims.heads), static_cast<unsigned>(dims.batch));
  flash_backward_dq_kernel<D><<<query_grid, 128, dq_shared_bytes<D>(), stream>>>(
      static_cast<bf16*>(dq), static_cast<const bf16*>(dout), lse, delta, static_cast<const bf16*>(q),
      static_cast<const bf16*>(k), static_cast<const bf16*>(v), dims_of(dims), scale_f, scale_f * kLog2e);
  CT_CUDA_CHECK_LAUNCH("attention_backward_flash_dq");
}

}  // namespace

bool flash_attention_supports(DType dtype, int64_t head_dim) {
  return dtype == DType::bf16 && (head_dim == 64 || head_dim == 128);
}

void launch_attention_forward_flash(void* out, float* lse, const void* q, const void* k, const void* v,
                                    const AttentionDims& dims, double scale, cudaStream_t stream) {
  if (dims.batch * dims.heads * dims.query_len == 0) return;
  if (dims.head_dim == 64) {
    forward<64>(out, lse, q, k, v, dims, scale, stream);
  } else if (dims.head_dim == 128) {
    forward<128>(out, lse, q, k, v, dims, scale, stream);
  } else {
    fail("attention_forward_flash: head_dim ", dims.head_dim, " is not 64 or 128");
  }
}

void launch_attention_backward_flash(void* dq, void* dk, void* dv, const void* dout, const void* out,
                                     const float* lse, const void* q, const void* k, const void* v,
                                     const AttentionDims& dims, double scale, float* delta, cudaStream_t stream) {
  if (dims.batch * dims.heads == 0) return;
  launch_attention_delta(delta, dout, out, DType::bf16, dims, stream);
  if (dims.head_dim == 64) {
    backward<64>(dq, dk, dv, dout, lse, q, k, v, dims, scale, delta, stream);
  } else if (dims.head_dim == 128) {
    backward<128>(dq, dk, dv, dout, lse, q, k, v, dims, scale, delta, stream);
  } else {
    fail("attention_backward_flash: head_dim ", dims.head_dim, " is not 64 or 128");
  }
}

}  // namespace ct::cuda
