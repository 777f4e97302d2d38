#pragma once
// The CORE bundle (docs/eval.md, nanochat's eval_bundle layout): core.yaml lists the tasks,
// eval_meta_data.csv gives each task's random baseline, eval_data/<dataset_uri> holds the rows.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ct {

class ReadGuard;

enum class CoreTaskType { kMultipleChoice, kSchema, kLanguageModeling };

// "multiple_choice", "schema", "language_modeling" (the icl_task_type spelling).
const char* core_task_type_name(CoreTaskType type);

struct CoreTaskSpec {
  std::string label;
  std::string dataset_uri;
  int num_fewshot = 0;                       // k (core.yaml writes it as a one-element list)
  CoreTaskType type = CoreTaskType::kMultipleChoice;
  std::string continuation_delimiter = " ";  // the default when core.yaml has none
  double random_baseline_percent = 0;        // eval_meta_data.csv "Random baseline"
  std::filesystem::path data_path;           // <bundle>/eval_data/<dataset_uri>
  bool data_present = false;
};

struct CoreBundle {
  std::filesystem::path root;
  std::vector<CoreTaskSpec> tasks;  // in core.yaml order, present or not

  std::vector<std::string> missing_labels() const;  // tasks whose data file is absent
  const CoreTaskSpec& task(const std::string& label) const;  // error when unknown
};

// Reads core.yaml and eval_meta_data.csv and checks which data files exist. Errors name the file,
// the line and the field (a task without a random baseline is an error; a missing data file is not:
// it is reported by missing_labels()). With a guard, each file is admitted before it is read.
CoreBundle load_core_bundle(const std::filesystem::path& dir, ReadGuard* guard = nullptr);

// One JSONL row of a task, with the fields its type uses.
struct CoreRow {
  int64_t line = 0;  // 1-based line in the data file
  std::string query;                         // multiple_choice
  std::vector<std::string> choices;          // multiple_choice
  std::vector<std::string> context_options;  // schema
  std::string context;                       // language_modeling
  std::string continuation;                  // schema, language_modeling
  int gold = -1;                             // multiple_choice, schema
};

// Loads every row of a task's data file in file order. Errors name the file, the line and the field.
std::vector<CoreRow> load_core_rows(const std::filesystem::path& path, CoreTaskType type);

}  // namespace ct
