#include "lab/run_record.h"

#include <cmath>

#include "harness/result.h"
#include "util/error.h"
#include "util/files.h"

namespace ct::lab {

namespace {

namespace fs = std::filesystem;

const Json& object_field(const Json& j, const std::string& key, const std::string& where) {
  auto it = j.find(key);
  check(it != j.end(), where, ": missing field '", key, "' (the lab needs every input of a run to compare arms)");
  check(it->is_object(), where, ": field '", key, "': expected an object, got ", it->type_name());
  return *it;
}

// Adds every leaf of `value` under `prefix` (objects recurse; arrays and scalars are leaves).
void flatten(const Json& value, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (value.is_object() && !value.empty()) {
    for (auto it = value.begin(); it != value.end(); ++it) flatten(it.value(), prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = value.dump();
}

void copy_if_present(const Json& object, const std::string& key, const std::string& out_key,
                     std::map<std::string, std::string>& out) {
  if (object.is_object() && object.contains(key)) out[out_key] = object.at(key).dump();
}

}  // namespace

RunRecord parse_run_record(const std::string& result_text, const fs::path& run_dir, const std::string& where) {
  RunRecord run;
  run.run_dir = run_dir;
  run.result_text = result_text;
  // json_from_text: a number beyond double (out_of_range, not a parse_error) and nesting too deep for
  // the recursive copies below are errors naming the file too.
  run.result = json_from_text(result_text, where);
  const Json& r = run.result;
  check(r.is_object(), where, ": expected a JSON object");
  auto format = json_field<std::string>(r, "format", where);
  check(format.starts_with("clocktrain-result/"), where, ": field 'format': expected clocktrain-result/N, got '",
        format, "'");
  run.name = json_field<std::string>(r, "name", where);
  check(r.contains("seed") && r.at("seed").is_number_integer(), where, ": field 'seed': expected an integer");
  run.seed = r.at("seed").get<int64_t>();
  check(r.contains("val_bpb"), where, ": missing field 'val_bpb'");
  const Json& bpb = r.at("val_bpb");
  check(bpb.is_null() || bpb.is_number(), where, ": field 'val_bpb': expected a number or null");
  if (bpb.is_number() && std::isfinite(bpb.get<double>())) run.val_bpb = bpb.get<double>();
  const Json& gate = object_field(r, "gate", where);
  run.gate_eligible = json_field<bool>(gate, "eligible", where + ": gate");
  object_field(r, "recipe", where);
  object_field(r, "binary", where);
  object_field(r, "data", where);
  object_field(r, "device", where);
  const Json& environment = object_field(r, "environment", where);
  for (auto it = environment.begin(); it != environment.end(); ++it) {
    check(it->is_string(), where, ": environment.", it.key(), ": expected a string");
    run.environment[it.key()] = it->get<std::string>();
  }
  return run;
}

RunRecord read_run_record(const fs::path& path) {
  fs::path file = fs::is_directory(path) ? path / "result.json" : path;
  check(fs::exists(file), file.string(), ": no such file (expected a run folder holding result.json)");
  fs::path folder = fs::absolute(file).parent_path();
  std::error_code ec;
  fs::path canonical = fs::canonical(folder, ec);
  std::string text = read_file(file);
  RunRecord run = parse_run_record(text, ec ? folder : canonical, file.string());
  // Every field as the harness validates it (types, ranges, SHA-256s, the gate's consistency): the
  // lab records no result that `clocktrain board` would refuse.
  result_from_json(run.result, file.string());
  return run;
}

std::map<std::string, std::string> run_fingerprint(const RunRecord& run) {
  std::map<std::string, std::string> out;
  const Json& r = run.result;
  const Json& recipe = r.at("recipe");
  auto resolved = recipe.find("resolved");
  if (resolved != recipe.end() && resolved->is_object() && !resolved->empty()) {
    flatten(*resolved, "recipe", out);
    // The resolved recipe repeats the run's seed (the replicate index, never an arm difference)
    // and its budget (kept once, as budget_seconds, the key an experiment declares).
    out.erase("recipe.run.seed");
    if (r.contains("budget_seconds")) out.erase("recipe.run.budget_seconds");
  } else {
    copy_if_present(recipe, "sha256", "recipe.sha256", out);
  }
  copy_if_present(r, "budget_seconds", "budget_seconds", out);
  copy_if_present(r, "startup_cap_seconds", "startup_cap_seconds", out);
  copy_if_present(r, "round", "round", out);
  copy_if_present(r.at("binary"), "version", "binary.version", out);
  copy_if_present(r.at("binary"), "build_flags", "binary.build_flags", out);
  copy_if_present(r.at("data"), "manifest_sha256", "data.manifest_sha256", out);
  for (const char* key : {"backend", "description", "devices", "threads", "matmul_precision"})
    copy_if_present(r.at("device"), key, std::string("device.") + key, out);
  for (const auto& [name, value] : run.environment) out["env." + name] = Json(value).dump();
  return out;
}

std::map<std::string, std::string> run_outcomes(const RunRecord& run) {
  std::map<std::string, std::string> out;
  const Json& r = run.result;
  for (const char* key : {"name", "seed", "val_bpb", "steps", "tokens", "train_clock_seconds", "parameters"})
    copy_if_present(r, key, key, out);
  copy_if_present(r.at("recipe"), "path", "recipe.path", out);
  copy_if_present(r.at("device"), "matmul_precision_reason", "device.matmul_precision_reason", out);
  if (r.contains("core") && r.at("core").is_object()) copy_if_present(r.at("core"), "core", "core", out);
  out["gate.eligible"] = run.gate_eligible ? "true" : "false";
  return out;
}

std::optional<double> metric_value(const RunRecord& run, const std::string& metric) {
  const Json* value = nullptr;
  if (metric == "core") {
    auto core = run.result.find("core");
    if (core != run.result.end() && core->is_object() && core->contains("core")) value = &core->at("core");
  } else {
    auto it = run.result.find(metric);
    if (it != run.result.end()) value = &*it;
  }
  if (!value || !value->is_number()) return std::nullopt;
  double v = value->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace ct::lab
