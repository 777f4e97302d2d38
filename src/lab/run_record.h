#pragma once
// A run as the lab sees it: the contents of RUN_DIR/result.json (docs/run-records.md), plus the
// environment the lab captured when it launched the run. From it come the run's fingerprint (every
// input that can make two runs differ: resolved recipe, binary, data, devices, environment) and its
// metrics (val_bpb, CORE, any numeric field).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "util/json.h"

namespace ct::lab {

struct RunRecord {
  std::filesystem::path run_dir;  // absolute
  std::string result_text;        // result.json exactly as read
  Json result;                    // parsed
  std::string name;               // recipe name
  int64_t seed = 0;
  std::optional<double> val_bpb;  // null when the run produced no finite score
  bool gate_eligible = false;
  // Environment: result.json's "environment", with the lab's own capture (lab run) merged over it.
  std::map<std::string, std::string> environment;
};

// Reads `path` (a run folder holding result.json, or the result.json itself) and validates it as
// the harness does (harness/result.h). Errors name the file and the field that is wrong.
RunRecord read_run_record(const std::filesystem::path& path);

// Builds a record from result.json text already in hand (as stored in the ledger): only the fields
// the lab needs are checked, so that a ledger written under older validation rules stays readable.
RunRecord parse_run_record(const std::string& result_text, const std::filesystem::path& run_dir,
                           const std::string& where);

// The inputs of a run, flattened to "key" -> canonical JSON text of the value:
//   recipe.<field path>    every leaf of recipe.resolved (recipe.sha256 when resolved is empty),
//                          but recipe.run.seed and recipe.run.budget_seconds (see below)
//   budget_seconds, startup_cap_seconds, round
//   binary.version, binary.build_flags, data.manifest_sha256
//   device.backend, device.description, device.devices, device.threads, device.matmul_precision
//   env.<NAME>             every recorded environment variable
// The seed is not part of it: seeds are what replicates a configuration. The budget is there once,
// as budget_seconds.
std::map<std::string, std::string> run_fingerprint(const RunRecord& run);

// Outcomes and labels shown by `lab diff` beside the fingerprint (never a hygiene difference):
// name, recipe.path, device.matmul_precision_reason, seed, val_bpb, core, steps, tokens,
// train_clock_seconds, parameters, gate.eligible.
std::map<std::string, std::string> run_outcomes(const RunRecord& run);

// A metric of the run: "core" is result.core.core; any other name is a numeric top-level field
// (val_bpb, steps, tokens, train_clock_seconds, ...). Empty when absent, null or not finite.
std::optional<double> metric_value(const RunRecord& run, const std::string& metric);

}  // namespace ct::lab
