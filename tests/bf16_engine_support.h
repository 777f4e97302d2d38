#pragma once
// bf16 matmul paths need a bf16 engine (AVX512-BF16 or AMX-BF16) at the CPU level in use
// (backend/cpu/cpu_level.h); where there is none (an AVX2 CPU, or CLOCKTRAIN_CPU_MAX_ISA=avx2) their
// tests skip and say why, and the f32 paths are tested as everywhere.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_level.h"

#define CT_SKIP_WITHOUT_BF16_ENGINE()                                                                          \
  if (!::ct::bf16_engine_available())                                                                          \
  GTEST_SKIP() << "needs a bf16 engine (avx512_bf16 or amx_bf16); the CPU level in use is "                    \
               << ::ct::cpu_level_description()
