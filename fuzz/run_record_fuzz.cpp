// result.json as the lab reads it (lab/run_record.h): parse_run_record, then the fingerprint,
// outcomes and metrics that the lab's statistics and hygiene checks use.
#include "fuzz_support.h"
#include "lab/run_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::lab::RunRecord run =
        ct::lab::parse_run_record(std::string(ct::fuzz::as_text(data, size)), "/runs/fuzz", "result.json");
    (void)ct::lab::run_fingerprint(run);
    (void)ct::lab::run_outcomes(run);
    for (const char* metric : {"val_bpb", "core", "steps", "tokens", "train_clock_seconds"})
      (void)ct::lab::metric_value(run, metric);
  });
  return 0;
}
