#include "backend/cpu/cpu_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>

#include "backend/cpu/cpu_level.h"
#include "util/error.h"

namespace ct {

double f32_flops_per_cycle(const CpuInfo& cpu, CpuLevel level) {
  const double lanes = level >= CpuLevel::avx512 ? 16 : level >= CpuLevel::avx2 ? 8 : 4;
  double units_lanes = 2 * lanes;  // two FMA units of the level's width
  if (cpu.vendor == "AuthenticAMD") {
    if (cpu.family == 0x17 && cpu.model < 0x30) units_lanes = 2 * std::min(lanes, 4.0);  // Zen 1, Zen+
    if (cpu.family == 0x19) units_lanes = 2 * std::min(lanes, 8.0);                     // Zen 3, Zen 4
    if (cpu.family == 0x17 && cpu.model >= 0x30) units_lanes = 2 * std::min(lanes, 8.0);  // Zen 2
  }
  return 2 * units_lanes;
}

double bf16_flops_per_cycle(const CpuInfo& cpu, CpuLevel level) {
  if (level >= CpuLevel::amx) return 1024;
  const double f32 = f32_flops_per_cycle(cpu, level);
  return level >= CpuLevel::avx512_bf16 ? 2 * f32 : f32;
}

double measure_clock_hz() {
  // A chain of dependent register-register adds retires one per cycle on every x86 core. Not adds
  // of an immediate: Golden Cove (Sapphire Rapids) folds `add reg, imm` chains in its renamer and ran
  // ~9 of them per cycle (a "23 GHz" clock). Many short samples (~0.6 ms each at 3 GHz): a sample
  // that a preemption or a slow moment hits is simply not the best one.
  constexpr int64_t kIterations = 1 << 16;
  constexpr double kAddsPerIteration = 32;
  double best = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint64_t x = 0;
    const uint64_t one = 1;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < kIterations; ++i)
      __asm__ volatile(".rept 32\n\taddq %1, %0\n\t.endr" : "+r"(x) : "r"(one));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0) best = std::max(best, kAddsPerIteration * kIterations / seconds);
  }
  return best;
}

CpuPeak cpu_theoretical_peak(int cores) {
  CpuPeak p;
  const CpuInfo& cpu = cpu_info();
  const CpuLevel level = cpu_level();
  p.cores = std::max(cores, 1);
  p.nominal_clock_hz = cpu.nominal_clock_hz;
  static const double measured = measure_clock_hz();  // once per process
  p.measured_clock_hz = measured;
  p.clock_hz = std::max(p.nominal_clock_hz, p.measured_clock_hz);
  p.f32_flops_per_cycle = f32_flops_per_cycle(cpu, level);
  p.bf16_flops_per_cycle = bf16_flops_per_cycle(cpu, level);
  return p;
}

std::string CpuPeak::describe(bool bf16) const {
  auto ghz = [](double hz) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2f", hz / 1e9);
    return std::string(buf);
  };
  return str(cores, " cores x ", bf16 ? bf16_flops_per_cycle : f32_flops_per_cycle, " ", bf16 ? "bf16" : "f32",
             " FLOP/cycle x ", ghz(clock_hz), " GHz (measured ", ghz(measured_clock_hz), ", nominal ",
             nominal_clock_hz > 0 ? ghz(nominal_clock_hz) : std::string("unknown"), ")");
}

}  // namespace ct
