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

// The CPUs the machine was given, whatever this process's affinity (taskset, mpirun's binding): the
// CPUs online, or the container's own cpuset where its cgroup has one, capped by the cgroup's CPU
// quota rounded up; `how` says which it saw ("2 CPUs online", "cgroup cpuset 0-3", "cgroup quota 1.5
// CPUs"). Logical CPUs, as the thread default counts them (one thread per CPU it may run on).
// `root` is the file system root (tests give a made-up /proc and /sys).
struct MachineCpus {
  int count = 1;
  std::string how;
};
MachineCpus machine_cpus(const std::string& root = "/");
// How many CPUs a list such as "0-3,8,10-11" names (sysfs and cgroup format); 0 for an empty or
// malformed list.
int count_cpu_list(const std::string& list);

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
