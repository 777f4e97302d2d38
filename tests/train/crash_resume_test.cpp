// Crash-safe runs: `clocktrain train` killed with SIGKILL at random moments and at every
// step of a checkpoint write, stopped by SIGTERM and SIGINT, and writing to a full or read-only disk.
// After every kill the checkpoint is readable, and the resumed run's losses equal an uninterrupted
// run's step for step, bit for bit (CPU, one thread).
#include <gmock/gmock.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "backend/backend.h"
#include "model/gpt.h"
#include "optim/optimizer.h"
#include "train/checkpoint.h"
#include "train/train_test_support.h"
#include "util/files.h"
#include "util/sha256.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
using test::describe;
using test::spawn;
using test::wait_for;

constexpr int64_t kSteps = 24;

// The last train step in metrics.jsonl while the trainer may be writing it (a line may be half there).
int64_t last_train_step(const fs::path& run) {
  if (!fs::exists(run / "metrics.jsonl")) return 0;
  std::istringstream in(read_file(run / "metrics.jsonl"));
  std::string line;
  int64_t step = 0;
  while (std::getline(in, line)) {
    const Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_object() && row.value("kind", "") == "train") step = row["step"].get<int64_t>();
  }
  return step;
}

// step -> loss of the train rows, and a check that every step appears once.
std::map<int64_t, double> losses_of(const fs::path& run) {
  std::map<int64_t, double> out;
  for (const Json& row : test::rows_of_kind(test::read_metrics(run), "train")) {
    const int64_t step = row["step"].get<int64_t>();
    EXPECT_EQ(out.count(step), 0u) << run << ": step " << step << " appears twice in metrics.jsonl";
    out[step] = row["loss"].get<double>();
  }
  return out;
}

class CrashResume : public ::testing::Test {
 protected:
  // The suite's data, recipe and reference run are made by the first test that runs, not in
  // SetUpTestSuite: a fatal failure there makes googletest skip the tests, and ctest reports them as
  // skipped rather than failed (that hid a crashing reference run once).
  void SetUp() override {
    if (!prepare_attempted_) {
      prepare_attempted_ = true;
      prepare_suite();
    }
    ASSERT_TRUE(prepared_) << "the suite's uninterrupted reference run failed (see the first test's output)";
  }
  static void prepare_suite() {
    root_ = new test::TempDir("suite");  // not the first test's own scratch_, which it removes at its end
    data_ = test::make_test_data(root_->path());
    // recipes/tiny.toml at the test data's vocabulary, a checkpoint after (nearly) every step, and a
    // held-out evaluation every 5 steps, so kills land in steps, evaluations and checkpoint writes.
    std::string text = test::tiny_toml_byte_vocab();
    auto replace = [&](const std::string& from, const std::string& to) {
      ASSERT_NE(text.find(from), std::string::npos) << from;
      text.replace(text.find(from), from.size(), to);
    };
    replace("every_minutes = 0.0", "every_minutes = 0.00001");
    replace("every_steps = 10", "every_steps = 5");
    recipe_ = root_->path() / "crash.toml";
    write_file_atomic(recipe_, text);
    // The uninterrupted run every test compares with.
    reference_ = new std::map<int64_t, double>();
    const fs::path run = root_->path() / "reference";
    const auto started = std::chrono::steady_clock::now();
    const int status = wait_for(spawn(train_args(run, false), root_->path() / "reference.log"));
    reference_wall_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(root_->path() / "reference.log");
    *reference_ = losses_of(run);
    ASSERT_EQ(reference_->size(), static_cast<size_t>(kSteps));
    prepared_ = true;
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete root_;
  }

  static std::vector<std::string> train_args(const fs::path& run, bool resume, int64_t steps = kSteps) {
    std::vector<std::string> args = {test::clocktrain_bin(), "train", recipe_.string(), "--data", data_.string(),
                                     "--threads", "1", "--no-progress", "--steps", std::to_string(steps)};
    if (resume) {
      args.insert(args.end(), {"--resume", (run / "checkpoint").string()});
    } else {
      args.insert(args.end(), {"--out", run.string()});
    }
    return args;
  }

  // Loads the checkpoint the way `--resume` does (after the same crash repair) into a fresh model and
  // optimizer of the recipe; returns its step.
  static int64_t load_checkpoint(const fs::path& dir) {
    Recipe r = load_recipe(recipe_);
    BackendOptions backend_options;
    backend_options.threads = 1;
    auto backend = create_backend(backend_options);
    GPT model(*backend, r.model, DType::f32);
    Optimizer optimizer(model, r.optimizer);
    recover_checkpoint_directory(dir);
    return load_training_checkpoint(dir, model, optimizer).progress.step;
  }

