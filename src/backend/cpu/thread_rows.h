#pragma once
// The rows of a GEMM's C that the calling OpenMP thread computes: whole blocks of `block` rows, the
// blocks split as evenly as they go (thread t of T takes blocks [B t / T, B (t + 1) / T)). Each C
// element is then summed by one thread in one order, whatever the thread count.
#include <omp.h>

#include <cstdint>

namespace ct {

struct RowRange {
  int64_t begin, end;
};

// `rows` is a multiple of `block`.
inline RowRange this_threads_rows(int64_t rows, int64_t block) {
  const int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num(), blocks = rows / block;
  return {blocks * thread / threads * block, blocks * (thread + 1) / threads * block};
}

}  // namespace ct
