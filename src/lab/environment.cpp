#include "lab/environment.h"

#include <array>

extern char** environ;

namespace ct::lab {

namespace {

constexpr std::array<std::string_view, 24> kPrefixes = {
    "CLOCKTRAIN_", "OMP_",    "GOMP_",  "KMP_",     "OPENBLAS_", "GOTO_",  "MKL_",   "DNNL_",
    "ONEDNN_",     "CUDA_",   "CUBLAS_", "CUBLASLT_", "CUDNN_",  "NCCL_",  "NVIDIA_", "MALLOC_",
    "ASAN_",       "UBSAN_",  "LSAN_",  "TSAN_",    "MSAN_",     "XLA_",   "TORCH_", "PYTORCH_"};

constexpr std::array<std::string_view, 10> kDebugList = {
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_BIND_NOW", "GLIBC_TUNABLES", "MALLOC_CONF",
    "TCMALLOC_RELEASE_RATE", "JEMALLOC_OPTIONS", "TF_CPP_MIN_LOG_LEVEL", "CT_DEBUG", "DEBUG"};

// CLOCKTRAIN_LAB_* configures the lab (which ledger, which command), never the run.
constexpr std::string_view kLabPrefix = "CLOCKTRAIN_LAB_";

}  // namespace

bool affects_behaviour(std::string_view name) {
  if (name.starts_with(kLabPrefix)) return false;
  for (auto prefix : kPrefixes)
    if (name.starts_with(prefix)) return true;
  for (auto listed : kDebugList)
    if (name == listed) return true;
  return false;
}

std::map<std::string, std::string> capture_environment() {
  std::map<std::string, std::string> captured;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    auto equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view name = text.substr(0, equals);
    if (affects_behaviour(name)) captured.emplace(name, text.substr(equals + 1));
  }
  return captured;
}

}  // namespace ct::lab
