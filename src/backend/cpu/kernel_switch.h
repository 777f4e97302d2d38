#pragma once
// The CPU kernels' off switches: an environment variable set to "0" sends work to the other path
// (CLOCKTRAIN_CPU_AMX, CLOCKTRAIN_CPU_AMX_GEMM, CLOCKTRAIN_CPU_DOT_GEMM, CLOCKTRAIN_CPU_BF16_ATTENTION,
// CLOCKTRAIN_CPU_F32_ATTENTION, CLOCKTRAIN_CPU_FAST_CROSS_ENTROPY; docs/train.md), for comparisons.
// Callers read it once and keep the answer for the process (CLOCKTRAIN_CPU_F32_ATTENTION: for the
// backend made then).
#include <cstdlib>
#include <cstring>

namespace ct {

// Whether the environment variable `name` is "0".
inline bool switched_off(const char* name) {
  const char* value = std::getenv(name);
  return value && std::strcmp(value, "0") == 0;
}

}  // namespace ct
