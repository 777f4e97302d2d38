#include <gtest/gtest.h>

#include "test_support.h"
#include "util/files.h"
#include "util/threads.h"

namespace ct {
namespace {

namespace fs = std::filesystem;

TEST(MachineCpus, CpuListsAreCounted) {
  EXPECT_EQ(count_cpu_list("0-1"), 2);
  EXPECT_EQ(count_cpu_list("0-3,8,10-11"), 7);
  EXPECT_EQ(count_cpu_list("5"), 1);
  EXPECT_EQ(count_cpu_list(""), 0);
  EXPECT_EQ(count_cpu_list("3-1"), 0);
  EXPECT_EQ(count_cpu_list("0-x"), 0);
  EXPECT_EQ(count_cpu_list("a"), 0);
}

// A made-up /proc and /sys: what the machine was given, whatever this process's affinity.
class MachineCpusUnder : public ::testing::Test {
 protected:
  void put(const std::string& path, const std::string& text) {
    fs::create_directories((root_.path() / path).parent_path());
    write_file_atomic(root_.path() / path, text + "\n");
  }
  MachineCpus read() { return machine_cpus(root_.path().string()); }
  test::TempDir root_;
};

TEST_F(MachineCpusUnder, TheCpusOnlineWithoutACgroupLimit) {
  put("sys/devices/system/cpu/online", "0-7");
  put("proc/self/cgroup", "3:cpuset:/\n1:cpu:/");
  put("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1");
  put("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000");
  const MachineCpus m = read();
  EXPECT_EQ(m.count, 8);
  EXPECT_EQ(m.how, "8 CPUs online");
}

TEST_F(MachineCpusUnder, ACgroupV1CpusetAndQuotaAreTheMachineGiven) {
  put("sys/devices/system/cpu/online", "0-15");
  put("proc/self/cgroup", "4:cpuset:/box\n2:cpu,cpuacct:/box");
  put("sys/fs/cgroup/cpuset/box/cpuset.effective_cpus", "0-3");
  EXPECT_EQ(read().count, 4);
  EXPECT_EQ(read().how, "cgroup cpuset 0-3");
  put("sys/fs/cgroup/cpu/box/cpu.cfs_quota_us", "150000");
  put("sys/fs/cgroup/cpu/box/cpu.cfs_period_us", "100000");
  EXPECT_EQ(read().count, 2) << "1.5 CPUs of quota, rounded up";
  EXPECT_EQ(read().how, "cgroup quota 1.50 CPUs");
}

TEST_F(MachineCpusUnder, ACgroupV2CpusetAndQuota) {
  put("sys/devices/system/cpu/online", "0-31");
  put("proc/self/cgroup", "0::/job");
  put("sys/fs/cgroup/job/cpuset.cpus.effective", "0-5,8-9");
  put("sys/fs/cgroup/job/cpu.max", "max 100000");
  EXPECT_EQ(read().count, 8);
  put("sys/fs/cgroup/job/cpu.max", "300000 100000");
  EXPECT_EQ(read().count, 3);
}

TEST(MachineCpus, ThisMachineHasAtLeastTheCpusThisProcessMayRunOn) {
  const MachineCpus m = machine_cpus();
  EXPECT_GE(m.count, available_cores()) << m.how;
  EXPECT_FALSE(m.how.empty());
}

}  // namespace
}  // namespace ct
