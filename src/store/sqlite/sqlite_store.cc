#include "store/sqlite/sqlite_store.h"

#include "store/internal/sql_store.h"
#include "store/sqlite/sqlite_backend.h"

namespace xpool {

Result<std::unique_ptr<StateStore>> OpenSqliteStore(const std::string& path, const SqliteStoreOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<store_internal::SqlBackend> backend,
                   store_internal::OpenSqliteBackend(path, options.max_size_mib));
  auto store = std::make_unique<store_internal::SqlStore>(std::move(backend));
  RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace xpool
