#include "util/threads.h"

#include <omp.h>
#include <sched.h>

namespace ct {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

std::vector<int> available_core_ids() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) ids.push_back(cpu);
  return ids;
}

int set_thread_count(int threads) {
  int n = threads > 0 ? threads : available_cores();
  omp_set_num_threads(n);
  return n;
}

int thread_count() { return omp_get_max_threads(); }

}  // namespace ct
