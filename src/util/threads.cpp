#include "util/threads.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "util/error.h"

namespace ct {

std::vector<int> available_core_ids() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) ids.push_back(cpu);
  return ids;
}

int available_cores() { return std::max(1, static_cast<int>(available_core_ids().size())); }

int max_thread_count() { return 4 * std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))); }

void check_thread_count(int threads, const std::string& where) {
  check(threads >= 0 && threads <= max_thread_count(), where, ": ", threads, " threads: expected 0 (every core) to ",
        max_thread_count(), " (4 x the ", max_thread_count() / 4, " CPUs online)");
}

int set_thread_count(int threads) {
  check_thread_count(threads, "threads");
  int n = threads > 0 ? threads : available_cores();
  omp_set_num_threads(n);
  return n;
}

int thread_count() { return omp_get_max_threads(); }

}  // namespace ct
