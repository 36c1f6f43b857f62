#pragma once
// PostgresStore: the StateStore on PostgreSQL through libpq, for installs that outgrow one machine or want HA.
// The schema is created and migrated in code (versioned, the same versions as SQLite).
// Thread-safe: one connection guarded by a mutex; each state change is one transaction (SERIALIZABLE is not
// needed: rows are locked with SELECT ... FOR UPDATE).
#include <memory>
#include <string>

#include "store/state_store.h"

namespace xpool {

// `conninfo`: a libpq connection string or URI ("postgresql://user@127.0.0.1:5432/xpool").
Result<std::unique_ptr<StateStore>> OpenPostgresStore(const std::string& conninfo);

}  // namespace xpool
