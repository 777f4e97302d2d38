#pragma once
// Synthetic run folders (result.json per docs/run-records.md) and the python reference for the lab
// tests.
#include <map>
#include <optional>
#include <string>

#include "lab/ledger.h"
#include "test_support.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"

namespace ct::lab::test {

namespace fs = std::filesystem;

// A declared experiment with a hypothesis, a predicted effect inside its interval and a decision rule.
inline NewExperiment sample_experiment() {
  NewExperiment e;
  e.change = "n_layer 4 -> 6";
  e.hypothesis = "a deeper model reaches lower val_bpb in the same budget";
  e.predicted_effect = -0.01;
  e.predicted_low = -0.02;
  e.predicted_high = 0.0;
  e.rule_text = "accept if mean(B) - mean(A) < -0.005 at 95%";
  return e;
}

// The first rung of experiment `id`'s ladder, passed.
inline LadderCheck passed_cpu_check(int64_t id) {
  LadderCheck c;
  c.experiment_id = id;
  c.rung = Rung::cpu_check;
  c.command = "ctest -R model";
  c.passed = true;
  return c;
}

struct ResultSpec {
  std::string name = "cpu-small";
  int64_t seed = 1;
  std::optional<double> val_bpb = 1.7;
  bool eligible = true;
  bool valid_score = true;
  double budget_seconds = 300;
  int64_t steps = 100;
  int64_t tokens = 1638400;
  int n_layer = 4;
  std::string binary_version = "0.1.0+abc123";
  int threads = 2;
  std::string matmul_precision = "bf16";
  std::string matmul_precision_reason = "auto: bf16, the CPU level avx512_bf16 has a bf16 engine (AVX512-BF16 dot products)";
  std::map<std::string, std::string> environment = {{"OMP_NUM_THREADS", "2"}};
};

inline Json result_json(const ResultSpec& s, const fs::path& dir) {
  // Consistent as the harness requires: eligible exactly when every check passed.
  Json checks = Json::array();
  for (const char* name : {"time", "valid_score", "trusted_evaluation", "full_machine", "data"}) {
    bool passed = std::string(name) == "valid_score" ? s.valid_score : s.eligible;
    checks.push_back({{"name", name}, {"passed", passed}, {"evidence", "synthetic"}});
  }
  bool eligible = s.eligible && s.valid_score;
  const std::string recipe_sha(64, 'a'), manifest_sha(64, 'b');
  return Json{
      {"format", "clocktrain-result/1"},
      {"name", s.name},
      {"recipe",
       {{"path", "recipes/" + s.name + ".toml"},
        {"sha256", recipe_sha},
        // As `clocktrain run` writes it: the resolved recipe holds the run's seed and budget too.
        {"resolved",
         {{"model", {{"n_layer", s.n_layer}, {"n_embd", 128}}},
          {"train", {{"lr", 0.02}}},
          {"run", {{"seed", s.seed}, {"budget_seconds", s.budget_seconds}, {"run_by", "budget"}}}}}}},
      {"seed", s.seed},
      {"round", 1},
      {"parameters", 123456},
      {"budget_seconds", s.budget_seconds},
      {"train_clock_seconds", s.budget_seconds * 0.99},
      {"startup_seconds", 2.5},
      {"startup_cap_seconds", 900.0},
      {"steps", s.steps},
      {"tokens", s.tokens},
      {"val_bpb", s.val_bpb ? Json(*s.val_bpb) : Json(nullptr)},
      {"val", {{"nats", 1.0}, {"bytes", 1.0}, {"tokens", 1.0}, {"seconds", 1.0}}},
      {"core", nullptr},
      {"gate", {{"eligible", eligible}, {"checks", checks}}},
      {"data", {{"manifest_sha256", manifest_sha}, {"shards_read", Json::array()}}},
      {"binary", {{"version", s.binary_version}, {"build_flags", "GNU-12 Release -O3"}}},
      {"device",
       {{"backend", "cpu"},
        {"description", "synthetic cpu"},
        {"devices", 1},
        {"threads", s.threads},
        {"matmul_precision", s.matmul_precision},
        {"matmul_precision_reason", s.matmul_precision_reason},
        {"peak_flops", 4.6e11},
        {"matmul_ceiling_flops", 4.2e11}}},
      {"environment", s.environment},
      {"changed_source_lines", nullptr},
      {"run_dir", dir.string()},
      {"created_unix", 1796040000.0}};
}

inline fs::path write_run(const fs::path& dir, const ResultSpec& s) {
  fs::create_directories(dir);
  write_file_atomic(dir / "result.json", result_json(s, dir).dump(2));
  return dir;
}

// Runs tests/python/lab_reference.py on `cases`; skips the test when numpy/scipy are missing.
inline Json python_reference(const Json& cases, const fs::path& scratch) {
  fs::path input = scratch / "reference_input.json";
  write_file_atomic(input, cases.dump());
  fs::path script = ct::test::source_dir() / "tests" / "python" / "lab_reference.py";
  auto result = ct::test::run_command(ct::test::python() + " " + script.string() + " < " + input.string());
  if (result.exit_code != 0) throw Error("lab_reference.py failed: " + result.output);
  // stderr is merged into the output: the JSON is the last line.
  auto start = result.output.rfind("\n{");
  return Json::parse(start == std::string::npos ? result.output : result.output.substr(start + 1));
}

}  // namespace ct::lab::test
