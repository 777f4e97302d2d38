#pragma once
// The ledger's SQLite schema and its migrations. The version lives in PRAGMA user_version and the
// file is marked as a clocktrain ledger with PRAGMA application_id, so that:
//  - a file that is not SQLite, is truncated or corrupt is refused with SQLite's diagnosis
//    (PRAGMA quick_check runs at every open);
//  - a SQLite file of another program (other application_id, or tables without a ledger version)
//    is refused;
//  - an older ledger is copied to LEDGER.v<N>.bak, then migrated in one transaction, data kept;
//  - a ledger newer than this binary is refused, never rewritten.
//
// Versions:
//   1  experiments, runs, verdicts (the first layout)
//   2  experiments.power; runs.command, runs.exit_code, runs.excluded_reason; declared_changes (the declared
//      differences between arms); ladder_checks (recorded cpu-check / probe results)
#include <cstdint>

#include "lab/sqlite_db.h"

namespace ct::lab {

inline constexpr int kLedgerSchemaVersion = 2;
inline constexpr int32_t kLedgerApplicationId = 0x43544c42;  // "CTLB"

// Verifies the file and brings it to kLedgerSchemaVersion (creating the schema in an empty file).
void prepare_ledger_schema(SqliteDb& db);

int ledger_schema_version(SqliteDb& db);

// Applies the migration steps from version `from` to version `to` inside the caller's transaction
// and sets user_version (tests use it to build a ledger at an older version).
void apply_schema_steps(SqliteDb& db, int from, int to);

}  // namespace ct::lab
