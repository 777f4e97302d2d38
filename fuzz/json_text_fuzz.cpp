// JSON text through json_from_text (util/json.h), which every whole-file JSON reader uses: the
// nesting guard and nlohmann's parser. A value that parses must survive the recursive operations
// (dump, copy, compare).
#include "fuzz_support.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::Json value = ct::json_from_text(ct::fuzz::as_text(data, size), "input.json");
    const std::string dumped = value.dump(-1, ' ', false, ct::Json::error_handler_t::replace);
    const ct::Json copy = value;
    ct::fuzz::fuzz_require(copy == value, "a copy compares equal");
    ct::fuzz::fuzz_require(!dumped.empty(), "a parsed value dumps to text");
  });
  return 0;
}
