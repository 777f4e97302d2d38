#pragma once
// One thread pool for the whole program: OpenMP's. The BLAS library is linked in its OpenMP
// flavour or run single-threaded inside our parallel regions, so threads never oversubscribe.

#include <vector>

namespace ct {

// Number of cores this process may run on (sched_getaffinity), at least 1.
int available_cores();
// Their ids (the affinity mask's set bits), ascending: data-parallel processes on one machine
// count their union (harness/run_pipeline.cpp, the gate's full_machine check).
std::vector<int> available_core_ids();

// Sets the thread count for every parallel region that follows (0 = all available cores)
// and returns the count in effect.
int set_thread_count(int threads);

int thread_count();

}  // namespace ct
