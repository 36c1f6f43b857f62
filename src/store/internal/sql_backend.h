#pragma once
// SqlBackend: the few things SqlStore needs from a SQL database — run a statement with $1..$n parameters,
// transactions, and the dialect's differences. Implemented by SQLite (store/sqlite/) and PostgreSQL
// (store/postgres/). Private to src/store.
// Not thread-safe: SqlStore serialises every call with its own mutex.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace xpool::store_internal {

// A parameter: NULL, an integer or text.
struct SqlValue {
  enum class Kind : uint8_t { kNull, kInt, kText };
  Kind kind = Kind::kNull;
  int64_t i = 0;
  std::string s;

  static SqlValue Null() { return {}; }
  static SqlValue Int(int64_t v) { return {Kind::kInt, v, {}}; }
  static SqlValue Text(std::string v) { return {Kind::kText, 0, std::move(v)}; }
};

using SqlRow = std::vector<std::optional<std::string>>;  // every column as text; nullopt = NULL

struct SqlResult {
  std::vector<SqlRow> rows;
  int64_t affected = 0;  // rows changed by INSERT/UPDATE/DELETE
};

class SqlBackend {
 public:
  virtual ~SqlBackend() = default;

  virtual std::string_view Kind() const = 0;
  // One statement; parameters are written $1, $2, ... in the SQL.
  virtual Result<SqlResult> Query(std::string_view sql, const std::vector<SqlValue>& params) = 0;
  // Several statements without parameters (schema migrations).
  virtual Status ExecScript(std::string_view sql) = 0;

  // Begin takes the write lock up front (SQLite: BEGIN IMMEDIATE), so reads inside see what they update.
  virtual Status Begin() = 0;
  // A read-only snapshot for reads of several statements; works while the database refuses writes.
  virtual Status BeginRead() = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;

  // Dialect.
  virtual std::string_view IdColumn() const = 0;   // an auto-increment 64-bit primary key column definition
  virtual std::string_view ForUpdate() const = 0;  // " FOR UPDATE" or ""
  // Serialises concurrent migrations (inside a transaction). SQLite: nothing (BEGIN IMMEDIATE already does).
  virtual Status LockForMigration() = 0;
  // Frees what the connection caches and can read again (SQLite: the clean pages of its page cache), after a
  // large transaction filled it. Default: nothing.
  virtual void ReleaseMemory() {}
};

}  // namespace xpool::store_internal
