// Recipes (TOML): parse_recipe, the entry point of load_recipe, with every field's checks and
// validate(); an accepted recipe must give its resolved form and hash.
#include "fuzz_support.h"
#include "train/recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::Recipe recipe = ct::parse_recipe(std::string(ct::fuzz::as_text(data, size)), "recipe.toml");
    ct::fuzz::fuzz_require(recipe.rows_per_step() > 0 && recipe.micro_steps() > 0, "an accepted recipe has steps");
    ct::fuzz::fuzz_require(ct::recipe_hash(recipe).size() == 64, "a recipe hash");
  });
  return 0;
}
