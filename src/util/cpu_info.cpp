#include "util/cpu_info.h"

#include <cpuid.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>

#include "util/error.h"

namespace ct {

namespace {

constexpr CpuLevel kLevels[] = {CpuLevel::x86_64, CpuLevel::avx2, CpuLevel::avx512, CpuLevel::avx512_bf16,
                                CpuLevel::amx};

struct CpuidRegisters {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegisters cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegisters r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
  return r;
}

bool bit(unsigned value, int index) { return (value >> index) & 1u; }

// XCR0: the register states the OS saves on a context switch (0 when XGETBV is not enabled).
uint64_t xcr0() {
  if (!bit(cpuid(1, 0).ecx, 27)) return 0;  // OSXSAVE
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

std::string proc_cpuinfo_value(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return "";
}

double number_in_file(const char* path) {
  std::ifstream in(path);
  double value = 0;
  return in >> value ? value : 0.0;
}

CpuInfo read_cpu_info() {
  CpuInfo info;
  const CpuidRegisters leaf0 = cpuid(0, 0);
  char vendor[13] = {};
  for (int i = 0; i < 4; ++i) {
    vendor[i] = static_cast<char>(leaf0.ebx >> (8 * i));
    vendor[4 + i] = static_cast<char>(leaf0.edx >> (8 * i));
    vendor[8 + i] = static_cast<char>(leaf0.ecx >> (8 * i));
  }
  info.vendor = vendor;
  const CpuidRegisters leaf1 = cpuid(1, 0);
  const int base_family = static_cast<int>((leaf1.eax >> 8) & 0xf);
  const int base_model = static_cast<int>((leaf1.eax >> 4) & 0xf);
  info.family = base_family == 0xf ? base_family + static_cast<int>((leaf1.eax >> 20) & 0xff) : base_family;
  info.model = base_family == 0xf || base_family == 0x6 ? base_model + (static_cast<int>((leaf1.eax >> 16) & 0xf) << 4)
                                                        : base_model;

  const uint64_t xcr = xcr0();
  const bool os_avx = (xcr & 0x6) == 0x6;            // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr & 0x60000) == 0x60000;    // XTILECFG, XTILEDATA
  const CpuidRegisters leaf7 = leaf0.eax >= 7 ? cpuid(7, 0) : CpuidRegisters{};
  const CpuidRegisters leaf7_1 = leaf0.eax >= 7 && leaf7.eax >= 1 ? cpuid(7, 1) : CpuidRegisters{};
  auto add = [&](bool present, const char* flag) {
    if (present) info.flags.insert(flag);
  };
  add(os_avx && bit(leaf1.ecx, 28), "avx");
  add(os_avx && bit(leaf1.ecx, 12), "fma");
  add(os_avx && bit(leaf7.ebx, 5), "avx2");
  add(os_avx512 && bit(leaf7.ebx, 16), "avx512f");
  add(os_avx512 && bit(leaf7.ebx, 17), "avx512dq");
  add(os_avx512 && bit(leaf7.ebx, 30), "avx512bw");
  add(os_avx512 && bit(leaf7.ebx, 31), "avx512vl");
  add(os_avx512 && bit(leaf7_1.eax, 5), "avx512_bf16");
  add(os_amx && bit(leaf7.edx, 24), "amx_tile");
  add(os_amx && bit(leaf7.edx, 22), "amx_bf16");
  for (CpuLevel level : kLevels) {
    bool complete = true;
    for (const auto& f : features_of_level(level)) complete = complete && info.has(f);
    if (!complete) break;
    info.level = level;
  }

  info.model_name = proc_cpuinfo_value("model name");
  if (info.model_name.empty()) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const CpuidRegisters r = cpuid(0x80000002u + i, 0);
      const unsigned words[4] = {r.eax, r.ebx, r.ecx, r.edx};
      for (int w = 0; w < 4; ++w)
        for (int b = 0; b < 4; ++b) brand[16 * i + 4 * w + b] = static_cast<char>(words[w] >> (8 * b));
    }
    info.model_name = brand[0] ? brand : "unknown CPU";
  }
  // cpufreq's maximum (kHz) where the kernel has a driver; under a hypervisor usually only
  // /proc/cpuinfo's "cpu MHz", the nominal (TSC) clock.
  const double max_khz = number_in_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double mhz = 0;
  try {
    mhz = std::stod(proc_cpuinfo_value("cpu MHz"));
  } catch (const std::exception&) {
    mhz = 0;
  }
  info.nominal_clock_hz = std::max(max_khz * 1e3, mhz * 1e6);
  return info;
}

}  // namespace

const char* cpu_level_name(CpuLevel level) {
  switch (level) {
    case CpuLevel::x86_64: return "x86_64";
    case CpuLevel::avx2: return "avx2";
    case CpuLevel::avx512: return "avx512";
    case CpuLevel::avx512_bf16: return "avx512_bf16";
    case CpuLevel::amx: return "amx";
  }
  return "?";
}

CpuLevel parse_cpu_level(const std::string& name, const std::string& what) {
  for (CpuLevel level : kLevels)
    if (name == cpu_level_name(level)) return level;
  fail(what, ": unknown CPU level '", name, "' (expected one of x86_64, avx2, avx512, avx512_bf16, amx)");
}

const std::set<std::string>& features_of_level(CpuLevel level) {
  static const std::map<CpuLevel, std::set<std::string>> added{
      {CpuLevel::x86_64, {}},
      {CpuLevel::avx2, {"avx", "avx2", "fma"}},
      {CpuLevel::avx512, {"avx512f", "avx512dq", "avx512bw", "avx512vl"}},
      {CpuLevel::avx512_bf16, {"avx512_bf16"}},
      {CpuLevel::amx, {"amx_tile", "amx_bf16"}},
  };
  return added.at(level);
}

std::string CpuInfo::flag_summary() const {
  std::string out;
  for (const char* f :
       {"avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile", "amx_bf16"})
    out += str(out.empty() ? "" : " ", has(f) ? "" : "-", f);
  return out;
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = read_cpu_info();
  return info;
}

}  // namespace ct
