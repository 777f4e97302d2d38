// metrics.jsonl as the trainer rereads it when a run resumes (train/metrics_writer.h, MetricsWriter):
// the lines of steps after the checkpoint are dropped, a line cut by a crash is skipped.
#include "fuzz_support.h"
#include "train/metrics_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ct::fuzz::scratch().write("metrics.jsonl", ct::fuzz::as_text(data, size));
  ct::fuzz::accept_only_ct_errors([&] {
    ct::MetricsWriter log(path, /*keep_through_step=*/3);
  });
  return 0;
}
