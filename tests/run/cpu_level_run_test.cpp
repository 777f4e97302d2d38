// `clocktrain run` at the CPU levels (docs/cpu.md): at avx2 (CLOCKTRAIN_CPU_MAX_ISA=avx2 on any machine)
// matmul_precision "auto" takes f32, says why, passes the gate and scores like the f32 reference of
// the machine's own level; "bf16" there fails before any data is prepared, recorded in the run folder.
#include <cmath>

#include "backend/cpu/cpu_level.h"
#include "backend/cpu/gemm_library.h"
#include "run/run_test_support.h"
#include "train/run_folder.h"
#include "util/cpu_info.h"
#include "util/json.h"

namespace ct::test {
namespace {

constexpr const char* kAvx2 = "CLOCKTRAIN_CPU_MAX_ISA=avx2";

std::string precision_table(const std::string& precision) {
  return "[backend]\nmatmul_precision = \"" + precision + "\"\n";
}

TEST(CpuLevelRun, AutoAtTheAvx2LevelTrainsInF32AndScoresLikeTheF32Reference) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path auto_recipe = write_run_recipe(tmp / "auto.toml", "", precision_table("auto"));
  const fs::path f32_recipe = write_run_recipe(tmp / "f32.toml", "", precision_table("f32"));
  auto avx2 = clocktrain_run(auto_recipe, data, tmp / "cache", tmp / "avx2", "", kAvx2);
  ASSERT_EQ(avx2.exit_code, 0) << avx2.output;
  EXPECT_NE(avx2.output.find("matmuls auto: f32, the CPU level avx2"), std::string::npos) << avx2.output;
  const RunResult a = read_result_file(tmp / "avx2");
  EXPECT_TRUE(a.gate.eligible);
  EXPECT_EQ(a.device.matmul_precision, "f32");
  EXPECT_EQ(a.device.matmul_precision_reason.rfind("auto: f32, the CPU level avx2", 0), 0u)
      << a.device.matmul_precision_reason;
  EXPECT_NE(a.device.matmul_precision_reason.find("no bf16 engine"), std::string::npos);
  EXPECT_GT(a.device.peak_flops, 0);
  EXPECT_GT(a.device.matmul_ceiling_flops, 0);
  EXPECT_NE(a.environment.end(), std::find(a.environment.begin(), a.environment.end(),
                                           std::pair<std::string, std::string>("CLOCKTRAIN_CPU_MAX_ISA", "avx2")));
  // The start line of metrics.jsonl says which precision ran and why.
  EXPECT_NE(read_file(tmp / "avx2" / "metrics.jsonl").find("matmuls auto: f32"), std::string::npos);

  // The reference: f32 at the machine's own level. The same math through other kernels (OpenBLAS's
  // and libmvec's AVX2 or AVX-512 ones): the same score within f32 rounding accumulated over 12 steps
  // (identical on a CPU whose own level is avx2).
  auto native = clocktrain_run(f32_recipe, data, tmp / "cache", tmp / "native");
  ASSERT_EQ(native.exit_code, 0) << native.output;
  const RunResult n = read_result_file(tmp / "native");
  EXPECT_EQ(n.device.matmul_precision, "f32");
  EXPECT_EQ(n.device.matmul_precision_reason, "f32: as asked");
  ASSERT_TRUE(a.val_bpb && n.val_bpb);
  EXPECT_NEAR(*a.val_bpb, *n.val_bpb, 1e-3 * *n.val_bpb);
  EXPECT_EQ(a.steps, n.steps);
}

TEST(CpuLevelRun, Bf16WithoutABf16EngineFailsBeforeAnyDataIsPrepared) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "bf16.toml", "", precision_table("bf16"));
  auto run = clocktrain_run(recipe, data, tmp / "cache", tmp / "run", "", kAvx2);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  // the file, the field and its value, the missing feature and the CPU's flags
  for (const char* part : {"bf16.toml", "matmul_precision \"bf16\"", "needs a CPU with a bf16 engine",
                           "avx512_bf16", "level avx2", "flags avx2 fma"})
    EXPECT_NE(run.output.find(part), std::string::npos) << part << "\n" << run.output;
  EXPECT_EQ(run.output.find("data: preparing"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(tmp / "cache")) << "nothing may be prepared for a run that cannot train";
  // The run folder holds the record of the failure and nothing else (but its lock, not a record).
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(tmp / "run"))
    if (e.path().filename() != kRunLockFile) files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"result.json"});
  const RunResult r = read_result_file(tmp / "run");
  EXPECT_FALSE(r.gate.eligible);
  EXPECT_EQ(r.extra["train_stop"]["reason"], "backend");
  EXPECT_NE(r.extra["train_stop"]["error"].get<std::string>().find("bf16 engine"), std::string::npos);
  // and a second attempt into the same folder is refused without touching it
  const std::string before = read_file(tmp / "run" / "result.json");
  auto again = clocktrain_run(recipe, data, tmp / "cache", tmp / "run", "", kAvx2);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.output.find("already holds a run"), std::string::npos) << again.output;
  EXPECT_EQ(read_file(tmp / "run" / "result.json"), before);
}

