// Data-parallel training with real processes (mpirun or torchrun, one thread each), against one
// process training the same global batch (docs/parallel.md): the same losses, resume on the same
// process count, a killed process stopping the job, and the start-up checks across processes.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "parallel/parallel_test_support.h"
#include "util/threads.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/text_format.h"

namespace ct {
namespace {

using namespace test;  // parallel_test_support.h

// The fields of /proc/PID/stat after the command name; empty when the process is gone.
std::vector<std::string> proc_stat(pid_t pid) {
  std::error_code error;
  const fs::path path = "/proc/" + std::to_string(pid) + "/stat";
  if (!fs::exists(path, error)) return {};
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return {};
  }
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::vector<std::string> out;
  for (std::string field; fields >> field;) out.push_back(field);
  return out;
}

// Exited (or never there): no process, or a zombie its launcher has not reaped yet.
bool gone(pid_t pid) {
  const std::vector<std::string> stat = proc_stat(pid);
  return stat.empty() || stat[0] == "Z" || stat[0] == "X";
}

// User + system CPU seconds the process has used.
double cpu_seconds(pid_t pid) {
  const std::vector<std::string> stat = proc_stat(pid);  // utime and stime are fields 14 and 15 of stat
  if (stat.size() < 13) return 0.0;
  return (std::stod(stat[11]) + std::stod(stat[12])) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The process id that a launched process wrote into `file` (0 until it has).
pid_t pid_in(const fs::path& file) {
  if (!fs::exists(file)) return 0;
  const std::string text = read_file(file);
  return text.empty() || text.back() != '\n' ? 0 : static_cast<pid_t>(std::stol(text));
}

// The clocktrain process whose environment holds `variable` (e.g. "OMPI_COMM_WORLD_RANK=0") and one of
// whose arguments is `argument`; 0 while there is none.
pid_t clocktrain_process_with(const std::string& variable, const std::string& argument) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::vector<std::string> argv, environment;
    for (auto [file, words] : {std::pair{"cmdline", &argv}, std::pair{"environ", &environment}}) {
      std::ifstream in(entry.path() / file, std::ios::binary);
      for (std::string word; std::getline(in, word, '\0');) words->push_back(word);
    }
    if (argv.empty() || fs::path(argv[0]).filename() != "clocktrain") continue;
    if (std::find(argv.begin(), argv.end(), argument) == argv.end()) continue;
    if (std::find(environment.begin(), environment.end(), variable) != environment.end())
      return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}


TEST_F(DataParallel, TwoProcessesTrainTinyLikeOneOnTheSameGlobalBatch) {
  test::TempDir dir;
  for (const std::string precision : {"f32", "auto"}) {
    SCOPED_TRACE(precision);
    write_file_atomic(dir / "tiny.toml",
                      recipe_text("tiny", {{"matmul_precision = \"auto\"", "matmul_precision = \"" + precision + "\""}}));
    const fs::path one = dir / ("one-" + precision), two = dir / ("two-" + precision);
    auto r = test::run_command(train(dir / "tiny.toml") + " --steps 12 --out " + one.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = test::run_command(mpirun(2) + train(dir / "tiny.toml") + " --steps 12 --out " + two.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("2 processes"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("rank 0 of 2 (Open MPI"), std::string::npos) << r.output;
    // rank 0 alone spoke and wrote: one start line, one log
    EXPECT_EQ(r.output.find("clocktrain train:"), r.output.rfind("clocktrain train:")) << r.output;
    // f32: the max relative difference measured was 6.4e-8; bf16 rounds products to 8 bits, and one
    // rounding that lands the other way moves later steps by up to ~1e-4
    expect_same_training(train_losses(one), train_losses(two), precision == "f32" ? 1e-6 : 2e-3);
    const Json summary = read_json_file(two / "train_summary.json");
    EXPECT_EQ(summary["device"]["world_size"], 2);
    EXPECT_EQ(summary["tokens"], read_json_file(one / "train_summary.json")["tokens"]);
    // the held-out loss is rank 0's, on the same rows as one process's
    const auto eval_one = test::rows_of_kind(test::read_metrics(one), "eval");
    const auto eval_two = test::rows_of_kind(test::read_metrics(two), "eval");
    ASSERT_EQ(eval_one.size(), eval_two.size());
    for (size_t i = 0; i < eval_one.size(); ++i)
      EXPECT_NEAR(eval_two[i]["loss"].get<double>(), eval_one[i]["loss"].get<double>(),
                  (precision == "f32" ? 1e-6 : 2e-3) * eval_one[i]["loss"].get<double>());
  }
}

TEST_F(DataParallel, TwoProcessesTrainCpuSmallLikeOne) {
  // cpu-small's shape (4 layers of 256, sequence 512, 4 micro-batches of 8 rows a step) in f32
  test::TempDir dir;
  write_file_atomic(dir / "small.toml", recipe_text("cpu-small", {{"matmul_precision = \"auto\"", "matmul_precision = \"f32\""}}));
  const fs::path one = dir / "one", two = dir / "two";
  auto r = test::run_command(train(dir / "small.toml") + " --steps 2 --out " + one.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(mpirun(2) + train(dir / "small.toml") + " --steps 2 --out " + two.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<double> a = train_losses(one), b = train_losses(two);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  // two micro-batches per process: each process already adds two in its GEMMs, so not even step 1
  // is the same association; the same within f32 rounding
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-6 * a[i]) << "step " << i + 1;
}

TEST_F(DataParallel, AKilledProcessStopsTheJobAndTheLastCheckpointResumesOnTwo) {
  test::TempDir dir;
  std::string killed;
  kill_rank_one_then_resume(dir.path(), mpirun(2), "OMPI_COMM_WORLD_RANK", &killed);
  if (HasFatalFailure()) return;
  // mpirun names the lost process
  EXPECT_NE(killed.find("rank 1"), std::string::npos) << killed;
  EXPECT_NE(killed.find("signal 9"), std::string::npos) << killed;

  // and not on one
  const auto r = test::run_command(train(dir / "tiny.toml") + " --steps 9 --resume " +
                                   (dir / "cut" / "checkpoint").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("trained by 2 process(es) and this run has 1: resume it with 2"), std::string::npos)
      << r.output;
}

// A process that stops responding mid-training (SIGSTOP): the others give up after their limit
// (stall.h: rank 0 after CLOCKTRAIN_COLLECTIVE_TIMEOUT, 2 s here; the others after
// CLOCKTRAIN_RANK0_TIMEOUT, 3 s here) plus a roll call, idling meanwhile; the message names the
// stopped rank, the job ends non-zero, and no process is left behind (the stopped one is killed at the
// end in any case). Under mpirun and under torchrun (the stand-in launcher, which unlike torchrun
// leaves the others running), with rank 1 or rank 0 stopped.
class StoppedProcess : public DataParallel, public ::testing::WithParamInterface<std::tuple<std::string, int>> {};

TEST_P(StoppedProcess, EndsTheJobWithinTheLimitNamingIt) {
  const auto& [launcher_name, stopped_rank] = GetParam();
  const bool under_mpirun = launcher_name == "mpirun";
  const int waiting_rank = 1 - stopped_rank;
  const double limit = waiting_rank == 0 ? 2.0 : 3.0, roll_call = limit;  // roll call: min(5 s, the limit)
  test::TempDir dir;
  write_file_atomic(dir / "tiny.toml", tiny_f32());
  const fs::path run = dir / "run";
  const std::string launcher = under_mpirun ? mpirun(2) : torchrun_standin(2);
  start_in_background("CLOCKTRAIN_COLLECTIVE_TIMEOUT=2 CLOCKTRAIN_RANK0_TIMEOUT=3 " + launcher +
                          writing_pids(dir.path(), under_mpirun ? "OMPI_COMM_WORLD_RANK" : "RANK",
                                       train(dir / "tiny.toml") + " --steps 1000000 --out " + run.string()),
                      dir / "job.log", dir / "job.status");
  const auto log = [&] { return fs::exists(dir / "job.log") ? read_file(dir / "job.log") : std::string(); };
  ASSERT_TRUE(wait_until(60, [&] { return train_rows(run) >= 3; })) << "training did not start\n" << log();
  const pid_t stopped = pid_in(dir / ("pid." + std::to_string(stopped_rank)));
  const pid_t waiting = pid_in(dir / ("pid." + std::to_string(waiting_rank)));
  ASSERT_GT(stopped, 0);
  ASSERT_GT(waiting, 0);

  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  const Stopwatch since_stop;
  // the waiting process idles: less than a fifth of a core between 0.5 and 1.5 s after the stop
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double cpu_before = cpu_seconds(waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const double cpu_waiting = cpu_seconds(waiting) - cpu_before;
  const bool ended = wait_until(30, [&] { return gone(waiting); });
  const double seconds = since_stop.seconds();
  ::kill(stopped, SIGKILL);  // in any case
  if (!wait_until(30, [&] { return fs::exists(dir / "job.status"); })) ::kill(waiting, SIGKILL);
  ASSERT_TRUE(wait_until(30, [&] { return fs::exists(dir / "job.status"); })) << log();
  const std::string output = log();

  EXPECT_LT(cpu_waiting, 0.2) << "rank " << waiting_rank << " must wait idle, not spin";
  EXPECT_TRUE(ended) << "rank " << waiting_rank << " must stop by itself\n" << output;
  EXPECT_GE(seconds, limit) << output;
  EXPECT_LT(seconds, limit + roll_call + 6.0) << output;
  EXPECT_NE(read_file(dir / "job.status"), "0\n") << output;
  const std::string variable = waiting_rank == 0 ? "CLOCKTRAIN_COLLECTIVE_TIMEOUT" : "CLOCKTRAIN_RANK0_TIMEOUT";
  const std::string within = " did not complete within " + format_seconds(limit) + " (" + variable + ")";
  EXPECT_NE(output.find(under_mpirun ? str("rank ", waiting_rank, " of 2: the all-reduce", within)
                                     : str("Gloo: all-reduce on rank ", waiting_rank, " of 2", within)),
            std::string::npos)
      << output;
  EXPECT_NE(output.find(stopped_rank == 1 ? "rank 1 did not answer the roll call within 2 s: it stopped responding"
                                          : "rank 0 did not answer within 3 s more: it stopped responding"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("stopping every process of the job"), std::string::npos) << output;
  // SIGKILL is delivered asynchronously: the stopped process may take a moment to die after the job
  // ends, so this waits a short while rather than looking once.
  EXPECT_TRUE(wait_until(5, [&] { return gone(stopped) && gone(waiting); })) << "no process is left behind";
}

INSTANTIATE_TEST_SUITE_P(Launchers, StoppedProcess,
                         ::testing::Combine(::testing::Values("mpirun", "torchrun"), ::testing::Values(1, 0)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
                           return std::get<0>(info.param) + "_rank" + std::to_string(std::get<1>(info.param));
                         });

// A 2-process run stopped by SIGTERM (sent to rank 0, whose clock and signals every process follows)
// prints the command that continues it, launcher included: run as printed it resumes the run on two
// processes to its last step. Under mpirun, started directly by it, so that the whole mpirun command
// is repeated (an option the environment does not show, --mca btl, included); and under torchrun (a
// `torchrun` on PATH that starts the stand-in launcher, through a shell: the launch is rebuilt). On
// the CPU backend and on the host-device backend (the device path: host_device_test.cpp).
class SignalledJob : public DataParallel,
                     public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {};

TEST_P(SignalledJob, PrintsTheLauncherAndResumesWhenRunAsPrinted) {
  const bool under_mpirun = std::get<0>(GetParam()) == "mpirun";
  test::TempDir dir;
  write_file_atomic(dir / "tiny.toml", with_backend(tiny_f32(), std::get<1>(GetParam())));
  fs::create_directories(dir / "bin");
  const fs::path standin = test::source_dir() / "tests" / "parallel" / "torchrun_standin.py";
  write_file_atomic(dir / "bin" / "torchrun",
                    "#!/bin/sh\nexec " + test::python() + " " + standin.string() + " \"$@\"\n");
  fs::permissions(dir / "bin" / "torchrun", fs::perms::owner_all);
  const std::string path = "PATH=" + (dir / "bin").string() + ":$PATH ";
  const std::string mca = "--mca btl self,vader ";
  const std::string launcher = under_mpirun ? mpirun(2) + mca : path + "torchrun --nproc_per_node 2 --no-python ";
  const fs::path run = dir / "run";
  constexpr int64_t kSteps = 30;
  const std::string command = train(dir / "tiny.toml") + " --steps " + std::to_string(kSteps) + " --out " + run.string();
  start_in_background(launcher + (under_mpirun ? command : writing_pids(dir.path(), "RANK", command)),
                      dir / "job.log", dir / "job.status");
  ASSERT_TRUE(wait_until(60, [&] { return train_rows(run) >= 3; })) << read_file(dir / "job.log");
  const pid_t rank0 = under_mpirun ? clocktrain_process_with("OMPI_COMM_WORLD_RANK=0", run.string())
                                   : pid_in(dir / "pid.0");
  ASSERT_GT(rank0, 0);
  ASSERT_EQ(::kill(rank0, SIGTERM), 0);
  ASSERT_TRUE(wait_until(60, [&] { return fs::exists(dir / "job.status"); })) << read_file(dir / "job.log");
  const std::string output = read_file(dir / "job.log");
  EXPECT_NE(read_file(dir / "job.status"), "0\n") << output;
  ASSERT_LT(read_json_file(run / "train_summary.json")["steps"].get<int64_t>(), kSteps)
      << "the run ended before the signal; nothing was tested";

  const std::string marker = "stopped by SIGTERM; continue with: ";
  const size_t at = output.find(marker);
  ASSERT_NE(at, std::string::npos) << output;
  const std::string printed = output.substr(at + marker.size(), output.find('\n', at) - at - marker.size());
  const std::string as_root = ::geteuid() == 0 ? "--allow-run-as-root " : "";
  const std::string expected_start =
      (under_mpirun ? "mpirun -np 2 --oversubscribe --bind-to none " + mca + as_root
                    : std::string("torchrun --nproc_per_node 2 --no-python ")) +
      test::clocktrain_bin() + " train ";
  EXPECT_EQ(printed.substr(0, expected_start.size()), expected_start) << printed;
  EXPECT_NE(printed.find(" --resume " + (run / "checkpoint").string()), std::string::npos) << printed;

  // as printed (torchrun found on PATH, as where it was started)
  const auto r = test::run_command(path + printed);
  ASSERT_EQ(r.exit_code, 0) << printed << "\n" << r.output;
  EXPECT_EQ(read_json_file(run / "train_summary.json")["steps"], kSteps);
  EXPECT_EQ(read_json_file(run / "train_summary.json")["device"]["world_size"], 2);
  const auto events = test::rows_of_kind(test::read_metrics(run), "event");
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const Json& e) { return e["event"] == "resume"; }));
  EXPECT_EQ(test::rows_of_kind(test::read_metrics(run), "train").size(), static_cast<size_t>(kSteps));
}

INSTANTIATE_TEST_SUITE_P(Launchers, SignalledJob,
                         ::testing::Combine(::testing::Values("mpirun", "torchrun"), ::testing::Values("cpu", "host-device")),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
                           std::string backend = std::get<1>(info.param);
                           std::replace(backend.begin(), backend.end(), '-', '_');
                           return std::get<0>(info.param) + "_" + backend;
                         });

// optimizer.sharded: each process updates the matrices and AdamW parameters it owns and broadcasts
// them; the owner computes exactly what every process computes unsharded, so the run is the same
// bits. A checkpoint gathers the owners' state first: a sharded run resumed from its checkpoint
// continues as if never stopped (with an owner's momentum missing it would not).
TEST_F(DataParallel, ShardedOptimizerTrainsAndResumesLikeTheUnshardedOne) {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> f32 = {{"matmul_precision = \"auto\"", "matmul_precision = \"f32\""}};
  write_file_atomic(dir / "tiny.toml", recipe_text("tiny", f32));
  std::string sharded = recipe_text("tiny", f32);
  sharded += "\n[optimizer]\nsharded = true\n";
  write_file_atomic(dir / "sharded.toml", sharded);
  const fs::path plain = dir / "plain", whole = dir / "whole", split = dir / "split";
  auto r = test::run_command(mpirun(2) + train(dir / "tiny.toml") + " --steps 8 --out " + plain.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(mpirun(2) + train(dir / "sharded.toml") + " --steps 8 --out " + whole.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(train_losses(whole), train_losses(plain));
  r = test::run_command(mpirun(2) + train(dir / "sharded.toml") + " --steps 8 --stop-after-steps 4 --out " +
                        split.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(mpirun(2) + train(dir / "sharded.toml") + " --steps 8 --resume " + (split / "checkpoint").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(train_losses(split), train_losses(whole));
}

// torchrun's processes meet in torchrun's store and reduce over Gloo: the same bits as mpirun's
// processes over MPI at every step (each element is a + b either way, scaled afterwards by the same
// factor), so the comparison with one process above carries over.
TEST_F(DataParallel, TorchrunProcessesTrainLikeMpirunOnes) {
  test::TempDir dir;
  std::vector<std::pair<std::string, std::string>> launchers = {{"stand-in", torchrun_standin(2)}};
  if (const std::string real = installed_torchrun(); !real.empty())
    launchers.emplace_back("torchrun", real + " --nproc_per_node 2 --no-python ");
  else
    std::printf("(PyTorch's torchrun is not installed: bench/torch2_venv.sh; only the stand-in runs)\n");
  for (const std::string precision : {"f32", "auto"}) {
    SCOPED_TRACE(precision);
    write_file_atomic(dir / "tiny.toml",
                      recipe_text("tiny", {{"matmul_precision = \"auto\"", "matmul_precision = \"" + precision + "\""}}));
    const fs::path by_mpi = dir / ("mpi-" + precision);
    auto r = test::run_command(mpirun(2) + train(dir / "tiny.toml") + " --steps 12 --out " + by_mpi.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const auto& [name, launcher] : launchers) {
      SCOPED_TRACE(name);
      const fs::path by_gloo = dir / (name + "-" + precision);
      r = test::run_command(launcher + train(dir / "tiny.toml") + " --steps 12 --out " + by_gloo.string());
      ASSERT_EQ(r.exit_code, 0) << r.output;
      EXPECT_NE(r.output.find("rank 0 of 2 (Gloo"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("clocktrain train:"), r.output.rfind("clocktrain train:")) << r.output;
      EXPECT_EQ(train_losses(by_gloo), train_losses(by_mpi));
      EXPECT_EQ(read_json_file(by_gloo / "train_summary.json")["device"]["world_size"], 2);
    }
  }
}

// Under torchrun a killed process closes its connections: the others' next all-reduce fails and they
// stop by themselves (the stand-in launcher, unlike torchrun, does not stop them); the last
// checkpoint resumes on two processes to the uninterrupted run's losses (kill_rank_one_then_resume).
TEST_F(DataParallel, UnderTorchrunAKilledProcessStopsTheOthersAndTheCheckpointResumes) {
  test::TempDir dir;
  std::string killed;
  kill_rank_one_then_resume(dir.path(), torchrun_standin(2), "RANK", &killed);
  if (HasFatalFailure()) return;
  EXPECT_NE(killed.find("Gloo: all-reduce on rank 0 of 2 failed (a process of the job stopped or cannot be reached)"),
            std::string::npos)
      << killed;
  EXPECT_NE(killed.find("rank 0 ended with exit code 1"), std::string::npos) << killed;
  EXPECT_NE(killed.find("rank 1 ended with signal 9"), std::string::npos) << killed;
}

// torchrun's variables set by hand: no store to meet in (torchrun's agent serves it), so CPU processes
// are refused before anything is written.
TEST_F(DataParallel, TorchrunVariablesWithoutTorchrunAreRefusedForCpuProcesses) {
  test::TempDir dir;
  write_file_atomic(dir / "tiny.toml", recipe_text("tiny"));
  const auto r = test::run_command("RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 " +
                                   train(dir / "tiny.toml") + " --steps 2 --out " + (dir / "run").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("meet in torchrun's store (TORCHELASTIC_USE_AGENT_STORE=True, which torchrun sets)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// Under torchrun: a rank that never comes is an error on the others within the rendezvous timeout,
// naming the rank; processes with different recipes stop as under mpirun; nothing is written.
TEST_F(DataParallel, UnderTorchrunAMissingOrDisagreeingRankStopsBeforeWritingAnything) {
  test::TempDir dir;
  write_file_atomic(dir / "tiny.toml", recipe_text("tiny"));
  write_file_atomic(dir / "other.toml", recipe_text("tiny", {{"steps = 20", "steps = 21"}, {"n_embd = 64", "n_embd = 32"}}));
  const std::string rank1_exits = "sh -c 'if [ \"$RANK\" = 1 ]; then exit 0; fi; exec " + train(dir / "tiny.toml") +
                                  " --steps 2 --out " + (dir / "run").string() + "'";
  const Stopwatch watch;
  auto r = test::run_command("CLOCKTRAIN_RENDEZVOUS_TIMEOUT=2 " + torchrun_standin(2) + rank1_exits);
  EXPECT_LT(watch.seconds(), 30.0) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Gloo: rank 0 of 2 could not connect to the others"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'clocktrain/gloo/restart_0/1' was not set in 127.0.0.1:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("within 2 s"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "run"));

  const std::string per_rank = "sh -c 'recipe=" + (dir / "tiny.toml").string() + "; [ \"$RANK\" = 1 ] && recipe=" +
                               (dir / "other.toml").string() + "; exec " + test::clocktrain_bin() +
                               " train $recipe --data " + data_.string() + " --threads 1 --no-progress --steps 2 --out " +
                               (dir / "run").string() + "'";
  r = test::run_command(torchrun_standin(2) + per_rank);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("process(es) 1 of 2 run another recipe, clocktrain version or data folder than rank 0"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// Two "hosts": two network namespaces joined by a veth pair, each with a host name of its own (a
// UTS namespace), one process in each; mpirun starts the remote one through an agent script (what
// ssh does between machines) and the processes meet over TCP at 10.77.0.1 and 10.77.0.2, not over
// loopback or shared memory. Needs root, iproute2 and unshare (CI runs as root).
class TwoHosts {
 public:
  // Empty where this machine can make the two namespaces (root, iproute2, unshare), else why not.
  static std::string unavailable() {
    if (::geteuid() == 0 && test::run_command("command -v ip && command -v unshare").exit_code == 0) return "";
    return "needs root, iproute2 and unshare to make two network namespaces";
  }
  TwoHosts(const fs::path& dir) : suffix_(std::to_string(::getpid())), agent_(dir / "netns-agent.sh") {
    const std::string a = "cta" + suffix_, b = "ctb" + suffix_;
    const std::string setup = "ip netns add " + a + " && ip netns add " + b + " && ip link add va" + suffix_ +
                              " type veth peer name vb" + suffix_ + " && ip link set va" + suffix_ + " netns " + a +
                              " && ip link set vb" + suffix_ + " netns " + b + " && ip -n " + a +
                              " addr add 10.77.0.1/24 dev va" + suffix_ + " && ip -n " + b +
                              " addr add 10.77.0.2/24 dev vb" + suffix_ + " && ip -n " + a + " link set va" + suffix_ +
                              " up && ip -n " + b + " link set vb" + suffix_ + " up && ip -n " + a +
                              " link set lo up && ip -n " + b + " link set lo up";
    const auto r = test::run_command(setup);
    ready_ = r.exit_code == 0;
    why_ = r.output;
    // Open MPI's remote-start agent: `agent HOST COMMAND...` runs COMMAND in HOST's namespace
    write_file_atomic(agent_, "#!/bin/sh\nhost=$1; shift\ncase \"$host\" in 10.77.0.1) ns=" + a +
                                  "; name=host-a ;; 10.77.0.2) ns=" + b +
                                  "; name=host-b ;; *) echo \"agent: unknown host $host\" >&2; exit 1 ;; esac\n"
                                  "exec ip netns exec \"$ns\" unshare --uts sh -c \"hostname $name; $*\"\n");
    fs::permissions(agent_, fs::perms::owner_all);
  }
  ~TwoHosts() { test::run_command("ip netns del cta" + suffix_ + "; ip netns del ctb" + suffix_); }
  bool ready() const { return ready_; }
  // The link between the hosts down (a network partition: packets dropped, connections left open) or up.
  void set_link(bool up) const {
    test::run_command("ip -n ctb" + suffix_ + " link set vb" + suffix_ + (up ? " up" : " down"));
  }
  const std::string& why() const { return why_; }
  // `command` (no single quotes) run on host 'a' or 'b', with that host's name
  std::string on_host(char host, const std::string& command) const {
    return std::string("ip netns exec ct") + host + suffix_ + " unshare --uts sh -c 'hostname host-" + host +
           "; exec " + command + "'";
  }
  // `command` (a shell command line) run by mpirun from host a, one process on each host
  std::string mpirun(const std::string& command) const {
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ip netns exec cta" + suffix_ +
           " unshare --uts sh -c 'hostname host-a; mpirun -np 2 --host 10.77.0.1,10.77.0.2 --mca plm_rsh_agent " +
           agent_.string() + " --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include " +
           "10.77.0.0/24 " + command + "'";
  }

 private:
  std::string suffix_;
  fs::path agent_;
  bool ready_ = false;
  std::string why_;
};

TEST_F(DataParallel, TwoHostsOverTcpTrainLikeOneProcess) {
  if (const std::string why = TwoHosts::unavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  TwoHosts hosts(dir.path());
  ASSERT_TRUE(hosts.ready()) << hosts.why();
  // each process says where it runs: its host name and network namespace differ
  auto r = test::run_command(hosts.mpirun("sh -c \"echo rank \\$OMPI_COMM_WORLD_RANK on \\$(hostname) in "
                                          "\\$(readlink /proc/self/ns/net)\""));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0 on host-a"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1 on host-b"), std::string::npos) << r.output;

  write_file_atomic(dir / "tiny.toml", tiny_f32());
  const fs::path one = dir / "one", two = dir / "two";
  r = test::run_command(train(dir / "tiny.toml") + " --steps 8 --out " + one.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(hosts.mpirun(train(dir / "tiny.toml") + " --steps 8 --out " + two.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_training(train_losses(one), train_losses(two), 1e-6);
}

// A network partition between the two hosts mid-training: each side's collective stops completing,
// and each process ends by itself within its limit plus the roll call, naming the other (rank 0 after
// CLOCKTRAIN_COLLECTIVE_TIMEOUT = 2 s, rank 1 after CLOCKTRAIN_RANK0_TIMEOUT = 3 s), rather than waiting
// for TCP to give up. mpirun, which cannot reach host b's side to stop it, ends once the link is back.
TEST_F(DataParallel, TwoHostsCutOffFromEachOtherStopWithinTheLimitNamingEachOther) {
  if (const std::string why = TwoHosts::unavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  TwoHosts hosts(dir.path());
  ASSERT_TRUE(hosts.ready()) << hosts.why();
  write_file_atomic(dir / "tiny.toml", tiny_f32());
  const fs::path run = dir / "run";
  // (each rank through a script: the agent's command line is already inside single quotes)
  write_file_atomic(dir / "rank.sh", "#!/bin/sh\necho $$ > " + (dir / "pid.").string() +
                                         "$OMPI_COMM_WORLD_RANK\nexport CLOCKTRAIN_COLLECTIVE_TIMEOUT=2 "
                                         "CLOCKTRAIN_RANK0_TIMEOUT=3\nexec " +
                                         train(dir / "tiny.toml") + " --steps 1000000 --out " + run.string() + "\n");
  fs::permissions(dir / "rank.sh", fs::perms::owner_all);
  start_in_background(hosts.mpirun((dir / "rank.sh").string()), dir / "job.log", dir / "job.status");
  const auto log = [&] { return fs::exists(dir / "job.log") ? read_file(dir / "job.log") : std::string(); };
  ASSERT_TRUE(wait_until(60, [&] { return train_rows(run) >= 3; })) << "training did not start\n" << log();
  const pid_t rank0 = pid_in(dir / "pid.0"), rank1 = pid_in(dir / "pid.1");
  ASSERT_GT(rank0, 0);
  ASSERT_GT(rank1, 0);

  hosts.set_link(false);
  const Stopwatch since_cut;
  const bool rank0_ended = wait_until(20, [&] { return gone(rank0); });
  const double rank0_seconds = since_cut.seconds();
  const bool rank1_ended = wait_until(20, [&] { return gone(rank1); });
  const double rank1_seconds = since_cut.seconds();
  hosts.set_link(true);
  if (!wait_until(60, [&] { return fs::exists(dir / "job.status"); })) {
    ::kill(rank0, SIGKILL);
    ::kill(rank1, SIGKILL);
  }
  ASSERT_TRUE(wait_until(30, [&] { return fs::exists(dir / "job.status"); })) << log();
  const std::string output = log();
  EXPECT_TRUE(rank0_ended && rank1_ended) << output;
  EXPECT_LT(rank0_seconds, 2.0 + 2.0 + 6.0) << output;
  EXPECT_LT(rank1_seconds, 3.0 + 3.0 + 6.0) << output;
  EXPECT_NE(read_file(dir / "job.status"), "0\n") << output;
  EXPECT_NE(output.find("rank 0 of 2: the all-reduce did not complete within 2 s (CLOCKTRAIN_COLLECTIVE_TIMEOUT); "
                        "rank 1 did not answer the roll call within 2 s"),
            std::string::npos)
      << output;
  // (host b's output reaches mpirun once the link is back)
  EXPECT_NE(output.find("rank 1 of 2: the all-reduce did not complete within 3 s (CLOCKTRAIN_RANK0_TIMEOUT), and "
                        "rank 0 did not answer within 3 s more"),
            std::string::npos)
      << output;
}

// The same two hosts under PyTorch's own torchrun, one node each (`--nnodes 2`): torchrun's store
// runs on host a, and each process's Gloo device listens on its host's address towards it. The same
// bits as mpirun's two processes at every step.
TEST_F(DataParallel, TwoHostsUnderTorchrunTrainLikeMpirun) {
  const std::string torchrun = installed_torchrun();
  if (torchrun.empty()) GTEST_SKIP() << "PyTorch's torchrun is not installed (bench/torch2_venv.sh)";
  if (const std::string why = TwoHosts::unavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  TwoHosts hosts(dir.path());
  ASSERT_TRUE(hosts.ready()) << hosts.why();
  write_file_atomic(dir / "tiny.toml", tiny_f32());
  const fs::path by_mpi = dir / "mpi", two = dir / "two";
  auto r = test::run_command(mpirun(2) + train(dir / "tiny.toml") + " --steps 8 --out " + by_mpi.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto node = [&](int rank) {
    return "env CLOCKTRAIN_RENDEZVOUS_TIMEOUT=60 " + torchrun + " --nnodes 2 --nproc_per_node 1 --node_rank " +
           std::to_string(rank) + " --master_addr 10.77.0.1 --master_port 29533 --no-python " +
           train(dir / "tiny.toml") + " --steps 8 --out " + two.string();
  };
  // host a in the background, host b in the foreground; both must succeed
  r = test::run_command(hosts.on_host('a', node(0)) + " > " + (dir / "a.log").string() + " 2>&1 & " +
                        hosts.on_host('b', node(1)) + " > " + (dir / "b.log").string() + " 2>&1; status=$?; wait $! ; "
                        "a=$?; cat " + (dir / "a.log").string() + " " + (dir / "b.log").string() +
                        "; [ $status = 0 ] && [ $a = 0 ]");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0 of 2 (Gloo"), std::string::npos) << r.output;
  EXPECT_EQ(train_losses(two), train_losses(by_mpi));
}

// `clocktrain run` launched on two processes (round 2, a practice run with the small CORE bundle):
// rank 0 prepares the data and the others reuse it, both train, rank 0 evaluates and writes one
// result, and the gate's full_machine check counts both processes' threads against the cores the
// two may run on together.
// The same under torchrun (the stand-in launcher): Gloo instead of MPI, nothing else changes.
class RunOnTwoProcesses : public DataParallel, public ::testing::WithParamInterface<std::string> {};

TEST_P(RunOnTwoProcesses, UsesBothAndWritesOneResult) {
  test::TempDir dir;
  const fs::path data = test::make_run_data(dir.path(), /*with_core=*/true);
  const fs::path recipe = test::write_run_recipe(dir / "toy.toml");
  const std::string launcher = GetParam() == "mpirun" ? mpirun(2) : torchrun_standin(2);
  // Each process touches left.<rank> as it exits, with its exit status kept.
  const std::string run = test::clocktrain_bin() + " run " + recipe.string() + " --data " + data.string() +
                          " --cache " + (dir / "cache").string() + " --out " + (dir / "run").string() +
                          " --shard-tokens 20000 --heldout-tokens 2000 --no-progress --threads 1 --round 2 "
                          "--budget 2 --practice";
  const auto r = test::run_command(launcher + "sh -c '" + run + "; status=$?; touch " + (dir / "left.").string() +
                                   "${OMPI_COMM_WORLD_RANK:-$RANK}; exit $status'");
  EXPECT_NE(r.output.find(GetParam() == "mpirun" ? "(Open MPI" : "(Gloo"), std::string::npos) << r.output;
  // 3: the gate failed (below). mpirun exits with its first failed rank's code; torchrun (and the
  // stand-in) exit 1 when any worker failed, and say how each ended.
  const bool torchrun_saw_the_gate_fail = r.exit_code == 1 &&
                                          r.output.find("rank 0 ended with exit code 3") != std::string::npos &&
                                          r.output.find("rank 1 ended with exit code 0") != std::string::npos;
  const bool gate_failed = GetParam() == "mpirun" ? r.exit_code == 3 : torchrun_saw_the_gate_fail;
  ASSERT_TRUE(r.exit_code == 0 || gate_failed) << r.output;
  EXPECT_EQ(r.output.find("run: toy"), r.output.rfind("run: toy")) << "one process speaks\n" << r.output;
  const RunResult result = read_result_file(dir / "run");
  // The time check may fail on a busy machine (a 2-second budget, a step slower than the recent
  // ones at its end); every other check must pass, and full_machine on a 2-core machine.
  for (const std::string& failed : result.gate.failed_checks())
    EXPECT_TRUE(failed == "time" || (failed == "full_machine" && machine_cpus().count != 2)) << failed << "\n" << r.output;
  const GateCheck& machine = test::check_named(result, "full_machine");
  EXPECT_NE(machine.evidence.find("cpu: 2 thread(s) used of " + std::to_string(machine_cpus().count) + " CPU(s)"),
            std::string::npos)
      << machine.evidence;
  EXPECT_EQ(machine.passed, machine_cpus().count == 2) << machine.evidence;
  EXPECT_TRUE(test::check_named(result, "trusted_evaluation").passed);
  EXPECT_TRUE(result.core.has_value());
  EXPECT_EQ(read_json_file(dir / "run" / "train_summary.json")["device"]["world_size"], 2);
  // Rank 1 left once the job's last collective was done, before rank 0 had evaluated and written the
  // result (under mpirun it used to wait in MPI_Finalize until rank 0 exited).
  ASSERT_TRUE(fs::exists(dir / "left.1")) << r.output;
  EXPECT_LT(fs::last_write_time(dir / "left.1"), fs::last_write_time(dir / "run" / kResultFileName));
}

INSTANTIATE_TEST_SUITE_P(Launchers, RunOnTwoProcesses, ::testing::Values("mpirun", "torchrun"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST_F(DataParallel, ProcessesThatDisagreeStopBeforeWritingAnything) {
  test::TempDir dir;
  write_file_atomic(dir / "tiny.toml", recipe_text("tiny"));
  write_file_atomic(dir / "other.toml", recipe_text("tiny", {{"steps = 20", "steps = 21"}, {"n_embd = 64", "n_embd = 32"}}));
  // rank 1 gets another recipe
  const std::string per_rank = "sh -c 'recipe=" + (dir / "tiny.toml").string() +
                               "; [ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && recipe=" + (dir / "other.toml").string() +
                               "; exec " + test::clocktrain_bin() + " train $recipe --data " + data_.string() +
                               " --threads 1 --no-progress --steps 2 --out " + (dir / "run").string() + "'";
  auto r = test::run_command(mpirun(2) + per_rank);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("process(es) 1 of 2 run another recipe, clocktrain version or data folder than rank 0"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "run"));

  // three processes cannot share two micro-batches
  r = test::run_command(mpirun(3) + train(dir / "tiny.toml") + " --steps 2 --out " + (dir / "run3").string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a step of 2 micro-batches of 8 rows"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not divide among 3 processes"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "run3"));
}

}  // namespace
}  // namespace ct
