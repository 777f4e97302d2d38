#include "backend/gemm_peak.h"

#include <algorithm>

#include "util/clock.h"
#include "util/error.h"

namespace ct {

namespace {

// Shape{rows, cols} once m, n and k are checked (a's shape: the first member built from them).
Shape checked_shape(int64_t rows, int64_t cols, int64_t m, int64_t n, int64_t k) {
  check(m > 0 && n > 0 && k > 0, "GemmRate: sizes must be positive, got m=", m, " n=", n, " k=", k);
  return Shape{rows, cols};
}

}  // namespace

GemmRate::GemmRate(Backend& backend, int64_t m, int64_t n, int64_t k, DType dtype, Clock clock)
    : backend_(backend),
      m_(m),
      n_(n),
      k_(k),
      clock_(clock ? clock : &monotonic_seconds),
      a_(backend, checked_shape(m, k, m, n, k), dtype),
      b_(backend, Shape{k, n}, dtype),
      c_(backend, Shape{m, n}, dtype == DType::bf16 ? DType::f32 : dtype) {
  backend.fill(a_, 0.5);
  backend.fill(b_, 0.25);
  backend.gemm(a_, b_, c_, false, false);  // warm-up, untimed
  backend.synchronize();
}

double GemmRate::flop() const {
  return 2.0 * static_cast<double>(m_) * static_cast<double>(n_) * static_cast<double>(k_);
}

double GemmRate::call() {
  const double start = clock_();
  backend_.gemm(a_, b_, c_, false, false);
  backend_.synchronize();
  const double seconds = std::max(clock_() - start, 1e-12);
  best_call_ = std::max(best_call_, flop() / seconds);
  return seconds;
}

double GemmRate::best_of(int repeats) {
  check(repeats > 0, "GemmRate::best_of: repeats must be positive, got ", repeats);
  double best = 1e300;
  for (int repeat = 0; repeat < repeats; ++repeat) best = std::min(best, call());
  return flop() / best;
}

double GemmRate::window(double seconds, int max_calls) {
  double timed = 0.0;
  int calls = 0;
  // At least 4 calls (one is too noisy a sample on a shared machine), unless they would pass 4x the
  // window: on a slow CPU (or under an emulator, ~100x slower) the startup probe stops after ~1 s.
  while ((timed < seconds || (calls < 4 && timed < 4 * seconds)) && calls < max_calls) {
    timed += call();
    ++calls;
  }
  return flop() * calls / timed;
}

int64_t matmul_ceiling_size(double first_look_seconds) {
  constexpr double ratio = static_cast<double>(kCeilingSize) * kCeilingSize * kCeilingSize /
                           (static_cast<double>(kCeilingFirstLookSize) * kCeilingFirstLookSize * kCeilingFirstLookSize);
  constexpr double slowest_full_call_seconds = 1.0;
  return ratio * first_look_seconds > slowest_full_call_seconds ? kCeilingFirstLookSize : kCeilingSize;
}

double measure_gemm_flops(Backend& backend, int64_t m, int64_t n, int64_t k, int repeats, DType dtype) {
  check(repeats > 0, "measure_gemm_flops: repeats must be positive, got ", repeats);
  return GemmRate(backend, m, n, k, dtype).best_of(repeats);
}

}  // namespace ct
