#pragma once
// The NVIDIA GPUs of this machine as its driver lists them, for the gate's full_machine check
// (docs/harness.md): a process's own count (cudaGetDeviceCount) is narrowed by CUDA_VISIBLE_DEVICES,
// the driver's is not, so a run on 1 of a machine's 8 GPUs cannot pass as using the whole machine.
// NVML (libnvidia-ml.so.1, the driver's library, loaded at run time: a build or a machine without a
// driver needs nothing) counts them; where it does not load or answer, the lines of `nvidia-smi -L`.
#include <string>

namespace ct {

struct MachineGpus {
  int count = 0;    // 0: neither source answered
  std::string how;  // "NVML: 8 GPUs", "nvidia-smi -L: 8 GPUs", or why neither answered
};

// `nvml_library`: the library to load (tests name a missing one to take the nvidia-smi path).
MachineGpus machine_gpus(const std::string& nvml_library = "libnvidia-ml.so.1");

// The GPUs in `nvidia-smi -L`'s output: its lines that begin "GPU <n>:" (MIG instances, listed
// under their GPU with two spaces before "MIG", are not GPUs of their own).
int count_listed_gpus(const std::string& listing);

}  // namespace ct
