#pragma once
// AMX (Advanced Matrix Extensions) on this process.
//
// The CPU lists amx_tile and amx_bf16, but Linux (5.16+) lets a process use the 8 KiB of tile data
// only after it asks: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). amx_usable() asks once
// (at the CPU backend's creation), and is true only when the build has the AMX intrinsics
// (-march=native on an AMX machine), the CPU has the instructions, the CPU level in use is amx
// (cpu_level.h), the kernel granted the permission and CLOCKTRAIN_CPU_AMX is not "0". When it is
// false, the bf16 kernels that would use tiles fall back to other code (attention: AVX512-BF16 dot
// products; oneDNN: its AVX512_BF16 kernels, oneDNN asks for the permission itself).
#include <string>

namespace ct {

bool amx_usable();
// Why AMX is or is not in use, in words (for device descriptions and benches).
std::string amx_status();

}  // namespace ct