  // The run folder continued to the end (resumed as often as needed) has the reference's losses.
  static void expect_reference_losses(const fs::path& run) {
    const std::map<int64_t, double> losses = losses_of(run);
    ASSERT_EQ(losses.size(), reference_->size()) << run;
    for (const auto& [step, loss] : *reference_) {
      ASSERT_EQ(losses.count(step), 1u) << "step " << step;
      EXPECT_EQ(losses.at(step), loss) << "step " << step << " differs from the uninterrupted run";
    }
  }

  static void resume_to_the_end(const fs::path& run, const fs::path& log) {
    const int status = wait_for(spawn(train_args(run, true), log));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status) << "\n" << read_file(log);
  }

  static bool prepare_attempted_, prepared_;
  static test::TempDir* root_;
  static fs::path data_, recipe_;
  static std::map<int64_t, double>* reference_;
  static double reference_wall_seconds_;  // of the whole uninterrupted run, startup included
  test::TempDir scratch_;
};
bool CrashResume::prepare_attempted_ = false, CrashResume::prepared_ = false;
test::TempDir* CrashResume::root_ = nullptr;
fs::path CrashResume::data_, CrashResume::recipe_;
std::map<int64_t, double>* CrashResume::reference_ = nullptr;
double CrashResume::reference_wall_seconds_ = 0.0;

// SIGKILL at each named moment of a checkpoint write (util/fault_point.h): after the weights of the
// staged folder, with the staged folder complete, right after the swap into place (the old folder not
// yet removed), and with half a metrics line written.
TEST_F(CrashResume, KilledAtEveryStepOfACheckpointWriteResumesExactly) {
  for (const char* point : {"checkpoint.model_written", "checkpoint.staged", "checkpoint.swapped", "metrics.half_line"}) {
    SCOPED_TRACE(point);
    const fs::path run = scratch_ / point, log = scratch_ / (std::string(point) + ".log");
    // The 7th passage: checkpoints of earlier steps exist, so a previous one must survive.
    const int status = wait_for(spawn(train_args(run, false), log, {str("CLOCKTRAIN_KILL_AT=", point, ":7")}));
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describe(status) << "\n" << read_file(log);
    const int64_t step = load_checkpoint(run / "checkpoint");
    EXPECT_GT(step, 0);
    EXPECT_LT(step, kSteps);
    resume_to_the_end(run, log);
    EXPECT_EQ(load_checkpoint(run / "checkpoint"), kSteps);
    expect_reference_losses(run);
    // Nothing left over from the crashed write.
    for (const auto& entry : fs::directory_iterator(run))
      EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr("checkpoint.")));
  }
}

// A crash between the two renames of replace_directory's fallback (file systems without
// RENAME_EXCHANGE) leaves only checkpoint.old: the repair puts it back.
TEST_F(CrashResume, RepairPutsBackTheMovedAsideCheckpoint) {
  const fs::path run = scratch_ / "run", log = scratch_ / "run.log";
  const int status = wait_for(spawn(train_args(run, false, 3), log));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(log);
  fs::rename(run / "checkpoint", run / "checkpoint.old");
  fs::create_directories(run / "checkpoint.tmp.999999");
  write_file_atomic(run / "checkpoint.tmp.999999" / "model.safetensors", "half a file");
  EXPECT_EQ(load_checkpoint(run / "checkpoint"), 3);
  EXPECT_FALSE(fs::exists(run / "checkpoint.old"));
  EXPECT_FALSE(fs::exists(run / "checkpoint.tmp.999999"));
}

