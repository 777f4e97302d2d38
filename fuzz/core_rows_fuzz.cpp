// The rows of a CORE task (eval_data/*.jsonl): load_core_rows for the task type chosen by the first
// input byte (multiple_choice, schema, language_modeling), the rest being the JSONL file.
#include "eval/core_bundle.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const ct::CoreTaskType types[] = {ct::CoreTaskType::kMultipleChoice, ct::CoreTaskType::kSchema,
                                    ct::CoreTaskType::kLanguageModeling};
  const ct::CoreTaskType type = types[data[0] % 3];
  const auto path = ct::fuzz::scratch().write("task.jsonl", ct::fuzz::as_text(data + 1, size - 1));
  ct::fuzz::accept_only_ct_errors([&] {
    for (const ct::CoreRow& row : ct::load_core_rows(path, type)) {
      if (type == ct::CoreTaskType::kMultipleChoice)
        ct::fuzz::fuzz_require(row.gold >= 0 && static_cast<size_t>(row.gold) < row.choices.size(), "gold in range");
      if (type == ct::CoreTaskType::kSchema)
        ct::fuzz::fuzz_require(row.gold >= 0 && static_cast<size_t>(row.gold) < row.context_options.size(),
                               "gold in range");
    }
  });
  return 0;
}
