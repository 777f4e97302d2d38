#pragma once
// Measures a backend's matmul speed: the CPU backend's matmul_ceiling_flops() (shown beside MFU)
// and the benches' GEMM rates.
#include <climits>
#include <cstdint>

#include "backend/backend.h"

namespace ct {

// Times c[m,n] = a[m,k] b[k,n] on `backend` with operands in `dtype` (f32, or bf16 where the
// backend takes it; bf16 products accumulate into an f32 c). Each call is closed by synchronize()
// and counts 2 m n k FLOP. The constructor makes one untimed warm-up call (library set-up, page
// faults). `clock` returns seconds: the monotonic wall clock by default; a caller timing its own
// work on another clock (a process's CPU time) passes the same one, so that the two rates compare.
class GemmRate {
 public:
  using Clock = double (*)();
  GemmRate(Backend& backend, int64_t m, int64_t n, int64_t k, DType dtype, Clock clock = nullptr);

  // The fastest of `repeats` calls, in FLOP/s.
  double best_of(int repeats);
  // Calls back to back until `seconds` have passed (at least 4 calls unless they pass 4 x seconds, at
  // most max_calls): their total FLOP over their total time. The fastest single call joins best_call().
  double window(double seconds, int max_calls = INT_MAX);
  // The fastest single call timed so far (best_of and window), in FLOP/s; 0 before any.
  double best_call() const { return best_call_; }

 private:
  double flop() const;
  double call();  // seconds of one timed call

  Backend& backend_;
  int64_t m_, n_, k_;
  Clock clock_;
  Buffer a_, b_, c_;
  double best_call_ = 0.0;
};

// The side of the square product whose rate is a CPU backend's matmul ceiling: kCeilingSize, unless one
// call of the first look (kCeilingFirstLookSize^3, 27x fewer FLOP) took `first_look_seconds` long
// enough that a full-size call would pass a second (under 7 GFLOP/s: an emulator such as the test
// command's QEMU, where a 1536^3 f32 call took ~25 s on the Zen 4 host); then the first look's own size.
inline constexpr int64_t kCeilingSize = 1536, kCeilingFirstLookSize = 512;
int64_t matmul_ceiling_size(double first_look_seconds);

// GemmRate(backend, m, n, k, dtype).best_of(repeats).
double measure_gemm_flops(Backend& backend, int64_t m, int64_t n, int64_t k, int repeats, DType dtype = DType::f32);

}  // namespace ct
