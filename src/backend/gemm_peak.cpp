#include "backend/gemm_peak.h"

#include <algorithm>
#include <chrono>

#include "util/error.h"

namespace ct {

double measure_gemm_flops(Backend& backend, int64_t m, int64_t n, int64_t k, int repeats, DType dtype) {
  check(m > 0 && n > 0 && k > 0 && repeats > 0, "measure_gemm_flops: sizes and repeats must be positive, got m=", m,
        " n=", n, " k=", k, " repeats=", repeats);
  DType out_dtype = dtype == DType::bf16 ? DType::f32 : dtype;  // bf16 GEMMs accumulate into f32
  Buffer a(backend, Shape{m, k}, dtype), b(backend, Shape{k, n}, dtype), c(backend, Shape{m, n}, out_dtype);
  backend.fill(a, 0.5);
  backend.fill(b, 0.25);
  backend.gemm(a, b, c, false, false);  // warm-up: library initialisation, page faults
  backend.synchronize();
  double best_seconds = 1e300;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    backend.gemm(a, b, c, false, false);
    backend.synchronize();
    best_seconds = std::min(best_seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / best_seconds;
}

}  // namespace ct