// SIGKILL at random moments, again and again, each time resuming from whatever is on disk: the
// checkpoint is readable after every kill, and each run completes with the reference's losses. A
// session that ends before its kill completes its run; the next session starts a new one. The kills
// go on until there have been kKills of them and kChecked found a checkpoint to read back: where the
// startup is a large part of a run, 12 kills drawn from the first 0.7 of it could all land before the
// first checkpoint (CI saw it once), so kills past the quota are drawn later in the run.
TEST_F(CrashResume, RandomKillsThenResumeGiveTheUninterruptedLosses) {
  constexpr int kKills = 12, kChecked = 3;
  const fs::path log = scratch_ / "run.log";
  std::mt19937 random(20261130);
  int kills = 0, checked = 0, runs_completed = 0;
  auto killing = [&] { return kills < kKills || checked < kChecked; };
  fs::path run = scratch_ / "run0";
  for (int session = 0; session < 400; ++session) {
    const bool resume = fs::exists(run / "checkpoint") || fs::exists(run / "checkpoint.old");
    if (!resume) fs::remove_all(run);  // killed before its first checkpoint: start again
    const pid_t pid = spawn(train_args(run, resume), log);
    int status = 0;
    if (killing()) {
      // Between a tenth (about the startup) and 0.7 of an uninterrupted run's wall time; past the
      // quota of kills, between half of it and all of it.
      const bool early = kills < kKills;
      const double delay =
          std::uniform_real_distribution<double>(early ? 0.1 : 0.5, early ? 0.7 : 1.0)(random) * reference_wall_seconds_;
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      if (::waitpid(pid, &status, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        status = wait_for(pid);
        // A run that finished between waitpid and kill (the signal reached a zombie) is a completed run.
        const bool finished_first = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!finished_first) {
          ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describe(status) << "\n" << read_file(log);
          ++kills;
          if (fs::exists(run / "checkpoint") || fs::exists(run / "checkpoint.old")) {
            EXPECT_NO_THROW(load_checkpoint(run / "checkpoint")) << "after kill " << kills;
            ++checked;
          }
          continue;
        }
      }
    } else {
      status = wait_for(pid);
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status) << "\n" << read_file(log);
    expect_reference_losses(run);
    ++runs_completed;
    if (!killing()) break;
    run = scratch_ / str("run", runs_completed);
  }
  std::printf("[ crash    ] %d SIGKILLs at random moments, %d checkpoints read back after a kill, %d runs completed\n",
              kills, checked, runs_completed);
  EXPECT_GE(kills, kKills);
  EXPECT_GE(checked, kChecked);
  EXPECT_GE(runs_completed, 1);
}

// SIGTERM, then SIGINT: each stops the run before the next step with a final checkpoint and the
// summary, exit status 128 + signal; resuming completes the reference run.
TEST_F(CrashResume, SigtermAndSigintWriteAFinalCheckpointAndExitCleanly) {
  const fs::path run = scratch_ / "run";
  int64_t last_step = 0;
  for (const int signo : {SIGTERM, SIGINT}) {
    const fs::path log = scratch_ / str("signal", signo, ".log");
    const pid_t pid = spawn(train_args(run, last_step > 0), log);
    // Signal once a few steps of this session are in metrics.jsonl.
    for (int i = 0; i < 6000; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (last_train_step(run) >= last_step + 3) break;
    }
    ::kill(pid, signo);
    const int status = wait_for(pid);
    ASSERT_TRUE(WIFEXITED(status)) << describe(status) << "\n" << read_file(log);
    ASSERT_EQ(WEXITSTATUS(status), 128 + signo) << read_file(log);
    // the continuing command starts the binary as invoked and repeats the options that shape the run
    EXPECT_THAT(read_file(log), HasSubstr(str("stopped by ", signo == SIGTERM ? "SIGTERM" : "SIGINT",
                                              "; continue with: ", test::clocktrain_bin(), " train ",
                                              recipe_.string(), " --data ", data_.string(), " --steps ", kSteps,
                                              " --threads 1 --no-progress --resume ", (run / "checkpoint").string(),
                                              "\n")));
    const Json summary = read_json_file(run / "train_summary.json");
    EXPECT_EQ(summary["stop_reason"], "signal");
    EXPECT_EQ(summary["stop_signal"], signo == SIGTERM ? "SIGTERM" : "SIGINT");
    const int64_t steps = summary["steps"].get<int64_t>();
    EXPECT_GT(steps, last_step);
    ASSERT_LT(steps, kSteps) << "the run ended before the signal; nothing was tested";
    EXPECT_EQ(load_checkpoint(run / "checkpoint"), steps);
    const auto events = test::rows_of_kind(test::read_metrics(run), "event");
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back()["event"], "stop");
    EXPECT_EQ(events.back()["detail"], "signal");
    last_step = steps;
  }
  resume_to_the_end(run, scratch_ / "end.log");
  expect_reference_losses(run);
}

std::map<std::string, std::string> file_hashes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    out[entry.path().filename().string()] = sha256_hex(read_file(entry.path()));
  return out;
}

