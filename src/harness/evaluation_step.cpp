#include "harness/evaluation_step.h"

#include <cmath>

#include "harness/environment.h"
#include "harness/json_fields.h"
#include "util/child_process.h"
#include "util/data_dir.h"
#include "util/error.h"
#include "util/files.h"
#include "util/read_guard.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> string_list(const FieldReader& r, const std::string& key) {
  std::vector<std::string> out;
  const Json& a = r.array(key);
  for (size_t i = 0; i < a.size(); ++i) out.push_back(r.element_string(a, i, key));
  return out;
}

// Runs one evaluator; returns its JSON, or nothing (with a note) when it failed.
std::optional<Json> run_evaluator(const std::vector<std::string>& argv, const fs::path& json_path, double timeout,
                                  double& seconds, bool& timed_out, EvaluationOutcome& out, std::ostream& log) {
  std::error_code ec;
  fs::remove(json_path, ec);  // never read a stale file
  log << "evaluate: " << shell_join(argv) << "\n" << std::flush;
  ChildResult child = run_child(argv, 0, timeout);
  seconds = child.finished_unix - child.started_unix;
  timed_out = child.timed_out;
  if (child.timed_out) {
    out.notes.push_back(str("`", shell_join(argv), "` was stopped after ", std::lround(seconds), " s (timeout ", timeout,
                            " s)"));
    return std::nullopt;
  }
  if (child.exit_code != 0 || !fs::exists(json_path)) {
    out.notes.push_back(str("`", shell_join(argv), "` exited with status ", child.exit_code,
                            fs::exists(json_path) ? "" : " and wrote no result"));
    return std::nullopt;
  }
  try {
    return read_json_file(json_path);
  } catch (const Error& e) {
    out.notes.push_back(e.what());
    return std::nullopt;
  }
}

}  // namespace

void read_bpb_json(const Json& j, const std::string& where, EvaluationOutcome& out) {
  FieldReader r(j, where);
  ValScore v;
  v.nats = r.number_or_nan("nats");
  v.bytes = r.non_negative("bytes");
  v.tokens = r.non_negative("targets");
  v.seconds = r.non_negative("seconds");
  out.val = v;
  out.evidence.val_bpb = r.number_or_nan("val_bpb");  // NaN stays NaN: valid_score judges it
  out.evidence.evaluated_checkpoint_sha256 = r.string("checkpoint_sha256");
  for (auto& f : string_list(r, "files_read")) out.evidence.files_opened.push_back(std::move(f));
}

void read_core_json(const Json& j, const std::string& where, double seconds, EvaluationOutcome& out) {
  FieldReader r(j, where);
  CoreScore c;
  c.core = r.number_or_nan("core");
  c.label = r.string("metric");
  c.missing_tasks = string_list(r, "missing_tasks");
  c.seconds = seconds;
  c.max_per_task = r.integer("max_per_task", 0, INT64_MAX);
  c.task_subset = r.boolean("task_subset");
  const Json& tasks = r.array("tasks");
  for (size_t i = 0; i < tasks.size(); ++i) {
    FieldReader t = r.element(tasks, i, "tasks");
    CoreTaskScore s;
    s.label = t.string("label");
    s.shots = t.integer("shots", 0, 1000);
    s.type = t.string("type");
    s.rows = t.integer("rows", 0, INT64_MAX);
    s.accuracy = t.number_or_nan("accuracy");
    s.centered = t.number_or_nan("centered");
    s.seconds = t.non_negative("seconds");
    s.clamped_rows = t.integer("clamped_rows", 0, INT64_MAX);
    s.prefix_mismatch_rows = t.integer("prefix_mismatch_rows", 0, INT64_MAX);
    c.tasks.push_back(std::move(s));
  }
  out.core = c;
  out.evidence.core_ran = true;
  out.evidence.core = c.core;
  out.evidence.core_seconds = seconds;
  out.evidence.core_max_per_task = c.max_per_task;
  out.evidence.core_task_subset = c.task_subset;
  out.evidence.core_checkpoint_sha256 = r.string("checkpoint_sha256");
  for (auto& f : string_list(r, "files_read")) out.evidence.files_opened.push_back(std::move(f));
}

EvaluationOutcome run_evaluation_step(const EvaluationStep& step, std::ostream& log) {
  EvaluationOutcome out;
  const DataLayout layout{step.data_dir};
  const std::string version = current_binary().version;
  ensure_directory(step.out_dir);
  // The folders the evaluator may read, as the harness (not the evaluator) sees them.
  out.evidence.allowed_roots = {canonical_for_guard(step.checkpoint_dir).string(), canonical_for_guard(layout.val()).string()};
  if (step.core) out.evidence.allowed_roots.push_back(canonical_for_guard(layout.eval_bundle()).string());

  std::vector<std::string> common = {"--data", step.data_dir.string(), "--backend", step.backend, "--threads",
                                     std::to_string(step.threads)};
  if (!step.progress) common.push_back("--no-progress");
  {
    const fs::path json_path = step.out_dir / "bpb.json";
    // --per-document: the log shows where the score comes from (docs/eval.md).
    std::vector<std::string> argv = {step.binary.string(), "eval", "bpb", step.checkpoint_dir.string(), "--out",
                                     json_path.string(), "--per-document"};
    argv.insert(argv.end(), common.begin(), common.end());
    double seconds = 0;
    bool timed_out = false;
    if (auto j = run_evaluator(argv, json_path, 0, seconds, timed_out, out, log)) {
      try {
        read_bpb_json(*j, json_path.string(), out);
        out.evidence.evaluator = str("clocktrain ", version, " eval bpb (a separate process)");
      } catch (const Error& e) {
        out.notes.push_back(e.what());
      }
    }
  }
  if (step.core) {
    const fs::path json_path = step.out_dir / "core.json";
    std::vector<std::string> argv = {step.binary.string(), "eval", "core", step.checkpoint_dir.string(), "--out",
                                     json_path.string()};
    argv.insert(argv.end(), common.begin(), common.end());
    if (step.core_max_per_task > 0) {
      argv.push_back("--max-per-task");
      argv.push_back(std::to_string(step.core_max_per_task));
    }
    double seconds = 0;
    if (auto j = run_evaluator(argv, json_path, step.core_timeout_seconds, seconds, out.core_timed_out, out, log)) {
      try {
        read_core_json(*j, json_path.string(), seconds, out);
        if (!out.evidence.evaluator.empty()) out.evidence.evaluator = str("clocktrain ", version, " eval bpb and eval core (separate processes)");
      } catch (const Error& e) {
        out.notes.push_back(e.what());
      }
    }
  }
  return out;
}

}  // namespace ct
