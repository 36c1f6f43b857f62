#include "store/postgres/postgres_store.h"

#include "store/internal/sql_store.h"
#include "store/postgres/postgres_backend.h"

namespace xpool {

Result<std::unique_ptr<StateStore>> OpenPostgresStore(const std::string& conninfo) {
  ASSIGN_OR_RETURN(std::unique_ptr<store_internal::SqlBackend> backend, store_internal::OpenPostgresBackend(conninfo));
  auto store = std::make_unique<store_internal::SqlStore>(std::move(backend));
  RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace xpool
