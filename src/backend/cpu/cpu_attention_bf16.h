#pragma once
// Causal attention on bf16 q, k, v (the math is cpu_attention.cpp's; this file's .cpp describes the
// tiling), on AMX tiles or AVX512-BF16 dot products. Used by the CPU backend when the model stores
// attention operands in bf16 and bf16_attention_supported() holds; otherwise the backend runs the f32
// kernels on f32 copies.
#include <cstdint>
#include <string>

#include "backend/cpu/attention_layout.h"

namespace ct {

// The build has the kernels (AVX512-BF16, which every AMX CPU also has), the CPU level in use is
// avx512_bf16 or above (cpu_level.h), head_dim is a multiple of 32 (one tile row of bf16) and
// CLOCKTRAIN_CPU_BF16_ATTENTION is not "0" (which sends bf16 attention to the f32 kernels, for
// comparisons).
bool bf16_attention_supported(int64_t head_dim);

// What the kernels' products run on, in words: "AMX tiles" or "AVX512-BF16 dot products".
std::string bf16_attention_engine();

// q, out: [B, Tq, H, D] bf16; k, v: [B, Tk, Hkv, D] bf16; lse: [B, H, Tq] f32.
void bf16_attention_forward(uint16_t* out, float* lse, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                            const AttentionDims& dims, float scale);

// Overwrites dq ([B, Tq, H, D]), dk and dv ([B, Tk, Hkv, D]), each f32 or bf16 as flagged.
void bf16_attention_backward(void* dq, bool dq_bf16, void* dk, bool dk_bf16, void* dv, bool dv_bf16,
                             const uint16_t* dout, const uint16_t* out, const float* lse, const uint16_t* q,
                             const uint16_t* k, const uint16_t* v, const AttentionDims& dims, float scale);

}  // namespace ct
