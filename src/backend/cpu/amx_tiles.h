#pragma once
// What the AMX kernels (attention, GEMM) share: the tile configuration and the 2 x 2 block of C
// tiles. The operand packings they read are vnni_pack.h's.
//
// AMX multiplies C[16 x 16] (f32) += A[16 x 32] (bf16, row-major) B[32 x 16] (bf16), where B must be
// in "VNNI" layout: row p of the tile holds, for each of the 16 columns n, the pair
// (B[2p][n], B[2p+1][n]) as one 32-bit word.
//
// Compiled only where the build has the AMX intrinsics (CLOCKTRAIN_AMX_TILES); whether this process
// may use them is amx_usable() (amx.h).
#include "backend/cpu/simd_math.h"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(CLOCKTRAIN_SIMD_AVX512)
#define CLOCKTRAIN_AMX_TILES 1
#include <immintrin.h>

#include <cstdint>

namespace ct::amx {

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Every tile register: 16 rows of 64 bytes (16 f32 or 32 bf16). Once per thread and kernel call (other
// code, oneDNN's kernels among it, configures the tiles its own way in between).
inline void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
}

// The 2 x 2 block of C tiles: tiles 0 and 1 hold C's rows [0, 16) (columns [0, 16) and [16, 32)),
// tiles 2 and 3 its rows [16, 32); tiles 4-7 are the operands' scratch.
inline void zero_block() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

inline void load_block(const float* c, int64_t ldc) {
  _tile_loadd(0, c, ldc * 4);
  _tile_loadd(1, c + 16, ldc * 4);
  _tile_loadd(2, c + 16 * ldc, ldc * 4);
  _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);
}

inline void store_block(float* c, int64_t ldc) {
  _tile_stored(0, c, ldc * 4);
  _tile_stored(1, c + 16, ldc * 4);
  _tile_stored(2, c + 16 * ldc, ldc * 4);
  _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
}

// The block's tiles += A[32 x K] B[K x 32] (K a multiple of 32): A bf16 row-major (row stride lda
// elements); B's columns [0, 16) and [16, 32) in VNNI layout at b0 and b1, [K/2 x 16] words each with
// a stride of ldb words between rows of pairs.
inline void accumulate_block(const uint16_t* a, int64_t lda, const uint32_t* b0, const uint32_t* b1, int64_t ldb,
                             int64_t k) {
  for (int64_t kk = 0; kk < k; kk += 32) {
    _tile_loadd(4, a + kk, lda * 2);
    _tile_loadd(6, b0 + kk / 2 * ldb, ldb * 4);
    _tile_loadd(5, a + 16 * lda + kk, lda * 2);
    _tile_loadd(7, b1 + kk / 2 * ldb, ldb * 4);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
}

}  // namespace ct::amx

#endif
