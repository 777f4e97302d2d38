#include "harness/result.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "harness/json_fields.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

const std::vector<std::string>& known_fields() {
  static const std::vector<std::string> fields = {
      "format", "name", "recipe", "seed", "round", "practice", "parameters", "budget_seconds",
      "train_clock_seconds", "startup_seconds", "startup_cap_seconds", "steps", "tokens", "val_bpb",
      "val", "core", "gate", "data", "binary", "device", "environment", "changed_source_lines",
      "run_dir", "created_unix"};
  return fields;
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string sha256_field(const FieldReader& r, const std::string& key) {
  std::string s = r.string(key);
  if (!is_sha256_hex(s)) r.fail_field(key, "a SHA-256 as 64 lowercase hex digits");
  return s;
}

OrderedJson finite_or_null(double x) { return std::isfinite(x) ? OrderedJson(x) : OrderedJson(nullptr); }

ValScore read_val(const FieldReader& r) {
  ValScore v;
  v.nats = r.number_or_nan("nats");
  if (!r.is_null("nats") && !std::isfinite(v.nats)) r.fail_field("nats", "a finite number or null");
  v.bytes = r.non_negative("bytes");
  v.tokens = r.non_negative("tokens");
  v.seconds = r.non_negative("seconds");
  return v;
}

CoreScore read_core(const FieldReader& r) {
  CoreScore c;
  c.core = r.finite("core");
  c.label = r.string("label");
  const Json& missing = r.array("missing_tasks");
  for (size_t i = 0; i < missing.size(); ++i) c.missing_tasks.push_back(r.element_string(missing, i, "missing_tasks"));
  c.seconds = r.non_negative("seconds");
  // (absent from results written before they were recorded: coverage unknown)
  c.subset_recorded = r.has("max_per_task") && r.has("task_subset");
  if (r.has("max_per_task")) c.max_per_task = r.integer("max_per_task", 0, kMaxCount);
  if (r.has("task_subset")) c.task_subset = r.boolean("task_subset");
  const Json& tasks = r.array("tasks");
  for (size_t i = 0; i < tasks.size(); ++i) {
    FieldReader t = r.element(tasks, i, "tasks");
    CoreTaskScore s;
    s.label = t.string("label");
    s.shots = t.integer("shots", 0, kMaxCount);
    s.type = t.string("type");
    s.rows = t.integer("rows", 0, kMaxCount);
    s.accuracy = t.finite("accuracy");
    if (s.accuracy < 0 || s.accuracy > 1) t.fail_field("accuracy", "a number in [0, 1]");
    s.centered = t.finite("centered");
    s.seconds = t.non_negative("seconds");
    s.clamped_rows = t.integer("clamped_rows", 0, kMaxCount);
    s.prefix_mismatch_rows = t.integer("prefix_mismatch_rows", 0, kMaxCount);
    c.tasks.push_back(std::move(s));
  }
  return c;
}

GateVerdict read_gate(const FieldReader& r) {
  GateVerdict g;
  g.eligible = r.boolean("eligible");
  const Json& checks = r.array("checks");
  std::set<std::string> seen;
  for (size_t i = 0; i < checks.size(); ++i) {
    FieldReader c = r.element(checks, i, "checks");
    GateCheck check;
    check.name = c.string("name");
    if (check.name.empty()) c.fail_field("name", "a non-empty check name");
    if (!seen.insert(check.name).second) c.fail_field("name", "a check name not listed before");
    check.passed = c.boolean("passed");
    check.evidence = c.string("evidence");
    g.checks.push_back(std::move(check));
  }
  return g;
}

// A result that claims eligibility must be consistent with its own figures; one that denies it
// must say which check failed. Hand-edited or forged files are refused here rather than ranked.
void check_gate_consistency(const RunResult& r, const std::string& where) {
  std::vector<std::string> missing;
  for (const auto& name : required_checks(r.round))
    if (!r.gate.find(name)) missing.push_back(name);
  auto failed = r.gate.failed_checks();
  bool should_be_eligible = missing.empty() && failed.empty();
  if (r.gate.eligible && !should_be_eligible) {
    if (!missing.empty())
      fail(where, ": field 'gate.eligible': true, but the round ", r.round, " check '", missing.front(),
           "' is missing from gate.checks");
    fail(where, ": field 'gate.eligible': true, but check '", failed.front(), "' did not pass");
  }
  if (!r.gate.eligible && should_be_eligible)
    fail(where, ": field 'gate.eligible': false, but every check of round ", r.round, " passed");
  if (!r.gate.eligible) return;
  if (!r.val_bpb) fail(where, ": field 'val_bpb': null in a result marked eligible");
  if (r.data.manifest_sha256.empty())
    fail(where, ": field 'data.manifest_sha256': empty (no data prepared) in a result marked eligible");
  if (r.train_clock_seconds > r.budget_seconds)
    fail(where, ": field 'train_clock_seconds': ", r.train_clock_seconds, " exceeds budget_seconds ",
         r.budget_seconds, " in a result marked eligible");
  if (r.startup_seconds > r.startup_cap_seconds)
    fail(where, ": field 'startup_seconds': ", r.startup_seconds, " exceeds startup_cap_seconds ",
         r.startup_cap_seconds, " in a result marked eligible");
  if (r.round == 2 && !r.core) fail(where, ": field 'core': null in a round 2 result marked eligible");
}

}  // namespace

