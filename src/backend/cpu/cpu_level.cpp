#include "backend/cpu/cpu_level.h"

#include <dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "util/error.h"

namespace ct {

namespace {

constexpr const char* kMaxIsaVariable = "CLOCKTRAIN_CPU_MAX_ISA";

dnnl_cpu_isa_t onednn_isa(CpuLevel level) {
  switch (level) {
    case CpuLevel::x86_64: return dnnl_cpu_isa_sse41;
    case CpuLevel::avx2: return dnnl_cpu_isa_avx2;
    case CpuLevel::avx512: return dnnl_cpu_isa_avx512_core;
    case CpuLevel::avx512_bf16: return dnnl_cpu_isa_avx512_core_bf16;
    case CpuLevel::amx: return dnnl_cpu_isa_all;
  }
  return dnnl_cpu_isa_all;
}

struct LevelState {
  CpuLevel level = CpuLevel::x86_64;
  std::string error;
};

LevelState decide() {
  LevelState s;
  const CpuLevel hardware = cpu_info().level;
  s.level = hardware;
  const char* cap = std::getenv(kMaxIsaVariable);
  if (cap && *cap) {
    try {
      s.level = std::min(hardware, parse_cpu_level(cap, kMaxIsaVariable));
    } catch (const Error& e) {
      s.error = e.what();
      return s;
    }
  }
  if (s.level < hardware) {
    // before oneDNN creates its first kernel; it refuses (and we say so) once it has
    const dnnl_status_t status = dnnl_set_max_cpu_isa(onednn_isa(s.level));
    if (status != dnnl_success)
      s.error = str(kMaxIsaVariable, "=", cap, ": oneDNN refused the limit (status ", static_cast<int>(status),
                    "): it was already in use");
  }
  return s;
}

const LevelState& state() {
  static LevelState s;
  static std::once_flag once;
  std::call_once(once, [] { s = decide(); });
  return s;
}

}  // namespace

CpuLevel cpu_level() {
  const LevelState& s = state();
  if (!s.error.empty()) throw Error(s.error);
  return s.level;
}

std::string cpu_level_description() {
  const CpuLevel level = cpu_level(), hardware = cpu_info().level;
  if (level == hardware) return cpu_level_name(level);
  return str(cpu_level_name(level), " (", kMaxIsaVariable, "; the CPU is ", cpu_level_name(hardware), ")");
}

}  // namespace ct