// A full disk, as a file size limit (RLIMIT_FSIZE, which needs no privileges and which root obeys):
// the checkpoint write fails with an error naming the file, the previous checkpoint is intact and
// resumable, and no staged folder is left behind.
TEST_F(CrashResume, FullDiskLeavesThePreviousCheckpointIntact) {
  const fs::path run = scratch_ / "run", log = scratch_ / "run.log";
  int status = wait_for(spawn(train_args(run, false, 3), log));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(log);
  const auto before = file_hashes(run / "checkpoint");
  ASSERT_GT(fs::file_size(run / "checkpoint" / "model.safetensors"), 64u * 1024);  // over the limit below
  ASSERT_LT(fs::file_size(run / "metrics.jsonl"), 16u * 1024);                    // under it

  const fs::path full_log = scratch_ / "full.log";
  status = wait_for(spawn(train_args(run, true, 6), full_log, {}, 64 * 1024));
  const std::string output = read_file(full_log);
  ASSERT_TRUE(WIFEXITED(status)) << describe(status) << "\n" << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_THAT(output, HasSubstr("clocktrain: error: the checkpoint of step 4 was not written ("));
  EXPECT_THAT(output, HasSubstr("model.safetensors: write failed after "));
  EXPECT_THAT(output, HasSubstr(std::strerror(EFBIG)));
  EXPECT_THAT(output, HasSubstr("any previous checkpoint in " + (run / "checkpoint").string() + " is intact"));
  EXPECT_EQ(file_hashes(run / "checkpoint"), before);
  for (const auto& entry : fs::directory_iterator(run))
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr("checkpoint.")));
  EXPECT_EQ(load_checkpoint(run / "checkpoint"), 3);

  // With room again, the run continues from the intact checkpoint.
  resume_to_the_end(run, log);
  expect_reference_losses(run);
}

// A real full disk (a small tmpfs) and a read-only one (a read-only bind mount), in a private mount
// namespace: needs root with CAP_SYS_ADMIN (unshare -m); skipped where that is refused.
// A file system without room for two checkpoints, and a read-only one: both refused before the first
// step, with the error naming --out and the reason, the previous checkpoint untouched and nothing
// left behind. (A disk that fills during the run: FullDiskLeavesThePreviousCheckpointIntact.)
TEST_F(CrashResume, TmpfsWithoutRoomAndReadOnlyMountAreRefusedBeforeTraining) {
  if (std::system("unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mount namespace here (unshare -m and mount need CAP_SYS_ADMIN); the RLIMIT_FSIZE test covers a full disk";
  const fs::path run = scratch_ / "run", log = scratch_ / "run.log";
  int status = wait_for(spawn(train_args(run, false, 3), log));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(log);
  const auto before = file_hashes(run / "checkpoint");
  uint64_t run_bytes = 0, checkpoint_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(run))
    if (e.is_regular_file()) run_bytes += e.file_size();
  for (const auto& e : fs::directory_iterator(run / "checkpoint")) checkpoint_bytes += e.file_size();

  auto args_text = [&](const fs::path& at) {
    std::string text;
    for (const std::string& a : train_args(at, true, 6)) text += "'" + a + "' ";
    return text;
  };
  // Room for the run and half a checkpoint more (plus a page per file).
  const uint64_t tmpfs_bytes = run_bytes + checkpoint_bytes / 2 + 64 * 4096;
  const fs::path mnt = scratch_ / "mnt", out = scratch_ / "out";
  fs::create_directories(mnt);
  fs::create_directories(out);
  const std::string script =
      str("set -e; mount -t tmpfs -o size=", tmpfs_bytes, " tmpfs '", mnt.string(), "'; cp -a '", run.string(), "' '",
          mnt.string(), "/run'; rc=0; ", args_text(mnt / "run"), " >'", out.string(), "/full.log' 2>&1 || rc=\\$?; echo \\$rc >'",
          out.string(), "/full.rc'; cp -a '", mnt.string(), "/run/checkpoint' '", out.string(), "/after'; ls -a '",
          mnt.string(), "/run' >'", out.string(), "/left'; ",
          // read-only: the original run folder bound onto itself, read-only
          "mount --bind '", run.string(), "' '", run.string(), "'; mount -o remount,bind,ro '", run.string(), "'; rc=0; ",
          args_text(run), " >'", out.string(), "/ro.log' 2>&1 || rc=\\$?; echo \\$rc >'", out.string(), "/ro.rc'");
  ASSERT_EQ(std::system(("unshare -m sh -c \"" + script + "\"").c_str()), 0) << script;

  const std::string full = read_file(out / "full.log");
  EXPECT_EQ(read_file(out / "full.rc"), "1\n") << full;
  EXPECT_THAT(full, HasSubstr("--out " + (mnt / "run").string() + ": the checkpoints of this model need up to "));
  EXPECT_THAT(full, HasSubstr(" GB free besides the present checkpoint"));
  EXPECT_EQ(file_hashes(out / "after"), before);
  EXPECT_THAT(read_file(out / "left"), ::testing::Not(HasSubstr("checkpoint.")));

  const std::string read_only = read_file(out / "ro.log");
  EXPECT_EQ(read_file(out / "ro.rc"), "1\n") << read_only;
  EXPECT_THAT(read_only, HasSubstr("clocktrain: error: --out " + run.string() + ": cannot write there: " +
                                   std::strerror(EROFS)));
  EXPECT_EQ(file_hashes(run / "checkpoint"), before);
  EXPECT_EQ(load_checkpoint(run / "checkpoint"), 3);
}

}  // namespace
}  // namespace ct
