#pragma once
// Causal attention on f32 q, k, v with the products on register blocks (f32_tile_gemm.h: AVX2 FMA, or
// AVX-512 at that level): the math is cpu_attention.cpp's, this file's .cpp describes the tiling. The
// CPU backend runs f32 attention here where the build has the kernels (f32_attention_built()) unless
// CLOCKTRAIN_CPU_F32_ATTENTION=0 (cpu_attention.cpp).
#include "backend/cpu/attention_layout.h"

namespace ct {

// The build targets AVX2 and FMA (CLOCKTRAIN_F32_TILES).
bool f32_attention_built();
// The products run on AVX-512 blocks (the build has AVX-512 and the CPU level is avx512 or above).
bool f32_tiles_on_avx512();

// q, out: [B, Tq, H, D]; k, v: [B, Tk, Hkv, D]; lse: [B, H, Tq].
void f32_attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                           const AttentionDims& dims, float scale);

// Overwrites dq ([B, Tq, H, D]), dk and dv ([B, Tk, Hkv, D]).
void f32_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                            const float* q, const float* k, const float* v, const AttentionDims& dims, float scale);

}  // namespace ct
