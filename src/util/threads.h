#pragma once
// One thread pool for the whole program: OpenMP's. The BLAS library is linked in its OpenMP
// flavour or run single-threaded inside our parallel regions, so threads never oversubscribe.

#include <string>
#include <vector>

namespace ct {

// Number of cores this process may run on (sched_getaffinity), at least 1.
int available_cores();
// Their ids (the affinity mask's set bits), ascending: data-parallel processes on one machine
// count their union (harness/run_pipeline.cpp, the gate's full_machine check).
std::vector<int> available_core_ids();

// The most threads a process may ask for: 4 x the CPUs online (more only adds switching, and
// libgomp fails to start tens of thousands: a segfault at 65536). Thread counts outside
// [0, max_thread_count()] are refused by check_thread_count, naming `where`.
int max_thread_count();
void check_thread_count(int threads, const std::string& where);

// Sets the thread count for every parallel region that follows (0 = all available cores)
// and returns the count in effect; an error outside [0, max_thread_count()].
int set_thread_count(int threads);

int thread_count();

}  // namespace ct
