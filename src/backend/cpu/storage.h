#pragma once
// Storage types of the CPU kernels. A kernel computes in T (float or double) and reads or writes each
// tensor in its own storage type S: float, double, or uint16_t holding bf16 bits. Loads widen bf16
// exactly; stores round to nearest even (bf16.h). The f64 path stores everything in double; the f32
// path stores each tensor that the op documents as "f32 or bf16" in either (mixed precision: bf16
// where a tensor feeds a matmul, f32 where precision matters).
#include <cstdint>
#include <type_traits>

#include "backend/cpu/bf16.h"
#include "backend/tensor.h"

namespace ct {

using bf16_bits = uint16_t;  // a bf16 value as stored

template <typename T, typename S>
inline T load_as(const S* p, int64_t i) {
  if constexpr (std::is_same_v<S, bf16_bits>) {
    return static_cast<T>(bf16_to_float(p[i]));
  } else {
    return static_cast<T>(p[i]);
  }
}

template <typename S, typename T>
inline void store_as(S* p, int64_t i, T value) {
  if constexpr (std::is_same_v<S, bf16_bits>) {
    p[i] = float_to_bf16(static_cast<float>(value));
  } else {
    p[i] = static_cast<S>(value);
  }
}

// Calls fn(float{}) for f32 storage and fn(bf16_bits{}) for bf16 storage (the f32 compute path).
template <typename Fn>
void with_f32_storage(DType dtype, Fn&& fn) {
  if (dtype == DType::bf16) {
    fn(bf16_bits{});
  } else {
    fn(float{});
  }
}

}  // namespace ct
