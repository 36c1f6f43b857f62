#include "store/sqlite/sqlite_backend.h"

#include <sqlite3.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

namespace xpool::store_internal {
namespace {

constexpr int kBusyTimeoutMs = 5000;

Status FromSqlite(int rc, sqlite3* db, std::string_view what) {
  const std::string message = std::string(what) + ": " + (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  const int primary = rc & 0xff;
  switch (primary) {
    case SQLITE_FULL:
      return UnavailableError("store unavailable: the database is full (" + message +
                              "); writes are refused until space is freed, reads still work");
    case SQLITE_READONLY:
      return UnavailableError("store unavailable: the database is read-only (" + message +
                              "); writes are refused, reads still work");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
    case SQLITE_NOLFS:
    case SQLITE_PERM:
      return UnavailableError("store unavailable: " + message);
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) return AlreadyExistsError(message);
      if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) return NotFoundError(message);
      return InvalidArgumentError(message);
    case SQLITE_TOOBIG:
      return InvalidArgumentError(message);
    default:
      return InternalError(message);
  }
}

class SqliteBackend final : public SqlBackend {
 public:
  explicit SqliteBackend(sqlite3* db) : db_(db) {}
  ~SqliteBackend() override {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }

  std::string_view Kind() const override { return "sqlite"; }

  Result<SqlResult> Query(std::string_view sql, const std::vector<SqlValue>& params) override {
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Prepare(sql));
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string name = "$" + std::to_string(i + 1);
      const int index = sqlite3_bind_parameter_index(stmt, name.c_str());
      if (index == 0) continue;  // parameter not used by this statement
      int rc = SQLITE_OK;
      switch (params[i].kind) {
        case SqlValue::Kind::kNull:
          rc = sqlite3_bind_null(stmt, index);
          break;
        case SqlValue::Kind::kInt:
          rc = sqlite3_bind_int64(stmt, index, params[i].i);
          break;
        case SqlValue::Kind::kText:
          rc = sqlite3_bind_text(stmt, index, params[i].s.data(), static_cast<int>(params[i].s.size()),
                                 SQLITE_TRANSIENT);
          break;
      }
      if (rc != SQLITE_OK) return FromSqlite(rc, db_, "bind");
    }
    SqlResult result;
    const int columns = sqlite3_column_count(stmt);
    while (true) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        Status s = FromSqlite(sqlite3_extended_errcode(db_), db_, "query");
        sqlite3_reset(stmt);
        return s;
      }
      SqlRow row(static_cast<size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        if (sqlite3_column_type(stmt, c) == SQLITE_NULL) continue;
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
        row[static_cast<size_t>(c)] = std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, c)));
      }
      result.rows.push_back(std::move(row));
    }
    result.affected = sqlite3_changes64(db_);
    sqlite3_reset(stmt);
    return result;
  }

  Status ExecScript(std::string_view sql) override {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &error);
    if (rc != SQLITE_OK) {
      Status s = FromSqlite(sqlite3_extended_errcode(db_), db_, "script");
      sqlite3_free(error);
      return s;
    }
    return Status::Ok();
  }

  Status Begin() override { return Simple("BEGIN IMMEDIATE"); }
  Status BeginRead() override { return Simple("BEGIN"); }
  Status Commit() override { return Simple("COMMIT"); }
  void Rollback() override {
    if (!sqlite3_get_autocommit(db_)) {
      IgnoreError(Simple("ROLLBACK"), "a transaction left open makes the next Begin fail, with the reason");
    }
  }

  std::string_view IdColumn() const override { return "INTEGER PRIMARY KEY AUTOINCREMENT"; }
  std::string_view ForUpdate() const override { return ""; }
  Status LockForMigration() override { return Status::Ok(); }
  void ReleaseMemory() override { sqlite3_db_release_memory(db_); }

 private:
  Status Simple(const char* sql) {
    Result<SqlResult> r = Query(sql, {});
    return r.status();
  }

  Result<sqlite3_stmt*> Prepare(std::string_view sql) {
    auto it = statements_.find(std::string(sql));
    if (it != statements_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    const int rc =
        sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return FromSqlite(sqlite3_extended_errcode(db_), db_, "prepare");
    statements_.emplace(std::string(sql), stmt);
    return stmt;
  }

  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace

Result<std::unique_ptr<SqlBackend>> OpenSqliteBackend(const std::string& path, int64_t max_size_mib) {
  // SQLite's allocation statistics take a global mutex on every malloc and free (a tenth of a batch submission's
  // CPU); nothing reads them. Process-wide, and only possible before SQLite initialises: once, before the first
  // open (refused harmlessly if something else initialised SQLite first).
  static std::once_flag no_memory_statistics;
  std::call_once(no_memory_statistics, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = FromSqlite(rc, db, "open " + path);
    sqlite3_close_v2(db);
    return s;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto backend = std::make_unique<SqliteBackend>(db);
  // WAL: readers never block the writer; FULL: the WAL is fsynced at every commit, so a commit survives a
  // power loss (NORMAL would only survive a process crash).
  Result<SqlResult> mode = backend->Query("PRAGMA journal_mode=WAL", {});
  if (!mode.ok()) return mode.status();
  if (mode->rows.empty() || mode->rows[0].empty() || mode->rows[0][0] != std::optional<std::string>("wal")) {
    return UnavailableError("store unavailable: cannot switch " + path + " to WAL journal mode");
  }
  RETURN_IF_ERROR(backend->ExecScript("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  if (max_size_mib > 0) {
    // A cap on the file: a write that needs a page beyond it fails with SQLITE_FULL (→ Unavailable, HTTP 503).
    ASSIGN_OR_RETURN(SqlResult page, backend->Query("PRAGMA page_size", {}));
    int64_t page_size = 4096;
    if (!page.rows.empty() && !page.rows[0].empty() && page.rows[0][0]) page_size = std::stoll(*page.rows[0][0]);
    const int64_t pages = std::max<int64_t>(1, max_size_mib * 1024 * 1024 / std::max<int64_t>(512, page_size));
    RETURN_IF_ERROR(backend->Query("PRAGMA max_page_count = " + std::to_string(pages), {}).status());
  }
  return std::unique_ptr<SqlBackend>(std::move(backend));
}

}  // namespace xpool::store_internal
