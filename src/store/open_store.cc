#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/state_store.h"

namespace xpool {

Result<std::unique_ptr<StateStore>> OpenStateStore(std::string_view location) {
  auto starts_with = [location](std::string_view prefix) { return location.substr(0, prefix.size()) == prefix; };
  if (location.empty()) return InvalidArgumentError("store location is empty");
  if (starts_with("postgres://") || starts_with("postgresql://") || starts_with("host=") ||
      starts_with("dbname=")) {
    return OpenPostgresStore(std::string(location));
  }
  if (starts_with("sqlite:")) location.remove_prefix(7);
  if (location.empty()) return InvalidArgumentError("store location 'sqlite:' names no file");
  return OpenSqliteStore(std::string(location));
}

}  // namespace xpool
