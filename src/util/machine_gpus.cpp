#include "util/machine_gpus.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <sstream>

#include "util/error.h"

namespace ct {

namespace {

// NVML's C API, the three calls used (nvml.h; nvmlReturn_t is an int enum, 0 = NVML_SUCCESS).
using NvmlInit = int (*)();
using NvmlDeviceGetCount = int (*)(unsigned int*);
using NvmlShutdown = int (*)();

// NVML's count, or -1 with `why` set.
int count_by_nvml(const std::string& library, std::string* why) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = ::dlerror();
    *why = str("no NVML (", error ? error : library + " did not load", ")");
    return -1;
  }
  const auto init = reinterpret_cast<NvmlInit>(::dlsym(handle, "nvmlInit_v2"));
  const auto get_count = reinterpret_cast<NvmlDeviceGetCount>(::dlsym(handle, "nvmlDeviceGetCount_v2"));
  const auto shutdown = reinterpret_cast<NvmlShutdown>(::dlsym(handle, "nvmlShutdown"));
  int count = -1;
  if (!init || !get_count || !shutdown) {
    *why = str("NVML (", library, ") lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or nvmlShutdown");
  } else if (const int status = init(); status != 0) {
    *why = str("NVML did not start (nvmlInit_v2 returned ", status, ")");
  } else {
    unsigned int n = 0;
    const int status_count = get_count(&n);
    if (status_count == 0)
      count = static_cast<int>(n);
    else
      *why = str("NVML did not count (nvmlDeviceGetCount_v2 returned ", status_count, ")");
    shutdown();
  }
  ::dlclose(handle);
  return count;
}

}  // namespace

int count_listed_gpus(const std::string& listing) {
  std::istringstream lines(listing);
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("GPU ", 0) != 0) continue;
    size_t at = 4;
    while (at < line.size() && std::isdigit(static_cast<unsigned char>(line[at]))) ++at;
    if (at > 4 && at < line.size() && line[at] == ':') ++count;
  }
  return count;
}

MachineGpus machine_gpus(const std::string& nvml_library) {
  MachineGpus gpus;
  std::string nvml_why;
  if (const int count = count_by_nvml(nvml_library, &nvml_why); count >= 0) {
    gpus.count = count;
    gpus.how = str("NVML: ", count, " GPU", count == 1 ? "" : "s");
    return gpus;
  }
  std::string listing;
  if (FILE* pipe = ::popen("nvidia-smi -L 2>/dev/null", "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe)) listing += buffer;
    ::pclose(pipe);
  }
  gpus.count = count_listed_gpus(listing);
  gpus.how = gpus.count > 0 ? str("nvidia-smi -L: ", gpus.count, " GPU", gpus.count == 1 ? "" : "s", "; ", nvml_why)
                            : str(nvml_why, ", and nvidia-smi -L listed no GPU");
  return gpus;
}

}  // namespace ct
