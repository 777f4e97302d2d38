#include "lab/ledger.h"

#include <cmath>

#include "lab/ledger_schema.h"
#include "util/clock.h"
#include "util/error.h"

namespace ct::lab {

namespace {

namespace fs = std::filesystem;

constexpr const char* kExperimentColumns =
    "id, change, hypothesis, predicted_effect, predicted_low, predicted_high, rule, confidence, power, "
    "created_unix";

constexpr const char* kRunColumns =
    "id, experiment_id, arm, rung, run_dir, result_json, environment_json, command, exit_code, started_unix, "
    "finished_unix, recorded_unix, excluded_reason";

std::unique_ptr<SqliteDb> open_database(const fs::path& path, bool create) {
  if (!create)
    check(fs::exists(path), path.string(),
          ": no ledger here; open one with `clocktrain lab propose` (or name it with --ledger FILE)");
  check(!fs::is_directory(path), path.string(), ": is a folder; --ledger names the ledger file");
  auto db = std::make_unique<SqliteDb>(path, create);
  prepare_ledger_schema(*db);
  return db;
}

Json parse_stored_json(const std::string& text, const std::string& where) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(where, ": stored JSON is damaged: ", e.what());
  }
}

Experiment read_experiment(Statement& row, const std::string& ledger) {
  Experiment e;
  e.id = row.column_int(0);
  e.change = row.column_text(1);
  e.hypothesis = row.column_text(2);
  e.predicted_effect = row.column_double(3);
  e.predicted_low = row.column_double(4);
  e.predicted_high = row.column_double(5);
  e.rule_text = row.column_text(6);
  try {
    e.rule = parse_decision_rule(e.rule_text);
  } catch (const Error& error) {
    fail(ledger, ": experiment ", e.id, ": stored rule no longer parses: ", error.what());
  }
  e.confidence = row.column_double(7);
  e.power = row.column_double(8);
  e.created_unix = row.column_double(9);
  return e;
}

StoredRun read_run(Statement& row, const std::string& ledger) {
  StoredRun r;
  r.id = row.column_int(0);
  r.experiment_id = row.column_int(1);
  r.arm = row.column_text(2);
  r.rung = parse_rung(row.column_text(3));
  std::string where = ledger + ": run " + std::to_string(r.id);
  r.record = parse_run_record(row.column_text(5), fs::path(row.column_text(4)), where);
  Json environment = parse_stored_json(row.column_text(6), where + " environment");
  r.record.environment.clear();
  for (auto it = environment.begin(); it != environment.end(); ++it)
    r.record.environment[it.key()] = it->get<std::string>();
  r.provenance.command = row.column_optional_text(7);
  if (auto code = row.column_optional_int(8)) r.provenance.exit_code = static_cast<int>(*code);
  r.provenance.started_unix = row.column_optional_double(9);
  r.provenance.finished_unix = row.column_optional_double(10);
  r.recorded_unix = row.column_double(11);
  r.excluded_reason = row.column_optional_text(12);
  return r;
}

std::optional<std::string> optional_string_at(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_string()) return std::nullopt;
  return object.at(key).get<std::string>();
}

std::optional<int64_t> optional_int_at(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_number_integer()) return std::nullopt;
  return object.at(key).get<int64_t>();
}

void check_declared_key(const std::string& key) {
  check(!key.empty() && key.find_first_of(" \t\n") == std::string::npos, "declared change '", key,
        "' is not a difference key (keys look like recipe.model.n_layer, env.OMP_NUM_THREADS, binary)");
}

void insert_declarations(SqliteDb& db, int64_t experiment_id, const std::vector<std::string>& keys) {
  Statement insert(db, "INSERT OR IGNORE INTO declared_changes(experiment_id, key, created_unix) VALUES(?1, ?2, ?3)");
  for (const auto& key : keys) {
    insert.reset();
    insert.bind(1, experiment_id).bind(2, key).bind(3, unix_seconds()).run();
  }
}

}  // namespace

fs::path default_ledger_path() { return "lab.sqlite"; }

