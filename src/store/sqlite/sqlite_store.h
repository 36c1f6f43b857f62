#pragma once
// SqliteStore: the embedded StateStore (the default). One database file; WAL journal, synchronous=FULL, a
// busy timeout; the schema is created and migrated in code (versioned, see sqlite_store.cc).
// Thread-safe: one connection guarded by a mutex; each state change is one transaction.
#include <memory>
#include <string>

#include "store/state_store.h"

namespace xpool {

// Opens or creates the database at `path` (its directory must exist) and migrates it to the latest schema.
Result<std::unique_ptr<StateStore>> OpenSqliteStore(const std::string& path);

}  // namespace xpool
