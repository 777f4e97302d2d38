#pragma once
// The CPU level the CPU backend dispatches on (util/cpu_info.h names the levels): the CPU's own,
// lowered by the environment variable CLOCKTRAIN_CPU_MAX_ISA=x86_64|avx2|avx512|avx512_bf16|amx so
// that one machine runs the paths of the levels below its own (the test suite runs the model, the
// evaluators and `clocktrain run` at avx2 on every machine; docs/cpu.md).
//
// The level decides which of clocktrain's kernels run (AVX-512 exp and cross-entropy, the bf16
// attention kernels, AMX tiles), what matmul_precision "auto" resolves to, and whether "bf16" is
// allowed; and it is handed to the libraries before they start: to oneDNN here (dnnl_set_max_cpu_isa),
// to OpenBLAS as its core type (gemm_library.cpp). It is not an emulator: code the compiler
// vectorised for this CPU (-march=native) keeps its instructions.
#include <string>

#include "util/cpu_info.h"

namespace ct {

// The level in use, decided on the first call (a CLOCKTRAIN_CPU_MAX_ISA that names no level is a
// ct::Error, thrown on every call).
CpuLevel cpu_level();
inline bool cpu_level_at_least(CpuLevel level) { return static_cast<int>(cpu_level()) >= static_cast<int>(level); }
// bf16 products have an engine at the level in use: AVX512-BF16 (and AMX-BF16 above it). Without
// one, matmul_precision "auto" is f32 and "bf16" is refused.
inline bool bf16_engine_available() { return cpu_level_at_least(CpuLevel::avx512_bf16); }

// "avx512_bf16", or "avx2 (CLOCKTRAIN_CPU_MAX_ISA; the CPU is avx512_bf16)" when lowered.
std::string cpu_level_description();

}  // namespace ct
