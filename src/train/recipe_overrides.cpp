#include "train/recipe_overrides.h"

#include "util/error.h"

namespace ct {

void apply_recipe_overrides(Recipe& recipe, const RecipeOverrides& overrides, const std::string& where) {
  check(!(overrides.budget_seconds && overrides.steps), where, ": a budget or a step count, not both");
  if (overrides.budget_seconds) {
    recipe.run_by = RunBy::budget;
    recipe.budget_seconds = *overrides.budget_seconds;
  }
  if (overrides.steps) {
    recipe.run_by = RunBy::steps;
    recipe.steps = *overrides.steps;
  }
  if (overrides.seed) recipe.seed = *overrides.seed;
  if (overrides.threads) recipe.threads = *overrides.threads;
  if (overrides.micro_batch_rows) recipe.micro_batch_rows = *overrides.micro_batch_rows;
  recipe.validate(where);
}

}  // namespace ct
