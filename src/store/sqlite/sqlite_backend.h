#pragma once
// SqliteBackend: SqlBackend over one sqlite3 connection (WAL, synchronous=FULL, foreign keys on, a busy
// timeout). Errors: full / read-only / busy / I/O / cannot open → Unavailable; constraint → AlreadyExists or
// InvalidArgument. Private to src/store. Not thread-safe (SqlStore serialises calls).
#include <cstdint>
#include <memory>
#include <string>

#include "store/internal/sql_backend.h"

namespace xpool::store_internal {

// `max_size_mib` > 0 caps the database file (PRAGMA max_page_count); 0 = no cap.
Result<std::unique_ptr<SqlBackend>> OpenSqliteBackend(const std::string& path, int64_t max_size_mib = 0);

}  // namespace xpool::store_internal
