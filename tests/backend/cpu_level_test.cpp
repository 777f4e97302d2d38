// The CPU levels (util/cpu_info.h, backend/cpu/cpu_level.h), the theoretical peak (cpu_peak.h) and
// how the CPU backend resolves matmul_precision at the level in use. ctest runs this binary at the
// machine's own level and again under CLOCKTRAIN_CPU_MAX_ISA=avx2 (tests/CMakeLists.txt).
#include <cstdlib>
#include <sstream>

#include "backend/cpu/cpu_level.h"
#include "backend/cpu/cpu_peak.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/backend_test_support.h"
#include "bf16_engine_support.h"

namespace ct::test {
namespace {

TEST(CpuLevel, NamesRoundTripAndUnknownNamesAreErrors) {
  for (CpuLevel level : {CpuLevel::x86_64, CpuLevel::avx2, CpuLevel::avx512, CpuLevel::avx512_bf16, CpuLevel::amx})
    EXPECT_EQ(parse_cpu_level(cpu_level_name(level), "test"), level);
  expect_error([] { parse_cpu_level("avx3", "CLOCKTRAIN_CPU_MAX_ISA"); },
               {"CLOCKTRAIN_CPU_MAX_ISA: unknown CPU level 'avx3'", "avx2, avx512, avx512_bf16, amx"});
}

TEST(CpuLevel, TheCpusLevelHasEveryFeatureOfTheLevelsBelow) {
  const CpuInfo& cpu = cpu_info();
  std::printf("%s: level %s, flags %s, nominal clock %.2f GHz\n", cpu.model_name.c_str(), cpu_level_name(cpu.level),
              cpu.flag_summary().c_str(), cpu.nominal_clock_hz / 1e9);
  for (CpuLevel level : {CpuLevel::avx2, CpuLevel::avx512, CpuLevel::avx512_bf16, CpuLevel::amx}) {
    bool all = true;
    for (const auto& f : features_of_level(level)) all = all && cpu.has(f);
    if (level <= cpu.level) EXPECT_TRUE(all) << cpu_level_name(level);
    if (level == static_cast<CpuLevel>(static_cast<int>(cpu.level) + 1)) EXPECT_FALSE(all) << cpu_level_name(level);
  }
  // the summary: every feature of the levels, "-" before those missing
  std::istringstream words(cpu.flag_summary());
  int count = 0;
  for (std::string w; words >> w; ++count) {
    if (w[0] == '-') EXPECT_FALSE(cpu.has(w.substr(1))) << w;
    else EXPECT_TRUE(cpu.has(w)) << w;
  }
  EXPECT_EQ(count, 9);
  EXPECT_FALSE(cpu.model_name.empty());
}

TEST(CpuLevel, TheSwitchOnlyLowersTheLevel) {
  const CpuLevel hardware = cpu_info().level;
  const char* cap = std::getenv("CLOCKTRAIN_CPU_MAX_ISA");
  if (cap && *cap) {
    const CpuLevel asked = parse_cpu_level(cap, "CLOCKTRAIN_CPU_MAX_ISA");
    EXPECT_EQ(cpu_level(), std::min(hardware, asked));
    if (asked < hardware) EXPECT_NE(cpu_level_description().find("the CPU is"), std::string::npos);
  } else {
    EXPECT_EQ(cpu_level(), hardware);
    EXPECT_EQ(cpu_level_description(), cpu_level_name(hardware));
  }
}

CpuInfo cpu_of(const char* vendor, int family, int model) {
  CpuInfo c;
  c.vendor = vendor;
  c.family = family;
  c.model = model;
  return c;
}

TEST(CpuPeak, FlopPerCycleFollowsTheVendorsTables) {
  const CpuInfo zen1 = cpu_of("AuthenticAMD", 0x17, 0x01), zen2 = cpu_of("AuthenticAMD", 0x17, 0x31);
  const CpuInfo zen3 = cpu_of("AuthenticAMD", 0x19, 0x01), zen4 = cpu_of("AuthenticAMD", 0x19, 0x11);
  const CpuInfo zen5 = cpu_of("AuthenticAMD", 0x1a, 0x02), spr = cpu_of("GenuineIntel", 6, 0x8f);
  const CpuInfo haswell = cpu_of("GenuineIntel", 6, 0x3c);
  EXPECT_EQ(f32_flops_per_cycle(zen1, CpuLevel::avx2), 16);  // two 128-bit FMA units
  EXPECT_EQ(f32_flops_per_cycle(zen2, CpuLevel::avx2), 32);
  EXPECT_EQ(f32_flops_per_cycle(zen3, CpuLevel::avx2), 32);  // a Zen 3 EPYC: 2 x 8 lanes x 2
  EXPECT_EQ(f32_flops_per_cycle(zen4, CpuLevel::avx512_bf16), 32);  // AVX-512 in two 256-bit halves
  EXPECT_EQ(bf16_flops_per_cycle(zen4, CpuLevel::avx512_bf16), 64);
  EXPECT_EQ(f32_flops_per_cycle(zen5, CpuLevel::avx512_bf16), 64);
  EXPECT_EQ(f32_flops_per_cycle(haswell, CpuLevel::avx2), 32);
  EXPECT_EQ(f32_flops_per_cycle(spr, CpuLevel::amx), 64);
  EXPECT_EQ(bf16_flops_per_cycle(spr, CpuLevel::amx), 1024);         // oneDNN may take the tiles
  EXPECT_EQ(bf16_flops_per_cycle(spr, CpuLevel::avx512_bf16), 128);  // AMX hidden: AVX512-BF16
  EXPECT_EQ(f32_flops_per_cycle(spr, CpuLevel::avx2), 32);          // the level in use counts
  EXPECT_EQ(bf16_flops_per_cycle(spr, CpuLevel::avx2), 32);  // no bf16 engine: f32's
}

TEST(CpuPeak, TheMeasuredClockIsAClock) {
  const double hz = measure_clock_hz();
  EXPECT_GT(hz, 0.5e9);
  EXPECT_LT(hz, 6.5e9);  // no x86 core runs faster (an immediate-add chain gave 23 GHz on Sapphire Rapids)
}

// The point of a theoretical peak: no measured rate may pass it. The backend's own GEMM probe, in
// each precision the level allows, stays under it (a wrong table or clock would show here).
TEST(CpuPeak, NoMeasuredMatmulPassesTheTheoreticalPeak) {
  std::vector<MatmulPrecision> precisions = {MatmulPrecision::f32};
  if (bf16_engine_available()) precisions.push_back(MatmulPrecision::bf16);
  for (MatmulPrecision p : precisions) {
    BackendOptions o;
    o.matmul_precision = p;
    auto be = make_cpu_backend(o);
    std::printf("%s: peak %.1f GFLOP/s, measured matmul ceiling %.1f GFLOP/s\n", matmul_precision_name(p),
                be->peak_flops() / 1e9, be->matmul_ceiling_flops() / 1e9);
    EXPECT_GT(be->matmul_ceiling_flops(), 0) << matmul_precision_name(p);
    EXPECT_LE(be->matmul_ceiling_flops(), be->peak_flops()) << matmul_precision_name(p);
  }
}

TEST(CpuBackendPrecision, AutoTakesBf16ExactlyWhereTheLevelHasABf16Engine) {
  BackendOptions o;
  o.matmul_precision = MatmulPrecision::automatic;
  auto be = make_cpu_backend(o);
  const std::string reason = be->matmul_precision_reason();
  EXPECT_NE(reason.find(cpu_level_description()), std::string::npos) << reason;
  if (bf16_engine_available()) {
    EXPECT_EQ(be->matmul_precision(), MatmulPrecision::bf16);
    EXPECT_EQ(be->matmul_operand_dtype(), DType::bf16);
    EXPECT_EQ(reason.rfind("auto: bf16", 0), 0u) << reason;
  } else {
    EXPECT_EQ(be->matmul_precision(), MatmulPrecision::f32);
    EXPECT_EQ(be->matmul_operand_dtype(), DType::f32);
    EXPECT_EQ(reason.rfind("auto: f32", 0), 0u) << reason;
    EXPECT_NE(reason.find("no bf16 engine"), std::string::npos) << reason;
  }
  EXPECT_NE(be->device_description().find("CPU level " + cpu_level_description()), std::string::npos);
  o.matmul_precision = MatmulPrecision::f32;
  auto f32 = make_cpu_backend(o);
  EXPECT_EQ(f32->matmul_precision(), MatmulPrecision::f32);
  EXPECT_EQ(f32->matmul_precision_reason(), "f32: as asked");
}

TEST(CpuBackendPrecision, Bf16WithoutAnEngineNamesTheMissingFeatureAndTheFlags) {
  BackendOptions o;
  o.matmul_precision = MatmulPrecision::bf16;
  if (bf16_engine_available()) {
    EXPECT_EQ(make_cpu_backend(o)->matmul_precision(), MatmulPrecision::bf16);
    return;
  }
  expect_error([&] { make_cpu_backend(o); },
               {"matmul_precision \"bf16\" needs a CPU with a bf16 engine (avx512_bf16 or amx_bf16)",
                cpu_info().model_name, "level " + cpu_level_description(), cpu_info().flag_summary()});
  // a bf16 product on an f32 backend is refused as clearly
  auto f32 = make_cpu_backend(BackendOptions{});
  Buffer a(*f32, Shape{4, 4}, DType::bf16), b(*f32, Shape{4, 4}, DType::bf16), c(*f32, Shape{4, 4}, DType::f32);
  expect_error([&] { f32->gemm(a, b, c, false, false); }, {"gemm", "bf16 operands need a bf16 engine"});
}

}  // namespace
}  // namespace ct::test
