#include "store/sqlite/sqlite_store.h"

#include <string>

#include "store/internal/sql_store.h"
#include "store/sqlite/sqlite_backend.h"

namespace xpool {
namespace {

constexpr int kReaders = 2;
constexpr int kWriterCacheKib = 64 * 1024;

}  // namespace

Result<std::unique_ptr<StateStore>> OpenSqliteStore(const std::string& path, const SqliteStoreOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<store_internal::SqlBackend> backend,
                   store_internal::OpenSqliteBackend(path, options.max_size_mib));
  // The writer's page cache holds a whole batch submission (10,000 jobs): a smaller one spills dirty pages to the
  // WAL in the middle of the transaction and writes the same pages again and again (a limit, not an allocation:
  // it grows only as far as a transaction needs). Its statement journal (what each job's savepoint in a batch
  // keeps to roll back to) stays in memory: in a temp file it cost a pwrite per page touched per job.
  RETURN_IF_ERROR(backend->Query("PRAGMA cache_size = -" + std::to_string(kWriterCacheKib), {}).status());
  RETURN_IF_ERROR(backend->Query("PRAGMA temp_store = MEMORY", {}).status());
  auto store = std::make_unique<store_internal::SqlStore>(std::move(backend));
  RETURN_IF_ERROR(store->Init());
  // Reader connections (WAL: concurrent with the writer), so API reads never wait for a commit's fsync. An
  // in-memory database is private to its connection: it has none.
  if (path != ":memory:" && path.rfind("file:", 0) != 0) {
    for (int i = 0; i < kReaders; ++i) {
      ASSIGN_OR_RETURN(std::unique_ptr<store_internal::SqlBackend> reader,
                       store_internal::OpenSqliteBackend(path, options.max_size_mib));
      store->AddReader(std::move(reader));
    }
  }
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace xpool
