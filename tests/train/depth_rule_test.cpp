// The one dial (docs/model.md "One dial: model.depth"): model.depth gives the documented shape, batch,
// learning rates and horizon; widths are rounded to the backend's multiple; the fields the rule
// derives are refused beside it, naming both; the example recipe parses; and a depth recipe trains.
#include <gtest/gtest.h>

#include <cmath>

#include "model/checkpoint.h"
#include "test_support.h"
#include "train/recipe.h"
#include "train/train_test_support.h"
#include "train/trainer.h"
#include "util/files.h"

namespace ct {
namespace {

Recipe at_depth(int64_t depth, const std::string& more = "") {
  return parse_recipe(str("[model]\ndepth = ", depth, "\n", more), "depth.toml");
}

// Depth 10 with every other field at the baseline's is the baseline: the same shape, batch and
// learning rates (the batch rule's anchor); only the dial itself and the derived horizon are added.
TEST(DepthRule, DepthTenIsTheBaseline) {
  const Recipe depth = at_depth(10), baseline;
  EXPECT_EQ(to_json(depth.model), to_json(baseline.model));
  EXPECT_EQ(depth.tokens_per_step, baseline.tokens_per_step);
  EXPECT_EQ(depth.optimizer.matrix_lr, baseline.optimizer.matrix_lr);
  EXPECT_EQ(depth.optimizer.embedding_lr, baseline.optimizer.embedding_lr);
  EXPECT_EQ(depth.optimizer.unembedding_lr, baseline.optimizer.unembedding_lr);
  EXPECT_EQ(depth.steps, 18200);  // 20 x 59,637,760 parameters / 65,536 tokens per step, rounded down
  Json resolved = to_json(depth), expected = to_json(baseline);
  EXPECT_EQ(resolved["model"]["depth"], 10);
  EXPECT_EQ(resolved["model"]["aspect_ratio"], 64);
  EXPECT_EQ(resolved["model"]["head_dim"], 128);
  EXPECT_EQ(resolved["run"]["tokens_per_parameter"], 20.0);
  for (const char* key : {"depth", "aspect_ratio", "head_dim"}) resolved["model"].erase(key);
  resolved["run"].erase("tokens_per_parameter");
  expected["run"]["steps"] = 18200;
  EXPECT_EQ(resolved, expected);
  EXPECT_FALSE(to_json(baseline)["model"].contains("depth"));  // a recipe without the dial keeps its hash
}

// The table of docs/model.md, "One dial: model.depth" (baseline fields otherwise, backend cpu).
TEST(DepthRule, DocumentedTable) {
  struct Row {
    int64_t depth, n_embd, n_head, parameters, tokens_per_step, steps;
    double lr_scale;
  };
  const Row rows[] = {
      {4, 256, 2, 7340032, 32768, 4480, std::sqrt(0.5)},    {6, 384, 3, 16908288, 32768, 10320, std::sqrt(0.5)},
      {8, 512, 4, 33554432, 65536, 10240, 1.0},             {10, 640, 5, 59637760, 65536, 18200, 1.0},
      {12, 768, 6, 97517568, 65536, 29760, 1.0},            {20, 1280, 10, 414187520, 131072, 63200, std::sqrt(2.0)},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(str("depth ", row.depth));
    const Recipe r = at_depth(row.depth);
    EXPECT_EQ(r.model.n_layer, row.depth);
    EXPECT_EQ(r.model.n_embd, row.n_embd);
    EXPECT_EQ(r.model.n_head, row.n_head);
    EXPECT_EQ(r.model.n_kv_head, row.n_head);
    EXPECT_EQ(r.model.head_dim(), 128);
    EXPECT_EQ(r.model.parameter_count(), row.parameters);
    EXPECT_EQ(r.tokens_per_step, row.tokens_per_step);
    EXPECT_EQ(r.steps, row.steps);
    EXPECT_NEAR(r.optimizer.matrix_lr, 0.02 * row.lr_scale, 1e-15);
    EXPECT_NEAR(r.optimizer.embedding_lr, 0.2 * row.lr_scale, 1e-15);
    EXPECT_NEAR(r.optimizer.unembedding_lr, 0.004 * row.lr_scale, 1e-15);
    EXPECT_NEAR(r.optimizer.resid_scalar_lr, 0.005 * row.lr_scale, 1e-15);  // the residual scalars' too
    EXPECT_NEAR(r.optimizer.x0_scalar_lr, 0.5 * row.lr_scale, 1e-15);
  }
  // The start lines' summary says the same.
  EXPECT_EQ(depth_summary(at_depth(6)),
            "depth 6: n_layer 6, n_embd 384 (6 x 64 rounded up to a multiple of 128), n_head 3, n_kv_head 3 (head_dim "
            "128), 16908288 parameters; 32768 tokens per step, learning rates x 0.707107; horizon 20 tokens per "
            "parameter = 10320 steps");
  EXPECT_EQ(depth_summary(Recipe{}), "");
}

// The given learning rates are those at the reference batch; the horizon follows tokens_per_parameter.
TEST(DepthRule, LearningRatesAndHorizonFollowTheFile) {
  const Recipe r = at_depth(4, "[optimizer]\nmatrix_lr = 0.03\n[run]\ntokens_per_parameter = 10\n");
  EXPECT_NEAR(r.optimizer.matrix_lr, 0.03 * std::sqrt(0.5), 1e-15);
  EXPECT_EQ(r.steps, 2240);  // 10 x 7,340,032 / 32,768
  EXPECT_EQ(at_depth(1).steps, 2800);
  EXPECT_EQ(at_depth(4, "[run]\ntokens_per_parameter = 1e-9\n").steps, 1);  // at least one step
}

// n_embd = depth x aspect_ratio rounded up to a multiple of lcm(head_dim, the backend's multiple):
// cpu 64, cuda 128.
TEST(DepthRule, WidthRoundsToTheBackendsMultiple) {
  const std::string shape = "aspect_ratio = 48\nhead_dim = 32\n";
  const Recipe cpu = at_depth(3, shape);  // 144 -> a multiple of 64
  EXPECT_EQ(cpu.model.n_embd, 192);
  EXPECT_EQ(cpu.model.n_head, 6);
  const Recipe cuda = at_depth(3, shape + "[backend]\nname = \"cuda\"\n");  // 144 -> a multiple of 128
  EXPECT_EQ(cuda.model.n_embd, 256);
  EXPECT_EQ(cuda.model.n_head, 8);
  EXPECT_EQ(cuda.model.n_kv_head, 8);
  const Recipe wide_heads = at_depth(2, "head_dim = 96\n");  // 128 -> a multiple of lcm(96, 64) = 192
  EXPECT_EQ(wide_heads.model.n_embd, 192);
  EXPECT_EQ(wide_heads.model.n_head, 2);
  EXPECT_EQ(at_depth(3).model.n_embd, 256);  // 192 -> a multiple of 128 (head_dim) on either backend
  EXPECT_EQ(backend_width_multiple("cpu", "x"), 64);
  EXPECT_EQ(backend_width_multiple("cuda", "x"), 128);
  EXPECT_EQ(backend_width_multiple("host-device", "x"), 64);  // the CPU's kernels
  EXPECT_NE(test::recipe_error("[model]\ndepth = 4\n[backend]\nname = \"tpu\"\n")
                .find("bad.toml:4: field 'backend.name': the depth rule rounds the width for \"cpu\" or "
                      "\"host-device\" (64) or \"cuda\" (128), got \"tpu\""),
            std::string::npos)
      << test::recipe_error("[model]\ndepth = 4\n[backend]\nname = \"tpu\"\n");
}

TEST(DepthRule, DerivedFieldsBesideDepthAreRefusedNamingBoth) {
  for (const std::string field : {"n_layer = 4", "n_embd = 256", "n_head = 2", "n_kv_head = 2"}) {
    const std::string message = test::recipe_error("[model]\ndepth = 4\n" + field + "\n");
    const std::string name = field.substr(0, field.find(' '));
    EXPECT_NE(message.find("bad.toml:3: field 'model." + name + "': not with 'model.depth', which derives it"),
              std::string::npos)
        << message;
  }
  EXPECT_NE(test::recipe_error("[batch]\ntokens_per_step = 8192\n[model]\ndepth = 4\n")
                .find("bad.toml:2: field 'batch.tokens_per_step': not with 'model.depth'"),
            std::string::npos);
  EXPECT_NE(test::recipe_error("[model]\ndepth = 4\n[run]\nsteps = 10\n")
                .find("bad.toml:4: field 'run.steps': not with 'model.depth', which derives the horizon from "
                      "'run.tokens_per_parameter'"),
            std::string::npos);
  for (const std::string field : {"[model]\naspect_ratio = 32", "[model]\nhead_dim = 64", "[run]\ntokens_per_parameter = 8"}) {
    const std::string message = test::recipe_error(field + "\n");
    EXPECT_NE(message.find("bad.toml:2: field '"), std::string::npos) << message;
    EXPECT_NE(message.find("': only with 'model.depth'"), std::string::npos) << message;
  }
  EXPECT_NE(test::recipe_error("[model]\ndepth = 0\n").find("bad.toml:2: field 'model.depth': expected an integer from 1 to 4096, got 0"),
            std::string::npos);
  EXPECT_NE(test::recipe_error("[model]\ndepth = 4\nhead_dim = 33\n").find("field 'model.head_dim': expected an even integer"),
            std::string::npos);
  EXPECT_NE(test::recipe_error("[model]\ndepth = 4\naspect_ratio = 0\n").find("field 'model.aspect_ratio'"), std::string::npos);
  for (const char* ratio : {"0", "-1.0", "1e300", "nan"})
    EXPECT_NE(test::recipe_error(str("[model]\ndepth = 4\n[run]\ntokens_per_parameter = ", ratio, "\n"))
                  .find("bad.toml:4: field 'run.tokens_per_parameter': expected a positive number up to 1e6"),
              std::string::npos)
        << ratio;
  // The derived batch must still split into the file's micro-batches (depth 1: 16 rows of 1024).
  EXPECT_NE(test::recipe_error("[model]\ndepth = 1\n[batch]\nmicro_batch_rows = 32\n").find("field 'batch.micro_batch_rows'"),
            std::string::npos);
}

TEST(DepthRule, ExampleRecipeParses) {
  const Recipe r = load_recipe(test::source_dir() / "recipes" / "depth-example.toml");
  EXPECT_EQ(r.name, "depth-example");
  EXPECT_EQ(r.dial.depth, 6);
  EXPECT_EQ(r.model.n_layer, 6);
  EXPECT_EQ(r.model.n_embd, 384);
  EXPECT_EQ(r.model.n_head, 3);
  EXPECT_EQ(r.tokens_per_step, 32768);
  EXPECT_EQ(r.budget_seconds, 600.0);
  EXPECT_TRUE(r.timed());
}

class DepthTrainingTest : public test::TrainerFixture {};

// depth 2, aspect 32, head_dim 32 at the trainer tests' vocabulary and rows of 64: width 64, 2 heads
const char* const kTinyDepthRecipe =
    "name = \"tiny-depth\"\n[model]\ndepth = 2\naspect_ratio = 32\nhead_dim = 32\nvocab_size = 257\n"
    "sequence_len = 64\n[batch]\nmicro_batch_rows = 32\n[run]\nrun_by = \"steps\"\n[eval]\nevery_steps = 0\n"
    "every_seconds = 0.0\ntokens = 1024\n[checkpoint]\nevery_minutes = 0.0\n[backend]\nthreads = 1\n";

// A tiny depth recipe (depth 2, aspect 32, head_dim 32: width 64, 2 heads; 8,192 tokens per step)
// trains a few steps on the trainer tests' data and its checkpoint has the derived shape.
TEST_F(DepthTrainingTest, DepthRecipeTrains) {
  Recipe r = parse_recipe(kTinyDepthRecipe, "tiny-depth.toml");
  EXPECT_EQ(r.model.n_embd, 64);
  EXPECT_EQ(r.model.n_head, 2);
  EXPECT_EQ(r.tokens_per_step, 8192);  // 2^round(log2(65536 (118,784 / 12,390,400)^0.383)) = 2^13
  EXPECT_EQ(r.steps, 340);             // 20 x 139,264 / 8,192
  r.steps = 4;                         // as `clocktrain train --steps 4` would
  const TrainResult result = train(options("depth", r));
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.steps, 4);
  EXPECT_EQ(result.tokens, 4 * 8192);
  const std::vector<double> loss = losses("depth");
  ASSERT_EQ(loss.size(), 4u);
  EXPECT_NEAR(loss.front(), std::log(257.0), 0.05);  // lm_head starts at 0
  EXPECT_LT(loss.back(), loss.front() - 0.1);
  const ModelConfig saved = load_model_config(scratch_.path() / "depth" / "checkpoint");
  EXPECT_EQ(saved.n_layer, 2);
  EXPECT_EQ(saved.n_embd, 64);
  EXPECT_EQ(saved.n_head, 2);
}

// `clocktrain train` prints what the dial derived after its start line.
TEST_F(DepthTrainingTest, TrainCommandPrintsTheDerivation) {
  write_file_atomic(scratch_.path() / "tiny-depth.toml", kTinyDepthRecipe);
  const auto r = test::run_command(test::clocktrain_bin() + " train " + (scratch_.path() / "tiny-depth.toml").string() +
                                   " --data " + data_.string() + " --steps 1 --no-progress --out " +
                                   (scratch_.path() / "cli").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nrecipe depth 2: n_layer 2, n_embd 64 (2 x 32 rounded up to a multiple of 64), n_head 2, "
                          "n_kv_head 2 (head_dim 32), 139264 parameters; 8192 tokens per step"),
            std::string::npos)
      << r.output;
  const Json summary = read_json_file(scratch_.path() / "cli" / "train_summary.json");
  EXPECT_EQ(summary["steps"], 1);
}

}  // namespace
}  // namespace ct