Ledger::Ledger(const fs::path& path, bool create) : db_(open_database(path, create)) {}

int64_t Ledger::add_experiment(const NewExperiment& e) {
  std::string where = "lab propose";
  auto blank = [](const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; };
  check(!blank(e.change), where, ": --change is empty: say what the experiment changes");
  check(!blank(e.hypothesis), where, ": --hypothesis is empty: an experiment starts with its hypothesis");
  check(std::isfinite(e.predicted_effect), where, ": --predict must be a finite number");
  check(e.predicted_low <= e.predicted_effect && e.predicted_effect <= e.predicted_high, where,
        ": --interval ", e.predicted_low, ",", e.predicted_high, " must contain --predict ", e.predicted_effect);
  DecisionRule rule = parse_decision_rule(e.rule_text);
  if (rule.confidence && e.confidence)
    check(std::fabs(*rule.confidence - *e.confidence) < 1e-12, where, ": the rule says at ",
          *rule.confidence * 100, "% but --confidence is ", *e.confidence, "; give one of them");
  double confidence = rule.confidence.value_or(e.confidence.value_or(0.95));
  check(confidence > 0 && confidence < 1, where, ": confidence must be in (0, 1), got ", confidence);
  check(e.power > 0 && e.power < 1, where, ": --power must be in (0, 1), got ", e.power);
  for (const auto& key : e.declared) check_declared_key(key);

  Transaction transaction(*db_);
  Statement insert(*db_,
                   "INSERT INTO experiments(change, hypothesis, predicted_effect, predicted_low, predicted_high, "
                   "rule, rule_json, confidence, power, created_unix) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
  insert.bind(1, e.change)
      .bind(2, e.hypothesis)
      .bind(3, e.predicted_effect)
      .bind(4, e.predicted_low)
      .bind(5, e.predicted_high)
      .bind(6, e.rule_text)
      .bind(7, rule.to_json().dump())
      .bind(8, confidence)
      .bind(9, e.power)
      .bind(10, unix_seconds())
      .run();
  int64_t id = db_->last_insert_rowid();
  insert_declarations(*db_, id, e.declared);
  transaction.commit();
  return id;
}

Experiment Ledger::experiment(int64_t id) {
  Statement select(*db_, std::string("SELECT ") + kExperimentColumns + " FROM experiments WHERE id = ?1");
  select.bind(1, id);
  check(select.step(), path().string(), ": no experiment ", id, " (list them with `clocktrain lab list`)");
  Experiment e = read_experiment(select, path().string());
  Statement declared(*db_, "SELECT key FROM declared_changes WHERE experiment_id = ?1 ORDER BY id");
  declared.bind(1, id);
  while (declared.step()) e.declared.push_back(declared.column_text(0));
  return e;
}

std::vector<Experiment> Ledger::experiments() {
  std::vector<int64_t> ids;
  Statement select(*db_, "SELECT id FROM experiments ORDER BY id");
  while (select.step()) ids.push_back(select.column_int(0));
  std::vector<Experiment> out;
  for (int64_t id : ids) out.push_back(experiment(id));
  return out;
}

void Ledger::declare(int64_t experiment_id, const std::vector<std::string>& keys) {
  for (const auto& key : keys) check_declared_key(key);
  Transaction transaction(*db_);
  experiment(experiment_id);
  insert_declarations(*db_, experiment_id, keys);
  transaction.commit();
}

void Ledger::check_allowed_locked(const Experiment& e, const std::string& arm, Rung rung) {
  check(!e.hypothesis.empty(), path().string(), ": experiment ", e.id, " has no hypothesis; runs are refused");
  check(arm == e.rule.treatment_arm || arm == e.rule.control_arm, "experiment ", e.id, ": arm '", arm,
        "' is not named by its rule (arms: ", e.rule.control_arm, ", ", e.rule.treatment_arm, ")");
  check(rung != Rung::cpu_check, "experiment ", e.id,
        ": the cpu-check rung is recorded with `clocktrain lab check EXP -- COMMAND` (tests), not as a run");
  if (auto below = previous_rung(rung))
    check(rung_passed(e.id, *below), "experiment ", e.id, ": rung ", rung_name(rung), " needs a passed ",
          rung_name(*below), " first (the ladder is cpu-check -> probe -> smoke -> full; see lab show ", e.id,
          ")");
}

void Ledger::check_run_allowed(int64_t experiment_id, const std::string& arm, Rung rung) {
  check_allowed_locked(experiment(experiment_id), arm, rung);
}

int64_t Ledger::add_run(int64_t experiment_id, const std::string& arm, Rung rung, const RunRecord& run,
                        const RunProvenance& provenance) {
  Transaction transaction(*db_);
  check_allowed_locked(experiment(experiment_id), arm, rung);
  {
    Statement existing(*db_, "SELECT id FROM runs WHERE experiment_id = ?1 AND run_dir = ?2");
    existing.bind(1, experiment_id).bind(2, run.run_dir.string());
    if (existing.step())
      fail("experiment ", experiment_id, ": run folder ", run.run_dir.string(), " is already recorded as run ",
           existing.column_int(0));
  }
  const Json& r = run.result;
  Json environment(run.environment);
  Statement insert(*db_,
                   "INSERT INTO runs(experiment_id, arm, rung, seed, recipe_name, run_dir, result_json, "
                   "recipe_resolved_json, binary_version, build_flags, manifest_sha256, threads, devices, "
                   "environment_json, val_bpb, gate_eligible, started_unix, finished_unix, recorded_unix, "
                   "command, exit_code) "
                   "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21)");
  insert.bind(1, experiment_id)
      .bind(2, arm)
      .bind(3, std::string(rung_name(rung)))
      .bind(4, run.seed)
      .bind(5, run.name)
      .bind(6, run.run_dir.string())
      .bind(7, run.result_text)
      .bind(8, r.at("recipe").value("resolved", Json::object()).dump())
      .bind(9, optional_string_at(r.at("binary"), "version"))
      .bind(10, optional_string_at(r.at("binary"), "build_flags"))
      .bind(11, optional_string_at(r.at("data"), "manifest_sha256"))
      .bind(12, optional_int_at(r.at("device"), "threads"))
      .bind(13, optional_int_at(r.at("device"), "devices"))
      .bind(14, environment.dump())
      .bind(15, run.val_bpb)
      .bind(16, run.gate_eligible ? 1 : 0)
      .bind(17, provenance.started_unix)
      .bind(18, provenance.finished_unix)
      .bind(19, unix_seconds())
      .bind(20, provenance.command)
      .bind(21, provenance.exit_code)
      .run();
  int64_t id = db_->last_insert_rowid();
  transaction.commit();
  return id;
}

StoredRun Ledger::run(int64_t id) {
  Statement select(*db_, std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1");
  select.bind(1, id);
  check(select.step(), path().string(), ": no run ", id);
  return read_run(select, path().string());
}

void Ledger::exclude_run(int64_t id, const std::string& reason) {
  check(!reason.empty(), "lab exclude: give the reason (--reason TEXT); it stays in the ledger");
  Transaction transaction(*db_);
  run(id);
  Statement update(*db_, "UPDATE runs SET excluded_reason = ?2 WHERE id = ?1");
  update.bind(1, id).bind(2, reason).run();
  transaction.commit();
}

std::vector<StoredRun> Ledger::runs(std::optional<int64_t> experiment_id) {
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs";
  if (experiment_id) sql += " WHERE experiment_id = ?1";
  sql += " ORDER BY id";
  Statement select(*db_, sql);
  if (experiment_id) select.bind(1, *experiment_id);
  std::vector<StoredRun> out;
  while (select.step()) out.push_back(read_run(select, path().string()));
  return out;
}

int64_t Ledger::add_check(const LadderCheck& c) {
  check(c.rung == Rung::cpu_check || c.rung == Rung::probe, "lab check records the cpu-check or probe rung, not ",
        rung_name(c.rung));
  Transaction transaction(*db_);
  Experiment e = experiment(c.experiment_id);
  check(!e.hypothesis.empty(), path().string(), ": experiment ", e.id, " has no hypothesis; checks are refused");
  if (c.arm)
    check(*c.arm == e.rule.treatment_arm || *c.arm == e.rule.control_arm, "experiment ", e.id, ": arm '", *c.arm,
          "' is not named by its rule");
  if (auto below = previous_rung(c.rung))
    check(rung_passed(e.id, *below), "experiment ", e.id, ": rung ", rung_name(c.rung), " needs a passed ",
          rung_name(*below), " first");
  Statement insert(*db_,
                   "INSERT INTO ladder_checks(experiment_id, arm, rung, command, exit_code, passed, output_tail, "
                   "started_unix, finished_unix) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  insert.bind(1, c.experiment_id)
      .bind(2, c.arm)
      .bind(3, std::string(rung_name(c.rung)))
      .bind(4, c.command)
      .bind(5, c.exit_code)
      .bind(6, c.passed ? 1 : 0)
      .bind(7, c.output_tail)
      .bind(8, c.started_unix)
      .bind(9, c.finished_unix)
      .run();
  int64_t id = db_->last_insert_rowid();
  transaction.commit();
  return id;
}

std::vector<LadderCheck> Ledger::checks(int64_t experiment_id) {
  Statement select(*db_,
                   "SELECT id, experiment_id, arm, rung, command, exit_code, passed, output_tail, started_unix, "
                   "finished_unix FROM ladder_checks WHERE experiment_id = ?1 ORDER BY id");
  select.bind(1, experiment_id);
  std::vector<LadderCheck> out;
  while (select.step()) {
    LadderCheck c;
    c.id = select.column_int(0);
    c.experiment_id = select.column_int(1);
    c.arm = select.column_optional_text(2);
    c.rung = parse_rung(select.column_text(3));
    c.command = select.column_text(4);
    c.exit_code = static_cast<int>(select.column_int(5));
    c.passed = select.column_int(6) != 0;
    c.output_tail = select.column_text(7);
    c.started_unix = select.column_double(8);
    c.finished_unix = select.column_double(9);
    out.push_back(std::move(c));
  }
  return out;
}

bool Ledger::rung_passed(int64_t experiment_id, Rung rung) {
  for (const auto& c : checks(experiment_id))
    if (c.rung == rung && c.passed) return true;
  for (const auto& r : runs(experiment_id))
    if (r.rung == rung && !r.excluded_reason && run_passes_rung(r.record, rung, r.provenance.exit_code)) return true;
  return false;
}

int64_t Ledger::add_verdict(int64_t experiment_id, const std::string& verdict, Rung rung, const Json& numbers) {
  Transaction transaction(*db_);
  experiment(experiment_id);
  Statement insert(*db_,
                   "INSERT INTO verdicts(experiment_id, verdict, rung, numbers_json, created_unix) "
                   "VALUES(?1, ?2, ?3, ?4, ?5)");
  insert.bind(1, experiment_id)
      .bind(2, verdict)
      .bind(3, std::string(rung_name(rung)))
      .bind(4, numbers.dump())
      .bind(5, unix_seconds())
      .run();
  int64_t id = db_->last_insert_rowid();
  transaction.commit();
  return id;
}

std::vector<StoredVerdict> Ledger::verdicts(std::optional<int64_t> experiment_id) {
  std::string sql = "SELECT id, experiment_id, verdict, rung, numbers_json, created_unix FROM verdicts";
  if (experiment_id) sql += " WHERE experiment_id = ?1";
  sql += " ORDER BY id";
  Statement select(*db_, sql);
  if (experiment_id) select.bind(1, *experiment_id);
  std::vector<StoredVerdict> out;
  while (select.step()) {
    StoredVerdict v;
    v.id = select.column_int(0);
    v.experiment_id = select.column_int(1);
    v.verdict = select.column_text(2);
    v.rung = parse_rung(select.column_text(3));
    v.numbers = parse_stored_json(select.column_text(4), path().string() + ": verdict " + std::to_string(v.id));
    v.created_unix = select.column_double(5);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace ct::lab
