// Recipes: the shipped files parse, baseline.toml is exactly the built-in defaults (docs/model.md), and
// mistakes are errors that name the file, the line and the field.
#include <gtest/gtest.h>

#include "test_support.h"
#include "train/recipe.h"
#include "train/train_test_support.h"

namespace ct {
namespace {

TEST(Recipe, BaselineFileIsTheModelMdDefaults) {
  Recipe file = load_recipe(test::source_dir() / "recipes" / "baseline.toml");
  Recipe defaults;
  EXPECT_EQ(to_json(file), to_json(defaults));
  EXPECT_EQ(recipe_hash(file), recipe_hash(defaults));
  EXPECT_EQ(file.model.parameter_count(), 59637760);
  EXPECT_EQ(file.rows_per_step(), 64);
  EXPECT_EQ(file.startup_steps, 2);
  EXPECT_EQ(file.budget_seconds, 1800.0);
  EXPECT_EQ(file.steps, 1000);
}

TEST(Recipe, ShippedRecipesParse) {
  Recipe small = load_recipe(test::source_dir() / "recipes" / "cpu-small.toml");
  EXPECT_EQ(small.name, "cpu-small");
  EXPECT_EQ(small.model.n_layer, 4);
  EXPECT_EQ(small.model.n_embd, 256);
  EXPECT_EQ(small.model.n_head, 2);
  EXPECT_EQ(small.model.sequence_len, 512);
  EXPECT_EQ(small.tokens_per_step, 16384);
  EXPECT_EQ(small.optimizer.matrix_lr, 0.02);  // the baseline's rules
  EXPECT_EQ(small.matmul_precision, MatmulPrecision::automatic);  // bf16 where the CPU has a bf16 engine
  Recipe tiny = load_recipe(test::source_dir() / "recipes" / "tiny.toml");
  EXPECT_EQ(tiny.model.attention_layers, (std::vector<bool>{true, false}));
  EXPECT_NE(recipe_hash(tiny), recipe_hash(small));
}

TEST(Recipe, ErrorsNameFileLineAndField) {
  EXPECT_NE(test::recipe_error("[model]\nn_layers = 3\n").find("bad.toml:2: field 'model.n_layers': unknown field"),
            std::string::npos)
      << test::recipe_error("[model]\nn_layers = 3\n");
  EXPECT_NE(test::recipe_error("[model]\nn_layer = \"ten\"\n").find("field 'model.n_layer': expected an integer"), std::string::npos);
  EXPECT_NE(test::recipe_error("[models]\nn_layer = 3\n").find("field 'models': unknown field"), std::string::npos);
  EXPECT_NE(test::recipe_error("[batch]\ntokens_per_step = 1000\n").find("field 'batch.tokens_per_step'"), std::string::npos);
  EXPECT_NE(test::recipe_error("[run]\nnan_policy = \"ignore\"\n").find("field 'run.nan_policy'"), std::string::npos);
  EXPECT_NE(test::recipe_error("[model]\nn_layer = 2\nattention_layers = [true]\n").find("'attention_layers'"), std::string::npos);
  EXPECT_NE(test::recipe_error("[optimizer]\nmuon_ns_coefficients = [1, 2]\n").find("field 'optimizer.muon_ns_coefficients'"),
            std::string::npos);
  EXPECT_NE(test::recipe_error("[optimizer]\nmuon_weight_decay = -0.1\n")
                .find("field 'optimizer.muon_weight_decay': expected >= 0 (0: no cautious weight decay"),
            std::string::npos)
      << test::recipe_error("[optimizer]\nmuon_weight_decay = -0.1\n");
  EXPECT_EQ(parse_recipe("[optimizer]\nmuon_weight_decay = 0.28\n", "good").optimizer.muon_weight_decay, 0.28);
  EXPECT_NE(test::recipe_error("[optimizer]\nembedding_adam_beta2 = 1.0\n")
                .find("field 'optimizer.embedding_adam_beta2': expected [0, 1), or -1 for adam_beta2"),
            std::string::npos);
  EXPECT_NE(test::recipe_error("[optimizer]\nunembedding_weight_decay = -0.5\n")
                .find("field 'optimizer.unembedding_weight_decay': expected >= 0, or -1 for weight_decay"),
            std::string::npos);
  EXPECT_EQ(parse_recipe("[optimizer]\nunembedding_adam_beta2 = 0.96\n", "good").optimizer.unembedding_adam_beta2, 0.96);
  // the residual scalars (frontier.md 1.1) and their AdamW groups
  const Recipe scalars = parse_recipe("[model]\nresidual_scalars = true\n[optimizer]\nx0_scalar_beta1 = 0.9\n", "good");
  EXPECT_TRUE(scalars.model.residual_scalars);
  EXPECT_EQ(scalars.optimizer.x0_scalar_beta1, 0.9);
  EXPECT_EQ(scalars.optimizer.resid_scalar_lr, 0.005);
  EXPECT_FALSE(Recipe{}.model.residual_scalars);
  EXPECT_NE(test::recipe_error("[model]\nresidual_scalars = 1\n").find("field 'model.residual_scalars'"), std::string::npos);
  EXPECT_NE(test::recipe_error("[optimizer]\nx0_scalar_beta1 = 1.0\n").find("field 'optimizer.x0_scalar_beta1': expected [0, 1)"),
            std::string::npos);
  EXPECT_NE(test::recipe_error("[optimizer]\nx0_scalar_lr = -1\n").find("learning rates must be >= 0"), std::string::npos);
  EXPECT_NE(test::recipe_error("[optimizer]\nresid_scalar_weight_decay = -1\n")
                .find("field 'optimizer.resid_scalar_weight_decay': expected >= 0"),
            std::string::npos);
  EXPECT_NE(test::recipe_error("[model\n").find("bad.toml:1"), std::string::npos) << test::recipe_error("[model\n");
  EXPECT_NE(test::recipe_error("model = 3\n").find("field 'model': expected a table"), std::string::npos);
  EXPECT_NE(test::recipe_error("[backend]\nmatmul_precision = \"fp16\"\n")
                .find("bad.toml:2: field 'backend.matmul_precision': expected \"auto\", \"f32\" or \"bf16\", got \"fp16\""),
            std::string::npos)
      << test::recipe_error("[backend]\nmatmul_precision = \"fp16\"\n");
  EXPECT_NE(test::recipe_error("[backend]\nmatmul_precision = 16\n").find("field 'backend.matmul_precision': expected a string"),
            std::string::npos);
}

TEST(Recipe, MatmulPrecisionDefaultsToAutoAndKeepsItsNameInTheHash) {
  EXPECT_EQ(Recipe{}.matmul_precision, MatmulPrecision::automatic);
  for (const char* name : {"auto", "f32", "bf16"}) {
    const Recipe r = parse_recipe(std::string("[backend]\nmatmul_precision = \"") + name + "\"\n", "p.toml");
    EXPECT_EQ(matmul_precision_name(r.matmul_precision), std::string(name));
    EXPECT_EQ(to_json(r)["backend"]["matmul_precision"], name);
  }
  EXPECT_NE(recipe_hash(parse_recipe("[backend]\nmatmul_precision = \"auto\"\n", "a.toml")),
            recipe_hash(parse_recipe("[backend]\nmatmul_precision = \"f32\"\n", "b.toml")));
}

// backend.attention: auto by default; each choice parsed, recorded in the resolved recipe and its
// hash; a misspelt one refused with the field; the CPU backend refuses the cuda backend's kernels
// when the recipe's backend is made, naming the recipe, the choice and what it takes instead.
TEST(Recipe, AttentionKernelsDefaultToAutoAndTheCpuRefusesTheCudaOnes) {
  EXPECT_EQ(Recipe{}.attention, AttentionKernels::automatic);
  EXPECT_EQ(to_json(Recipe{})["backend"]["attention"], "auto");
  for (const char* name : {"auto", "flash", "cudnn", "reference"}) {
    const Recipe r = parse_recipe(std::string("[backend]\nattention = \"") + name + "\"\n", "p.toml");
    EXPECT_EQ(attention_kernels_name(r.attention), std::string(name));
    EXPECT_EQ(to_json(r)["backend"]["attention"], name);
  }
  EXPECT_NE(recipe_hash(parse_recipe("[backend]\nattention = \"auto\"\n", "a.toml")),
            recipe_hash(parse_recipe("[backend]\nattention = \"cudnn\"\n", "b.toml")));
  const std::string misspelt = test::recipe_error("[backend]\nattention = \"flash2\"\n");
  EXPECT_NE(misspelt.find("bad.toml:2: field 'backend.attention': expected \"auto\", \"flash\", \"cudnn\" or "
                          "\"reference\", got \"flash2\""),
            std::string::npos)
      << misspelt;

  const Recipe on_cpu = parse_recipe("[backend]\nname = \"cpu\"\nattention = \"cudnn\"\n", "cpu-cudnn.toml");
  std::string refused;
  try {
    create_recipe_backend(on_cpu);
  } catch (const Error& e) {
    refused = e.what();
  }
  EXPECT_NE(refused.find("cpu-cudnn.toml: [backend] (name \"cpu\""), std::string::npos) << refused;
  EXPECT_NE(refused.find("cpu backend: attention \"cudnn\" names one of the cuda backend's kernels"), std::string::npos)
      << refused;
  EXPECT_NE(refused.find("(\"auto\", docs/cpu.md)"), std::string::npos) << refused;
}

TEST(Recipe, HashFollowsEveryField) {
  Recipe a, b;
  b.optimizer.adam_eps = 1e-9;
  EXPECT_NE(recipe_hash(a), recipe_hash(b));
  Recipe c = parse_recipe("[schedule]\nwarmdown_fraction = 0.2\n", "c.toml");
  EXPECT_EQ(recipe_hash(a), recipe_hash(c));  // stating a default changes nothing
}

TEST(Recipe, DebugFaultInjectionIsRecordedOnlyWhenSet) {
  Recipe plain;
  EXPECT_FALSE(to_json(plain).contains("debug"));  // recipes without it keep their hashes
  Recipe nan = parse_recipe("[debug]\nnan_loss_at_step = 3\n", "nan.toml");
  EXPECT_EQ(nan.debug_nan_loss_at_step, 3);
  EXPECT_EQ(to_json(nan)["debug"]["nan_loss_at_step"], 3);
  EXPECT_NE(recipe_hash(plain), recipe_hash(nan));
  EXPECT_NE(test::recipe_error("[debug]\nnan_loss_at_step = -1\n").find("debug.nan_loss_at_step"), std::string::npos);
}

}  // namespace
}  // namespace ct
