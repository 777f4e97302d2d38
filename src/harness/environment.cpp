#include "harness/environment.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "clocktrain_version.h"
#include "util/cpu_info.h"
#include "util/error.h"
#include "util/threads.h"

extern char** environ;

namespace ct {

const std::vector<std::string>& recorded_environment_prefixes() {
  static const std::vector<std::string> prefixes = {
      "CLOCKTRAIN_", "OMP_", "KMP_", "GOMP_", "OPENBLAS_", "MKL_", "DNNL_", "ONEDNN_", "CUDA_",
      "NCCL_", "CUBLAS_", "CUBLASLT_", "NVIDIA_", "MALLOC_", "TCMALLOC_"};
  return prefixes;
}

const std::vector<std::string>& recorded_environment_names() {
  // Debug and loader settings that change speed or numerics without touching the recipe.
  // The launchers' layout of ranks (torchrun / torch.distributed, Open MPI, PMI, Slurm): which rank this
  // is, how many there are and where rank 0 listens. Not their per-job identifiers (job ids, ports of
  // internal daemons), which differ on every launch without changing what runs.
  static const std::vector<std::string> names = {
      "LD_PRELOAD", "LD_LIBRARY_PATH", "GLIBC_TUNABLES", "MALLOC_CONF", "GOTO_NUM_THREADS",
      "BLIS_NUM_THREADS", "BLIS_ARCH_TYPE", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
      "MSAN_OPTIONS",
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "MASTER_ADDR",
      "TORCHELASTIC_USE_AGENT_STORE",
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
      "OMPI_COMM_WORLD_NODE_RANK", "OMPI_UNIVERSE_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
      "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NNODES", "SLURM_NODEID", "SLURM_CPUS_PER_TASK",
      "SLURM_GPUS_ON_NODE"};
  return names;
}

bool affects_run(std::string_view name) {
  for (const auto& p : recorded_environment_prefixes())
    if (name.size() > p.size() && name.substr(0, p.size()) == p) return true;
  const auto& names = recorded_environment_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<std::pair<std::string, std::string>> capture_environment(const std::vector<std::string>& entries) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  for (const auto& entry : entries) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = entry.substr(0, eq);
    // getenv() returns the first of duplicated names; record that one.
    if (affects_run(name) && seen.insert(name).second) out.emplace_back(name, entry.substr(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::string, std::string>> capture_environment() {
  std::vector<std::string> entries;
  for (char** e = environ; e && *e; ++e) entries.emplace_back(*e);
  return capture_environment(entries);
}

BinaryInfo current_binary() { return {kVersion, kBuildFlags}; }

namespace {

double memory_gib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kib;
      break;
    }
    in.ignore(1 << 20, '\n');
  }
  return kib / (1024.0 * 1024.0);
}

}  // namespace

DeviceInfo describe_cpu_device(int64_t threads) {
  DeviceInfo d;
  d.backend = "cpu";
  d.devices = 1;
  d.threads = threads;
  long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::ostringstream desc;
  const CpuInfo& cpu = cpu_info();
  desc << cpu.model_name << "; " << available_cores() << " of " << online << " cores; CPU level "
       << cpu_level_name(cpu.level) << " (" << cpu.flag_summary() << ")";
  double gib = memory_gib();
  if (gib > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", gib);
    desc << "; " << buf;
  }
  d.description = desc.str();
  return d;
}

}  // namespace ct
