// config.json beside a checkpoint: model_config_from_json, then the figures computed from it
// (parameter count, FLOPs per token), which must not overflow for any accepted config.
#include "fuzz_support.h"
#include "model/config.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::ModelConfig config =
        ct::model_config_from_json(ct::json_from_text(ct::fuzz::as_text(data, size), "config.json"), "config.json");
    ct::fuzz::fuzz_require(config.parameter_count() > 0, "an accepted config has parameters");
    (void)config.flops_per_token();
    const ct::ModelConfig again = ct::model_config_from_json(ct::to_json(config), "canonical config.json");
    ct::fuzz::fuzz_require(ct::to_json(again) == ct::to_json(config), "to_json round trip");
  });
  return 0;
}
