#pragma once
// result.json: what the harness concluded about one run (docs/run-records.md fixes every field).
// Written atomically by `clocktrain run`; read by `board`, `report` and the lab. A result file may
// come from someone else, so reading validates every field (type, range, finiteness) and the
// gate's internal consistency, and every error names the file and the field.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace ct {

inline constexpr const char* kResultFormat = "clocktrain-result/1";
inline constexpr const char* kResultFileName = "result.json";

// The gate's checks, in the order result.json lists them (docs/harness.md). core_time only in round 2.
inline constexpr const char* kCheckTime = "time";
inline constexpr const char* kCheckValidScore = "valid_score";
inline constexpr const char* kCheckTrustedEvaluation = "trusted_evaluation";
inline constexpr const char* kCheckFullMachine = "full_machine";
inline constexpr const char* kCheckData = "data";
inline constexpr const char* kCheckCoreTime = "core_time";

// The checks a round requires, in order.
std::vector<std::string> required_checks(int round);

struct RecipeRef {
  std::string path;
  std::string sha256;
  Json resolved = Json::object();  // the recipe after defaults and overrides, as a JSON object
};

struct ValScore {
  double nats = 0;  // NaN when the model produced a non-finite loss (written as null)
  double bytes = 0;
  double tokens = 0;
  double seconds = 0;
};

struct CoreTaskScore {
  std::string label;
  int64_t shots = 0;
  std::string type;  // multiple_choice | schema | language_modeling
  int64_t rows = 0;
  double accuracy = 0;
  double centered = 0;
  double seconds = 0;
  int64_t clamped_rows = 0;
  int64_t prefix_mismatch_rows = 0;
};

struct CoreScore {
  double core = 0;
  std::string label;  // e.g. CORE-21
  std::vector<std::string> missing_tasks;
  double seconds = 0;
  std::vector<CoreTaskScore> tasks;
  // What CORE covered: max_per_task 0 = every row of each task (else the first N shuffled rows);
  // task_subset = only the tasks named by --tasks. subset_recorded is false for a result written
  // before these were recorded: its coverage is unknown.
  int64_t max_per_task = 0;
  bool task_subset = false;
  bool subset_recorded = true;
  // Every row of every task present: the only CORE a ranking compares.
  bool full() const { return subset_recorded && max_per_task == 0 && !task_subset; }
};

struct GateCheck {
  std::string name;
  bool passed = false;
  std::string evidence;
};

struct GateVerdict {
  bool eligible = false;  // every check present and passed
  std::vector<GateCheck> checks;

  const GateCheck* find(const std::string& name) const;
  std::vector<std::string> failed_checks() const;
};

struct ShardRead {
  std::string name;
  std::string sha256;
};

struct DataRecord {
  std::string manifest_sha256;
  std::vector<ShardRead> shards_read;
};

struct BinaryInfo {
  std::string version;
  std::string build_flags;
};

struct DeviceInfo {
  std::string backend;  // cpu | cuda
  std::string description;
  int64_t devices = 0;
  int64_t threads = 0;
  // The matmul precision that ran ("f32", "bf16") and why ("auto: f32, the CPU level avx2 has no bf16
  // engine ..."); the device's theoretical peak in it and the measured matmul ceiling (FLOP/s). Empty
  // or 0 in results written before they were recorded.
  std::string matmul_precision, matmul_precision_reason;
  double peak_flops = 0;
  double matmul_ceiling_flops = 0;
};

struct RunResult {
  std::string name;
  RecipeRef recipe;
  uint64_t seed = 0;
  int round = 1;
  bool practice = false;  // `clocktrain run --practice`: round 2's budget and CORE rules waived; never ranked
  int64_t parameters = 0;
  double budget_seconds = 0;
  double train_clock_seconds = 0;
  double startup_seconds = 0;
  double startup_cap_seconds = 900;
  int64_t steps = 0;
  int64_t tokens = 0;
  std::optional<double> val_bpb;  // null when not computed or not finite
  std::optional<ValScore> val;
  std::optional<CoreScore> core;  // null when CORE was not run
  GateVerdict gate;
  DataRecord data;
  BinaryInfo binary;
  DeviceInfo device;
  std::vector<std::pair<std::string, std::string>> environment;  // sorted by name
  std::optional<int64_t> changed_source_lines;
  std::string run_dir;
  double created_unix = 0;
  // Top-level fields this version does not know (written by a newer one): kept, written back as is.
  Json extra = Json::object();
};

// Serialises with the field order of docs/run-records.md. A non-finite optional figure (val_bpb,
// val.nats) is written as null.
OrderedJson result_to_json(const RunResult& result);

// Validates and converts; `where` names the source in errors ("runs/a/result.json").
RunResult result_from_json(const Json& j, const std::string& where);

// Reads `path`, which is a result.json or a run folder holding one.
RunResult read_result_file(const std::filesystem::path& path);
// The result.json a path stands for: the file itself, or <folder>/result.json.
std::filesystem::path resolve_result_path(const std::filesystem::path& path);

// Writes atomically (an existing result stays whole if anything fails).
void write_result_file(const std::filesystem::path& path, const RunResult& result);

}  // namespace ct
