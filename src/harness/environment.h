#pragma once
// What a run's outcome may depend on besides the recipe: the environment variables that change
// behaviour (thread counts, BLAS and oneDNN settings, CUDA and NCCL, allocator and sanitizer
// flags, clocktrain's own), the binary (version, build flags) and the device. Recorded in
// result.json so that the lab can refuse to compare arms that differ in anything undeclared.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/result.h"

namespace ct {

// True for the names recorded: prefixes CLOCKTRAIN_ OMP_ KMP_ GOMP_ OPENBLAS_ MKL_ DNNL_ ONEDNN_
// CUDA_ NCCL_ CUBLAS_ CUBLASLT_ NVIDIA_ MALLOC_ TCMALLOC_, and the debug list
// (recorded_environment_names(): LD_PRELOAD, sanitizer options, glibc tunables, ..., and the launchers'
// rank layout: RANK, WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_NTASKS, ...; docs/lab.md).
bool affects_run(std::string_view name);

// The recorded prefixes and single names, for documentation and the lab.
const std::vector<std::string>& recorded_environment_prefixes();
const std::vector<std::string>& recorded_environment_names();

// The recorded variables of `entries` ("NAME=VALUE" strings, as in environ), sorted by name.
std::vector<std::pair<std::string, std::string>> capture_environment(const std::vector<std::string>& entries);
// The same, from this process's environment.
std::vector<std::pair<std::string, std::string>> capture_environment();

// This binary: kVersion and kBuildFlags.
BinaryInfo current_binary();

// The CPU as a device: "AMD EPYC; 2 of 2 cores; CPU level avx512_bf16 (avx2 fma avx512f ... -amx_tile
// -amx_bf16); 23.5 GiB" (the CPU's own level, util/cpu_info.h; the level a run used is in its
// matmul_precision_reason), backend "cpu", devices 1, threads = the thread count the run uses.
DeviceInfo describe_cpu_device(int64_t threads);

}  // namespace ct
