#pragma once
// A thin RAII layer over libsqlite3: a connection, prepared statements with typed binds and columns,
// and a transaction guard that rolls back unless committed. Every error is a ct::Error naming the
// database file and SQLite's message.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace ct::lab {

class SqliteDb;

class Statement {
 public:
  Statement(SqliteDb& db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds are 1-based, as in SQLite. Return *this for chaining.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind_null(int index);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Advances to the next row; false when done.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  void reset();

  // Columns are 0-based, as in SQLite.
  bool is_null(int column) const;
  int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  std::optional<int64_t> column_optional_int(int column) const;
  std::optional<double> column_optional_double(int column) const;
  std::optional<std::string> column_optional_text(int column) const;

 private:
  SqliteDb& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

class SqliteDb {
 public:
  // Opens (and creates when `create` is true) the database file.
  SqliteDb(const std::filesystem::path& path, bool create);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  int64_t query_int(std::string_view sql);
  int64_t last_insert_rowid() const;
  const std::filesystem::path& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  // Throws ct::Error "<file>: <what>: <sqlite message>" for a non-OK code.
  void check_code(int code, std::string_view what) const;

 private:
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

// BEGIN IMMEDIATE on construction, ROLLBACK on destruction unless commit() was called, so that an
// exception anywhere inside leaves the ledger as it was.
class Transaction {
 public:
  explicit Transaction(SqliteDb& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  SqliteDb& db_;
  bool done_ = false;
};

}  // namespace ct::lab
