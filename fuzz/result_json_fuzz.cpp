// result.json (harness/result.h): read_result_file's strict validation; an accepted result must
// survive its own writer's JSON (result_to_json -> result_from_json).
#include "fuzz_support.h"
#include "harness/result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ct::fuzz::scratch().write("result.json", ct::fuzz::as_text(data, size));
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::RunResult result = ct::read_result_file(path);
    const ct::OrderedJson written = ct::result_to_json(result);
    const ct::RunResult again = ct::result_from_json(ct::Json::parse(written.dump()), "written result.json");
    ct::fuzz::fuzz_require(ct::result_to_json(again) == written, "result_to_json round trip");
  });
  return 0;
}
