// The CORE bundle's task list and baselines: load_core_bundle reads core.yaml (yaml-cpp) and
// eval_meta_data.csv (util/csv.h). Input: core.yaml, a NUL byte, eval_meta_data.csv.
#include "eval/core_bundle.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto files = ct::fuzz::split_at_nul(ct::fuzz::as_text(data, size));
  ct::fuzz::scratch().write("core.yaml", files.first);
  ct::fuzz::scratch().write("eval_meta_data.csv", files.second);
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::CoreBundle bundle = ct::load_core_bundle(ct::fuzz::scratch().path());
    for (const ct::CoreTaskSpec& task : bundle.tasks) {
      ct::fuzz::fuzz_require(&bundle.task(task.label) == &task, "task() finds every task (labels are unique)");
      ct::fuzz::fuzz_require(task.num_fewshot >= 0, "num_fewshot >= 0");
    }
    (void)bundle.missing_labels();
  });
  return 0;
}
