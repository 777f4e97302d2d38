#include "eval/core_bundle.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "util/csv.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"
#include "util/read_guard.h"

namespace ct {

const char* core_task_type_name(CoreTaskType type) {
  switch (type) {
    case CoreTaskType::kMultipleChoice: return "multiple_choice";
    case CoreTaskType::kSchema: return "schema";
    case CoreTaskType::kLanguageModeling: return "language_modeling";
  }
  return "?";
}

std::vector<std::string> CoreBundle::missing_labels() const {
  std::vector<std::string> out;
  for (const auto& t : tasks)
    if (!t.data_present) out.push_back(t.label);
  return out;
}

const CoreTaskSpec& CoreBundle::task(const std::string& label) const {
  for (const auto& t : tasks)
    if (t.label == label) return t;
  std::string known;
  for (const auto& t : tasks) known += (known.empty() ? "" : ", ") + t.label;
  fail((root / "core.yaml").string(), ": no task labelled '", label, "' (tasks: ", known, ")");
}

namespace {

std::string where(const std::filesystem::path& file, const YAML::Node& node) {
  // yaml-cpp marks are 0-based.
  return str(file.string(), ":", node.Mark().line + 1);
}

std::string yaml_string(const YAML::Node& task, const char* key, const std::filesystem::path& file,
                        const std::string& label) {
  YAML::Node v = task[key];
  check(v.IsDefined() && !v.IsNull(), where(file, task), ": task '", label, "': missing field '", key, "'");
  check(v.IsScalar(), where(file, v), ": task '", label, "': field '", key, "': expected a string");
  return v.as<std::string>();
}

int yaml_fewshot(const YAML::Node& task, const std::filesystem::path& file, const std::string& label) {
  YAML::Node v = task["num_fewshot"];
  check(v.IsDefined() && !v.IsNull(), where(file, task), ": task '", label, "': missing field 'num_fewshot'");
  // core.yaml writes [k]; one shot count per task is evaluated (nanochat reads the first).
  YAML::Node scalar = v;
  if (v.IsSequence()) {
    check(v.size() == 1, where(file, v), ": task '", label,
          "': field 'num_fewshot': expected one shot count, e.g. [10], got ", v.size());
    scalar = v[0];
  }
  try {
    int k = scalar.as<int>();
    check(k >= 0, where(file, v), ": task '", label, "': field 'num_fewshot': expected k >= 0, got ", k);
    return k;
  } catch (const YAML::Exception&) {
    fail(where(file, v), ": task '", label, "': field 'num_fewshot': expected an integer or [integer]");
  }
}

CoreTaskType parse_type(const std::string& s, const std::string& at, const std::string& label) {
  if (s == "multiple_choice") return CoreTaskType::kMultipleChoice;
  if (s == "schema") return CoreTaskType::kSchema;
  if (s == "language_modeling") return CoreTaskType::kLanguageModeling;
  fail(at, ": task '", label, "': field 'icl_task_type': expected multiple_choice, schema or language_modeling, got '",
       s, "'");
}

std::map<std::string, double> read_random_baselines(const std::filesystem::path& csv_path) {
  check(std::filesystem::exists(csv_path), csv_path.string(), ": file not found (the CORE random baselines)");
  CsvTable table = read_csv_file(csv_path);
  size_t task_col = table.column("Eval Task");
  size_t baseline_col = table.column("Random baseline");
  std::map<std::string, double> out;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& text = table.rows[r][baseline_col];
    size_t used = 0;
    double value = 0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    // std::stod reads "inf" and "nan" too; a non-finite baseline would turn every centred score NaN.
    check(used > 0 && used == text.size() && std::isfinite(value), csv_path.string(), ": line ", table.row_lines[r],
          ": column 'Random baseline': expected a number (percent), got '", text, "'");
    out[table.rows[r][task_col]] = value;
  }
  return out;
}

}  // namespace

