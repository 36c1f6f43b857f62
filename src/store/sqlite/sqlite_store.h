#pragma once
// SqliteStore: the embedded StateStore (the default). One database file; WAL journal, synchronous=FULL, a
// busy timeout; the schema is created and migrated in code (versioned, see sqlite_store.cc).
// Thread-safe: one connection guarded by a mutex; each state change is one transaction.
#include <cstdint>
#include <memory>
#include <string>

#include "store/state_store.h"

namespace xpool {

struct SqliteStoreOptions {
  // > 0: the database may not grow beyond this many MiB; writes past it fail as Unavailable (HTTP 503) while
  // reads keep working. Keeps the control plane from filling a small disk. 0 = no cap.
  int64_t max_size_mib = 0;
};

// Opens or creates the database at `path` (its directory must exist) and migrates it to the latest schema.
Result<std::unique_ptr<StateStore>> OpenSqliteStore(const std::string& path, const SqliteStoreOptions& options = {});

}  // namespace xpool
