#include "harness/environment.h"
#include "util/cpu_info.h"

#include "clocktrain_version.h"
#include "test_support.h"

namespace ct {
namespace {

TEST(Environment, RecordsWhatAffectsARun) {
  for (const char* name : {"CLOCKTRAIN_DATA", "OMP_NUM_THREADS", "OMP_PROC_BIND", "KMP_AFFINITY", "OPENBLAS_NUM_THREADS",
                           "MKL_NUM_THREADS", "DNNL_VERBOSE", "ONEDNN_MAX_CPU_ISA", "CUDA_VISIBLE_DEVICES",
                           "CUDA_LAUNCH_BLOCKING", "NCCL_DEBUG", "CUBLAS_WORKSPACE_CONFIG", "NVIDIA_TF32_OVERRIDE",
                           "LD_PRELOAD", "ASAN_OPTIONS", "GLIBC_TUNABLES", "MALLOC_ARENA_MAX",
                           // the launchers' rank layout: torchrun, Open MPI, Slurm
                           "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                           "TORCHELASTIC_USE_AGENT_STORE",  // where NCCL's id is exchanged
                           "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "SLURM_PROCID"})
    EXPECT_TRUE(affects_run(name)) << name;
  // ... but not their per-launch identifiers
  for (const char* name : {"HOME", "PATH", "USER", "TERM", "OMP_", "CLOCKTRAIN", "XCUDA_VISIBLE", "LANG", "MASTER_PORT",
                           "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "TORCHELASTIC_RUN_ID"})
    EXPECT_FALSE(affects_run(name)) << name;
}

TEST(Environment, CaptureIsSortedAndFirstDuplicateWins) {
  auto env = capture_environment({"PATH=/bin", "OMP_NUM_THREADS=2", "CUDA_VISIBLE_DEVICES=0,1", "OMP_NUM_THREADS=8",
                                  "CLOCKTRAIN_DATA=/data", "NOEQUALS", "=value", "LD_PRELOAD=", "HOME=/root"});
  std::vector<std::pair<std::string, std::string>> expected = {
      {"CLOCKTRAIN_DATA", "/data"}, {"CUDA_VISIBLE_DEVICES", "0,1"}, {"LD_PRELOAD", ""}, {"OMP_NUM_THREADS", "2"}};
  EXPECT_EQ(env, expected);
}

TEST(Environment, ThisProcess) {
  ::setenv("CLOCKTRAIN_TEST_MARKER", "yes", 1);
  auto env = capture_environment();
  EXPECT_NE(std::find(env.begin(), env.end(), std::make_pair(std::string("CLOCKTRAIN_TEST_MARKER"), std::string("yes"))),
            env.end());
  // The tests run with OMP_NUM_THREADS set (tests/CMakeLists.txt).
  if (std::getenv("OMP_NUM_THREADS"))
    EXPECT_NE(std::find_if(env.begin(), env.end(), [](const auto& kv) { return kv.first == "OMP_NUM_THREADS"; }), env.end());
  ::unsetenv("CLOCKTRAIN_TEST_MARKER");
}

TEST(Environment, BinaryAndCpuDevice) {
  BinaryInfo b = current_binary();
  EXPECT_EQ(b.version, kVersion);
  EXPECT_EQ(b.build_flags, kBuildFlags);
  EXPECT_FALSE(b.version.empty());
  DeviceInfo d = describe_cpu_device(3);
  EXPECT_EQ(d.backend, "cpu");
  EXPECT_EQ(d.devices, 1);
  EXPECT_EQ(d.threads, 3);
  EXPECT_EQ(d.description.rfind(cpu_info().model_name, 0), 0u) << d.description;
  EXPECT_NE(d.description.find(std::string("CPU level ") + cpu_level_name(cpu_info().level)), std::string::npos)
      << d.description;
  EXPECT_NE(d.description.find(" cores"), std::string::npos) << d.description;
}

}  // namespace
}  // namespace ct
