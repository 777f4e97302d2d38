// The data loader's position as stored in a training checkpoint (JSON in training_state's metadata).
#include "data/loader.h"
#include "fuzz_support.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::LoaderState state =
        ct::loader_state_from_json(ct::json_from_text(ct::fuzz::as_text(data, size), "loader_state"));
    ct::fuzz::fuzz_require(ct::loader_state_from_json(ct::to_json(state)) == state, "to_json round trip");
  });
  return 0;
}
