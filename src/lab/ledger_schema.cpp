#include "lab/ledger_schema.h"

#include <array>
#include <filesystem>
#include <string>

#include "util/error.h"

namespace ct::lab {

namespace {

// Step i takes a ledger from version i to version i + 1.
constexpr std::array<const char*, kLedgerSchemaVersion> kSteps = {
    // 0 -> 1: the first layout.
    R"sql(
CREATE TABLE experiments(
  id INTEGER PRIMARY KEY,
  change TEXT NOT NULL,
  hypothesis TEXT NOT NULL CHECK(length(trim(hypothesis)) > 0),
  predicted_effect REAL NOT NULL,
  predicted_low REAL NOT NULL,
  predicted_high REAL NOT NULL,
  rule TEXT NOT NULL,
  rule_json TEXT NOT NULL,
  confidence REAL NOT NULL,
  created_unix REAL NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  arm TEXT NOT NULL,
  rung TEXT NOT NULL,
  seed INTEGER NOT NULL,
  recipe_name TEXT NOT NULL,
  run_dir TEXT NOT NULL,
  result_json TEXT NOT NULL,
  recipe_resolved_json TEXT NOT NULL,
  binary_version TEXT,
  build_flags TEXT,
  manifest_sha256 TEXT,
  threads INTEGER,
  devices INTEGER,
  environment_json TEXT NOT NULL,
  val_bpb REAL,
  gate_eligible INTEGER NOT NULL,
  started_unix REAL,
  finished_unix REAL,
  recorded_unix REAL NOT NULL,
  UNIQUE(experiment_id, run_dir));
CREATE TABLE verdicts(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  verdict TEXT NOT NULL CHECK(verdict IN ('accept', 'reject', 'inconclusive')),
  rung TEXT NOT NULL,
  numbers_json TEXT NOT NULL,
  created_unix REAL NOT NULL);
)sql",
    // 1 -> 2: declared differences, ladder checks, the launch command and exit status of a run.
    R"sql(
ALTER TABLE experiments ADD COLUMN power REAL NOT NULL DEFAULT 0.8;
ALTER TABLE runs ADD COLUMN command TEXT;
ALTER TABLE runs ADD COLUMN exit_code INTEGER;
ALTER TABLE runs ADD COLUMN excluded_reason TEXT;
CREATE TABLE declared_changes(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  key TEXT NOT NULL,
  created_unix REAL NOT NULL,
  UNIQUE(experiment_id, key));
CREATE TABLE ladder_checks(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  arm TEXT,
  rung TEXT NOT NULL,
  command TEXT NOT NULL,
  exit_code INTEGER NOT NULL,
  passed INTEGER NOT NULL,
  output_tail TEXT NOT NULL,
  started_unix REAL NOT NULL,
  finished_unix REAL NOT NULL);
)sql",
};

std::string file_name(SqliteDb& db) { return db.path().string(); }

// Runs SQLite's structural check; any finding means the file is damaged.
void verify_integrity(SqliteDb& db) {
  std::string findings;
  try {
    Statement check_statement(db, "PRAGMA quick_check");
    while (check_statement.step()) {
      std::string line = check_statement.column_text(0);
      if (line != "ok") findings += (findings.empty() ? "" : "; ") + line;
    }
  } catch (const Error& e) {
    fail(file_name(db), ": not a readable clocktrain ledger (corrupt, truncated or not SQLite): ", e.what());
  }
  check(findings.empty(), file_name(db), ": the ledger is corrupt (SQLite quick_check: ", findings.substr(0, 400),
        "); it was left untouched");
}

}  // namespace

int ledger_schema_version(SqliteDb& db) { return static_cast<int>(db.query_int("PRAGMA user_version")); }

void apply_schema_steps(SqliteDb& db, int from, int to) {
  check(from >= 0 && to <= kLedgerSchemaVersion && from <= to, "ledger schema: no migration from version ", from,
        " to ", to);
  for (int version = from; version < to; ++version) db.exec(kSteps[static_cast<size_t>(version)]);
  db.exec("PRAGMA user_version = " + std::to_string(to));
}

void prepare_ledger_schema(SqliteDb& db) {
  verify_integrity(db);
  auto application_id = static_cast<int32_t>(db.query_int("PRAGMA application_id"));
  int version = ledger_schema_version(db);
  int64_t tables = db.query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  check(application_id == 0 || application_id == kLedgerApplicationId, file_name(db),
        ": a SQLite file of another program (application_id ", application_id, "), not a clocktrain ledger");
  check(version <= kLedgerSchemaVersion, file_name(db), ": ledger schema version ", version,
        " is newer than this clocktrain understands (", kLedgerSchemaVersion,
        "); use a newer clocktrain. The file was left untouched");
  check(!(version == 0 && tables > 0), file_name(db), ": a SQLite file with ", tables,
        " table(s) but no ledger schema version: not a clocktrain ledger, refusing to touch it");
  if (version == kLedgerSchemaVersion) {
    db.exec("PRAGMA foreign_keys = ON");
    return;
  }
  if (version > 0) {
    // Keep a copy of the old ledger before changing its layout.
    std::filesystem::path backup = db.path();
    backup += ".v" + std::to_string(version) + ".bak";
    for (int i = 1; std::filesystem::exists(backup); ++i) {
      backup = db.path();
      backup += ".v" + std::to_string(version) + ".bak." + std::to_string(i);
    }
    Statement vacuum(db, "VACUUM INTO ?1");
    vacuum.bind(1, backup.string()).run();
  }
  {
    Transaction transaction(db);
    apply_schema_steps(db, version, kLedgerSchemaVersion);
    db.exec("PRAGMA application_id = " + std::to_string(kLedgerApplicationId));
    transaction.commit();
  }
  db.exec("PRAGMA foreign_keys = ON");
}

}  // namespace ct::lab
