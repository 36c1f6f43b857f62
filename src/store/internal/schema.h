#pragma once
// The store's schema as numbered migrations, applied in order inside one transaction each; the version reached
// is kept in table schema_version. Dialect differences are written as {{ID}} (the auto-increment key column).
// Private to src/store. Stateless; thread-safe.
#include <string>
#include <vector>

#include "store/internal/sql_backend.h"

namespace xpool::store_internal {

struct Migration {
  int version;
  std::string sql;  // statements separated by ';'
};

const std::vector<Migration>& Migrations();
inline int LatestSchemaVersion() { return static_cast<int>(Migrations().size()); }

// Brings the database to `target` (default: latest). Refuses (FailedPrecondition) a database newer than this
// binary knows.
Status Migrate(SqlBackend& db, int target = -1);
Result<int> CurrentSchemaVersion(SqlBackend& db);

}  // namespace xpool::store_internal
