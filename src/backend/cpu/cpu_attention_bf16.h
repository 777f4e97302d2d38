#pragma once
// Causal attention on bf16 q, k, v with AMX tiles (the math is cpu_attention.cpp's; this file's
// .cpp describes the tiling). Used by the CPU backend when the model stores attention operands in
// bf16 and amx_attention_supported() holds; otherwise the backend runs the f32 kernels on f32 copies.
#include <cstdint>

namespace ct {

struct AttentionDims {
  int64_t batch, query_len, key_len, heads, kv_heads, head_dim;
};

// AMX is usable (amx.h) and head_dim is a multiple of 32 (one tile row of bf16).
bool amx_attention_supported(int64_t head_dim);

// q, out: [B, Tq, H, D] bf16; k, v: [B, Tk, Hkv, D] bf16; lse: [B, H, Tq] f32.
void amx_attention_forward(uint16_t* out, float* lse, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                           const AttentionDims& dims, float scale);

// Overwrites dq ([B, Tq, H, D]), dk and dv ([B, Tk, Hkv, D]), each f32 or bf16 as flagged.
void amx_attention_backward(void* dq, bool dq_bf16, void* dk, bool dk_bf16, void* dv, bool dv_bf16,
                            const uint16_t* dout, const uint16_t* out, const float* lse, const uint16_t* q,
                            const uint16_t* k, const uint16_t* v, const AttentionDims& dims, float scale);

}  // namespace ct
