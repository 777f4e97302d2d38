#pragma once
// What this x86-64 CPU is and which of the vector features clocktrain's CPU backend cares about it
// offers, read once from CPUID (and XGETBV: a feature counts only when the OS saves its registers).
//
// The levels, each a superset of the one before (the CPU backend's dispatch levels, docs/cpu.md):
//   x86_64       SSE2 only: portable code
//   avx2         AVX2 + FMA (x86-64-v3; AMD Zen 1-3, Intel Haswell and later clients): f32 only
//   avx512       + AVX-512 F/DQ/BW/VL (Intel Skylake-SP and later servers): the AVX-512 f32 kernels
//   avx512_bf16  + AVX512_BF16 (AMD Zen 4 and later, Intel Cooper Lake): a bf16 engine (vdpbf16ps)
//   amx          + AMX-TILE and AMX-BF16 (Intel Sapphire Rapids and later): bf16 on tiles
#include <set>
#include <string>

namespace ct {

enum class CpuLevel { x86_64 = 0, avx2 = 1, avx512 = 2, avx512_bf16 = 3, amx = 4 };

// "x86_64", "avx2", "avx512", "avx512_bf16", "amx".
const char* cpu_level_name(CpuLevel level);
// The inverse of cpu_level_name; anything else is a ct::Error naming `what` and the accepted names.
CpuLevel parse_cpu_level(const std::string& name, const std::string& what);

struct CpuInfo {
  std::string vendor;      // "GenuineIntel", "AuthenticAMD", ...
  std::string model_name;  // /proc/cpuinfo's "model name" (the CPUID brand string where that is missing)
  int family = 0;          // CPUID's display family and model (AMD Zen 3/4: family 25, Zen 5: 26)
  int model = 0;
  // The features below that the CPU has and the OS enables, named as in /proc/cpuinfo's flags.
  std::set<std::string> flags;
  CpuLevel level = CpuLevel::x86_64;  // the highest level whose every feature is in `flags`
  double nominal_clock_hz = 0;  // cpufreq's maximum, else /proc/cpuinfo's "cpu MHz"; 0 when unknown

  bool has(const std::string& flag) const { return flags.count(flag) == 1; }
  // "avx2 fma avx512f avx512dq avx512bw avx512vl avx512_bf16 -amx_tile -amx_bf16": every feature of the
  // levels, a minus sign in front of those the CPU lacks.
  std::string flag_summary() const;
};

// Read once per process.
const CpuInfo& cpu_info();

// The features a level adds to the one below it (x86_64: none).
const std::set<std::string>& features_of_level(CpuLevel level);

}  // namespace ct
