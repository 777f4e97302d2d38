#pragma once
// Which environment variables can change what a run does, and capturing them. A run records every
// such variable so that two arms can be compared whole (lab.md, step 2).
#include <map>
#include <string>
#include <string_view>

namespace ct::lab {

// True for variables that the program reads or that are known to change behaviour:
//  - prefixes CLOCKTRAIN_ (the program's own, except CLOCKTRAIN_LAB_ which configures the lab itself),
//    OMP_, GOMP_, KMP_ (OpenMP), OPENBLAS_, GOTO_ (OpenBLAS), MKL_, DNNL_, ONEDNN_ (oneDNN), CUDA_,
//    CUBLAS_, CUBLASLT_, CUDNN_, NCCL_, NVIDIA_ (CUDA stack), MALLOC_ (glibc allocator),
//    ASAN_, UBSAN_, LSAN_, TSAN_, MSAN_ (sanitizers), XLA_, TORCH_, PYTORCH_ (reference tools);
//  - the debug and loader list: LD_PRELOAD, LD_LIBRARY_PATH, LD_BIND_NOW, GLIBC_TUNABLES, MALLOC_CONF,
//    TCMALLOC_RELEASE_RATE, JEMALLOC_OPTIONS, TF_CPP_MIN_LOG_LEVEL, CT_DEBUG, DEBUG.
bool affects_behaviour(std::string_view name);

// The variables of this process for which affects_behaviour() holds, sorted by name.
std::map<std::string, std::string> capture_environment();

}  // namespace ct::lab
