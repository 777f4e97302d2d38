#pragma once
// The data-parallel tests' launches and checks (data_parallel_test.cpp, host_device_test.cpp): the
// tiny and cpu-small recipes on the byte-level test data, mpirun's and torchrun's command lines,
// background jobs, the losses of a run, and the fixture that trains under a launcher.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "run/run_test_support.h"
#include "train/train_test_support.h"
#include "util/clock.h"
#include "util/files.h"

namespace ct::test {

// recipes/<name>.toml on the byte-level vocabulary of make_test_data, with `edits` (from, to) applied.
inline std::string recipe_text(const std::string& name, const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  std::string text = read_file(source_dir() / "recipes" / (name + ".toml"));
  std::vector<std::pair<std::string, std::string>> all = {{"vocab_size = 8192", "vocab_size = 257"}};
  all.insert(all.end(), edits.begin(), edits.end());
  for (const auto& [from, to] : all) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << name << ".toml has no '" << from << "'";
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return text;
}

// A recipe's text with its [backend] table naming `backend` ("cpu" is every recipe's default).
inline std::string with_backend(std::string recipe, const std::string& backend) {
  const std::string table = "[backend]\n";
  const size_t at = recipe.find(table);
  EXPECT_NE(at, std::string::npos) << "the recipe has no [backend] table";
  if (at != std::string::npos) recipe.insert(at + table.size(), "name = \"" + backend + "\"\n");
  return recipe;
}

inline bool have_mpirun() { return run_command("command -v mpirun").exit_code == 0; }

// mpirun as root (CI runs as root), ranks unbound (2 cores), `n` processes; `per_rank` runs
// through sh so that one rank can get another environment or arguments ($OMPI_COMM_WORLD_RANK).
inline std::string mpirun(int n) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np " + std::to_string(n) +
         " --oversubscribe --bind-to none ";
}

// torchrun's launch, by tests/parallel/torchrun_standin.py (torchrun's variables and a store that
// answers as torchrun's does; it leaves the other workers running when one fails), or by PyTorch 2's
// own torchrun where bench/torch2_venv.sh installed it (CLOCKTRAIN_TORCHRUN names another).
inline std::string torchrun_standin(int n) {
  return python() + " " + (source_dir() / "tests" / "parallel" / "torchrun_standin.py").string() +
         " --nproc_per_node " + std::to_string(n) + " --no-python ";
}
inline std::string installed_torchrun() {
  if (const char* given = std::getenv("CLOCKTRAIN_TORCHRUN")) return given;
  const fs::path venv = source_dir() / "build" / "torch2-venv" / "bin" / "torchrun";
  return fs::exists(venv) ? venv.string() : "";
}

// Starts the shell command `command` in the background with its output in `log`; `status` gets its
// exit status once it ends.
inline void start_in_background(const std::string& command, const fs::path& log, const fs::path& status) {
  const std::string line = "(" + command + " > " + log.string() + " 2>&1; echo $? > " + status.string() + ") &";
  ASSERT_EQ(std::system(line.c_str()), 0) << line;
}

