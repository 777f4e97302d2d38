// The machine's GPUs as the driver lists them (util/machine_gpus.h), whatever CUDA_VISIBLE_DEVICES
// says: through a stand-in NVML library (fake_nvml.cpp) and a stand-in nvidia-smi on PATH.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "test_support.h"
#include "util/files.h"
#include "util/machine_gpus.h"

namespace ct {
namespace {

namespace fs = std::filesystem;

const char* kEightGpus =
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a)\n"
    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1b)\n"
    "  MIG 3g.40gb     Device  0: (UUID: MIG-2c)\n"
    "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-3d)\n"
    "GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-4e)\n"
    "GPU 4: NVIDIA H100 80GB HBM3 (UUID: GPU-5f)\n"
    "GPU 5: NVIDIA H100 80GB HBM3 (UUID: GPU-6a)\n"
    "GPU 6: NVIDIA H100 80GB HBM3 (UUID: GPU-7b)\n"
    "GPU 10: NVIDIA H100 80GB HBM3 (UUID: GPU-8c)\n";

TEST(MachineGpus, NvidiaSmisLinesAreCounted) {
  EXPECT_EQ(count_listed_gpus(kEightGpus), 8);
  EXPECT_EQ(count_listed_gpus(""), 0);
  EXPECT_EQ(count_listed_gpus("No devices were found\n"), 0);
  EXPECT_EQ(count_listed_gpus("GPU : x\nGPU 1 x\nGPUs 2: x\n"), 0);
}

// Sets an environment variable for the scope of the object, restoring it after.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// CUDA_VISIBLE_DEVICES narrows a CUDA process's view, not the driver's list.
TEST(MachineGpus, NvmlCountsEveryGpuWhateverCudaVisibleDevicesSays) {
  const ScopedVariable gpus("FAKE_NVML_GPUS", "8"), visible("CUDA_VISIBLE_DEVICES", "0");
  const MachineGpus m = machine_gpus(CLOCKTRAIN_FAKE_NVML);
  EXPECT_EQ(m.count, 8);
  EXPECT_EQ(m.how, "NVML: 8 GPUs");
}

TEST(MachineGpus, WithoutNvmlNvidiaSmiIsAsked) {
  test::TempDir dir;
  // (PATH holds only this folder: the script uses the shell's builtins)
  write_file_atomic(dir / "nvidia-smi", std::string("#!/bin/sh\n[ \"$1\" = -L ] || exit 2\nprintf '%s' '") +
                                            kEightGpus + "'\n");
  fs::permissions(dir / "nvidia-smi", fs::perms::owner_all);
  const ScopedVariable path("PATH", dir.path().string());
  MachineGpus m = machine_gpus("libclocktrain-no-such-nvml.so");
  EXPECT_EQ(m.count, 8);
  EXPECT_EQ(m.how.rfind("nvidia-smi -L: 8 GPUs; no NVML (", 0), 0u) << m.how;
  // a driver library that does not start: nvidia-smi too
  m = machine_gpus(CLOCKTRAIN_FAKE_NVML);  // (FAKE_NVML_GPUS unset: nvmlInit_v2 fails)
  EXPECT_EQ(m.count, 8);
  EXPECT_NE(m.how.find("NVML did not start (nvmlInit_v2 returned 1)"), std::string::npos) << m.how;
  fs::remove(dir / "nvidia-smi");
  m = machine_gpus("libclocktrain-no-such-nvml.so");
  EXPECT_EQ(m.count, 0);
  EXPECT_NE(m.how.find("nvidia-smi -L listed no GPU"), std::string::npos) << m.how;
}

}  // namespace
}  // namespace ct
