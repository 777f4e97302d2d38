// A run folder belongs to one run (train/run_folder.h, docs/train.md "Run folders"), and what the
// trainer refuses it refuses before anything is written: another run's folder, a second writer, a
// folder without room for the checkpoints, numbers out of range; a run that fails or is stopped in
// start-up leaves its folder usable. `clocktrain train` end to end, on the tiny recipe.
#include <gmock/gmock.h>

#include <signal.h>

#include <chrono>
#include <map>
#include <thread>

#include "train/run_folder.h"
#include "train/train_test_support.h"
#include "util/files.h"
#include "util/sha256.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Every file under `dir` (relative name -> SHA-256): what "changes nothing" compares.
std::map<std::string, std::string> tree_hashes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) out[fs::relative(entry.path(), dir).string()] = sha256_file(entry.path());
  return out;
}

class RunFolder : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new test::TempDir("suite");
    data_ = test::make_test_data(root_->path());
    std::string text = test::tiny_toml_byte_vocab();
    write_file_atomic(root_->path() / "tiny.toml", text);
    // A checkpoint after every step: a run that goes on holds its folder's lock and rewrites it.
    text.replace(text.find("every_minutes = 0.0"), 19, "every_minutes = 0.00001");
    write_file_atomic(root_->path() / "tiny-checkpoints.toml", text);
  }
  static void TearDownTestSuite() {
    delete root_;
    root_ = nullptr;
  }
  static std::string train(const std::string& recipe = "tiny.toml") {
    return test::clocktrain_bin() + " train " + (root_->path() / recipe).string() + " --data " + data_.string() +
           " --threads 1 --no-progress";
  }
  std::string out(const std::string& run) const { return " --out " + (dir_ / run).string(); }
  std::string resume(const std::string& run) const { return " --resume " + (dir_ / run / "checkpoint").string(); }

  static inline test::TempDir* root_ = nullptr;
  static inline fs::path data_;
  test::TempDir dir_;
};

