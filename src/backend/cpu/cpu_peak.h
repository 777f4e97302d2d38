#pragma once
// The CPU's theoretical peak, the ceiling MFU divides by: no step can exceed it.
//
//   peak = cores x FLOP per cycle per core x clock
//   FLOP per cycle (f32) = FMA units x f32 lanes x 2          (an FMA is two FLOP)
//   FLOP per cycle (bf16) = twice f32's on AVX512-BF16 (vdpbf16ps: two products per f32 lane),
//                           1024 on AMX (TDPBF16PS: 16 x 16 x 32 products per 16 cycles)
//
// Lanes follow the CPU level in use (cpu_level.h): 16 from avx512, 8 at avx2, 4 below. FMA units are
// two on every CPU of these levels except AMD Zen 1 (two of 128 bits: 4 lanes) and Zen 4 (two of 256
// bits, AVX-512 instructions split in halves: 8 lanes). CPUID does not say how many FMA units a core
// has; the table is the vendors' (AMD's and Intel's optimisation manuals). Zen 5 (family 0x1A) takes
// the default, two of 512 bits: measured on an EPYC of model 2, whose bf16 GEMM ran at 113 FLOP per
// cycle per core, above the 64 of 256-bit units (docs/cpu.md).
//
// The clock is the larger of the nominal one (cpu_info.h) and one measured once per process (a chain
// of dependent integer adds, one per cycle on every x86-64 core of the last fifteen years; the best
// of 64 samples of ~0.6 ms, ~40 ms in all): under a hypervisor the nominal clock is often the base
// clock, and a boost above it would let a step pass a nominal "peak".
#include <string>

#include "util/cpu_info.h"

namespace ct {

struct CpuPeak {
  int cores = 1;
  double nominal_clock_hz = 0;
  double measured_clock_hz = 0;
  double clock_hz = 0;  // max of the two
  double f32_flops_per_cycle = 0;  // per core
  double bf16_flops_per_cycle = 0;

  double f32_flops() const { return cores * f32_flops_per_cycle * clock_hz; }
  double bf16_flops() const { return cores * bf16_flops_per_cycle * clock_hz; }
  // "2 cores x 64 FLOP/cycle x 2.60 GHz (measured 2.59, nominal 2.60)"
  std::string describe(bool bf16) const;
};

// f32 FLOP per cycle per core of this CPU at `level` (the table above).
double f32_flops_per_cycle(const CpuInfo& cpu, CpuLevel level);
// bf16 FLOP per cycle per core at `level`: AMX's at amx (whether or not clocktrain's own kernels get
// the tiles: oneDNN may use them, and the peak must bound every kernel), twice f32's at avx512_bf16.
double bf16_flops_per_cycle(const CpuInfo& cpu, CpuLevel level);

// The clock, measured as above (Hz).
double measure_clock_hz();

// This machine's peak for `cores` cores at the CPU level in use (the first call measures the clock).
CpuPeak cpu_theoretical_peak(int cores);

}  // namespace ct
