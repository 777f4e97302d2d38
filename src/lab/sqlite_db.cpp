#include "lab/sqlite_db.h"

#include <sqlite3.h>

#include "util/error.h"

namespace ct::lab {

SqliteDb::SqliteDb(const std::filesystem::path& path, bool create) : path_(path) {
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  int code = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (code != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
    sqlite3_close(db_);
    db_ = nullptr;
    fail(path.string(), ": cannot open the ledger: ", message);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Another `clocktrain lab` writing the same ledger holds the lock for milliseconds; wait for it.
  sqlite3_busy_timeout(db_, 10000);
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

void SqliteDb::check_code(int code, std::string_view what) const {
  if (code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE) return;
  fail(path_.string(), ": ", what, ": ", sqlite3_errmsg(db_), " (SQLite code ", code, ")");
}

void SqliteDb::exec(std::string_view sql) {
  char* message = nullptr;
  std::string text(sql);
  int code = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (code != SQLITE_OK) {
    std::string detail = message ? message : sqlite3_errstr(code);
    sqlite3_free(message);
    fail(path_.string(), ": ", detail, " (SQLite code ", code, ") in: ", text.substr(0, 120));
  }
}

int64_t SqliteDb::query_int(std::string_view sql) {
  Statement statement(*this, sql);
  check(statement.step(), path_.string(), ": no row from: ", sql);
  return statement.column_int(0);
}

int64_t SqliteDb::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(SqliteDb& db, std::string_view sql) : db_(db), sql_(sql) {
  int code = sqlite3_prepare_v2(db.handle(), sql_.c_str(), static_cast<int>(sql_.size()), &stmt_, nullptr);
  db_.check_code(code, "preparing '" + sql_.substr(0, 80) + "'");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, int64_t value) {
  db_.check_code(sqlite3_bind_int64(stmt_, index, value), "bind");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  db_.check_code(sqlite3_bind_double(stmt_, index, value), "bind");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  db_.check_code(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT),
                 "bind");
  return *this;
}

Statement& Statement::bind_null(int index) {
  db_.check_code(sqlite3_bind_null(stmt_, index), "bind");
  return *this;
}

bool Statement::step() {
  int code = sqlite3_step(stmt_);
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  db_.check_code(code, "running '" + sql_.substr(0, 80) + "'");
  return false;
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::column_double(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int bytes = sqlite3_column_bytes(stmt_, column);
  return text ? std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(bytes)) : std::string();
}

std::optional<int64_t> Statement::column_optional_int(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_int(column);
}

std::optional<double> Statement::column_optional_double(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_double(column);
}

std::optional<std::string> Statement::column_optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_text(column);
}

Transaction::Transaction(SqliteDb& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace ct::lab
