#include "store/postgres/postgres_backend.h"

#include <libpq-fe.h>

#include <unordered_map>

namespace xpool::store_internal {
namespace {

void IgnoreNotice(void*, const char*) {}

std::string FirstLine(const char* text) {
  std::string s = text != nullptr ? text : "";
  const size_t nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  return s;
}

Status FromSqlState(const std::string& state, const std::string& message) {
  auto starts = [&state](std::string_view p) { return state.compare(0, p.size(), p) == 0; };
  if (state == "25006" || starts("53") || starts("08") || starts("57P") || state == "55P03" || state == "25P03") {
    return UnavailableError("store unavailable: " + message);
  }
  if (state == "23505") return AlreadyExistsError(message);
  if (state == "23503") return NotFoundError(message);
  if (starts("23") || starts("22")) return InvalidArgumentError(message);
  if (state == "40001" || state == "40P01") return AbortedError(message);
  return InternalError(message + (state.empty() ? "" : " (SQLSTATE " + state + ")"));
}

class PostgresBackend final : public SqlBackend {
 public:
  PostgresBackend(PGconn* conn, std::string conninfo) : conn_(conn), conninfo_(std::move(conninfo)) {}
  ~PostgresBackend() override { PQfinish(conn_); }

  std::string_view Kind() const override { return "postgres"; }

  Result<SqlResult> Query(std::string_view sql, const std::vector<SqlValue>& params) override {
    RETURN_IF_ERROR(EnsureConnected());
    ASSIGN_OR_RETURN(std::string name, Prepare(sql, static_cast<int>(params.size())));
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      switch (params[i].kind) {
        case SqlValue::Kind::kNull:
          break;
        case SqlValue::Kind::kInt:
          text[i] = std::to_string(params[i].i);
          values[i] = text[i].c_str();
          break;
        case SqlValue::Kind::kText:
          values[i] = params[i].s.c_str();
          break;
      }
    }
    PGresult* res =
        PQexecPrepared(conn_, name.c_str(), static_cast<int>(params.size()), values.data(), nullptr, nullptr, 0);
    return Collect(res);
  }

  Status ExecScript(std::string_view sql) override {
    RETURN_IF_ERROR(EnsureConnected());
    return Collect(PQexec(conn_, std::string(sql).c_str())).status();
  }

  Status Begin() override { return ExecScript("BEGIN"); }
  Status BeginRead() override { return ExecScript("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); }
  Status Commit() override { return ExecScript("COMMIT"); }
  void Rollback() override {
    if (PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      PQclear(PQexec(conn_, "ROLLBACK"));
    }
  }

  std::string_view IdColumn() const override { return "BIGSERIAL PRIMARY KEY"; }
  std::string_view ForUpdate() const override { return " FOR UPDATE"; }
  Status LockForMigration() override { return Query("SELECT pg_advisory_xact_lock(7461)", {}).status(); }

 private:
  // Reconnects a broken connection, but never in the middle of a transaction (its work is lost anyway and
  // the caller must see the failure).
  Status EnsureConnected() {
    if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
    PQreset(conn_);
    statements_.clear();
    if (PQstatus(conn_) != CONNECTION_OK) {
      return UnavailableError("store unavailable: PostgreSQL connection lost: " + FirstLine(PQerrorMessage(conn_)));
    }
    PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
    return Status::Ok();
  }

  Result<std::string> Prepare(std::string_view sql, int nparams) {
    auto it = statements_.find(std::string(sql));
    if (it != statements_.end()) return it->second;
    std::string name = "s" + std::to_string(statements_.size());
    PGresult* res = PQprepare(conn_, name.c_str(), std::string(sql).c_str(), nparams, nullptr);
    RETURN_IF_ERROR(Collect(res));
    statements_.emplace(std::string(sql), name);
    return name;
  }

  // Takes ownership of `res`.
  Result<SqlResult> Collect(PGresult* res) {
    if (res == nullptr) {
      return UnavailableError("store unavailable: PostgreSQL: " + FirstLine(PQerrorMessage(conn_)));
    }
    const ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
      const char* state_field = PQresultErrorField(res, PG_DIAG_SQLSTATE);
      const std::string sqlstate = state_field != nullptr ? state_field : "";
      std::string message = FirstLine(PQresultErrorMessage(res));
      if (message.rfind("ERROR:  ", 0) == 0) message.erase(0, 8);
      PQclear(res);
      if (PQstatus(conn_) != CONNECTION_OK) return UnavailableError("store unavailable: PostgreSQL: " + message);
      return FromSqlState(sqlstate, "PostgreSQL: " + message);
    }
    SqlResult result;
    const int rows = PQntuples(res);
    const int cols = PQnfields(res);
    result.rows.reserve(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
      SqlRow row(static_cast<size_t>(cols));
      for (int c = 0; c < cols; ++c) {
        if (!PQgetisnull(res, r, c)) {
          row[static_cast<size_t>(c)] = std::string(PQgetvalue(res, r, c), static_cast<size_t>(PQgetlength(res, r, c)));
        }
      }
      result.rows.push_back(std::move(row));
    }
    const char* tuples = PQcmdTuples(res);
    result.affected = (tuples != nullptr && *tuples != '\0') ? std::stoll(tuples) : 0;
    PQclear(res);
    return result;
  }

  PGconn* conn_;
  std::string conninfo_;
  std::unordered_map<std::string, std::string> statements_;  // sql → prepared statement name
};

}  // namespace

Result<std::unique_ptr<SqlBackend>> OpenPostgresBackend(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (conn == nullptr) return UnavailableError("store unavailable: cannot allocate a PostgreSQL connection");
  if (PQstatus(conn) != CONNECTION_OK) {
    // The message may echo the connection string; it holds no password unless the caller put one there.
    Status s = UnavailableError("store unavailable: cannot connect to PostgreSQL: " + FirstLine(PQerrorMessage(conn)));
    PQfinish(conn);
    return s;
  }
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  return std::unique_ptr<SqlBackend>(std::make_unique<PostgresBackend>(conn, conninfo));
}

}  // namespace xpool::store_internal