// Polls `done` every 20 ms for up to `seconds`.
template <typename Fn>
inline bool wait_until(double seconds, Fn&& done) {
  const Stopwatch watch;
  while (!done()) {
    if (watch.seconds() > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Train rows in a run's metrics.jsonl so far (a line may be half written).
inline int64_t train_rows(const fs::path& run) {
  if (!fs::exists(run / "metrics.jsonl")) return 0;
  const std::string text = read_file(run / "metrics.jsonl");
  int64_t rows = 0;
  const std::string row = "\"kind\":\"train\"";
  for (size_t at = text.find(row); at != std::string::npos; at = text.find(row, at + 1)) ++rows;
  return rows;
}

inline std::string tiny_f32() { return recipe_text("tiny", {{"matmul_precision = \"auto\"", "matmul_precision = \"f32\""}}); }

inline std::vector<double> train_losses(const fs::path& run) {
  std::vector<double> losses;
  for (const Json& row : rows_of_kind(read_metrics(run), "train")) losses.push_back(row["loss"].get<double>());
  return losses;
}

class DataParallel : public TrainerFixture {
 protected:
  void SetUp() override {
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (Debian's openmpi-bin; scripts/install-deps.sh)";
  }
  // `clocktrain train RECIPE` with the suite's data, one thread, no progress line.
  std::string train(const fs::path& recipe) const {
    return clocktrain_bin() + " train " + recipe.string() + " --data " + data_.string() +
           " --threads 1 --no-progress";
  }
  // `command` (arguments of clocktrain train) run by each process of `launcher` through sh, which
  // first writes its process id into dir/pid.<rank> (`rank_variable` is the launcher's rank variable)
  std::string writing_pids(const fs::path& dir, const std::string& rank_variable, const std::string& command) const {
    return "sh -c 'echo $$ > " + (dir / "pid.").string() + "$" + rank_variable + "; exec " + command + "'";
  }
  // tiny in f32 with a checkpoint after every step (dir/tiny.toml), trained for 8 steps by `launcher`
  // (2 processes) into dir/whole, then again into dir/cut with rank 1 (as the launcher's variable
  // `rank_variable` says) killed by SIGKILL in its 6th step's backward pass, while rank 0 waits for
  // its gradients: the job must stop, not hang, and the last complete checkpoint must continue on two
  // processes to the uninterrupted run's losses. `killed` gets the killed run's output, for the
  // launcher's own messages.
  // `more_edits` change the recipe further (another backend, say).
  void kill_rank_one_then_resume(const fs::path& dir, const std::string& launcher, const std::string& rank_variable,
                                 std::string* killed,
                                 std::vector<std::pair<std::string, std::string>> more_edits = {}) const {
    more_edits.insert(more_edits.begin(), {{"matmul_precision = \"auto\"", "matmul_precision = \"f32\""},
                                           {"every_minutes = 0.0", "every_minutes = 0.0001"}});
    write_file_atomic(dir / "tiny.toml", recipe_text("tiny", more_edits));
    const fs::path whole = dir / "whole", cut = dir / "cut";
    auto r = run_command(launcher + train(dir / "tiny.toml") + " --steps 8 --out " + whole.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string per_rank = "sh -c 'if [ \"$" + rank_variable + "\" = 1 ]; then export "
                                 "CLOCKTRAIN_KILL_AT=train_step.last_backward:6; fi; exec " +
                                 train(dir / "tiny.toml") + " --steps 8 --out " + cut.string() + "'";
    const Stopwatch watch;
    r = run_command(launcher + per_rank);
    EXPECT_LT(watch.seconds(), 60.0) << "the job must stop, not hang";
    EXPECT_NE(r.exit_code, 0) << r.output;
    *killed = r.output;
    ASSERT_TRUE(fs::exists(cut / "checkpoint" / "model.safetensors"));
    r = run_command(launcher + train(dir / "tiny.toml") + " --steps 8 --resume " + (cut / "checkpoint").string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(train_losses(cut), train_losses(whole));
  }
};

// Two processes with one micro-batch each against one process running both: the first step's loss
// is the same bits (the same weights and rows); later steps differ only by rounding, because one
// process adds its second micro-batch into the gradients inside a K-blocked GEMM (beta = 1), a
// different association from summing two processes' gradients.
inline void expect_same_training(const std::vector<double>& one, const std::vector<double>& two, double tolerance) {
  ASSERT_EQ(one.size(), two.size());
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(one[0], two[0]) << "step 1 must be bitwise equal";
  for (size_t i = 0; i < one.size(); ++i)
    EXPECT_NEAR(two[i], one[i], tolerance * std::abs(one[i])) << "step " << i + 1;
}

}  // namespace ct::test
