#pragma once
// Measures a backend's matmul speed, the ceiling that model FLOP/s is divided by (MFU).
#include <cstdint>

#include "backend/backend.h"

namespace ct {

// FLOP/s of c[m,n] = a[m,k] b[k,n] on `backend` in `dtype` (f32, or bf16 where the backend takes
// it): one warm-up call, then the best of `repeats` timed calls, each closed by synchronize().
// 2 m n k FLOP per call.
double measure_gemm_flops(Backend& backend, int64_t m, int64_t n, int64_t k, int repeats, DType dtype = DType::f32);

}  // namespace ct