CoreBundle load_core_bundle(const std::filesystem::path& dir, ReadGuard* guard) {
  CoreBundle bundle;
  bundle.root = dir;
  const auto yaml_path = dir / "core.yaml";
  check(std::filesystem::exists(yaml_path), yaml_path.string(), ": file not found (is ", dir.string(),
        " a CORE eval bundle?)");
  if (guard) guard->admit(yaml_path);
  if (guard) guard->admit(dir / "eval_meta_data.csv");
  YAML::Node root;
  try {
    root = YAML::LoadFile(yaml_path.string());
  } catch (const YAML::Exception& e) {
    fail(yaml_path.string(), ":", e.mark.line + 1, ": invalid YAML: ", e.msg);
  }
  // A document that is not a mapping (a bare scalar or list) has no 'icl_tasks': subscripting it
  // throws YAML::BadSubscript.
  check(root.IsMap(), yaml_path.string(), ": expected a mapping with a list 'icl_tasks'");
  YAML::Node tasks = root["icl_tasks"];
  check(tasks.IsDefined() && tasks.IsSequence(), yaml_path.string(), ": expected a list 'icl_tasks'");
  const auto baselines = read_random_baselines(dir / "eval_meta_data.csv");
  // Anything else yaml-cpp refuses while the tasks are read is an error naming the file and line.
  try {
    for (const auto& node : tasks) {
      check(node.IsMap(), where(yaml_path, node), ": expected a task (a mapping with label, dataset_uri, ...)");
      CoreTaskSpec spec;
      check(node["label"].IsDefined(), where(yaml_path, node), ": task without a 'label'");
      spec.label = yaml_string(node, "label", yaml_path, "?");
      for (const auto& seen : bundle.tasks)
        check(seen.label != spec.label, where(yaml_path, node), ": task '", spec.label, "' is listed twice");
      spec.dataset_uri = yaml_string(node, "dataset_uri", yaml_path, spec.label);
      // The rows are read from eval_data/<dataset_uri>: a bundle from elsewhere names no file outside it.
      const std::filesystem::path uri(spec.dataset_uri);
      check(!spec.dataset_uri.empty() && uri.is_relative() &&
                std::find(uri.begin(), uri.end(), std::filesystem::path("..")) == uri.end(),
            where(yaml_path, node["dataset_uri"]), ": task '", spec.label,
            "': field 'dataset_uri': expected a relative path inside eval_data/ (no '..'), got '", spec.dataset_uri, "'");
      spec.num_fewshot = yaml_fewshot(node, yaml_path, spec.label);
      spec.type = parse_type(yaml_string(node, "icl_task_type", yaml_path, spec.label), where(yaml_path, node["icl_task_type"]),
                             spec.label);
      if (node["continuation_delimiter"].IsDefined())
        spec.continuation_delimiter = yaml_string(node, "continuation_delimiter", yaml_path, spec.label);
      auto it = baselines.find(spec.label);
      check(it != baselines.end(), (dir / "eval_meta_data.csv").string(), ": no row with 'Eval Task' = '", spec.label,
            "' (needed for its random baseline; the task is listed at ", where(yaml_path, node), ")");
      spec.random_baseline_percent = it->second;
      check(spec.random_baseline_percent < 100, (dir / "eval_meta_data.csv").string(), ": task '", spec.label,
            "': random baseline must be below 100 percent, got ", spec.random_baseline_percent);
      spec.data_path = dir / "eval_data" / spec.dataset_uri;
      spec.data_present = std::filesystem::is_regular_file(spec.data_path);
      bundle.tasks.push_back(std::move(spec));
    }
  } catch (const YAML::Exception& e) {
    fail(yaml_path.string(), ":", e.mark.line + 1, ": ", e.msg);
  }
  return bundle;
}

namespace {

std::string string_field(const Json& j, const char* key, const std::string& at) {
  auto it = j.find(key);
  check(it != j.end(), at, ": missing field '", key, "'");
  check(it->is_string(), at, ": field '", key, "': expected a string");
  return it->get<std::string>();
}

std::vector<std::string> string_list_field(const Json& j, const char* key, const std::string& at) {
  auto it = j.find(key);
  check(it != j.end(), at, ": missing field '", key, "'");
  check(it->is_array() && !it->empty(), at, ": field '", key, "': expected a non-empty list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < it->size(); ++i) {
    check((*it)[i].is_string(), at, ": field '", key, "'[", i, "]: expected a string");
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

int gold_field(const Json& j, size_t options, const std::string& at) {
  auto it = j.find("gold");
  check(it != j.end(), at, ": missing field 'gold'");
  check(it->is_number_integer(), at, ": field 'gold': expected an integer");
  int64_t gold = it->get<int64_t>();
  check(gold >= 0 && gold < static_cast<int64_t>(options), at, ": field 'gold': expected an index in [0, ", options,
        "), got ", gold);
  return static_cast<int>(gold);
}

}  // namespace

std::vector<CoreRow> load_core_rows(const std::filesystem::path& path, CoreTaskType type) {
  const std::string text = read_file(path);
  std::vector<CoreRow> rows;
  size_t pos = 0;
  int64_t line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view body(text.data() + pos, end - pos);
    pos = end + 1;
    ++line;
    const std::string at = str(path.string(), ":", line);
    const Json j = json_from_text(body, at);
    check(j.is_object(), at, ": expected a JSON object");
    CoreRow row;
    row.line = line;
    switch (type) {
      case CoreTaskType::kMultipleChoice:
        row.query = string_field(j, "query", at);
        row.choices = string_list_field(j, "choices", at);
        row.gold = gold_field(j, row.choices.size(), at);
        break;
      case CoreTaskType::kSchema:
        row.context_options = string_list_field(j, "context_options", at);
        row.continuation = string_field(j, "continuation", at);
        row.gold = gold_field(j, row.context_options.size(), at);
        break;
      case CoreTaskType::kLanguageModeling:
        row.context = string_field(j, "context", at);
        row.continuation = string_field(j, "continuation", at);
        break;
    }
    rows.push_back(std::move(row));
  }
  check(!rows.empty(), path.string(), ": expected at least one row");
  return rows;
}

}  // namespace ct
