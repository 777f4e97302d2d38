// `clocktrain train` end to end: a run by steps, a resume that continues it, and recipe errors.
#include <gtest/gtest.h>

#include "train/train_test_support.h"
#include "util/files.h"

namespace ct {
namespace {

std::string tiny_recipe_text() {
  std::string text = read_file(test::source_dir() / "recipes" / "tiny.toml");
  const std::string from = "vocab_size = 8192", to = "vocab_size = 257";
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(TrainCommand, TrainsResumesAndReportsRecipeErrors) {
  test::TempDir dir;
  const fs::path data = test::make_test_data(dir.path());
  write_file_atomic(dir / "tiny.toml", tiny_recipe_text());
  const std::string base = test::clocktrain_bin() + " train " + (dir / "tiny.toml").string() + " --data " +
                           data.string() + " --threads 1 --no-progress";
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
  r = test::run_command(test::clocktrain_bin() + " train " + (dir / "bad.toml").string() + " --data " + data.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bad.toml:2: field 'model.n_embed': unknown field"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x"));

  // a precision the machine cannot run (here: an unknown one) is refused before anything is written
  std::string fp16 = tiny_recipe_text();
  const std::string precision = "matmul_precision = \"auto\"";
  fp16.replace(fp16.find(precision), precision.size(), "matmul_precision = \"fp16\"");
  write_file_atomic(dir / "fp16.toml", fp16);
  r = test::run_command(test::clocktrain_bin() + " train " + (dir / "fp16.toml").string() + " --data " +
                        data.string() + " --out " + (dir / "z").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("field 'backend.matmul_precision': expected \"auto\", \"f32\" or \"bf16\", got \"fp16\""),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "z"));

  // the data's vocabulary must be the recipe's
  r = test::run_command(test::clocktrain_bin() + " train " + (test::source_dir() / "recipes" / "tiny.toml").string() +
                        " --steps 1 --data " + data.string() + " --out " + (dir / "y").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("vocab_size 257 differs from the recipe's model.vocab_size 8192"), std::string::npos)
      << r.output;

  // a folder given as the recipe is named as such (not an internal error), and an option the parser
  // refuses exits 1 like every other refusal (not CLI11's own 104-109)
  r = test::run_command(test::clocktrain_bin() + " train " + dir.path().string() + " --data " + data.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(dir.path().string() + ": a folder, where a file was expected"), std::string::npos)
      << r.output;
  for (const char* bad : {" --steps abc", " --no-such-option", " --threads"}) {
    r = test::run_command(base + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.output;
  }
  EXPECT_EQ(test::run_command(test::clocktrain_bin() + " train --help").exit_code, 0);
}

}  // namespace
}  // namespace ct