TEST(CpuLevelRun, AnUnknownLevelInTheSwitchIsAnError) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  auto run = clocktrain_run(recipe, data, tmp / "cache", tmp / "run", "", "CLOCKTRAIN_CPU_MAX_ISA=avx3");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("CLOCKTRAIN_CPU_MAX_ISA: unknown CPU level 'avx3'"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(tmp / "cache"));
}

// OpenBLAS's kernel set and who chose it are in the start line: a machine image may set
// OPENBLAS_CORETYPE for every program (one seen here sets Haswell on an AVX-512 CPU), and a lower kernel
// set than the CPU's is then visible rather than silent. `train` prints the backend's line before it
// reads its data, so a missing data folder ends the command right after it.
TEST(CpuLevelRun, TheStartLineSaysWhoChoseOpenBlasKernels) {
  TempDir tmp;
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  const std::string train = " " + clocktrain_bin() + " train " + recipe.string() + " --data " +
                            (tmp / "none").string() + " --out " + (tmp / "out").string();
  // Prescott: never the kernels clocktrain names for a level from avx2 up.
  auto user = run_command("env OPENBLAS_CORETYPE=Prescott" + train);
  EXPECT_NE(user.output.find("OpenBLAS core Prescott (OPENBLAS_CORETYPE set outside clocktrain"), std::string::npos)
      << user.output;
  const bool lowered = cpu_info().level > cpu_level();
  if (cpu_level() >= CpuLevel::avx512 || lowered)
    EXPECT_NE(user.output.find("; the level's would be "), std::string::npos) << user.output;
  EXPECT_FALSE(fs::exists(tmp / "out")) << "the command ends at the missing data, before the run folder";
  // At a lowered avx2 level clocktrain names the level's kernels (Zen or Haswell); on a CPU whose own
  // level is avx2, OpenBLAS's detection stands.
  auto avx2 = run_command("env -u OPENBLAS_CORETYPE " + std::string(kAvx2) + train);
  EXPECT_NE(avx2.output.find(cpu_info().level > CpuLevel::avx2 ? "(chosen by clocktrain for the CPU level)"
                                                                : "(OpenBLAS's own choice)"),
            std::string::npos)
      << avx2.output;
  EXPECT_EQ(avx2.output.find("OpenBLAS core Prescott"), std::string::npos) << avx2.output;
  // The variable already holding the level's choice (as in `clocktrain run`'s evaluator, which
  // inherits what its parent set) is said to be the level's choice, not an outside one.
  if (const char* core = openblas_core_type_for_level()) {
    auto same = run_command("env OPENBLAS_CORETYPE=" + std::string(core) + train);
    EXPECT_NE(same.output.find("OpenBLAS core " + std::string(core) + " (OPENBLAS_CORETYPE set to the level's choice)"),
              std::string::npos)
        << same.output;
  }
}

// `clocktrain version` names the CPU, the level in use and the features (docs/cpu.md): the line the
// emulated-CPU check (scripts/emulated-cpu-test.sh) reads to know that clocktrain sees an AVX2-only CPU.
TEST(CpuLevelRun, VersionNamesTheLevelInUse) {
  const std::string version = " " + clocktrain_bin() + " version";
  auto own = run_command("env -u CLOCKTRAIN_CPU_MAX_ISA" + version);
  ASSERT_EQ(own.exit_code, 0) << own.output;
  const std::string own_level = cpu_level_name(cpu_info().level);
  EXPECT_NE(own.output.find("\ncpu: " + cpu_info().model_name), std::string::npos) << own.output;
  EXPECT_NE(own.output.find(", level " + own_level + "; " + cpu_info().flag_summary() + "\n"), std::string::npos)
      << own.output;
  auto lowered = run_command("env " + std::string(kAvx2) + version);
  ASSERT_EQ(lowered.exit_code, 0) << lowered.output;
  EXPECT_NE(lowered.output.find(cpu_info().level > CpuLevel::avx2
                                    ? ", level avx2 (CLOCKTRAIN_CPU_MAX_ISA; the CPU is " + own_level + "); "
                                    : ", level avx2; "),
            std::string::npos)
      << lowered.output;
  auto bad = run_command("env CLOCKTRAIN_CPU_MAX_ISA=avx3" + version);
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("CLOCKTRAIN_CPU_MAX_ISA: unknown CPU level 'avx3'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace ct::test
