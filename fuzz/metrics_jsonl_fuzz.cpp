// metrics.jsonl as the harness reads it (parse_metrics_jsonl: the gate and the report).
#include "fuzz_support.h"
#include "harness/metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::MetricsLog log = ct::parse_metrics_jsonl(std::string(ct::fuzz::as_text(data, size)), "metrics.jsonl");
    ct::fuzz::fuzz_require(ct::count_nonfinite_losses(log) >= 0, "a count");
    (void)ct::last_train_loss(log);
    (void)ct::last_heldout_loss(log);
  });
  return 0;
}
