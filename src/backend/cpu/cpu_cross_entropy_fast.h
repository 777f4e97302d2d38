#pragma once
// The fused softcapped cross-entropy on f32 or bf16 logits with AVX-512 (cpu_cross_entropy.cpp has the math
// and the portable version).
#include <cstdint>

namespace ct {

// The fast path shifts exponentials by the cap (see cpu_cross_entropy.cpp): exp(z - cap) >= e^-2cap
// must stay a normal f32, which holds for caps up to ~40; larger caps take the portable path.
inline constexpr double kFastCrossEntropyMaxCap = 40.0;

bool fast_cross_entropy_available();  // built with AVX-512, and the CPU level in use is avx512 or above

// losses[n], argmax[n] (when argmax is not null) and dlogits (when not null: f32, or bf16 when
// dlogits_bf16) of `rows` rows of `vocab` logits (f32, or bf16 when logits_bf16), cap > 0. dlogits
// may alias logits when both have the same dtype.
void fast_softcap_cross_entropy(float* losses, int32_t* argmax, void* dlogits, bool dlogits_bf16, const void* logits,
                                bool logits_bf16, const int32_t* targets, int64_t rows, int64_t vocab, float cap,
                                float loss_scale);

}  // namespace ct
