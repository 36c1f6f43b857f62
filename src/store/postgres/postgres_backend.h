#pragma once
// PostgresBackend: SqlBackend over one libpq connection (text protocol, statements prepared once per
// connection). Errors by SQLSTATE: read-only (25006), insufficient resources / disk full (53xxx), connection
// (08xxx), shutdown (57P0x), lock timeout (55P03) → Unavailable; unique (23505) → AlreadyExists; foreign key
// (23503) → NotFound; other 22xxx/23xxx → InvalidArgument. A lost connection is re-established on the next
// call outside a transaction. Private to src/store. Not thread-safe (SqlStore serialises calls).
#include <memory>
#include <string>

#include "store/internal/sql_backend.h"

namespace xpool::store_internal {

Result<std::unique_ptr<SqlBackend>> OpenPostgresBackend(const std::string& conninfo);

}  // namespace xpool::store_internal
