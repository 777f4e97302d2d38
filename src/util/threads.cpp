#include "util/threads.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "util/error.h"
#include "util/text_format.h"

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

int count_cpu_list(const std::string& list) {
  int count = 0;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string range = list.substr(at, end - at);
    at = end + 1;
    if (range.empty()) continue;
    const size_t dash = range.find('-');
    try {
      size_t used = 0;
      const int first = std::stoi(range.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? range.size() : dash)) return 0;
      const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1), &used);
      if (dash != std::string::npos && used != range.size() - dash - 1) return 0;
      if (first < 0 || last < first) return 0;
      count += last - first + 1;
    } catch (const std::exception&) {
      return 0;
    }
  }
  return count;
}

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// This process's cgroup paths: "" for cgroup v2's unified hierarchy ("0::/path"), else the v1
// controller's name ("cpuset", "cpu") mapped to its path.
std::map<std::string, std::string> cgroup_paths(const std::string& root) {
  std::map<std::string, std::string> paths;
  std::ifstream in(root + "/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) paths[""] = path;
    size_t at = 0;
    while (at <= controllers.size() && !controllers.empty()) {
      size_t end = controllers.find(',', at);
      if (end == std::string::npos) end = controllers.size();
      paths[controllers.substr(at, end - at)] = path;
      at = end + 1;
    }
  }
  return paths;
}

}  // namespace

MachineCpus machine_cpus(const std::string& root) {
  MachineCpus m;
  const std::string online = first_line(root + "/sys/devices/system/cpu/online");
  m.count = count_cpu_list(online);
  m.how = str(m.count, " CPUs online");
  if (m.count == 0) {
    m.count = std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
    m.how = str(m.count, " CPUs online (sysconf)");
  }
  const auto paths = cgroup_paths(root);
  const auto path_of = [&](const std::string& controller) -> std::string {
    const auto it = paths.find(controller);
    return it == paths.end() ? std::string() : it->second;
  };
  // The container's cpuset (v2, then v1): what it was given, which taskset cannot change.
  std::string cpuset;
  if (paths.count("")) cpuset = first_line(root + "/sys/fs/cgroup" + path_of("") + "/cpuset.cpus.effective");
  if (cpuset.empty() && paths.count("cpuset"))
    cpuset = first_line(root + "/sys/fs/cgroup/cpuset" + path_of("cpuset") + "/cpuset.effective_cpus");
  if (const int n = count_cpu_list(cpuset); n > 0 && n < m.count) {
    m.count = n;
    m.how = "cgroup cpuset " + cpuset;
  }
  // The CPU quota (v2 "quota period" or "max"; v1 cfs_quota_us, -1 for none), rounded up.
  double quota = -1, period = 0;
  if (paths.count("")) {
    std::istringstream max(first_line(root + "/sys/fs/cgroup" + path_of("") + "/cpu.max"));
    std::string q;
    if (max >> q >> period && q != "max") quota = std::atof(q.c_str());
  }
  if (quota < 0 && paths.count("cpu")) {
    const std::string dir = root + "/sys/fs/cgroup/cpu" + path_of("cpu");
    const std::string q = first_line(dir + "/cpu.cfs_quota_us"), p = first_line(dir + "/cpu.cfs_period_us");
    if (!q.empty() && !p.empty()) quota = std::atof(q.c_str()), period = std::atof(p.c_str());
  }
  if (quota > 0 && period > 0) {
    const int n = std::max(1, static_cast<int>(std::ceil(quota / period - 1e-9)));
    if (n < m.count) {
      m.count = n;
      m.how = str("cgroup quota ", format_fixed(quota / period, 2), " CPUs");
    }
  }
  return m;
}

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