std::vector<std::string> required_checks(int round) {
  std::vector<std::string> checks = {kCheckTime, kCheckValidScore, kCheckTrustedEvaluation, kCheckFullMachine,
                                     kCheckData};
  if (round == 2) checks.push_back(kCheckCoreTime);
  return checks;
}

const GateCheck* GateVerdict::find(const std::string& name) const {
  for (const auto& c : checks)
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<std::string> GateVerdict::failed_checks() const {
  std::vector<std::string> failed;
  for (const auto& c : checks)
    if (!c.passed) failed.push_back(c.name);
  return failed;
}

OrderedJson result_to_json(const RunResult& r) {
  OrderedJson j;
  j["format"] = kResultFormat;
  j["name"] = r.name;
  j["recipe"] = {{"path", r.recipe.path}, {"sha256", r.recipe.sha256}, {"resolved", r.recipe.resolved}};
  j["seed"] = r.seed;
  j["round"] = r.round;
  j["practice"] = r.practice;
  j["parameters"] = r.parameters;
  j["budget_seconds"] = r.budget_seconds;
  j["train_clock_seconds"] = r.train_clock_seconds;
  j["startup_seconds"] = r.startup_seconds;
  j["startup_cap_seconds"] = r.startup_cap_seconds;
  j["steps"] = r.steps;
  j["tokens"] = r.tokens;
  j["val_bpb"] = r.val_bpb ? finite_or_null(*r.val_bpb) : OrderedJson(nullptr);
  if (r.val) {
    j["val"] = {{"nats", finite_or_null(r.val->nats)}, {"bytes", r.val->bytes}, {"tokens", r.val->tokens},
                {"seconds", r.val->seconds}};
  } else {
    j["val"] = nullptr;
  }
  if (r.core) {
    OrderedJson core;
    core["core"] = r.core->core;
    core["label"] = r.core->label;
    core["missing_tasks"] = r.core->missing_tasks;
    core["seconds"] = r.core->seconds;
    core["max_per_task"] = r.core->max_per_task;
    core["task_subset"] = r.core->task_subset;
    core["tasks"] = OrderedJson::array();
    for (const auto& t : r.core->tasks) {
      core["tasks"].push_back({{"label", t.label}, {"shots", t.shots}, {"type", t.type}, {"rows", t.rows},
                               {"accuracy", t.accuracy}, {"centered", t.centered}, {"seconds", t.seconds},
                               {"clamped_rows", t.clamped_rows}, {"prefix_mismatch_rows", t.prefix_mismatch_rows}});
    }
    j["core"] = std::move(core);
  } else {
    j["core"] = nullptr;
  }
  OrderedJson checks = OrderedJson::array();
  for (const auto& c : r.gate.checks)
    checks.push_back({{"name", c.name}, {"passed", c.passed}, {"evidence", c.evidence}});
  j["gate"] = {{"eligible", r.gate.eligible}, {"checks", std::move(checks)}};
  OrderedJson shards = OrderedJson::array();
  for (const auto& s : r.data.shards_read) shards.push_back({{"name", s.name}, {"sha256", s.sha256}});
  j["data"] = {{"manifest_sha256", r.data.manifest_sha256}, {"shards_read", std::move(shards)}};
  j["binary"] = {{"version", r.binary.version}, {"build_flags", r.binary.build_flags}};
  j["device"] = {{"backend", r.device.backend},
                 {"description", r.device.description},
                 {"devices", r.device.devices},
                 {"threads", r.device.threads},
                 {"matmul_precision", r.device.matmul_precision},
                 {"matmul_precision_reason", r.device.matmul_precision_reason},
                 {"peak_flops", r.device.peak_flops},
                 {"matmul_ceiling_flops", r.device.matmul_ceiling_flops}};
  OrderedJson env = OrderedJson::object();
  for (const auto& [k, v] : r.environment) env[k] = v;
  j["environment"] = std::move(env);
  j["changed_source_lines"] = r.changed_source_lines ? OrderedJson(*r.changed_source_lines) : OrderedJson(nullptr);
  j["run_dir"] = r.run_dir;
  j["created_unix"] = r.created_unix;
  for (const auto& [k, v] : r.extra.items())
    if (!j.contains(k)) j[k] = v;
  return j;
}

RunResult result_from_json(const Json& j, const std::string& where) {
  FieldReader r(j, where);
  std::string format = r.string("format");
  if (format != kResultFormat)
    fail(where, ": field 'format': unknown format '", format, "' (this clocktrain reads ", kResultFormat, ")");
  RunResult out;
  out.name = r.string("name");
  if (out.name.empty()) r.fail_field("name", "a non-empty run name");
  FieldReader recipe = r.object("recipe");
  out.recipe.path = recipe.string("path");
  out.recipe.sha256 = sha256_field(recipe, "sha256");
  if (!recipe.json().contains("resolved") || !recipe.json().at("resolved").is_object())
    recipe.fail_field("resolved", "an object");
  out.recipe.resolved = recipe.json().at("resolved");
  out.seed = r.unsigned_integer("seed");
  out.round = static_cast<int>(r.integer("round", 1, 2));
  out.practice = r.has("practice") && r.boolean("practice");  // absent in results written before it
  out.parameters = r.integer("parameters", 0, kMaxCount);
  out.budget_seconds = r.finite("budget_seconds");
  if (out.budget_seconds <= 0) r.fail_field("budget_seconds", "a finite number > 0");
  out.train_clock_seconds = r.non_negative("train_clock_seconds");
  out.startup_seconds = r.non_negative("startup_seconds");
  out.startup_cap_seconds = r.non_negative("startup_cap_seconds");
  out.steps = r.integer("steps", 0, kMaxCount);
  out.tokens = r.integer("tokens", 0, kMaxCount);
  out.val_bpb = r.finite_or_null("val_bpb");
  if (out.val_bpb && *out.val_bpb < 0) r.fail_field("val_bpb", "a finite number >= 0 or null");
  if (!r.is_null("val")) out.val = read_val(r.object("val"));
  if (!r.is_null("core")) out.core = read_core(r.object("core"));
  out.gate = read_gate(r.object("gate"));
  FieldReader data = r.object("data");
  // "" only in a run that stopped before any data was prepared (its backend could not start)
  out.data.manifest_sha256 = data.string("manifest_sha256");
  if (!out.data.manifest_sha256.empty()) sha256_field(data, "manifest_sha256");
  const Json& shards = data.array("shards_read");
  for (size_t i = 0; i < shards.size(); ++i) {
    FieldReader s = data.element(shards, i, "shards_read");
    out.data.shards_read.push_back({s.string("name"), sha256_field(s, "sha256")});
  }
  FieldReader binary = r.object("binary");
  out.binary = {binary.string("version"), binary.string("build_flags")};
  FieldReader device = r.object("device");
  out.device.backend = device.string("backend");
  out.device.description = device.string("description");
  out.device.devices = device.integer("devices", 0, kMaxCount);
  out.device.threads = device.integer("threads", 0, kMaxCount);
  out.device.matmul_precision = device.string_or("matmul_precision", "");
  check(out.device.matmul_precision.empty() || out.device.matmul_precision == "f32" ||
            out.device.matmul_precision == "bf16",
        where, ": field 'device.matmul_precision': expected \"f32\" or \"bf16\", got \"", out.device.matmul_precision,
        "\"");
  out.device.matmul_precision_reason = device.string_or("matmul_precision_reason", "");
  out.device.peak_flops = device.has("peak_flops") ? device.non_negative("peak_flops") : 0.0;
  out.device.matmul_ceiling_flops =
      device.has("matmul_ceiling_flops") ? device.non_negative("matmul_ceiling_flops") : 0.0;
  FieldReader env = r.object("environment");
  for (const auto& [k, v] : env.json().items()) out.environment.emplace_back(k, env.string(k));
  std::sort(out.environment.begin(), out.environment.end());
  if (!r.is_null("changed_source_lines"))
    out.changed_source_lines = r.integer("changed_source_lines", 0, kMaxCount);
  else if (!r.has("changed_source_lines"))
    r.fail_field("changed_source_lines", "an integer >= 0 or null");
  out.run_dir = r.string("run_dir");
  out.created_unix = r.finite("created_unix");
  const auto& known = known_fields();
  for (const auto& [k, v] : j.items())
    if (std::find(known.begin(), known.end(), k) == known.end()) out.extra[k] = v;
  check_gate_consistency(out, where);
  return out;
}

fs::path resolve_result_path(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fs::path inside = path / kResultFileName;
    check(fs::is_regular_file(inside, ec), path.string(), ": a run folder without ", kResultFileName);
    return inside;
  }
  check(fs::exists(path, ec), path.string(), ": no such file or folder");
  return path;
}

RunResult read_result_file(const fs::path& path) {
  fs::path file = resolve_result_path(path);
  Json j = read_json_file(file);
  return result_from_json(j, file.string());
}

void write_result_file(const fs::path& path, const RunResult& result) {
  OrderedJson j = result_to_json(result);
  // Never write what read_result_file would refuse: validate the exact text about to be written.
  std::string text = j.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
  const std::string where = path.string() + " (about to be written)";
  result_from_json(json_from_text(text, where), where);
  write_file_atomic(path, text);
}

}  // namespace ct
