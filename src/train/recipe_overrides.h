#pragma once
// The command line's changes to a recipe, applied in one place for `clocktrain train` and
// `clocktrain run` (and its round rules): each option set here replaces the recipe file's value, and
// the result is validated once, naming `where` (the file and which command's options).
#include <cstdint>
#include <optional>
#include <string>

#include "train/recipe.h"

namespace ct {

struct RecipeOverrides {
  std::optional<double> budget_seconds;  // a timed run of this many seconds (run_by = budget)
  std::optional<int64_t> steps;          // a run of this many steps (run_by = steps); not with budget_seconds
  std::optional<uint64_t> seed;
  std::optional<int> threads;
  std::optional<int64_t> micro_batch_rows;
};

// Applies `overrides` to `recipe` and validates it; errors name `where`.
void apply_recipe_overrides(Recipe& recipe, const RecipeOverrides& overrides, const std::string& where);

}  // namespace ct
