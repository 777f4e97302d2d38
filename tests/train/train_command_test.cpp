// `clocktrain train` end to end: a run by steps, a resume that continues it, and recipe errors.
#include <gtest/gtest.h>

#include "train/train_test_support.h"
#include "util/clock.h"
#include "util/files.h"

namespace ct {
namespace {

TEST(TrainCommand, TrainsResumesAndReportsRecipeErrors) {
  test::TempDir dir;
  const test::TinyTrainFolder tiny(dir.path());
  const std::string base = tiny.train("--no-progress");
  auto r = test::run_command(base + " --steps 3 --out " + (dir / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("steps: 3 steps"), std::string::npos) << r.output;
  // which precision runs and why, and the ceilings, before the first step
  EXPECT_NE(r.output.find("backend: cpu, matmuls auto: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; measured matmul ceiling "), std::string::npos) << r.output;
  Json summary = read_json_file(dir / "run" / "train_summary.json");
  EXPECT_EQ(summary["steps"], 3);
  EXPECT_EQ(summary["stop_reason"], "steps");
  EXPECT_TRUE(fs::exists(dir / "run" / "checkpoint" / "model.safetensors"));

  // --resume continues the same run folder up to the new step count
  r = test::run_command(base + " --steps 5 --resume " + (dir / "run" / "checkpoint").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  summary = read_json_file(dir / "run" / "train_summary.json");
  EXPECT_EQ(summary["steps"], 5);
  EXPECT_EQ(test::rows_of_kind(test::read_metrics(dir / "run"), "train").size(), 5u);

  r = test::run_command(base + " --steps 3 --budget 10 --out " + (dir / "x").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--budget or --steps"), std::string::npos) << r.output;

  write_file_atomic(dir / "bad.toml", "[model]\nn_embed = 64\n");
  r = test::run_command(test::clocktrain_bin() + " train " + (dir / "bad.toml").string() + " --data " +
                        tiny.data.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bad.toml:2: field 'model.n_embed': unknown field"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x"));

  // a precision the machine cannot run (here: an unknown one) is refused before anything is written
  std::string fp16 = test::tiny_toml_byte_vocab();
  const std::string precision = "matmul_precision = \"auto\"";
  fp16.replace(fp16.find(precision), precision.size(), "matmul_precision = \"fp16\"");
  write_file_atomic(dir / "fp16.toml", fp16);
  r = test::run_command(test::clocktrain_bin() + " train " + (dir / "fp16.toml").string() + " --data " +
                        tiny.data.string() + " --out " + (dir / "z").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("field 'backend.matmul_precision': expected \"auto\", \"f32\" or \"bf16\", got \"fp16\""),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "z"));

  // the data's vocabulary must be the recipe's
  r = test::run_command(test::clocktrain_bin() + " train " + (test::source_dir() / "recipes" / "tiny.toml").string() +
                        " --steps 1 --data " + tiny.data.string() + " --out " + (dir / "y").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("vocab_size 257 differs from the recipe's model.vocab_size 8192"), std::string::npos)
      << r.output;

  // a folder given as the recipe is named as such (not an internal error), and an option the parser
  // refuses exits 1 like every other refusal (not CLI11's own 104-109)
  r = test::run_command(test::clocktrain_bin() + " train " + dir.path().string() + " --data " + tiny.data.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(dir.path().string() + ": a folder, where a file was expected"), std::string::npos)
      << r.output;
  for (const char* bad : {" --steps abc", " --no-such-option", " --threads"}) {
    r = test::run_command(base + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.output;
  }
  EXPECT_EQ(test::run_command(test::clocktrain_bin() + " train --help").exit_code, 0);
}

// Piped (stdout not a terminal, as under nohup, Slurm or tee), where a status line cannot be redrawn,
// train prints a plain progress line every N steps or S seconds, which
// --no-progress turns off with the status line. Every metrics.jsonl line carries its wall-clock time.
TEST(TrainCommand, PipedOutputGetsProgressLinesAndTheMetricsWallClockTimes) {
  test::TempDir dir;
  const test::TinyTrainFolder tiny(dir.path());
  const std::string base = tiny.train("--steps 4");
  const double before = unix_seconds();
  auto r = test::run_command(base + " --log-every-steps 2 --log-every-seconds 0 --out " + (dir / "a").string());
  const double after = unix_seconds();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"\ntrain: step 2/4 | clock ", "\ntrain: step 4/4 | clock "})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  EXPECT_EQ(r.output.find("train: step 1/4"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("train: step 3/4"), std::string::npos) << r.output;
  const std::string line = r.output.substr(r.output.find("train: step 2/4"));
  for (const char* figure : {" | loss ", " tok/s", " | left "})
    EXPECT_NE(line.substr(0, line.find('\n')).find(figure), std::string::npos) << figure << ": " << line;
  // Before the summary line.
  EXPECT_LT(r.output.find("train: step 4/4"), r.output.find("steps: 4 steps")) << r.output;
  size_t rows = 0;
  for (const Json& row : test::read_metrics(dir / "a")) {
    ASSERT_TRUE(row.contains("time") && row["time"].is_number_float()) << row.dump();
    EXPECT_GE(row["time"].get<double>(), before - 1) << row.dump();
    EXPECT_LE(row["time"].get<double>(), after + 1) << row.dump();
    ++rows;
  }
  EXPECT_GT(rows, 4u);

  // --no-progress: no lines; 0 and 0: no lines; a negative interval is refused before anything runs.
  r = test::run_command(base + " --log-every-steps 1 --no-progress --out " + (dir / "b").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("train: step"), std::string::npos) << r.output;
  r = test::run_command(base + " --log-every-steps 0 --log-every-seconds 0 --out " + (dir / "c").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("train: step"), std::string::npos) << r.output;
  r = test::run_command(base + " --log-every-seconds -1 --out " + (dir / "d").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--log-every-seconds"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "d"));
  // By time: the first line once the interval has passed since the start (set-up takes longer than this).
  r = test::run_command(base + " --log-every-seconds 0.001 --out " + (dir / "e").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("train: step 1/4 | clock "), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ct