// The finding: `--resume other/checkpoint --out victim` cut victim's metrics to the other run's step,
// replaced its checkpoint and exited 0.
TEST_F(RunFolder, ResumingIntoAnotherRunsFolderIsRefusedAndChangesNothing) {
  ASSERT_EQ(test::run_command(train() + " --steps 3" + out("other")).exit_code, 0);
  ASSERT_EQ(test::run_command(train() + " --steps 5" + out("victim")).exit_code, 0);
  const auto before = tree_hashes(dir_ / "victim");
  const auto r = test::run_command(train() + " --steps 12" + resume("other") + out("victim"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr((dir_ / "victim").string() + ": holds another run (lineage "));
  EXPECT_THAT(r.output, HasSubstr("step 5); resuming " + (dir_ / "other" / "checkpoint").string()));
  EXPECT_EQ(tree_hashes(dir_ / "victim"), before);
  EXPECT_EQ(read_checkpoint_identity(dir_ / "victim" / "checkpoint").step, 5);
}

// A resume may continue in a new folder (a fork, the same lineage), but not over a later point of
// the same run, whose steps it would drop.
TEST_F(RunFolder, AResumeForksIntoANewFolderButNeverOverALaterPointOfTheRun) {
  ASSERT_EQ(test::run_command(train() + " --steps 3" + out("a")).exit_code, 0);
  auto r = test::run_command(train() + " --steps 6" + resume("a") + out("b"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string lineage = read_json_file(dir_ / "a" / kRunIdentityFile)["lineage"];
  EXPECT_EQ(lineage.size(), 32u);
  EXPECT_EQ(read_json_file(dir_ / "b" / kRunIdentityFile)["lineage"], lineage);
  EXPECT_EQ(read_checkpoint_identity(dir_ / "b" / "checkpoint").lineage, lineage);
  EXPECT_EQ(read_json_file(dir_ / "b" / "train_summary.json")["init"]["lineage"], lineage);
  EXPECT_EQ(read_checkpoint_identity(dir_ / "b" / "checkpoint").step, 6);

  const auto before = tree_hashes(dir_ / "b");
  r = test::run_command(train() + " --steps 8" + resume("a") + out("b"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr((dir_ / "b").string() + ": holds this run at step 6, ahead of "));
  EXPECT_THAT(r.output, HasSubstr("would drop steps 4-6"));
  EXPECT_EQ(tree_hashes(dir_ / "b"), before);

  // in place, and forward from b into a (a is behind b on the same lineage): both allowed
  r = test::run_command(train() + " --steps 4" + resume("a"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(train() + " --steps 7" + resume("b") + out("a"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_checkpoint_identity(dir_ / "a" / "checkpoint").step, 7);
  // a fresh run never writes over a run with a checkpoint
  r = test::run_command(train() + " --steps 2" + out("a"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the run folder already holds a run (lineage " + lineage.substr(0, 12) + ", step 7)"));
}

// The finding: a resume started while another trainer wrote the folder deleted that trainer's staged
// checkpoint. Now a second writer is refused, naming the holder, and the first goes on unharmed.
TEST_F(RunFolder, ASecondWriterIsRefusedNamingTheHolder) {
  const fs::path busy = dir_ / "busy";
  const std::string recipe = (root_->path() / "tiny-checkpoints.toml").string();
  const pid_t pid = test::spawn({test::clocktrain_bin(), "train", recipe, "--data", data_.string(), "--threads", "1",
                                 "--no-progress", "--steps", "100000", "--out", busy.string()},
                                dir_ / "busy.log");
  for (int i = 0; i < 6000 && read_checkpoint_identity(busy / "checkpoint").step < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(read_checkpoint_identity(busy / "checkpoint").step, 2) << read_file(dir_ / "busy.log");
  const std::string holder = str("another process (pid ", pid, ") is writing this run folder");

  auto r = test::run_command(train() + " --steps 3" + out("busy"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(busy.string() + ": " + holder));
  r = test::run_command(train() + " --steps 100000" + resume("busy"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(holder));
  // reading another run's checkpoint while it is rewritten: refused too, and the fork's folder,
  // made for nothing, is gone
  r = test::run_command(train() + " --steps 100000" + resume("busy") + out("fork"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(holder));
  EXPECT_FALSE(fs::exists(dir_ / "fork"));

  ::kill(pid, SIGTERM);
  const int status = test::wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status)) << test::describe(status) << "\n" << read_file(dir_ / "busy.log");
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << read_file(dir_ / "busy.log");
  const Json summary = read_json_file(busy / "train_summary.json");
  EXPECT_EQ(summary["stop_reason"], "signal");
  EXPECT_EQ(read_checkpoint_identity(busy / "checkpoint").step, summary["steps"].get<int64_t>());
}

// The finding: a run that failed after writing its folder left it refused both for a fresh run and
// for --resume. Now it is marked failed, and a fresh run takes the folder, keeping the old records.
TEST_F(RunFolder, ARunThatFailsIsMarkedFailedAndItsFolderIsNotLockedOut) {
  const fs::path run = dir_ / "run";
  // Files of at most 64 KiB: metrics and records fit, the first checkpoint's weights do not.
  const int status =
      test::wait_for(test::spawn({test::clocktrain_bin(), "train", (root_->path() / "tiny.toml").string(), "--data",
                                  data_.string(), "--threads", "1", "--no-progress", "--steps", "2", "--out",
                                  run.string()},
                                 dir_ / "full.log", {}, 64 * 1024));
  ASSERT_TRUE(WIFEXITED(status)) << test::describe(status);
  ASSERT_EQ(WEXITSTATUS(status), 1) << read_file(dir_ / "full.log");
  const Json failed = read_json_file(run / "train_summary.json");
  EXPECT_EQ(failed["stop_reason"], "error");
  EXPECT_THAT(failed["error"].get<std::string>(), HasSubstr("the checkpoint of step 2 was not written"));
  EXPECT_FALSE(fs::exists(run / "checkpoint"));
  const auto events = test::rows_of_kind(test::read_metrics(run), "event");
  EXPECT_EQ(events.back()["event"], "stop");
  EXPECT_THAT(events.back()["detail"].get<std::string>(), HasSubstr("error: the checkpoint of step 2"));

  auto r = test::run_command(train() + " --steps 2 --out " + run.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_json_file(run / "earlier-1" / "train_summary.json")["stop_reason"], "error");
  EXPECT_TRUE(fs::exists(run / "earlier-1" / "metrics.jsonl"));
  EXPECT_EQ(read_json_file(run / "train_summary.json")["steps"], 2);
  const auto start = test::rows_of_kind(test::read_metrics(run), "event").front();
  EXPECT_EQ(start["event"], "start");
  EXPECT_THAT(start["detail"].get<std::string>(), HasSubstr("were moved to " + (run / "earlier-1").string()));
}

// The findings: --threads 65536 was a SIGSEGV in libgomp, 32768 libgomp's raw "Thread creation
// failed"; --seed -1, --micro-batch-rows 0 and --stop-after-steps 0 were silently ignored and a seed
// above 2^64 silently clamped. Each is refused at once, naming the option, with nothing written.
TEST_F(RunFolder, NumbersOutOfRangeAreRefusedNamingTheOptionBeforeAnythingIsWritten) {
  const std::map<std::string, std::string> refused = {
      {" --threads 65536", "--threads: '65536' is outside the range: expected an integer in [0, "},
      {" --threads 32768", "--threads: '32768' is outside the range"},
      {" --threads -1", "--threads: '-1' is outside the range"},
      {" --seed -1", "--seed: '-1' is outside the range: expected an integer >= 0"},
      {" --seed 18446744073709551616", "--seed: '18446744073709551616' is outside the range"},
      {" --seed 0x10", "--seed: expected an integer >= 0, got '0x10'"},
      {" --micro-batch-rows 0", "--micro-batch-rows: '0' is outside the range: expected an integer >= 1"},
      {" --stop-after-steps 0", "--stop-after-steps: '0' is outside the range: expected an integer >= 1"},
      {" --steps 0", "--steps: '0' is outside the range"},
      {" --budget nan", "--budget: expected a finite number > 0, got 'nan'"},
  };
  for (const auto& [option, message] : refused) {
    const auto r = test::run_command(train() + option + out("x"));
    EXPECT_EQ(r.exit_code, 1) << option << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(message)) << option;
    EXPECT_FALSE(fs::exists(dir_ / "x")) << option;
  }
  std::string text = read_file(root_->path() / "tiny.toml");
  write_file_atomic(dir_ / "threads.toml", text + "threads = 70000\n");  // [backend] is the file's last table
  const auto r = test::run_command(test::clocktrain_bin() + " train " + (dir_ / "threads.toml").string() +
                                   " --data " + data_.string() + " --steps 1" + out("x"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("field 'backend.threads': 70000 threads: expected 0 (every core) to "));
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

// Fail before the work: a run folder on a file system without room for two checkpoints is refused
// before the data is read or a step is taken.
TEST_F(RunFolder, NoRoomForTheCheckpointsIsRefusedBeforeTraining) {
  std::string text = read_file(root_->path() / "tiny.toml");
  // ~10^12 parameters: terabytes of checkpoints, more than any test machine's disk
  text.replace(text.find("n_layer = 2"), 11, "n_layer = 300");
  text.replace(text.find("n_embd = 64"), 11, "n_embd = 16384");
  text.replace(text.find("attention_layers = [true, false]"), 32, "attention_layers = \"all\"");
  write_file_atomic(dir_ / "huge.toml", text);
  const auto r = test::run_command(test::clocktrain_bin() + " train " + (dir_ / "huge.toml").string() + " --data " +
                                   data_.string() + " --steps 1 --threads 1" + out("huge"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--out " + (dir_ / "huge").string() + ": the checkpoints of this model need up to "));
  EXPECT_THAT(r.output, HasSubstr(" GB free"));
  EXPECT_FALSE(fs::exists(dir_ / "huge"));
}

// The finding: the first SIGTERM during start-up was acted on only after set-up, with a checkpoint
// of the untrained model. Now start-up stops at its next phase, writes no checkpoint and no folder,
// and prints the command that starts the run again.
TEST_F(RunFolder, ASignalDuringStartUpEndsTheRunWithNothingToResume) {
  std::string text = read_file(root_->path() / "tiny.toml");
  // ~40 M parameters: the model's initialisation takes a while, so the signal lands in start-up
  text.replace(text.find("n_layer = 2"), 11, "n_layer = 10");
  text.replace(text.find("n_embd = 64"), 11, "n_embd = 576");
  text.replace(text.find("attention_layers = [true, false]"), 32, "attention_layers = \"all\"");
  write_file_atomic(dir_ / "slow.toml", text);
  const fs::path log = dir_ / "slow.log";
  const pid_t pid = test::spawn({test::clocktrain_bin(), "train", (dir_ / "slow.toml").string(), "--data",
                                 data_.string(), "--threads", "1", "--no-progress", "--steps", "50", "--out",
                                 (dir_ / "slow").string()},
                                log);
  // The backend's line is printed just before the trainer starts its set-up.
  for (int i = 0; i < 6000 && (!fs::exists(log) || read_file(log).find("backend: ") == std::string::npos); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGTERM);
  const auto signalled = std::chrono::steady_clock::now();
  const int status = test::wait_for(pid);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  ASSERT_TRUE(WIFEXITED(status)) << test::describe(status) << "\n" << read_file(log);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << read_file(log);
  EXPECT_LT(seconds, 10.0) << read_file(log);
  EXPECT_FALSE(fs::exists(dir_ / "slow" / "checkpoint")) << read_file(log);
  EXPECT_THAT(read_file(log), HasSubstr("stopped by SIGTERM; continue with: " + test::clocktrain_bin() + " train " +
                                        (dir_ / "slow.toml").string()));
  EXPECT_THAT(read_file(log), Not(HasSubstr("--resume")));
}

}  // namespace
}  // namespace ct
