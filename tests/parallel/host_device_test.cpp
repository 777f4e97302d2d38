// The trainer's device path without a GPU (issue 44, docs/parallel.md): the host-device backend
// (src/backend/host_device/) is a device backend as the CUDA backend is one, with a communicator of
// its own for the gradients and parameters (made through the job's rendezvous, as NCCL's is) and no
// host collectives (the run's process group serves the losses, the agreed clock and the stop signal).
// Its processes train as the CPU backend's do: 2 and 3 of them under mpirun and under torchrun, a
// process killed mid-step, a run stopped by its clock. (SIGTERM and the printed command that resumes:
// SignalledJob in data_parallel_test.cpp, on both backends.)
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "parallel/parallel_test_support.h"
#include "util/clock.h"
#include "util/files.h"

namespace ct {
namespace {

using namespace test;  // parallel_test_support.h

using HostDevice = DataParallel;

const std::string kHostDevice = "host-device";

// tiny in f32 with 24 rows a step in micro-batches of 4: one process runs 6 of them, two processes 3
// each, three processes 2 each, on the same global batch. `more_edits` change the recipe further.
std::string tiny_24_rows(const std::string& backend, std::vector<std::pair<std::string, std::string>> more_edits = {}) {
  more_edits.insert(more_edits.begin(), {{"matmul_precision = \"auto\"", "matmul_precision = \"f32\""},
                                         {"tokens_per_step = 1024", "tokens_per_step = 1536"},
                                         {"micro_batch_rows = 8", "micro_batch_rows = 4"}});
  return with_backend(recipe_text("tiny", more_edits), backend);
}

// The same global batch on 1, 2 and 3 processes. The CPU backend's processes reduce over MPI, each
// element as ((x_0 + x_1) + x_2) * factor in f32; the host-device communicator sums in the same
// order, so its runs are the same bits as the CPU backend's under mpirun, and the same bits under
// torchrun: the stand-in launcher, and PyTorch 2's own where bench/torch2_venv.sh installed it (the CPU
// backend's processes reduce over Gloo's ring there, another order: not compared here). Against one
// process they differ by rounding only (expect_same_training's reason).
TEST_F(HostDevice, TwoAndThreeProcessesTrainAsTheCpuBackendDoesUnderMpirunAndTorchrun) {
  TempDir dir;
  write_file_atomic(dir / "cpu.toml", tiny_24_rows("cpu"));
  write_file_atomic(dir / "device.toml", tiny_24_rows(kHostDevice));
  const std::string steps = " --steps 10 --out ";
  auto r = run_command(train(dir / "device.toml") + steps + (dir / "one").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("host memory behind the device interface"), std::string::npos) << r.output;
  const std::vector<double> one = train_losses(dir / "one");
  ASSERT_EQ(one.size(), 10u);
  for (const int n : {2, 3}) {
    SCOPED_TRACE(str(n, " processes"));
    const fs::path by_cpu = dir / str("cpu-", n);
    r = run_command(mpirun(n) + train(dir / "cpu.toml") + steps + by_cpu.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::pair<std::string, std::string>> launchers = {{"mpirun", mpirun(n)},
                                                                  {"torchrun-stand-in", torchrun_standin(n)}};
    if (const std::string real = installed_torchrun(); !real.empty())  // PyTorch 2's, where installed
      launchers.emplace_back("torchrun", real + " --nproc_per_node " + std::to_string(n) + " --no-python ");
    for (const auto& [name, launcher] : launchers) {
      SCOPED_TRACE(name);
      const fs::path run = dir / str(name, "-", n);
      r = run_command(launcher + train(dir / "device.toml") + steps + run.string());
      ASSERT_EQ(r.exit_code, 0) << r.output;
      EXPECT_NE(r.output.find(str("rank 0 of ", n, " (TCP star through rank 0")), std::string::npos) << r.output;
      EXPECT_EQ(read_json_file(run / "train_summary.json")["device"]["world_size"], n);
      EXPECT_EQ(train_losses(run), train_losses(by_cpu));
      const std::vector<double> losses = train_losses(run);
      ASSERT_EQ(losses.size(), one.size());
      for (size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(losses[i], one[i], 1e-6 * one[i]) << "step " << i + 1;
    }
  }
}

// Rank 1 killed by SIGKILL in a backward pass while rank 0 waits for its gradients in the
// communicator: under mpirun the launcher ends the job; under torchrun (the stand-in launcher, which
// leaves the others running) rank 0's all-reduce finds the connection closed and rank 0 stops by
// itself, naming rank 1. The last checkpoint resumes on two processes to the uninterrupted run's
// losses (kill_rank_one_then_resume).
TEST_F(HostDevice, AKilledProcessStopsTheJobAndTheCheckpointResumes) {
  for (const auto& [name, launcher, rank_variable] :
       {std::tuple{"mpirun", mpirun(2), "OMPI_COMM_WORLD_RANK"}, std::tuple{"torchrun", torchrun_standin(2), "RANK"}}) {
    SCOPED_TRACE(name);
    TempDir dir;
    std::string killed;
    kill_rank_one_then_resume(dir.path(), launcher, rank_variable, &killed,
                              {{"[backend]\n", "[backend]\nname = \"" + kHostDevice + "\"\n"}});
    if (HasFatalFailure()) return;
    if (std::string(name) == "torchrun") {
      EXPECT_NE(killed.find("host-device all-reduce on rank 0 of 2: rank 1 closed its connection"), std::string::npos)
          << killed;
      EXPECT_NE(killed.find("rank 1 ended with signal 9"), std::string::npos) << killed;
    }
  }
}

// A run by the clock: rank 0's clock decides the last step and every process stops there (the
// agreed clock and stop signal are the process group's). A process that went on alone would wait in
// the communicator until its limit, 5 s here, and fail the job.
TEST_F(HostDevice, ThreeProcessesStopTogetherWhenTheClockRunsOut) {
  TempDir dir;
  write_file_atomic(dir / "device.toml", tiny_24_rows(kHostDevice, {{"run_by = \"steps\"", "run_by = \"budget\""},
                                                                    {"budget_seconds = 20.0", "budget_seconds = 3.0"}}));
  const Stopwatch watch;
  const auto r = run_command("CLOCKTRAIN_COLLECTIVE_TIMEOUT=5 CLOCKTRAIN_RANK0_TIMEOUT=5 " + torchrun_standin(3) +
                             train(dir / "device.toml") + " --out " + (dir / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json summary = read_json_file(dir / "run" / "train_summary.json");
  EXPECT_GT(summary["steps"].get<int64_t>(), 0);
  EXPECT_EQ(summary["device"]["world_size"], 3);
  EXPECT_EQ(train_rows(dir / "run"), summary["steps"].get<int64_t>());
  EXPECT_LT(watch.seconds(), 60.0);
}

}  // namespace
}  // namespace ct
