#pragma once
// The fused softcapped cross-entropy on f32 or bf16 logits on AVX2 FMA or AVX-512 vectors
// (cpu_cross_entropy.cpp has the math and the portable version).
#include <cstdint>

namespace ct {

// The fast path shifts exponentials by the cap (see cpu_cross_entropy.cpp): exp(z - cap) >= e^-2cap
// must stay a normal f32, which holds for caps up to ~40; larger caps take the portable path.
inline constexpr double kFastCrossEntropyMaxCap = 40.0;

// The lanes the SIMD kernel runs on: 16 where the build has AVX-512 and the CPU level in use is
// avx512 or above, 8 where the build has AVX2 and FMA (-march=native) and the level is avx2 or above,
// 0 below that or when CLOCKTRAIN_CPU_FAST_CROSS_ENTROPY is "0" (read once: the portable kernels
// then, for comparisons).
int fast_cross_entropy_lanes();
inline bool fast_cross_entropy_available() { return fast_cross_entropy_lanes() > 0; }

// losses[n], argmax[n] (when argmax is not null; dlogits is null then) and dlogits (when not null:
// f32, or bf16 when dlogits_bf16) of `rows` rows of `vocab` logits (f32, or bf16 when logits_bf16),
// cap > 0. dlogits may alias logits when both have the same dtype.
void fast_softcap_cross_entropy(float* losses, int32_t* argmax, void* dlogits, bool dlogits_bf16, const void* logits,
                                bool logits_bf16, const int32_t* targets, int64_t rows, int64_t vocab, float cap,
                                float loss_scale);

}  // namespace ct
